"""Camera datasets (issue 32): a bake rendered from MuJoCo cameras into a folder. Every
frame's files exist and agree with the bake's recorded state, the images are
mujoco.Renderer's of that state bit for bit, the intrinsics and extrinsics are
engine.cameras', the same seed draws the same randomization, a cancelled dataset says
it is incomplete, and the headless command writes the same in another process."""

import json
import os
import signal
import subprocess
import sys
import warnings

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import LINK_DIR

from mjblend.engine import cameras, dataset, png
from mjblend.importer import build
from mjblend.live import camera_dataset, scene_session
from mjblend.sync import timeline

SCENE = os.path.join(os.path.dirname(__file__), "data", "dataset_scene.xml")
PYTHON = sys.executable
CAMERAS = ("top", "side")


@pytest.fixture
def baked(clean_scene):
    build.import_file(SCENE, clean_scene)
    assert bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=0.2) == {"FINISHED"}
    yield clean_scene
    scene_session.end_all()


def compiled(scene):
    """The scene's model, as a dataset compiles it."""
    live = scene_session.start_simulation(scene)
    model = live.model
    scene_session.end_simulation(live)
    return model


def read_json(path):
    with open(path, encoding="utf-8") as source:
        return json.load(source)


def scene_looks(scene):
    """Every material's and light's value a randomization may touch."""
    out = {}
    for material in bpy.data.materials:
        nodes = material.node_tree.nodes if material.node_tree else ()
        out[material.name] = (tuple(material.diffuse_color), material.roughness, len(nodes),
                              len(material.node_tree.links) if material.node_tree else 0)
    out["images"] = sorted(image.name for image in bpy.data.images if image.type != "RENDER_RESULT")
    for obj in scene.objects:
        if obj.type == "LIGHT":
            out[obj.name] = (obj.data.energy, tuple(obj.matrix_world.col[2]))
    return out


def render_dataset(folder, *how, **options):
    return bpy.ops.mujoco.render_dataset(*how, directory=str(folder), cameras=",".join(CAMERAS), **options)


def test_every_frame_is_the_bakes_state_as_mujoco_renders_it(baked, tmp_path):
    folder = tmp_path / "set"
    assert render_dataset(folder) == {"FINISHED"}
    manifest = read_json(folder / "manifest.json")
    recording = timeline.recorded(baked)
    frames = list(range(recording.frame_start, recording.frame_end + 1))
    assert manifest["complete"] is True and manifest["frames"] == frames and len(frames) >= 5
    assert manifest["renderer"]["name"] == "mujoco" and [c["name"] for c in manifest["cameras"]] == list(
        CAMERAS
    )

    model = compiled(baked)
    states = np.load(folder / "states.npz")
    assert list(states["frame"]) == frames
    assert np.array_equal(states["integration_state"], recording.state)  # the bake's, bit for bit
    assert np.array_equal(states["sensordata"], recording.sensordata)
    assert np.array_equal(states["time"], recording.time)
    data = mujoco.MjData(model)
    for row, state in enumerate(recording.state):
        mujoco.mj_setState(model, data, state, dataset.INTEGRATION)
        full = np.empty(mujoco.mj_stateSize(model, dataset.FULL))
        mujoco.mj_getState(model, data, full, dataset.FULL)
        assert np.array_equal(states["state"][row], full)

    table = read_json(folder / "segmentation.json")
    assert table["0"]["type"] == "none"
    assert {table[str(model.geom(n).id + 1)]["name"] for n in ("floor", "ball", "box")} == {
        "floor",
        "ball",
        "box",
    }
    drawn = 0
    with cameras.CameraRenderer(model) as reference:  # (same calls in the same order: llvmpipe)
        for row, frame in enumerate(frames):
            entry = read_json(folder / "frames" / f"{frame:06d}.json")
            assert entry["frame"] == frame and entry["time"] == recording.time[row]
            for name in CAMERAS:
                expected = reference.render(
                    recording.state[row], name, cameras.KINDS, spec=dataset.INTEGRATION
                )
                files = entry["cameras"][name]["files"]
                assert files == {
                    "rgb": f"{name}/rgb/{frame:06d}.png",
                    "depth": f"{name}/depth/{frame:06d}.npy",
                    "segmentation": f"{name}/segmentation/{frame:06d}.png",
                }
                assert np.array_equal(png.read(folder / files["rgb"]), expected.rgb)
                depth = np.load(folder / files["depth"])
                assert depth.dtype == np.float32 and np.array_equal(depth, expected.depth)
                ids = png.read(folder / files["segmentation"])
                decoded = np.full(ids.shape + (2,), -1, np.int32)
                for value in np.unique(ids):
                    element = table[str(value)]
                    if element["type"] != "none":
                        decoded[ids == value] = (
                            element["id"],
                            int(getattr(mujoco.mjtObj, "mjOBJ_" + element["type"].upper())),
                        )
                assert np.array_equal(decoded, expected.segmentation)
                drawn += int((ids > 0).sum())
                cam = cameras.camera(model, name)
                assert np.array_equal(entry["cameras"][name]["K"], cam.K())
                assert np.allclose(
                    entry["cameras"][name]["camera_from_world_cv"],
                    expected.camera_from_world_cv,
                    rtol=0,
                    atol=0,
                )
                assert np.array_equal(
                    entry["cameras"][name]["world_from_camera_mujoco"], expected.world_from_camera
                )
    assert drawn > 0  # (the cameras see the scene)


def test_the_same_seed_draws_the_same_randomization_and_images(baked, tmp_path):
    looks = scene_looks(baked)
    for name, seed in (("a", 7), ("b", 7), ("c", 8), ("plain", 0)):
        randomize = "NONE" if name == "plain" else "FRAME"
        assert render_dataset(tmp_path / name, randomize=randomize, seed=seed, kinds={"rgb"}) == {"FINISHED"}
    assert scene_looks(baked) == looks  # (MuJoCo's renderer randomizes a private copy of the model)

    def draws(name):
        frames = read_json(tmp_path / name / "manifest.json")["frames"]
        return [read_json(tmp_path / name / "frames" / f"{f:06d}.json")["randomization"] for f in frames]

    def image(name, frame=1):
        return png.read(tmp_path / name / "top" / "rgb" / f"{frame:06d}.png")

    a, b, c = draws("a"), draws("b"), draws("c")
    assert a == b and a != c and a[0] != a[1]  # per frame: a new draw each frame
    assert set(a[0]["materials"]) == {"material/red", "material/blue", "material/floor"}
    assert set(a[0]["lights"]) == {"light/sun", "headlight"}
    assert draws("plain") == [None] * len(a)
    for frame in (1, 2):
        assert np.array_equal(image("a", frame), image("b", frame))
        assert not np.array_equal(image("a", frame), image("c", frame))
        assert not np.array_equal(image("a", frame), image("plain", frame))
    # what was drawn is what was drawn with: the red ball's colour follows its draw
    model = compiled(baked)
    look = dataset.ModelLook(model)
    look.apply(a[0])
    assert np.allclose(model.mat_rgba[model.material("red").id, :3], a[0]["materials"]["material/red"]["rgb"])

    assert render_dataset(tmp_path / "once", randomize="DATASET", seed=7, kinds={"rgb"}) == {"FINISHED"}
    once = draws("once")
    assert all(d == once[0] for d in once) and once[0] == a[0]  # one draw, the seed's first


@pytest.fixture
def texture_folder(tmp_path):
    """Two solid textures: green and magenta."""
    folder = tmp_path / "textures"
    folder.mkdir()
    for name, colour in (("green.png", (0, 255, 0)), ("magenta.png", (255, 0, 255))):
        png.write(str(folder / name), np.full((8, 8, 3), colour, np.uint8))
    (folder / "notes.txt").write_text("not an image")
    return folder


def test_drawn_textures_show_on_their_materials(baked, tmp_path, texture_folder):
    looks = scene_looks(baked)
    settings = dataset.Settings(cameras=("top",), kinds=("rgb", "segmentation"), randomize="frame", seed=1,
                                colors=False, roughness=False, lights=False, textures=str(texture_folder))
    for name in ("a", "b"):
        camera_dataset.job(baked, str(tmp_path / name), settings).run()
    assert scene_looks(baked) == looks
    model = compiled(baked)
    floor = model.geom("floor").id + 1
    frames = read_json(tmp_path / "a" / "manifest.json")["frames"]
    drawn = set()
    for frame in frames:
        entry = read_json(tmp_path / "a" / "frames" / f"{frame:06d}.json")
        assert entry == read_json(tmp_path / "b" / "frames" / f"{frame:06d}.json")  # same seed
        texture = entry["randomization"]["materials"]["material/floor"]["texture"]
        drawn.add(texture)
        rgb = png.read(tmp_path / "a" / "top" / "rgb" / f"{frame:06d}.png").astype(int)
        assert np.array_equal(rgb, png.read(tmp_path / "b" / "top" / "rgb" / f"{frame:06d}.png"))
        ids = png.read(tmp_path / "a" / "top" / "segmentation" / f"{frame:06d}.png")
        seen = rgb[ids == floor].mean(axis=0)
        green = seen[1] > 2 * max(seen[0], seen[2])
        assert green == (texture == "green.png"), (frame, texture, seen)  # the frame's own draw shows
    assert drawn == {"green.png", "magenta.png"}  # (a texture changed between frames: uploaded again)


def test_a_cancelled_dataset_says_it_is_incomplete_and_a_new_one_replaces_it(baked, tmp_path):
    folder = tmp_path / "set"
    settings = dataset.Settings(cameras=CAMERAS, kinds=("rgb", "depth"))
    job = camera_dataset.job(baked, str(folder), settings)
    assert read_json(folder / "manifest.json")["complete"] is False  # (from the start)
    assert job.step() and job.step()
    job.cancel("cancelled (Esc)")
    manifest = read_json(folder / "manifest.json")
    assert manifest["complete"] is False and manifest["frames"] == [1, 2]
    assert "cancelled (Esc) after 2 of" in manifest["message"]
    assert len(np.load(folder / "states.npz")["frame"]) == 2
    assert sorted(os.listdir(folder / "top" / "rgb")) == ["000001.png", "000002.png"]
    assert not job.step()  # (a closed job renders nothing more)

    # an earlier dataset is replaced; invoked where there is no window (the bpy module,
    # --background), the operator makes all of it at once, as EXEC does
    assert render_dataset(folder, "INVOKE_DEFAULT", kinds={"rgb"}) == {"FINISHED"}
    manifest = read_json(folder / "manifest.json")
    assert manifest["complete"] is True and len(manifest["frames"]) > 2
    assert not (folder / "top" / "depth").exists()


def test_refusals_are_clear_and_write_nothing(baked, tmp_path):
    with pytest.raises(RuntimeError, match="Choose a folder for the dataset"):
        bpy.ops.mujoco.render_dataset()
    with pytest.raises(RuntimeError, match=r"No camera 'nope'.*top, side"):
        bpy.ops.mujoco.render_dataset(directory=str(tmp_path / "a"), cameras="top,nope")
    assert not (tmp_path / "a" / "manifest.json").exists()
    stranger = tmp_path / "b"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine")
    with pytest.raises(RuntimeError, match="neither empty nor an MJBlend camera dataset"):
        render_dataset(stranger)
    assert os.listdir(stranger) == ["notes.txt"]
    with pytest.raises(dataset.DatasetError, match="Unknown renderer"):
        camera_dataset.job(baked, str(tmp_path / "c"), dataset.Settings(cameras=CAMERAS, renderer="povray"))
    with pytest.raises(RuntimeError, match=r"Frame 998 is not recorded \(the bake has frames 1-6\)"):
        bpy.ops.mujoco.render_dataset(directory=str(tmp_path / "d"), frame_start=998, frame_end=999)
    with warnings.catch_warnings():  # (Blender 5.0 warns that a DIR_PATH takes "//" as it is)
        warnings.simplefilter("ignore")
        baked.mujoco_dataset.directory = "//set"
    with pytest.raises(RuntimeError, match="relative to the .blend file, which is not saved yet"):
        bpy.ops.mujoco.render_dataset()
    bpy.ops.mujoco.clear_bake()
    assert not bpy.ops.mujoco.render_dataset.poll()
    with pytest.raises(dataset.DatasetError, match="Nothing is baked"):
        camera_dataset.job(baked, str(tmp_path / "e"), dataset.Settings(cameras=CAMERAS))


# The documented bpy-module entry of `blender --command mjblend_dataset`, in another process
ENTRY = (
    "import sys, bpy, addon_utils; addon_utils.enable('mjblend', default_set=True); "
    "from mjblend.app import dataset_command; sys.exit(dataset_command.main(sys.argv[1:]))"
)


# bpy before 5.0 can crash at exit once the add-on was enabled (tests/blender/conftest.py,
# EXIT_CRASHES): there the exit status may be SIGSEGV after main's own status was printed
EXIT_CRASHES = bpy.app.version < (5, 0, 0)


def exited(run, status: int) -> bool:
    return run.returncode == status or (EXIT_CRASHES and run.returncode == -signal.SIGSEGV)


def headless(*args):
    paths = [LINK_DIR, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), MUJOCO_GL="egl")
    return subprocess.run(
        [PYTHON, "-c", ENTRY, *map(str, args)], capture_output=True, text=True, env=env, timeout=300
    )


def test_the_headless_command_bakes_and_writes_a_dataset(clean_scene, tmp_path):
    build.import_file(SCENE, clean_scene)
    blend = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    out = tmp_path / "set"
    run = headless(
        blend,
        out,
        "--bake",
        "0.1",
        "--cameras",
        "side",
        "--randomize",
        "frame",
        "--seed",
        "3",
        "--kinds",
        "rgb,segmentation",
        "--frame-end",
        "2",
    )
    assert exited(run, 0), run.stdout + run.stderr
    assert "MJBlend dataset of 2 frames written to" in run.stdout
    manifest = read_json(out / "manifest.json")
    assert manifest["complete"] is True and manifest["frames"] == [1, 2] and manifest["seed"] == 3
    assert manifest["kinds"] == ["rgb", "segmentation"] and [c["name"] for c in manifest["cameras"]] == [
        "side"
    ]
    for frame in (1, 2):
        assert (out / "side" / "rgb" / f"{frame:06d}.png").is_file()
        assert (out / "side" / "segmentation" / f"{frame:06d}.png").is_file()
        assert read_json(out / "frames" / f"{frame:06d}.json")["randomization"] is not None

    refused = headless(blend, tmp_path / "none", "--cameras", "nope")
    assert exited(refused, 1) and "Nothing is baked" in refused.stderr
    refused = headless(blend, tmp_path / "none", "--bake", "0.05", "--cameras", "nope")
    assert exited(refused, 1) and "No camera 'nope'" in refused.stderr


def test_the_command_line_entry():
    from mjblend.app import dataset_command

    if bpy.app.version >= (4, 2, 0):  # `blender --command mjblend_dataset ...`
        assert dataset_command.command.handle is not None
    assert dataset_command.main(["--help"]) == 0


def test_a_workbench_dataset_is_the_bake_posed_and_puts_the_scene_back(
    baked, tmp_path, texture_folder
):
    looks, frame_was = scene_looks(baked), baked.frame_current
    for name in ("a", "b"):
        options = dict(renderer="BLENDER", engine="BLENDER_WORKBENCH", randomize="FRAME", seed=5,
                       textures=str(texture_folder))
        assert render_dataset(tmp_path / name, frame_end=3, **options) == {"FINISHED"}
    assert render_dataset(tmp_path / "plain", renderer="BLENDER", frame_end=1, kinds={"rgb"}) == {"FINISHED"}
    assert scene_looks(baked) == looks and baked.frame_current == frame_was  # put back exactly
    plain = png.read(tmp_path / "plain" / "top" / "rgb" / "000001.png")
    assert np.array_equal(
        png.read(tmp_path / "a" / "top" / "rgb" / "000001.png"),
        png.read(tmp_path / "b" / "top" / "rgb" / "000001.png"),
    )
    assert not np.array_equal(png.read(tmp_path / "a" / "top" / "rgb" / "000001.png"), plain)
    folder = tmp_path / "a"
    manifest = read_json(folder / "manifest.json")
    assert manifest["complete"] is True and manifest["frames"] == [1, 2, 3]
    assert manifest["renderer"]["name"] == "blender" and manifest["renderer"]["engine"] == "BLENDER_WORKBENCH"
    recording = timeline.recorded(baked)
    states = np.load(folder / "states.npz")
    assert np.array_equal(states["integration_state"], recording.state[:3])
    table = read_json(folder / "segmentation.json")
    model = compiled(baked)
    with cameras.CameraRenderer(model) as reference:
        for row, frame in enumerate((1, 2, 3)):
            entry = read_json(folder / "frames" / f"{frame:06d}.json")
            assert (
                entry["randomization"]
                == read_json(tmp_path / "b" / "frames" / f"{frame:06d}.json")["randomization"]
            )  # (same seed)
            assert set(entry["randomization"]["materials"]) >= {"red", "blue"}  # Blender's materials
            for name in CAMERAS:
                files = entry["cameras"][name]["files"]
                rgb = png.read(folder / files["rgb"])
                cam = cameras.camera(model, name)
                assert rgb.shape == (cam.height, cam.width, 3)
                expected = reference.render(
                    recording.state[row], name, ("depth", "segmentation"), spec=dataset.INTEGRATION
                )
                depth = np.load(folder / files["depth"])
                close = np.abs(depth - expected.depth) <= 0.01 * expected.depth
                assert close.mean() > 0.9  # (the same pose: edges aside, the same depth)
                ids = png.read(folder / files["segmentation"])
                names = np.array([table[str(v)]["name"] for v in ids.ravel()]).reshape(ids.shape)
                geoms = expected.segmentation[..., 0]
                mujoco_names = np.array([model.geom(int(g)).name if g >= 0 else "" for g in geoms.ravel()])
                assert (names.ravel() == mujoco_names).mean() > 0.9
                assert np.array_equal(entry["cameras"][name]["K"], cam.K())

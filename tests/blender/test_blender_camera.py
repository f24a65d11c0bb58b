"""Blender's renderer for MuJoCo cameras (live/blender_camera.py) against MuJoCo's own.

A primitive-only model (boxes, a sphere, a capsule, a cylinder, a plane, a site on a
turning arm) is imported and rendered by Workbench and Cycles through its two cameras
(one fovy, one focal / sensorsize / principal with fx != fy and an off-centre principal
point). mujoco.Renderer renders the same file at the same state in a child process
(engine/cameras.py's CameraRenderer, MUJOCO_GL=egl: two GL users in one process are
not asked to share it). Away from edges (MuJoCo's segmentation eroded by two pixels)
depth agrees within 1 % and segmentation ids at >= 99 % of pixels; the site's centre
projected through the frame's K and extrinsic lands within a pixel of where the site
is drawn; the user's scene is as it was.
"""

import json
import os
import subprocess
import sys
import tempfile

import bpy
import mujoco
import numpy as np
import pytest

from mjblend import blender_compat as compat
from mjblend.engine import cameras
from mjblend.importer import build
from mjblend.live import blender_camera, scene_session
from mjblend.scan import compile_spec, scene_scan
from mjblend.sync import timeline

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "data", "camera_primitives.xml")
TESTS = os.path.dirname(HERE)
ENGINES = ("BLENDER_WORKBENCH", "CYCLES")
ERODE = 2  # pixels: "away from edges"

MJ_RENDER = """
import json, sys
sys.path.insert(0, sys.argv[1])
import addon_loader  # (the package importable as mjblend; bpy is not imported)
import mujoco, numpy as np
from mjblend.engine import cameras
args = json.loads(sys.argv[2])
if args["model"].endswith(".mjb"):
    model = mujoco.MjModel.from_binary_path(args["model"])
else:
    model = mujoco.MjModel.from_xml_path(args["model"])
data = mujoco.MjData(model)
if "state" in args:  # a baked frame's mj_getState(mjSTATE_INTEGRATION) vector
    mujoco.mj_setState(model, data, np.array(args["state"]), mujoco.mjtState.mjSTATE_INTEGRATION)
else:
    data.qpos[:] = args["qpos"]
    data.time = args["time"]
mujoco.mj_forward(model, data)
out = {"site_xpos": data.site_xpos.copy()}
with cameras.CameraRenderer(model) as renderer:
    for name in args["cameras"]:
        frame = renderer.render(data, name, cameras.KINDS)
        out[name + "/depth"] = frame.depth
        out[name + "/segmentation"] = frame.segmentation
        out[name + "/K"] = frame.K
        out[name + "/extrinsic"] = frame.camera_from_world_cv
np.savez(args["out"], **out)
"""


def mujoco_frames(tmp_path, qpos, time=0.0, names=("front", "lens", "top"), state=None, model=MODEL) -> dict:
    out = tmp_path / "mujoco.npz"
    args = {"model": model, "qpos": [float(q) for q in qpos], "time": time, "cameras": list(names),
            "out": str(out)}
    if state is not None:
        args["state"] = [float(x) for x in state]
    env = dict(os.environ, MUJOCO_GL="egl", PYOPENGL_PLATFORM="egl")
    run = subprocess.run([sys.executable, "-c", MJ_RENDER, TESTS, json.dumps(args)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return dict(np.load(out))


def interior(segmentation: np.ndarray, margin: int = ERODE) -> np.ndarray:
    """Pixels whose neighbours within `margin` all have the same (id, type): away from edges."""
    ids = segmentation[..., 0].astype(np.int64) * 64 + segmentation[..., 1]
    h, w = ids.shape
    padded = np.pad(ids, margin, mode="edge")
    same = np.ones((h, w), bool)
    for dy in range(2 * margin + 1):
        for dx in range(2 * margin + 1):
            same &= padded[dy:dy + h, dx:dx + w] == ids
    return same


@pytest.fixture
def primitives(clean_scene):
    build.import_file(MODEL, clean_scene)
    return clean_scene


def check_against_mujoco(frame, reference, name):
    depth, segmentation = reference[name + "/depth"], reference[name + "/segmentation"]
    assert frame.depth.shape == depth.shape and frame.depth.dtype == np.float32
    assert frame.segmentation.shape == segmentation.shape and frame.segmentation.dtype == np.int32
    assert frame.rgb.shape == depth.shape + (3,) and frame.rgb.dtype == np.uint8
    np.testing.assert_allclose(frame.K, reference[name + "/K"], rtol=1e-12)
    np.testing.assert_allclose(frame.camera_from_world_cv, reference[name + "/extrinsic"], atol=1e-6)
    inside = interior(segmentation)
    assert inside.mean() > 0.8
    seen = segmentation[..., 0] >= 0
    assert seen[inside].mean() > 0.5
    relative = np.abs(frame.depth - depth) / depth
    worst = np.unravel_index(np.argmax(np.where(inside, relative, 0)), relative.shape)
    assert relative[inside].max() < 0.01, f"depth off by {relative[worst]:.2%} at pixel {worst}"
    agree = (frame.segmentation == segmentation).all(axis=-1)
    assert agree[inside].mean() >= 0.99, f"segmentation agrees at {agree[inside].mean():.2%} of pixels"
    # every geom MuJoCo shows is found, by the same id
    shown = {tuple(p) for p in segmentation[inside].reshape(-1, 2) if p[0] >= 0}
    found = {tuple(p) for p in frame.segmentation[inside].reshape(-1, 2) if p[0] >= 0}
    assert shown == found
    return inside


@pytest.mark.parametrize("engine", ENGINES)
def test_depth_and_segmentation_agree_with_mujoco(primitives, tmp_path, engine):
    model = mujoco.MjModel.from_xml_path(MODEL)
    reference = mujoco_frames(tmp_path, model.qpos0)
    for name in ("front", "lens", "top"):
        frame = blender_camera.render(primitives, name, cameras.KINDS, engine=engine, samples=4)
        assert (frame.width, frame.height) == (160, 120)  # the camera's MJCF resolution
        assert frame.sim_time == 0.0
        check_against_mujoco(frame, reference, name)
        background = reference[name + "/segmentation"][..., 0] < 0
        assert background.any() or name == "top"  # (the top view sees only the floor and what is on it)
        assert np.array_equal(frame.depth[background & (frame.segmentation[..., 0] < 0)],
                              reference[name + "/depth"][background & (frame.segmentation[..., 0] < 0)])


def test_a_live_simulations_pose_and_a_sites_projection(primitives, tmp_path):
    """The scene as a live simulation shows it (Objects display): the arm turned by the
    keyframe and its speed; the site where K and the extrinsic put it."""
    primitives.mujoco_simulation.display = "OBJECTS"
    bpy.ops.mujoco.simulate(duration=0.01)
    bpy.ops.mujoco.reset(keyframe=0)
    bpy.ops.mujoco.simulate(duration=0.2)
    live = scene_session.simulation(primitives)
    latest = live.latest
    assert latest.qpos[0] > 1.3  # turned from 0.9 at 3 rad/s
    frame = blender_camera.render(primitives, "front", cameras.KINDS)
    assert frame.sim_time == pytest.approx(latest.time) and latest.time > 0.1
    bpy.context.view_layer.update()  # (the depsgraph reports what the render touched, if anything)
    assert not live.check_edits(), "the render looked like an edit: the simulation recompiled"
    assert live.latest is latest
    reference = mujoco_frames(tmp_path, latest.qpos, latest.time, ("front",))
    check_against_mujoco(frame, reference, "front")

    site = mujoco.mj_name2id(live.model, mujoco.mjtObj.mjOBJ_SITE, "tip")
    point = frame.camera_from_world_cv @ np.append(reference["site_xpos"][site], 1.0)
    u, v, _ = frame.K @ (point[:3] / point[2])
    drawn = (frame.segmentation == (site, int(mujoco.mjtObj.mjOBJ_SITE))).all(axis=-1)
    assert drawn.sum() >= 9, "the site is not drawn"
    rows, cols = np.nonzero(drawn)
    assert abs(cols.mean() - u) < 1.0 and abs(rows.mean() - v) < 1.0, (u, v, cols.mean(), rows.mean())
    live_drawn = (reference["front/segmentation"] == (site, int(mujoco.mjtObj.mjOBJ_SITE))).all(axis=-1)
    rows, cols = np.nonzero(live_drawn)  # (MuJoCo draws it there too)
    assert abs(cols.mean() - u) < 1.0 and abs(rows.mean() - v) < 1.0


def test_a_baked_frame(primitives, tmp_path):
    """A bake's frame, posed by the timeline: the recorded state's time and poses."""
    assert bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=0, frame_start=1, duration=0.5) == {"FINISHED"}
    assert scene_session.simulation(primitives) is None
    primitives.frame_set(10)
    frame = blender_camera.render(primitives, "front", cameras.KINDS)
    model = mujoco.MjModel.from_xml_path(MODEL)
    state = timeline.recorded_state(primitives, model, 10)
    assert state is not None and frame.sim_time == state[0] > 0.2
    reference = mujoco_frames(tmp_path, (), names=("front",), state=state)
    check_against_mujoco(frame, reference, "front")


def test_two_models_side_by_side(primitives, tmp_path):
    """Two roots: attached where they stand, the names prefixed (MuJoCo's world is
    Blender's); the second copy's camera, ids and poses as MuJoCo's attach makes them."""
    build.import_file(MODEL, primitives)
    first, second = scene_scan.model_roots(primitives)
    second.location = (7.0, 1.0, 0.0)
    second.rotation_euler = (0.0, 0.0, 0.5)
    bpy.context.view_layer.update()
    main = mujoco.MjSpec()
    for root, prefix in zip((first, second), compile_spec.root_prefixes([first, second]), strict=True):
        loc, rot, _scale = root.matrix_world.decompose()
        main.attach(mujoco.MjSpec.from_file(MODEL), prefix=prefix,
                    frame=main.worldbody.add_frame(pos=list(loc), quat=list(rot)))
    model = main.compile()
    path = str(tmp_path / "two.mjb")
    mujoco.mj_saveModel(model, path, None)
    name = compile_spec.root_prefixes([first, second])[1] + "front"
    frame = blender_camera.render(primitives, name, cameras.KINDS)
    assert frame.camera.name == name and frame.camera.id == 3
    reference = mujoco_frames(tmp_path, model.qpos0, names=(name,), model=path)
    check_against_mujoco(frame, reference, name)


def test_by_camera_object_at_any_size(primitives):
    lens = next(o for o in primitives.objects if o.type == "CAMERA" and o.mujoco.kind == "CAMERA"
                and "lens" in o.name)
    frame = blender_camera.render(primitives, lens, ("depth",), width=64, height=40)
    assert frame.camera.name == "lens" and frame.depth.shape == (40, 64) and frame.rgb is None
    model = mujoco.MjModel.from_xml_path(MODEL)
    np.testing.assert_allclose(frame.K, cameras.camera(model, "lens").K(64, 40))


def _settings(scene) -> dict:
    """Every setting a render could change, as plain values."""
    def dump(struct):
        out = {}
        for prop in struct.bl_rna.properties:
            if prop.identifier == "rna_type" or prop.type in ("POINTER", "COLLECTION"):
                continue
            value = getattr(struct, prop.identifier)
            out[prop.identifier] = tuple(value) if hasattr(value, "__len__") and not isinstance(value, str) \
                else value
        return out
    render = scene.render
    values = {"render": dump(render), "image": dump(render.image_settings), "view": dump(scene.view_settings),
              "display": dump(scene.display), "shading": dump(scene.display.shading),
              "cycles": dump(scene.cycles), "eevee": dump(scene.eevee), "camera": scene.camera,
              "frame": scene.frame_current}
    values["layers"] = [dump(layer) for layer in scene.view_layers]
    values["objects"] = [(o.name, o.pass_index, tuple(o.color), tuple(o.matrix_world.col[3]))
                         for o in scene.objects]
    values["data"] = {kind: sorted(i.name for i in getattr(bpy.data, kind))
                      for kind in ("scenes", "objects", "cameras", "collections", "worlds", "materials",
                                   "node_groups", "meshes")}
    values["images"] = sorted(i.name for i in bpy.data.images if i.name != "Render Result")
    return values


def test_the_users_scene_is_unchanged(primitives, tmp_path, monkeypatch):
    scene = primitives
    scene.render.engine = compat.EEVEE
    scene.render.resolution_x, scene.render.resolution_y = 333, 222
    scene.render.film_transparent = True
    scene.view_layers[0].use_pass_z = False
    scene.display.shading.color_type = "SINGLE"
    before = _settings(scene)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # (its own: other processes use /tmp too)
    for engine in ENGINES:
        blender_camera.render(scene, "front", cameras.KINDS, 48, 36, engine=engine, samples=1)
    assert _settings(scene) == before
    assert os.listdir(tmp_path) == []  # the temporary files are gone


def test_errors_are_clear_and_change_nothing(primitives):
    scene = primitives
    before = _settings(scene)
    with pytest.raises(cameras.CameraError, match=r"No camera 'nope'.*front, lens"):
        blender_camera.render(scene, "nope")
    with pytest.raises(cameras.CameraError, match=r"9000 x 120 pixels is beyond .*8192"):
        blender_camera.render(scene, "front", width=9000)
    with pytest.raises(cameras.CameraError, match=r"'BLENDER_FANCY' is not one MJBlend renders"):
        blender_camera.render(scene, "front", engine="BLENDER_FANCY")
    with pytest.raises(cameras.CameraError, match=r"Unknown image kind \['normals'\]"):
        blender_camera.render(scene, "front", ("rgb", "normals"))
    floor = next(o for o in scene.objects if o.type == "MESH")
    with pytest.raises(cameras.CameraError, match=rf"'{floor.name}' is not a MuJoCo camera.*front, lens"):
        blender_camera.render(scene, floor)
    assert _settings(scene) == before


def test_an_exr_of_every_compression_it_reads(tmp_path):
    """The reader against Blender's own writer: a float image saved as OpenEXR,
    uncompressed, ZIP and ZIPS, reads back as written."""
    image = bpy.data.images.new("exr probe", 37, 23, alpha=True, float_buffer=True)
    pixels = np.random.default_rng(3).random((23, 37, 4), dtype=np.float32)
    image.pixels.foreach_set(pixels.ravel())
    scene = bpy.context.scene
    for codec in ("NONE", "ZIP", "ZIPS"):
        settings = scene.render.image_settings
        settings.file_format = "OPEN_EXR"
        settings.color_depth = "32"
        settings.exr_codec = codec
        path = str(tmp_path / f"{codec}.exr")
        image.save_render(path, scene=scene)
        channels = blender_camera.read_exr(path)
        for i, channel in enumerate("RGBA"):
            np.testing.assert_array_equal(channels[channel], pixels[::-1, :, i])
    bpy.data.images.remove(image)


def test_eevee_renders_rgb_and_takes_depth_and_segmentation_from_the_raster(primitives):
    """EEVEE (either name) renders here, in software GL, slowly; its depth and
    segmentation are the unantialiased Workbench raster's, as Workbench's own are."""
    eevee = blender_camera.render(primitives, "front", cameras.KINDS, 48, 36, engine="BLENDER_EEVEE_NEXT",
                                  samples=1)
    workbench = blender_camera.render(primitives, "front", ("depth", "segmentation"), 48, 36)
    assert eevee.rgb.shape == (36, 48, 3) and eevee.rgb.std() > 5  # a picture, not a flat colour
    assert np.array_equal(eevee.depth, workbench.depth)
    assert np.array_equal(eevee.segmentation, workbench.segmentation)

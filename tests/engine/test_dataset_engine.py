"""engine/dataset.py and engine/png.py without Blender: a recording rendered into a
dataset folder by MuJoCo's renderer, its files against MuJoCo itself; PNGs read back
exactly; the segmentation table; seeded draws."""

import json
import os

import mujoco
import numpy as np
import pytest

from mjblend.engine import cameras, dataset, png
from mjblend.engine.recording import Recorder

XML = """
<mujoco>
  <asset><material name="red" rgba="1 0 0 1"/></asset>
  <worldbody>
    <light name="sun" pos="0 0 3" dir="0 0 -1"/>
    <geom name="floor" type="plane" size="2 2 0.1" rgba="0.5 0.5 0.5 1"/>
    <camera name="top" pos="0 -1.5 1.5" xyaxes="1 0 0 0 0.7 0.7" resolution="40 30"/>
    <body name="ball" pos="0 0 0.5">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.1" material="red"/>
      <site name="mark" pos="0 0 0.1" size="0.05" rgba="0 1 0 1"/>
    </body>
  </worldbody>
  <sensor><framepos objtype="body" objname="ball"/></sensor>
</mujoco>
"""


def recorded(model, frames=4):
    data = mujoco.MjData(model)
    recorder = Recorder(model, 30, 1, frames)
    recorder.capture(model, data)
    while not recorder.done:
        steps = recorder.steps_to_next()
        mujoco.mj_step(model, data, nstep=steps)
        recorder.stepped(steps, model, data)
    return dataset.Frames.of_recording(recorder.recording())


def test_pngs_read_back_exactly(tmp_path):
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (7, 5, 3), dtype=np.uint8)
    ids = rng.integers(0, 65536, (6, 9), dtype=np.uint16)
    png.write(str(tmp_path / "rgb.png"), rgb)
    png.write(str(tmp_path / "ids.png"), ids)
    assert np.array_equal(png.read(str(tmp_path / "rgb.png")), rgb)
    assert np.array_equal(png.read(str(tmp_path / "ids.png")), ids)
    with pytest.raises(ValueError, match="uint8 or"):
        png.write(str(tmp_path / "bad.png"), ids.astype(np.int32))


def test_texture_pngs_of_every_channel_count_and_level_read_back_exactly():
    """MuJoCo's texture bytes (1 to 4 channels) as the import packs them (level 0, rows
    stored) and as the first save compresses them: the same pixels."""
    rng = np.random.default_rng(1)
    for channels in (1, 2, 3, 4):
        pixels = rng.integers(0, 256, (300, 257, channels), dtype=np.uint8)  # (> one 64 KiB block)
        stored = png.encode(pixels, level=0)
        assert len(stored) > pixels.size + 300  # uncompressed: every byte, a filter byte per row
        assert np.array_equal(png.decode(stored), pixels)
        packed = png.recompress(stored)
        assert np.array_equal(png.decode(packed), pixels)
        flat = png.recompress(png.encode(np.zeros_like(pixels), level=0))
        assert len(flat) < 2000  # (compressed)
    with pytest.raises(ValueError, match="not a PNG"):
        png.recompress(b"GIF89a")


def test_a_dataset_is_the_recording_as_mujoco_renders_it(tmp_path):
    model = mujoco.MjModel.from_xml_string(XML)
    frames = recorded(model)
    settings = dataset.Settings(cameras=("top",))
    job = dataset.Job(str(tmp_path / "set"), model, frames, settings, dataset.MujocoFrames(model))
    job.run()
    folder = tmp_path / "set"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["complete"] and manifest["frames"] == [1, 2, 3, 4]
    states = np.load(folder / "states.npz")
    assert np.array_equal(states["integration_state"], frames.state)
    table = json.loads((folder / "segmentation.json").read_text())
    site = [v for v in table.values() if v["type"] == "site"]
    assert site == [{"type": "site", "id": 0, "name": "mark", "body": "ball"}]  # (drawn: after the geoms)
    with cameras.CameraRenderer(model) as reference:
        for row, frame in enumerate(manifest["frames"]):
            expected = reference.render(frames.state[row], "top", cameras.KINDS, spec=dataset.INTEGRATION)
            assert np.array_equal(png.read(str(folder / "top" / "rgb" / f"{frame:06d}.png")), expected.rgb)
            assert np.array_equal(np.load(folder / "top" / "depth" / f"{frame:06d}.npy"), expected.depth)
            ids = png.read(str(folder / "top" / "segmentation" / f"{frame:06d}.png"))
            for value in np.unique(ids):
                element = table[str(value)]
                objtype = -1 if element["type"] == "none" else int(
                    getattr(mujoco.mjtObj, "mjOBJ_" + element["type"].upper()))
                assert np.all(expected.segmentation[ids == value] == (element["id"], objtype))


def test_the_same_seed_draws_the_same_and_nothing_draws_nothing():
    names = (["material/a", "geom/b"], ["light/c", "headlight"])
    settings = dataset.Settings(cameras=("top",), randomize="frame", seed=4)
    one, two = dataset.Randomizer(settings, *names), dataset.Randomizer(settings, *names)
    first = [one.for_frame() for _ in range(3)]
    assert first == [two.for_frame() for _ in range(3)] and first[0] != first[1]
    other = dataset.Randomizer(dataset.Settings(cameras=("top",), randomize="frame", seed=5), *names)
    assert other.for_frame() != first[0]
    once = dataset.Randomizer(dataset.Settings(cameras=("top",), randomize="dataset", seed=4), *names)
    assert once.for_frame() == once.for_frame() == first[0]
    assert dataset.Randomizer(dataset.Settings(cameras=("top",)), *names).for_frame() is None


def test_a_folder_with_other_files_is_refused(tmp_path):
    model = mujoco.MjModel.from_xml_string(XML)
    (tmp_path / "keep.txt").write_text("mine")
    renderer = dataset.MujocoFrames(model)
    with pytest.raises(dataset.DatasetError, match="neither empty nor"):
        dataset.Job(str(tmp_path), model, recorded(model, 2), dataset.Settings(cameras=("top",)), renderer)
    renderer.close()
    assert os.listdir(tmp_path) == ["keep.txt"]

"""engine/cameras.py: MJCF cameras as sensors, against mujoco.Renderer itself (real
EGL rendering, MUJOCO_GL=egl by tests/conftest.py), real threads, no bpy."""

import os
import subprocess
import sys
import time

import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.engine import cameras, commands as cmd
from mjblend.engine.errors import MJBlendError
from mjblend.engine.runner import Runner
from mjblend.engine.session import EngineSession

# one camera of each kind MuJoCo has: fovy with no resolution, focal + sensorsize +
# principal, focalpixel + principalpixel, orthographic; a small white site to find
SCENE = """
<mujoco>
  <visual><global offwidth="800" offheight="600"/></visual>
  <worldbody>
    <light pos="0 0 5"/>
    <geom type="plane" size="5 5 .1" rgba="0 0 0 1"/>
    <body name="ball" pos="0 0 .3"><freejoint/><geom size=".05" rgba=".2 .8 .2 1"/></body>
    <site name="dot" pos="0.3 0.2 0" size="0.01" rgba="1 1 1 1"/>
    <camera name="fovy" pos="0.1 -.2 1" fovy="60"/>
    <camera name="focal" pos="0 0 1" resolution="320 240" focal="0.01 0.012" sensorsize="0.02 0.015"
            principal="0.001 0.002"/>
    <camera name="pixels" pos="0 0 1" resolution="100 50" focalpixel="80 90" principalpixel="3 4"
            sensorsize="0.02 0.015"/>
    <camera name="ortho" pos="0 0 1" projection="orthographic" fovy="2" resolution="400 300"/>
    <camera name="tilted" pos="0.8 -0.9 0.7" xyaxes="0.8 0.6 0 -0.3 0.4 0.87" fovy="50" resolution="160 120"/>
  </worldbody>
</mujoco>
"""
HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
CARTPOLE = os.path.join(CORPUS, "pip", "dm_control", "suite", "cartpole.xml")
ALL = ("rgb", "depth", "segmentation")


def scene():
    return mujoco.MjModel.from_xml_string(SCENE)


def moved(model, seconds=0.3, seed=0):
    """(a state vector, an MjData in it after mj_forward) some way into a simulation
    with random controls, as the reference."""
    data = mujoco.MjData(model)
    if model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    rng = np.random.default_rng(seed)
    data.qvel[:] = rng.normal(0, 0.5, model.nv)
    while data.time < seconds:
        data.ctrl[:] = rng.uniform(-1, 1, model.nu)
        mujoco.mj_step(model, data)
    state = np.empty(mujoco.mj_stateSize(model, cameras.STATE))
    mujoco.mj_getState(model, data, state, cameras.STATE)
    reference = mujoco.MjData(model)
    mujoco.mj_setState(model, reference, state, cameras.STATE)
    mujoco.mj_forward(model, reference)
    return state, reference


class Reference:
    """mujoco.Renderer alone, one per image size, called in the sensor path's order
    (update_scene, then RGB, depth, segmentation). The same order matters: on some
    models (the humanoid, with its reflective floor, on Mesa's llvmpipe) an RGB frame
    depends on what its GL context drew before (up to 6 levels in 41404 values for
    the first frame of a fresh context against later ones)."""

    def __init__(self, model):
        self.model = model
        self.renderers = {}

    def frames(self, data, cam, width, height):
        if (width, height) not in self.renderers:
            self.renderers[width, height] = mujoco.Renderer(self.model, height, width)
        renderer = self.renderers[width, height]
        renderer.update_scene(data, cam)
        rgb = renderer.render()
        renderer.enable_depth_rendering()
        depth = renderer.render()
        renderer.enable_segmentation_rendering()
        seg = renderer.render()
        renderer.disable_segmentation_rendering()
        return rgb, depth, seg

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for renderer in self.renderers.values():
            renderer.close()


def reference_frames(model, data, cam, width, height):
    """A fresh mujoco.Renderer's first frames (what a fresh CameraRenderer's first are)."""
    with Reference(model) as reference:
        return reference.frames(data, cam, width, height)


def assert_same(frame, rgb, depth, seg):
    assert frame.rgb.dtype == np.uint8 and frame.rgb.shape == rgb.shape
    assert frame.depth.dtype == np.float32 and frame.depth.shape == depth.shape
    assert frame.segmentation.dtype == np.int32 and frame.segmentation.shape == seg.shape
    assert np.array_equal(frame.rgb, rgb)
    assert np.array_equal(frame.depth.view(np.uint32), depth.view(np.uint32))  # bit for bit
    assert np.array_equal(frame.segmentation, seg)


def test_descriptions_follow_the_mjcf():
    model = scene()
    described = {c.name: c for c in cameras.cameras(model)}
    assert list(described) == ["fovy", "focal", "pixels", "ortho", "tilted"]
    fovy = described["fovy"]
    assert (fovy.width, fovy.height, fovy.resolution_set) == (640, 480, False)  # DEFAULT_RESOLUTION
    assert fovy.focal is None and fovy.sensorsize is None and fovy.fovy == 60
    K = fovy.K()
    assert K[0, 0] == pytest.approx(240 / np.tan(np.radians(30))) and K[1, 1] == pytest.approx(K[0, 0])
    assert (K[0, 2], K[1, 2]) == (319.5, 239.5)
    focal = described["focal"]
    assert (focal.width, focal.height, focal.resolution_set) == (320, 240, True)
    # (MuJoCo keeps them as float32)
    assert focal.focal == pytest.approx((0.01, 0.012)) and focal.principal == pytest.approx((0.001, 0.002))
    assert focal.sensorsize == pytest.approx((0.02, 0.015))
    np.testing.assert_allclose(focal.K(), [[160, 0, 143.5], [0, 192, 87.5], [0, 0, 1]], rtol=1e-6)
    pixels = described["pixels"]
    # focalpixel and principalpixel, as given
    np.testing.assert_allclose(pixels.K(), [[80, 0, 46.5], [0, 90, 20.5], [0, 0, 1]], rtol=1e-6)
    assert described["ortho"].orthographic and not fovy.orthographic
    assert cameras.camera(model, 1).name == "focal" and cameras.camera(model, "tilted").id == 4


def test_intrinsics_are_the_frustum_mujoco_puts_in_the_scene():
    model = scene()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    scn = mujoco.MjvScene(model, 100)
    for cam in cameras.cameras(model):
        view = mujoco.MjvCamera()
        view.type, view.fixedcamid = mujoco.mjtCamera.mjCAMERA_FIXED, cam.id
        mujoco.mjv_updateScene(model, data, mujoco.MjvOption(), None, view, mujoco.mjtCatBit.mjCAT_ALL, scn)
        gl = scn.camera[0]
        center, halfwidth, bottom, top = cameras.frustum(cam)
        np.testing.assert_allclose([gl.frustum_center, gl.frustum_width, gl.frustum_bottom, gl.frustum_top],
                                   [center, halfwidth, bottom, top], rtol=1e-6, atol=1e-9)  # (float32 there)
        assert gl.frustum_near == pytest.approx(cam.near, rel=1e-6)
        assert bool(gl.orthographic) == cam.orthographic


def project(frame, point):
    """(u, v) of a world point through the frame's K and OpenCV extrinsic, and its depth."""
    E = frame.camera_from_world_cv
    p = E[:3, :3] @ point + E[:3, 3]
    if frame.camera.orthographic:
        return (frame.K @ np.r_[p[:2], 1.0])[:2], p[2]
    return (frame.K @ p)[:2] / p[2], p[2]


@pytest.mark.parametrize("name", ["fovy", "focal", "pixels", "ortho", "tilted"])
def test_a_site_projects_within_a_pixel_of_where_it_is_drawn(name):
    model = scene()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with cameras.CameraRenderer(model) as renderer:
        frame = renderer.render(data, name, ALL)
    site = int(mujoco.mjtObj.mjOBJ_SITE)
    rows, cols = np.nonzero((frame.segmentation[..., 1] == site) & (frame.segmentation[..., 0] == 0))
    assert len(rows) >= 1, "the site is drawn"
    (u, v), z = project(frame, data.site_xpos[0])
    assert abs(u - cols.mean()) < 1 and abs(v - rows.mean()) < 1
    # depth along the view axis: the site's top, its radius nearer than its centre
    drawn = frame.depth[int(round(v)), int(round(u))]
    assert z - 0.0105 <= drawn <= z  # (a coarse pixel's centre may miss the very top)
    # the extrinsic is the camera frame turned: MuJoCo's -z is OpenCV's +z
    W = frame.world_from_camera
    np.testing.assert_allclose(W[:3, 3], data.cam_xpos[frame.camera.id])
    np.testing.assert_allclose(np.linalg.inv(frame.camera_from_world_cv)[:3, 2], -W[:3, 2], atol=1e-12)


def test_frames_equal_mujoco_renderer_bit_for_bit():
    model = scene()
    state, reference = moved(model)
    with cameras.CameraRenderer(model) as renderer, Reference(model) as alone:
        for cam in cameras.cameras(model):
            frame = renderer.render(state, cam.name, ALL)
            assert_same(frame, *alone.frames(reference, cam.id, cam.width, cam.height))
            assert frame.sim_time == reference.time


@needs_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("path", [HUMANOID, CARTPOLE], ids=["humanoid", "cartpole"])
def test_corpus_cameras_equal_mujoco_renderer_bit_for_bit(path):
    model = mujoco.MjModel.from_xml_path(path)
    assert model.ncam
    state, reference = moved(model, seconds=0.2)
    with cameras.CameraRenderer(model) as renderer, Reference(model) as alone:
        for _round in range(2):  # (a context's first frames and later ones)
            for cam in cameras.cameras(model):
                size = (min(cam.width, 320), min(cam.height, 240))
                frame = renderer.render(state, cam.id, ALL, *size)
                assert_same(frame, *alone.frames(reference, cam.id, *size))
            assert (frame.segmentation[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM)).any()


def test_a_runner_snapshot_renders_as_its_state():
    """From a snapshot the runner published while its thread steps: the frame is
    mujoco.Renderer's of that snapshot's state, the live MjData never read."""
    model = scene()
    runner = Runner(EngineSession(model), threaded=True)
    runner.start()
    try:
        runner.send(cmd.Step(40))
        snap = runner.wait_frame(1, timeout=5)
        assert snap is not None
        deadline = time.time() + 5
        while runner.latest.steps < 40 and time.time() < deadline:
            time.sleep(0.01)
        snap = runner.latest
        assert snap.steps == 40
        with cameras.CameraRenderer(model) as renderer:
            frame = renderer.render(snap, "tilted", ALL)
    finally:
        runner.stop()
    reference = mujoco.MjData(model)
    reference.qpos[:], reference.qvel[:], reference.time = snap.qpos, snap.qvel, snap.time
    mujoco.mj_forward(model, reference)
    assert_same(frame, *reference_frames(model, reference, "tilted", 160, 120))
    assert frame.sim_time == snap.time
    np.testing.assert_array_equal(frame.cam_xpos, snap.cam_xpos)  # the snapshot's camera poses
    np.testing.assert_array_equal(frame.world_from_camera, frame.camera.world_from_camera(snap))


def test_unknown_camera_size_and_kind_are_clear_errors():
    model = scene()
    with cameras.CameraRenderer(model) as renderer:
        names = "fovy, focal, pixels, ortho, tilted"
        with pytest.raises(cameras.CameraError, match=rf"No camera 'nope'.*{names}"):
            renderer.render(mujoco.MjData(model), "nope")
        with pytest.raises(cameras.CameraError, match="No camera 9"):
            renderer.render(mujoco.MjData(model), 9)
        with pytest.raises(cameras.CameraError, match=r'1024 x 600 .* 800 x 600.*offwidth="1024"'):
            renderer.render(mujoco.MjData(model), "fovy", width=1024, height=600)
        with pytest.raises(cameras.CameraError, match="Unknown image kind"):
            renderer.render(mujoco.MjData(model), "fovy", ("normals",))
        assert not renderer._renderers  # nothing was made for a refused request
        frame = renderer.render(mujoco.MjData(model), "pixels")  # and it still renders
        assert frame.rgb.shape == (50, 100, 3) and frame.depth is None
    assert issubclass(cameras.CameraError, MJBlendError) and issubclass(cameras.CameraError, ValueError)
    no_camera = mujoco.MjModel.from_xml_string("<mujoco/>")
    with pytest.raises(cameras.CameraError, match="no camera"):
        cameras.camera(no_camera, "any")


def test_a_renderer_that_cannot_start_says_what_to_set():
    """A process whose MUJOCO_GL names a backend that cannot start here (glfw, no
    display): RendererUnavailable, an MJBlendError naming MUJOCO_GL=egl / osmesa, at
    every try, and the process lives on (MuJoCo is not asked twice)."""
    script = """
import mujoco
from mjblend.engine import cameras
from mjblend.engine.errors import MJBlendError
model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><camera name='c'/></worldbody></mujoco>")
for attempt in range(3):  # (with glfw installed, a second mjr_makeContext would abort the process)
    try:
        cameras.CameraRenderer(model).render(mujoco.MjData(model), "c")
    except cameras.RendererUnavailable as exc:
        assert isinstance(exc, MJBlendError)
        print("MESSAGE", exc)
print("ALIVE")
"""
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, MUJOCO_GL="glfw", DISPLAY="", WAYLAND_DISPLAY="",
               PYTHONPATH=os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", "import addon_loader\n" + script], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.count("MESSAGE") == 3 and "ALIVE" in out.stdout, out.stdout + out.stderr
    assert "MUJOCO_GL=glfw" in out.stdout and "MUJOCO_GL=egl" in out.stdout and "osmesa" in out.stdout


def test_the_worker_renders_the_newest_snapshot_beside_a_running_runner():
    model = scene()
    runner = Runner(EngineSession(model), threaded=True)
    worker = cameras.RenderWorker(lambda: runner.latest)
    runner.listen(lambda _snapshot: worker.notify())
    runner.start()
    worker.start()
    try:
        with pytest.raises(cameras.CameraError, match="No camera 'nope'"):
            worker.request(cameras.Request(("nope",)))
        worker.request(cameras.Request(("tilted", "pixels"), kinds=ALL))
        runner.send(cmd.Play())
        assert worker.wait(2, timeout=10)
        first = worker.latest("tilted")
        assert worker.wait(first.frame_id + 6, timeout=20), worker.error
        runner.send(cmd.Pause())
        later = worker.latest("tilted")
        assert later.frame_id > first.frame_id and later.sim_time > first.sim_time  # it follows the runner
        assert later.depth.dtype == np.float32 and later.segmentation.shape == (120, 160, 2)
        assert worker.fps > 0
        # a one-shot request replaces the continuous one, renders once, at its size
        runner.wait(runner.send(cmd.Pause()), timeout=5)
        asked = worker.request(cameras.Request(("fovy",), width=64, height=48, continuous=False))
        assert worker.wait_request(asked, timeout=10)
        once = worker.latest("fovy")
        assert once.rgb.shape == (48, 64, 3) and once.depth is None
        runner.send(cmd.Step(3))
        time.sleep(0.3)
        assert worker.frame_id == once.frame_id  # no new request: nothing more rendered
        # what it rendered is mujoco.Renderer's frame of the snapshot's state
        snap = runner.latest
        assert worker.wait_request(worker.request(cameras.Request(("tilted",), kinds=ALL, continuous=False)),
                                   timeout=10)
        frame = worker.latest("tilted")
        assert frame.sim_time == snap.time
        reference = mujoco.MjData(model)
        reference.qpos[:], reference.qvel[:] = snap.qpos, snap.qvel
        mujoco.mj_forward(model, reference)
        assert_same(frame, *reference_frames(model, reference, "tilted", 160, 120))
    finally:
        assert worker.stop()
        runner.stop()
    assert worker.error is None

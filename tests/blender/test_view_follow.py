"""The 3D view's cameras (live/view_follow.py) against MuJoCo's own (bpy module): the
tracked point is mjv_updateCamera's lookat for mjCAMERA_TRACKING (the body's
subtree_com) and, for one free ball, its xpos; the eye around it is
mjv_cameraFrame's; a model camera's eye and axes are mjCAMERA_FIXED's, its lens
shows mjv_cameraFrustum's vertical field of view; Copy Camera writes simulate's
text. Bit for bit in doubles; within 1e-6 once in Blender's single-precision view.
(The bpy module has no 3D view on screen: the view itself is the GUI tier's,
tests/gui/test_gui_view_follow.py.)"""

import math
import os
import tempfile

import bpy
import mujoco
import numpy as np
import pytest
from mathutils import Matrix, Vector

from mjblend.importer import build
from mjblend.live import scene_session, view_follow
from mjblend.operators import view as view_operators
from mjblend.scan import scene_scan

SCENE = """<mujoco model="follow"><option timestep="0.002"/><worldbody>
<geom name="floor" type="plane" size="3 3 .1"/>
<body name="ball" pos="0.3 -0.2 2"><freejoint/><geom type="sphere" size=".1"/></body>
<body name="arm" pos="-0.5 0.4 1.5"><freejoint/><geom type="capsule" fromto="0 0 0 .4 0 0" size=".05"/>
  <body name="hand" pos=".4 0 0"><joint type="hinge" axis="0 1 0"/>
    <geom type="box" size=".1 .05 .05" pos=".1 0 0"/>
    <camera name="wrist" pos=".1 0 .2" xyaxes="0 1 0 -1 0 1" fovy="55"/></body></body>
<camera name="side" pos="0 -4 1" xyaxes="1 0 0 0 .3 1" fovy="45"/>
</worldbody></mujoco>"""
# simulate's azimuth, elevation, distance
ORBITS = ((90.0, -45.0, 3.0), (-137.25, -12.5, 5.5), (10.0, 30.0, 1.25))


@pytest.fixture
def falling(clean_scene, tmp_path):
    """The scene simulated 300 steps (the bodies fall and the arm swings), its model
    root moved and turned; MuJoCo's MjData at the shown state beside it."""
    path = tmp_path / "follow.xml"
    path.write_text(SCENE)
    build.import_file(str(path), clean_scene)
    (root,) = scene_scan.model_roots(clean_scene)
    root.location = (1.0, 2.0, 0.5)
    root.rotation_euler = (0.0, 0.0, math.radians(30.0))
    bpy.context.view_layer.update()
    running = scene_session.start_simulation(clean_scene)
    running.step(300)
    shot = running.latest
    data = mujoco.MjData(shot.model)
    data.qpos[:], data.qvel[:] = shot.qpos, shot.qvel
    mujoco.mj_forward(shot.model, data)
    yield running, shot, data
    scene_session.end_all()


def _frame(data, camera) -> list:
    headpos, forward, up, right = (np.zeros(3) for _ in range(4))
    mujoco.mjv_cameraFrame(headpos, forward, up, right, data, camera)
    return [headpos, forward, up, right]


def _bits(a, b) -> bool:
    return np.asarray(a, float).tobytes() == np.asarray(b, float).tobytes()


def test_tracking_is_mujocos_tracking_camera(falling):
    running, shot, data = falling
    model = shot.model
    assert _bits(data.subtree_com, shot.subtree_com)  # (the snapshot is MuJoCo's state)
    identity = np.eye(4)
    scene = mujoco.MjvScene(model, maxgeom=10)
    for name in ("ball", "arm", "hand"):
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        for azimuth, elevation, distance in ORBITS:
            camera = mujoco.MjvCamera()
            camera.type, camera.trackbodyid = mujoco.mjtCamera.mjCAMERA_TRACKING, body
            camera.azimuth, camera.elevation, camera.distance = azimuth, elevation, distance
            mujoco.mjv_updateCamera(model, data, camera, scene)
            point = view_follow.tracked_point(shot, identity, body)
            assert _bits(point, camera.lookat), name
            ours = view_follow.view_frame(point, view_follow.orbit_rotation(azimuth, elevation), distance)
            for mine, theirs in zip(ours, _frame(data, camera), strict=True):
                assert _bits(mine, theirs), (name, azimuth, mine, theirs)
            # the view keeps it in single precision (mathutils): within 1e-6
            assert np.abs(np.array(Vector(tuple(point))) - camera.lookat).max() < 1e-6
    # the arm's subtree (arm and hand) is not the arm's frame; the lone ball's is (the xpos)
    arm, ball = (mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in ("arm", "ball"))
    assert np.linalg.norm(shot.subtree_com[arm] - shot.xpos[arm]) > 0.05
    np.testing.assert_allclose(view_follow.tracked_point(shot, identity, ball), shot.xpos[ball], atol=1e-12)
    assert shot.xpos[ball][2] < 1.9  # (it fell)


def test_tracked_point_in_blenders_world_moves_with_the_root(falling):
    running, shot, _data = falling
    world = np.array(running.binding.world)
    assert not np.allclose(world, np.eye(4))
    for body in range(1, shot.model.nbody):
        point = view_follow.tracked_point(shot, world, body)
        np.testing.assert_allclose(point, np.array(running.binding.to_blender(shot.subtree_com[body])),
                                   atol=1e-6)
        np.testing.assert_allclose(running.binding.to_mujoco(point), shot.subtree_com[body], atol=1e-6)


def test_model_cameras_are_mujocos_fixed_cameras(falling):
    running, shot, data = falling
    model = shot.model
    scene = mujoco.MjvScene(model, maxgeom=10)
    assert model.ncam == 2
    for index in range(model.ncam):
        camera = mujoco.MjvCamera()
        camera.type, camera.fixedcamid = mujoco.mjtCamera.mjCAMERA_FIXED, index
        mujoco.mjv_updateCamera(model, data, camera, scene)
        theirs = _frame(data, camera)
        for mine, reference in zip(view_follow.fixed_frame(shot, index), theirs, strict=True):
            assert _bits(mine, reference), index
        eye, rotation = view_follow.camera_view(shot, np.eye(4), index)
        headpos, forward, up, right = theirs
        assert _bits(eye, headpos)
        assert _bits(rotation[:, 0], right) and _bits(rotation[:, 1], up) and _bits(rotation[:, 2], -forward)
        # as the view keeps it (a single-precision quaternion): within 1e-6
        turn = Matrix(rotation.tolist()).to_quaternion()
        kept = np.array(turn.to_matrix())
        assert np.abs(kept - rotation).max() < 1e-6
        # the eye Blender draws from: its centre (single precision) plus the pivot distance
        centre = Vector(tuple(eye)) - turn @ Vector((0.0, 0.0, view_follow.CAMERA_PIVOT))
        drawn = centre + turn @ Vector((0.0, 0.0, view_follow.CAMERA_PIVOT))
        assert np.abs(np.array(drawn) - headpos).max() < 1e-6
        # in the moved root's world: MuJoCo's eye moved by it
        world = np.array(running.binding.world)
        eye, rotation = view_follow.camera_view(shot, world, index)
        np.testing.assert_allclose(eye, np.array(running.binding.to_blender(headpos)), atol=1e-6)
        np.testing.assert_allclose(rotation, world[:3, :3] @ shot.cam_xmat[index].reshape(3, 3), atol=1e-12)
        # the lens shows MuJoCo's vertical field of view (its frustum: top / near = tan(fovy / 2))
        gl = scene.camera[0]
        tangent = gl.frustum_top / gl.frustum_near
        assert gl.frustum_top == pytest.approx(-gl.frustum_bottom)
        for width, height in ((1280, 720), (600, 900), (500, 500)):
            lens = view_follow.camera_lens(float(model.cam_fovy[index]), width, height)
            # Blender's view: its 72 mm sensor across the wider side
            half_height = 36.0 * min(1.0, height / width)
            assert half_height / lens == pytest.approx(tangent, abs=1e-6)


def test_copy_camera_is_simulates_text(falling):
    _running, shot, data = falling
    model = shot.model
    scene = mujoco.MjvScene(model, maxgeom=10)
    for lookat in ((0.0, 0.0, 0.5), (1.234, -0.5678, 0.9)):
        for azimuth, elevation, distance in ORBITS:
            camera = mujoco.MjvCamera()
            camera.type = mujoco.mjtCamera.mjCAMERA_FREE
            camera.lookat[:] = lookat
            camera.azimuth, camera.elevation, camera.distance = azimuth, elevation, distance
            mujoco.mjv_updateCamera(model, data, camera, scene)
            simulate = _simulates_copy_camera(scene)
            rotation = view_follow.orbit_rotation(azimuth, elevation)
            headpos, forward, up, _right = view_follow.view_frame(lookat, rotation, distance)
            assert view_follow.camera_text(headpos, forward, up) == simulate
            # from the single-precision view Blender keeps
            kept = np.array(Matrix(rotation.tolist()).to_quaternion().to_matrix())
            headpos, forward, up, _right = view_follow.view_frame(np.array(Vector(lookat)), kept, distance)
            assert view_follow.camera_text(headpos, forward, up) == simulate
            assert simulate.startswith("<camera pos=") and simulate.endswith('"/>\n')
            copied = mujoco.MjSpec.from_string(f"<mujoco><worldbody>{simulate}</worldbody></mujoco>")
            np.testing.assert_allclose(copied.compile().cam_pos[0], _frame(data, camera)[0], atol=1e-3)


def _simulates_copy_camera(scene) -> str:
    """simulate.cc CopyCamera: the GL cameras' mean position (single precision) and the
    first one's forward x up and up, each "%.3f"."""
    first, second = scene.camera[0], scene.camera[1]
    forward = np.array(first.forward, np.float32).astype(float)
    up = np.array(first.up, np.float32).astype(float)
    right = np.cross(forward, up)
    pos = (np.array(first.pos, np.float32) + np.array(second.pos, np.float32)) / np.float32(2)
    text = '<camera pos="%.3f %.3f %.3f" xyaxes="%.3f %.3f %.3f %.3f %.3f %.3f"/>\n' % (
        *pos.astype(float), *right, *up)
    return text.replace("-0.000", "0.000")  # (the sign of a zero is rounding noise: MJBlend prints none)


def test_view_operators_need_a_3d_view(falling):
    """The bpy module has no window: the operators' polls say no (never an error)."""
    running, _shot, _data = falling
    bpy.context.view_layer.objects.active = running.binding.by_id[("body", 1)]
    assert view_operators.tracked_body(bpy.context) == 1
    for name in ("view_track", "view_camera", "view_free", "copy_camera", "screenshot"):
        assert not getattr(bpy.ops.mujoco, name).poll(), name
    owner = scene_session.of(bpy.context.scene)
    assert owner.follow is None and owner.captures == []
    assert view_follow.free(owner) is False


def test_screenshots_are_numbered_beside_the_blend(clean_scene, tmp_path):
    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp_path)  # (an unsaved file's screenshots go to the temporary folder)
    try:
        first = view_operators.screenshot_path()
        assert first == os.path.join(str(tmp_path), "mujoco_screenshot_001.png")
        open(first, "wb").close()
        assert view_operators.screenshot_path().endswith("mujoco_screenshot_002.png")
    finally:
        tempfile.tempdir = saved
    blend = tmp_path / "saved" / "scene.blend"
    blend.parent.mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert view_operators.screenshot_path() == str(blend.parent / "mujoco_screenshot_001.png")
    assert view_operators.screenshot_path("//shots/a.png") == str(blend.parent / "shots" / "a.png")

"""URLab's debug markers and viewport ops against a served Blender scene (bpy module,
real sockets): markers a client draws reach the overlay's draw data in Blender's
world, moved by the model root's frame; the 3D view's eye read and set in the
model's world round-trips; the bpy module has no 3D view on screen, so the
viewport ops answer `no_viewport` (on the main thread, as a window's timer runs
them: `on_main_thread`)."""

import math
import os
import sys

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import ROOT
from helpers import free_port
from mathutils import Euler, Matrix, Vector
from test_bridge_cameras import on_main_thread

sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))
from wire_client import WireClient  # noqa: E402

from mjblend.bridge import debug_markers, debug_ops  # noqa: E402
from mjblend.importer import build  # noqa: E402
from mjblend.live import bridge_host, scene_session, viewport  # noqa: E402
from mjblend.scan import scene_scan  # noqa: E402
from mjblend.ui.overlays import debug_draw  # noqa: E402

SCENE = """<mujoco model="drop"><worldbody><geom name="floor" type="plane" size="2 2 .1"/>
<body name="crate" pos="0.5 0 1"><freejoint/><geom type="box" size=".1 .2 .3"/></body>
</worldbody></mujoco>"""


@pytest.fixture
def served(clean_scene, tmp_path):
    path = tmp_path / "drop.xml"
    path.write_text(SCENE)
    build.import_file(str(path), clean_scene)
    (root,) = scene_scan.model_roots(clean_scene)
    root.location = (1.0, 2.0, 0.5)
    root.rotation_euler = (0.0, 0.0, math.radians(90.0))
    bpy.context.view_layer.update()
    request_port = free_port()
    bridge_host.start(clean_scene, request_port=request_port, state_port=free_port(), camera_port=free_port())
    client = WireClient(request_port)
    assert client.hello()["op"] == "hello_ok"
    yield client, root
    client.close()
    bridge_host.stop()
    scene_session.end_all()


def test_markers_reach_the_overlay_in_blenders_world_moved_by_the_root(served):
    """A marker drawn at the crate body's MuJoCo position lands on the crate's object in
    Blender (the root is moved and turned: MuJoCo's world in Blender's is the served
    binding's frame, which the overlay applies)."""
    client, root = served
    host = bridge_host.current().host
    shot = host.live.runner.latest
    crate = mujoco.mj_name2id(shot.model, mujoco.mjtObj.mjOBJ_BODY, "drop_crate")
    at = [float(v) for v in shot.xpos[crate]]
    assert client.call("draw_line", **{"from": at, "to": [at[0] + 1, at[1], at[2]]}, color=[1, 0, 0],
                       thickness=3.0, ttl=-1.0)["op"] == "draw_line_ok"
    assert client.call("draw_marker", location=at, color=[0, 1, 0], label="goal")["op"] == "draw_marker_ok"
    store, world = debug_draw.served_store()
    np.testing.assert_allclose(world, np.array(host.live.binding.world), atol=1e-6)
    frame = store.frame()
    by_width = debug_draw.lines_by_width(frame.markers, world)
    assert sorted(by_width) == [1.0, 3.0]  # one batch per line width
    crate_object = next(o for o in bpy.data.objects if o.name.startswith("crate"))
    where = np.array(crate_object.matrix_world.translation)
    np.testing.assert_allclose(where, np.array(root.matrix_world @ Vector((0.5, 0, 1))), atol=1e-5)
    pos, color = by_width[3.0]
    np.testing.assert_allclose(pos[0], where, atol=1e-5)
    np.testing.assert_allclose(pos[1] - pos[0], np.array(world)[:3, 0], atol=1e-5)  # MuJoCo's x in Blender
    np.testing.assert_array_equal(color, [[1, 0, 0, 1]] * 2)
    sphere, _colors = by_width[1.0]
    np.testing.assert_allclose(np.linalg.norm(sphere - where, axis=1), debug_markers.MARKER_RADIUS, rtol=1e-3)
    ((text, labelled),) = debug_draw.labels_of(frame.markers, world)
    assert text == "goal"
    np.testing.assert_allclose(labelled, where, atol=1e-5)
    assert bridge_host.status()["markers"] == 2  # (what the Bridge panel shows)
    assert client.call("clear_markers")["cleared"] == 2
    assert not store.frame().markers
    assert bridge_host.status()["markers"] == 0


def test_viewport_ops_answer_no_viewport_without_a_window(served):
    client, _root = served
    for op, fields in (("get_camera", {}), ("set_camera", {"location": [0, 0, 1]}),
                       ("frame_actor", {"target": "drop"}), ("set_viewport_mode", {"mode": "wireframe"}),
                       ("screenshot", {})):
        reply = on_main_thread(lambda op=op, fields=fields: client.call(op, **fields))
        assert (reply["op"], reply.get("code")) == ("error", "no_viewport"), (op, reply)
    # checked on the bridge's thread first: no main-thread round trip for a bad request
    assert client.call("set_viewport_mode", mode="ghost")["code"] == "invalid_mode"
    assert client.call("frame_actor", target="nothing")["code"] == "unknown_actor"


def test_eye_set_in_the_models_world_reads_back(served):
    """set_pose / pose_of on the startup screen's 3D view (it exists in the bpy module,
    never drawn): the eye sits at the root's frame times the location, looking along
    the root's frame times the eye's x axis, and reads back within 1e-6."""
    _client, root = served
    area = next(a for a in bpy_areas() if a.type == "VIEW_3D")
    world = viewport.Viewport(bridge_host.current().host).world()
    world = Matrix.Translation((0.4, -0.2, 0.1)) @ Matrix.Rotation(0.7, 4, "Z") @ world  # (a moved model's)
    turn = debug_markers.euler_quat([10.0, -25.0, 40.0])
    memo: dict = {}
    viewport.set_pose(area, world, [0.3, -1.5, 2.0], turn, 70.0, memo)
    pose = viewport.pose_of(area, world, memo)
    np.testing.assert_allclose(pose["location"], [0.3, -1.5, 2.0], atol=1e-6)
    np.testing.assert_allclose(pose["rotation_euler"], [10.0, -25.0, 40.0], atol=1e-6)
    x, y, z, w = pose["rotation_quat"]
    assert abs(abs(np.dot([w, x, y, z], turn)) - 1.0) < 1e-9
    assert pose["fov"] == pytest.approx(70.0, abs=1e-6)
    view = area.spaces.active.region_3d
    eye, rotation = viewport.eye_of(view)
    np.testing.assert_allclose(eye, world @ Vector((0.3, -1.5, 2.0)), atol=1e-5)
    # as Blender keeps the view (single precision), without the pose asked
    unmemo = viewport.pose_of(area, world)
    np.testing.assert_allclose(unmemo["location"], pose["location"], atol=1e-5)
    np.testing.assert_allclose(unmemo["rotation_euler"], pose["rotation_euler"], atol=1e-4)
    assert unmemo["fov"] == pytest.approx(70.0, abs=1e-4)
    looking = rotation @ Vector((0, 0, -1))  # Blender's view looks along its -z
    want = world.to_3x3() @ Matrix(debug_markers.quat_matrix(turn).tolist()) @ Vector((1, 0, 0))
    np.testing.assert_allclose(looking, want, atol=1e-6)


def test_frame_actor_bounds_are_mujocos_and_the_view_sees_them(served):
    client, _root = served
    host = bridge_host.current().host
    shot = host.live.runner.latest
    model = shot.model
    data = mujoco.MjData(model)
    data.qpos[:] = shot.qpos
    mujoco.mj_forward(model, data)
    crate = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "drop_crate")
    low, high = debug_ops.bounds(shot, [crate])
    (geom,) = np.flatnonzero(model.geom_bodyid == crate)
    # the box's half sizes turned into the world (the root turned it 90 degrees about z)
    reach = np.abs(data.geom_xmat[geom].reshape(3, 3)) @ model.geom_size[geom]
    np.testing.assert_allclose(reach, (0.2, 0.1, 0.3), atol=1e-9)
    np.testing.assert_allclose(low, data.geom_xpos[geom] - reach, atol=1e-9)
    np.testing.assert_allclose(high, data.geom_xpos[geom] + reach, atol=1e-9)
    area = next(a for a in bpy_areas() if a.type == "VIEW_3D")
    world = viewport.Viewport(host).world()
    viewport.frame_bounds(area, world, low, high)
    view = area.spaces.active.region_3d
    np.testing.assert_allclose(view.view_location, world @ Vector(tuple((low + high) / 2)), atol=1e-6)
    # the bounding sphere fits the narrower field of view
    fov = math.radians(viewport.fov_of(area))
    radius = np.linalg.norm(high - low) / 2
    assert view.view_distance * math.sin(fov / 2) >= radius * 0.99


def test_look_at_keeps_z_up():
    frame = viewport.look_at(np.array([0.0, -2.0, 1.0]), np.zeros(3))
    np.testing.assert_allclose(frame[:, 0], np.array([0, 2, -1]) / math.sqrt(5))
    assert frame[2, 1] == pytest.approx(0.0) and frame[2, 2] > 0  # left is level, up is up
    np.testing.assert_allclose(frame.T @ frame, np.eye(3), atol=1e-12)
    assert Euler  # (mathutils imported: the bpy module's)


def bpy_areas():
    import bpy

    return [area for window in bpy.context.window_manager.windows for area in window.screen.areas]


def test_a_screenshot_lays_the_drawings_over_the_view_as_blenders_merge_does():
    """lay_over against Blender's merge written out per pixel (OCIO's display shader:
    display-linear at gamma 2.2, times one minus the layer's alpha, plus the layer; the
    layer stored sRGB-encoded): pixels the callbacks left alone are the view's bytes;
    an opaque drawing is its own colour; a half-transparent one, over dark to light
    shading and over a layer that had something (a Blender overlay, alpha 0.2), shows
    as the screen shows it."""
    rng = np.random.default_rng(3)
    before = rng.integers(0, 256, (4, 5, 4), dtype=np.uint8)
    before[..., 3] = 0
    before[2, 4] = (60, 50, 40, 51)
    after = before.copy()
    after[0, 0] = (255, 0, 0, 255)  # an opaque red line over an empty layer

    def srgb(c):
        return np.where(c / 255 <= 0.04045, c / 255 / 12.92, ((c / 255 + 0.055) / 1.055) ** 2.4)

    def encode(linear):
        return np.rint(np.clip(linear, 0, 1) ** (1 / 2.2) * 255)

    # a green line at alpha 0.5 across row 2, blended over the layer (in linear: it is sRGB)
    low = before[2].astype(float)
    layer = np.array([0.0, 0.5, 0.0]) + srgb(low[:, :3]) * 0.5
    encoded = np.where(layer <= 0.0031308, layer * 12.92, 1.055 * layer ** (1 / 2.4) - 0.055)
    after[2, :, :3] = np.rint(encoded * 255)
    after[2, :, 3] = np.rint((0.5 + low[:, 3] / 255 * 0.5) * 255)
    # the scene's shading (row 2 dark to light), draw_view's picture (the scene under Blender's
    # overlay) and the screen's
    scene = rng.uniform(0.0, 1.0, (4, 5, 3))
    scene[2] = np.array([0.0005, 0.002, 0.01, 0.05, 0.3])[:, None]
    view = np.full((4, 5, 4), 255, np.uint8)
    view[..., :3] = encode(scene * (1 - before[..., 3:] / 255) + srgb(before[..., :3].astype(float)))
    screen = encode(scene[2] * (1 - after[2, :, 3:] / 255) + srgb(after[2, :, :3].astype(float)))
    out = viewport.lay_over(view, before, after)
    untouched = np.ones((4, 5), bool)
    untouched[0, 0] = untouched[2] = False
    np.testing.assert_array_equal(out[untouched], view[untouched])
    np.testing.assert_array_equal(out[0, 0, :3], (255, 0, 0))
    assert np.abs(out[2, :, :3].astype(int) - screen).max() <= 1, (out[2], screen)

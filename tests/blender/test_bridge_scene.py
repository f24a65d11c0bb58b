"""URLab's scene, outliner and sim ops against a served Blender scene (bpy module, real
sockets and threads): two humanoids, each a model root (an actor), found, measured,
selected, moved (its objects and MuJoCo's running state agree), destroyed (and undone);
the simulation stopped and started over the bridge, a compile error in begin_pie's
reply; long ops followed with op_status; unknown targets answered with URLab's codes.

The bpy module fires no timers: the test's main thread does what a window's timer does
(bridge_host.watch runs the bridge's main-thread jobs) while a client thread waits for
its reply (`on_main_thread`)."""

import json
import math
import os
import sys
import time

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import ROOT
from helpers import CORPUS, free_port
from mathutils import Vector
from test_bridge_cameras import on_main_thread

sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))
from wire_client import WireClient  # noqa: E402

from mjblend.engine import commands  # noqa: E402
from mjblend.importer import build  # noqa: E402
from mjblend.live import bridge_host, bridge_scene, scene_session  # noqa: E402
from mjblend.scene.transforms import transform  # noqa: E402

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
OBJ = mujoco.mjtObj
pytestmark = pytest.mark.skipif(not os.path.exists(HUMANOID), reason=f"no corpus at {CORPUS}")


class Scene:
    """Two humanoids served (the second's root 2 m along x), a client, its hello."""

    def __init__(self, scene):
        self.scene = scene
        self.first = build.import_file(HUMANOID, scene).root
        self.second = build.import_file(HUMANOID, scene).root
        self.first.name, self.second.name = "walker", "runner"  # (prefixes neither begins the other)
        self.second.location.x = 2.0
        bpy.context.view_layer.update()
        self.port = free_port()
        bridge_host.start(scene, request_port=self.port, state_port=free_port(), camera_port=free_port())
        self.client = WireClient(self.port)
        self.hello = self.client.hello()
        self.ids = [e["prefix"] for e in self.hello["articulations"]]

    def call(self, op, **fields):
        return on_main_thread(lambda: self.client.call(op, **fields))

    @property
    def live(self):
        return scene_session.simulation(self.scene)


@pytest.fixture
def two(clean_scene):
    served = Scene(clean_scene)
    yield served
    served.client.close()
    bridge_host.stop()
    scene_session.end_all()


def objects_box(root) -> tuple[np.ndarray, np.ndarray]:
    """The world box of a root's objects with geometry, read here from Blender."""
    corners = [np.array(o.matrix_world @ Vector(c)) for o in root.children_recursive
               if o.type == "MESH" and not (o.mujoco.kind == "GEOM" and o.mujoco.geom.type == "PLANE")
               for c in o.bound_box]
    return np.min(corners, axis=0), np.max(corners, axis=0)


def served_model(hello) -> mujoco.MjModel:
    return mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": hello["mjb"]})


def free_qpos(model, state, prefix) -> np.ndarray:
    """The 7 qpos of `prefix`'s free joint in a step reply."""
    return np.array(state["arts"][prefix]["qpos"][:7])


def test_actors_are_the_model_roots_found_measured_and_selected(two):
    first_id, second_id = two.ids
    listed = two.call("list_actors")
    assert listed["op"] == "list_actors_ok" and listed["in_pie"] is True, listed
    rows = {row["actor_id"]: row for row in listed["actors"]}
    assert list(rows) == two.ids
    second = rows[second_id]
    assert second["name"] == two.second.name and second["is_articulation"] is True
    assert second["location"] == [2.0, 0.0, 0.0] and second["rotation_quat"] == [0.0, 0.0, 0.0, 1.0]

    found = two.call("find_actors", name_prefix=second_id)["actors"]
    assert [row["actor_id"] for row in found] == [second_id]
    assert len(two.call("find_actors", class_filter="MjArticulation")["actors"]) == 2
    assert two.call("find_actors", tag="no such collection")["actors"] == []

    bounds = two.call("get_actor_bounds", target=second_id)
    assert bounds["op"] == "get_actor_bounds_ok" and bounds["actor_name"] == two.second.name, bounds
    low, high = objects_box(two.second)
    assert np.allclose(bounds["min"], low) and np.allclose(bounds["max"], high)
    assert np.allclose(bounds["center"], (low + high) / 2)
    assert np.allclose(bounds["extents"], (high - low) / 2)
    # MuJoCo's own: every body of that model stands inside the box, which lies inside the
    # union of MuJoCo's boxes of its geoms (their meshes lie inside MuJoCo's shapes); the
    # infinite floor plane has no bounds
    model = served_model(two.hello)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    bodies = [b for b in range(1, model.nbody) if model.body(b).name.startswith(second_id + "_")]
    assert bodies and all(np.all(data.xpos[b] >= low) and np.all(data.xpos[b] <= high) for b in bodies)
    geoms = [g for g in range(model.ngeom) if model.geom(g).name.startswith(second_id + "_")
             and model.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE]
    bodies_of_geoms = {int(model.geom_bodyid[g]) for g in geoms}
    assert bodies_of_geoms <= set(bodies) and len(geoms) > 10
    boxes = []
    for g in geoms:
        turn = data.geom_xmat[g].reshape(3, 3)
        center = data.geom_xpos[g] + turn @ model.geom_aabb[g, :3]
        half = np.abs(turn) @ model.geom_aabb[g, 3:]
        boxes += [center - half, center + half]
    assert np.all(low >= np.min(boxes, axis=0) - 1e-5) and np.all(high <= np.max(boxes, axis=0) + 1e-5)
    assert np.all(low <= np.min(boxes, axis=0) + 0.02) and np.all(high >= np.max(boxes, axis=0) - 0.02)
    assert bridge_scene.actor_bounds(two.scene, two.second.name, by_name=True)["min"] == bounds["min"]

    selected = two.call("select_actor", target=two.first.name, target_by="actor_name")
    assert selected == {"op": "select_actor_ok", "target": two.first.name, "actor_name": two.first.name}
    assert list(bpy.context.selected_objects) == [two.first]
    assert bpy.context.view_layer.objects.active == two.first


def test_unknown_targets_get_urlabs_codes_and_change_nothing(two):
    codes = {"get_actor_bounds": "get_actor_bounds_failed", "select_actor": "select_failed",
             "set_actor_transform": "set_actor_transform_failed", "destroy_actor": "destroy_failed"}
    for op, code in codes.items():
        reply = two.call(op, target="nobody", location=[1.0, 2.0, 3.0])
        assert reply["code"] == code and "nobody" in reply["message"], reply
        assert two.call(op)["code"] == "missing_field"
    assert two.call("select_actor", target=two.ids[0], target_by="label")["code"] == "bad_value"
    assert two.call("set_actor_transform", target=two.ids[0], location=[1.0, float("nan"), 0.0])["code"] \
        == "bad_value"
    assert tuple(two.first.location) == (0, 0, 0) and tuple(two.second.location) == (2, 0, 0)
    assert len(scene_session.of(two.scene).bridge.host.scene_edits.list_actors()) == 2
    failed = two.call("remove_actor", target="nobody")  # (a long op: its failure read with op_status)
    assert failed["op"] == "op_started"
    status = poll(two, failed["job_id"])
    assert status["state"] == "failed" and status["result"]["code"] == "destroy_failed", status
    assert two.call("op_status", job_id="job-999")["code"] == "unknown_job"


def poll(two, job_id) -> dict:
    """op_status until the job is done or failed (URLab's client polls while "running")."""
    for _ in range(200):
        status = two.call("op_status", job_id=job_id)
        assert status["op"] == "op_status_ok", status
        if status["state"] != "running":
            return status
        time.sleep(0.01)
    raise AssertionError("the job never finished")


@pytest.mark.parametrize("mode", ["live", "direct"])
def test_moving_an_actor_moves_its_objects_and_the_running_simulation(two, mode):
    second_id = two.ids[1]
    client = two.client
    assert client.call("set_mode", mode=mode)["op"] == "set_mode_ok"
    client.call("set_paused", paused=True)  # (live mode plays: held still, its state compared)
    before = client.call("step", n_steps=10) if mode == "direct" else client.call("get_state")
    pose = free_qpos(None, before, second_id)
    turn = (math.sin(math.pi / 8), math.cos(math.pi / 8))  # 45 degrees about z
    moved = two.call("set_actor_transform", target=second_id, location=[1.0, 3.0, 0.5],
                     rotation_quat=[0.0, 0.0, turn[0], turn[1]])
    assert moved["op"] == "set_actor_transform_ok" and moved["requires_pie_restart"] is False, moved
    assert np.allclose(two.second.matrix_world.translation, (1.0, 3.0, 0.5))
    assert np.allclose(two.second.matrix_world.to_quaternion(), (turn[1], 0, 0, turn[0]))
    assert tuple(two.first.location) == (0, 0, 0)

    # the simulation follows: recompiled (sessions expire, as after any edit) with the
    # model where its root stands, its free body carried by the same motion
    live = two.live
    if mode == "live":  # (the physics thread applies it: shown once it has)
        live.send(commands.Forward(), wait=2.0)
    hello = client.hello()
    assert hello["op"] == "hello_ok"
    after = client.call("get_state")
    want = np.empty(7)
    quat = np.array([turn[1], 0.0, 0.0, turn[0]])
    mujoco.mju_rotVecQuat(want[:3], pose[:3] - [2.0, 0.0, 0.0], quat)
    want[:3] += [1.0, 3.0, 0.5]
    mujoco.mju_mulQuat(want[3:], quat, pose[3:])
    assert np.allclose(free_qpos(None, after, second_id), want, atol=1e-9)
    assert np.allclose(free_qpos(None, after, two.ids[0]), free_qpos(None, before, two.ids[0]))
    if mode == "live":  # its objects, as shown, and MuJoCo's state agree (the torso is the free body)
        live.show(force=True)
        torso = mujoco.mj_name2id(live.model, OBJ.mjOBJ_BODY, f"{second_id}_torso")
        shown = live.binding.by_id[("body", torso)]
        assert np.allclose(shown.matrix_world.translation, want[:3], atol=1e-5)


def test_destroyed_actors_leave_the_simulation_and_come_back_with_undo(two):
    bpy.ops.ed.undo_push(message="before the bridge's edits")
    first_id, second_id = two.ids
    names = {o.name for o in [two.second, *two.second.children_recursive]}
    gone = two.call("destroy_actor", target=two.second.name, target_by="actor_name")
    assert gone["op"] == "destroy_actor_ok" and gone["requires_pie_restart"] is False, gone
    assert not names & {o.name for o in bpy.data.objects}
    assert [row["actor_id"] for row in two.call("list_actors")["actors"]] == [first_id]
    hello = two.client.hello()  # (recompiled without it)
    assert [e["prefix"] for e in hello["articulations"]] == [first_id]
    each = (served_model(two.hello).nbody - 1) // 2  # (the world, and two humanoids' bodies)
    assert served_model(hello).nbody == 1 + each

    started = two.call("remove_actor", target=first_id)  # URLab's newer op: a long one
    assert started["op"] == "op_started", started
    status = poll(two, started["job_id"])
    assert status["state"] == "done" and status["result"]["op"] == "remove_actor_ok", status
    assert status["result"]["actor_name"] == "walker"
    # the last model gone: the simulation stopped, the bridge answers on
    assert two.live is None and two.call("pie_status")["state"] == "off"
    assert two.call("list_actors")["actors"] == []

    bridge_host.stop()
    bpy.ops.ed.undo()
    bpy.ops.ed.undo()
    roots = [o.name for o in bpy.context.scene.objects if o.mujoco.kind == "MODEL"]
    assert sorted(roots) == ["runner", "walker"]


def test_stop_and_begin_pie_keep_the_bridge_serving(two):
    status = two.call("pie_status")
    assert status["state"] == "ready" and status["compile_error"] == "" and status["sim_time"] == 0.0
    client = two.client
    held = dict(two.live.held)  # the objects the simulation moves -> their authored poses
    client.call("set_mode", mode="live")
    client.call("step", n_steps=50)  # (the humanoids fall: objects off their authored poses)
    two.live.show(force=True)
    assert any(transform(obj) != authored for obj, authored in held.values())
    stopped = two.call("stop_pie")
    assert stopped == {"op": "stop_pie_ok", "was_running": True}
    assert two.live is None and bridge_host.current() is not None
    assert two.call("pie_status") == {"op": "pie_status_ok", "state": "off", "compile_error": ""}
    assert client.call("step", n_steps=1)["code"] == "not_ready"
    assert two.call("stop_pie")["was_running"] is False
    assert all(transform(obj) == authored for obj, authored in held.values())  # (as Blender's Stop)

    # a scene that does not compile: begin_pie says why, nothing runs
    timestep = two.first.mujoco.model.option.timestep
    two.first.mujoco.model.option.timestep = float("nan")
    failed = two.call("begin_pie")
    assert failed["op"] == "begin_pie_ok" and failed["state"] == "compile_failed", failed
    assert "timestep" in failed["compile_error"] and "handshake_payload" not in failed
    assert two.call("pie_status")["state"] == "compile_failed" and two.live is None

    two.first.mujoco.model.option.timestep = timestep
    ready = two.call("begin_pie", timeout_s=30.0)
    assert ready["state"] == "ready" and ready["compile_error"] == "", ready
    handshake = ready["handshake_payload"]
    assert [e["prefix"] for e in handshake["articulations"]] == two.ids
    assert two.live is not None and two.live.playing
    assert two.call("begin_pie")["state"] == "ready"  # (already running: ready at once)
    client.session_id = handshake["session_id"]  # (as URLab's client absorbs it)
    assert client.call("set_mode", mode="direct")["op"] == "set_mode_ok"
    assert client.call("step", n_steps=3)["op"] == "step_ok"
    assert two.call("pie_status")["state"] == "ready"
    assert two.call("begin_pie", level_path="another scene")["code"] == "unsupported"

    # stopped by a client, then Blender's Play (a window's runs on a physics thread): served again
    assert two.call("stop_pie")["was_running"] is True and bridge_host.status()["simulating"] is False
    played = scene_session.start_simulation(two.scene, threaded=True)
    bridge_host.watch()
    assert bridge_host.status()["simulating"] is True and two.call("pie_status")["state"] == "ready"
    assert scene_session.of(two.scene).bridge.host.live is played
    assert [e["prefix"] for e in client.hello()["articulations"]] == two.ids


def test_snapshot_is_a_long_op_with_each_articulations_names(two):
    started = two.call("snapshot")
    assert started["op"] == "op_started"
    status = poll(two, started["job_id"])
    assert status["state"] == "done", status
    snapshot = status["result"]
    assert snapshot["op"] == "snapshot_ok" and snapshot["in_pie"] is True
    assert snapshot["level_path"] == two.scene.name
    model = served_model(two.hello)
    for row, prefix in zip(snapshot["actors"], two.ids, strict=True):
        urlab = row["urlab"]
        joints = [mujoco.mj_id2name(model, OBJ.mjOBJ_JOINT, j) for j in range(model.njnt)]
        assert [f"{prefix}_{name}" for name in urlab["joints"]] == [j for j in joints
                                                                   if j.startswith(prefix + "_")]
        assert len(urlab["actuators"]) == 21 and urlab["cameras"]


def test_a_user_moving_a_root_in_blender_carries_its_model_the_same_way(clean_scene):
    """What set_actor_transform does is what Blender does for a user: with several models
    (attached where their roots stand) a moved root carries its model, mid-motion."""
    first = build.import_file(HUMANOID, clean_scene).root
    second = build.import_file(HUMANOID, clean_scene).root
    second.location.x = 2.0
    bpy.context.view_layer.update()
    try:
        live = scene_session.start_simulation(clean_scene)  # (inline here: the bpy module)
        live.step(20)
        model, data = live.model, live.session.data
        free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        assert len(free) == 2
        before = [data.qpos[model.jnt_qposadr[j]:model.jnt_qposadr[j] + 7].copy() for j in free]
        second.location.y = 1.5  # (the user's drag)
        bpy.context.view_layer.update()
        assert live.take_edits([second]) is True  # (what the next display frame does)
        model, data = live.model, live.session.data
        after = [data.qpos[model.jnt_qposadr[j]:model.jnt_qposadr[j] + 7] for j in free]
        assert np.array_equal(after[0], before[0])
        assert np.allclose(after[1], before[1] + [0, 1.5, 0, 0, 0, 0, 0], atol=1e-12)
        assert live.take_edits([second]) is False  # (once)
        assert tuple(first.location) == (0, 0, 0)
    finally:
        scene_session.end_all()


def test_replies_have_urlabs_fields(two):
    """Conformance for these ops against a Blender scene (tests/bridge/test_conformance.py
    checks the rest on a model served without Blender, where these are unsupported):
    each reply (a long op's `result`) has the fields URLab's server sends and its client
    reads; a request without URLab's required fields is refused with missing_field."""
    table = json.load(open(os.path.join(ROOT, "tests", "bridge", "data", "urlab_ops.json")))
    ops = {op["name"]: op for op in table["ops"]}
    first_id, second_id = two.ids
    sent = [("list_actors", {}), ("find_actors", {"in_pie": True}),
            ("get_actor_bounds", {"target": first_id}), ("select_actor", {"target": first_id}),
            ("set_actor_transform", {"target": second_id, "location": [0.0, 2.0, 0.0]}),
            ("snapshot", {}), ("pie_status", {}), ("destroy_actor", {"target": second_id}),
            ("stop_pie", {}), ("begin_pie", {}), ("remove_actor", {"target": first_id})]
    meta = two.client.call("meta")
    served = {op["name"] for op in meta["ops"]}
    assert {name for name, _ in sent} | {"op_status"} <= served and not served & set(meta["unsupported"])
    categories = {op["name"]: op["category"] for op in meta["ops"] if op["name"] in ops}
    assert categories == {name: ops[name]["category"] for name in categories}  # (URLab's, every op served)
    for name, fields in sent:
        reply = two.call(name, **fields)
        if reply.get("op") == "op_started":
            status = poll(two, reply["job_id"])
            missing = [key for key in ops["op_status"]["reply"] + ops["op_status"]["client_reads"]
                       if key not in status]
            assert not missing, ("op_status", missing)
            reply = status["result"]
        assert reply.get("op") == f"{name}_ok", reply
        missing = [key for key in ops[name]["reply"] + ops[name]["client_reads"] if key not in reply]
        if name == "begin_pie":
            assert reply["state"] == "ready"
        assert not missing, (name, missing)
        if ops[name]["required"]:
            assert two.call(name)["code"] == "missing_field"
    assert two.call("op_status")["code"] == "missing_field"


def test_a_leased_servers_simulation_is_stopped_only_by_its_holder(two):
    """stop_pie and begin_pie hand the simulation back (freerun): while another client
    holds the lease and steps it, that is refused as its set_mode would be."""
    holder = two.client
    assert holder.call("acquire_lease", ttl_s=60.0)["op"] == "acquire_lease_ok"
    assert holder.call("set_mode", mode="direct")["op"] == "set_mode_ok"
    other = WireClient(two.port)
    try:
        other.hello()
        for op in ("stop_pie", "begin_pie"):
            assert two.call(op, session_id=other.session_id)["code"] == "mode_locked_by_server"
        assert two.live is not None and holder.call("step", n_steps=2)["op"] == "step_ok"
        assert two.call("stop_pie")["was_running"] is True  # (the holder's)
    finally:
        other.close()


def test_editor_ops_need_no_session_and_work_while_stopped(two):
    """URLab's editor ops (outliner, scene, sim, debug, viewport) work without a
    session and with no simulation running, as its editor serves them without PIE."""
    bare = WireClient(two.port)  # (never said hello: no session_id)
    try:
        def call(op, **fields):
            return on_main_thread(lambda: bare.call(op, **fields))
        assert [a["actor_id"] for a in call("list_actors")["actors"]] == two.ids
        assert call("draw_marker", location=[0.0, 0.0, 1.0], color=[1.0, 0.0, 0.0], ttl=-1.0)["op"] == \
            "draw_marker_ok"
        assert call("stop_pie")["was_running"] is True
        assert call("step", n_steps=1)["code"] == "session_expired"  # (a session op still needs one)
        assert call("get_actor_bounds", target=two.ids[0])["op"] == "get_actor_bounds_ok"
        line = {"from": [0, 0, 0], "to": [0, 0, 1]}
        assert call("draw_line", **line, color=[0, 1, 0])["op"] == "draw_line_ok"
        assert call("clear_markers")["cleared"] == 2
        assert call("get_camera")["code"] == "no_viewport"  # (no window here: not a session error)
        assert call("begin_pie")["state"] == "ready"
    finally:
        bare.close()

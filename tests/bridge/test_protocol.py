"""The bridge against MuJoCo itself, through a client of the documented protocol:
the handshake's model, direct steps bit for bit, keyframe resets, puppet poses,
live stepping, the state stream, and the reply shapes URLab's client reads."""

import os
import shutil
import time

import mujoco
import numpy as np
import pytest
from bridge_fixtures import CORPUS, DESK_TOYS, humanoid_path

from mjblend.engine import commands

OBJ = mujoco.mjtObj


def load_mjb(blob: bytes) -> mujoco.MjModel:
    return mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": blob})


def test_hello_ships_the_served_model(serve):
    served = serve(humanoid_path())
    client = served.client(hello=False)
    reply = client.hello(observations="standard")
    assert reply["mujoco_version"] == mujoco.mj_versionString()
    assert reply["manager_present"] is True
    model = load_mjb(reply["mjb"])
    ours = served.host.session.model
    assert (model.nq, model.nv, model.nu, model.nbody) == (ours.nq, ours.nv, ours.nu, ours.nbody)
    assert np.array_equal(model.qpos0, ours.qpos0) and np.array_equal(model.body_mass, ours.body_mass)
    # one entity per model root, as a list of maps with a prefix its elements' names start with
    assert isinstance(reply["entities"], list) and [e["prefix"] for e in reply["entities"]] == ["Humanoid"]
    names = [mujoco.mj_id2name(model, OBJ.mjOBJ_JOINT, j) for j in range(model.njnt)]
    assert all(n.startswith("Humanoid_") for n in names)
    # without shared memory, nothing in the handshake makes URLab's client switch to it
    assert "shm_session_dir" not in reply and "host" not in reply.get("instance", {})


def test_meta_lists_the_ops(serve):
    client = serve(humanoid_path()).client()
    ops = {op["name"]: op for op in client.call("meta")["ops"]}
    for name in ("hello", "step", "reset", "forward", "set_mode", "set_paused", "set_sim_speed", "set_qpos",
                 "set_mocap_pose", "read_mocap_pose", "get_contacts", "list_keyframes", "set_sim_options",
                 "recording_start", "recording_stop", "recording_save", "replay_start"):
        assert name in ops
    assert ops["hello"]["category"] == "pre_session" and ops["step"]["category"] == "manager_required"


def test_direct_mode_is_mj_step_bit_for_bit(serve):
    served = serve(humanoid_path())
    client = served.client()
    model = load_mjb(client.hello()["mjb"])
    assert client.call("set_mode", mode="direct")["current_mode"] == "direct"
    data = mujoco.MjData(model)
    controls = np.random.default_rng(7).uniform(-1, 1, (1000, model.nu))
    for row in controls:
        reply = client.call("step", n_steps=1, per_articulation={"Humanoid": {"ctrl": row.tolist()}})
        data.ctrl[:] = row
        mujoco.mj_step(model, data)
    assert reply["op"] == "step_ok" and reply["step"] == 1000
    block = reply["arts"]["Humanoid"]
    assert np.array_equal(block["qpos"], data.qpos) and np.array_equal(block["qvel"], data.qvel)
    assert reply["time"] == data.time
    # several steps per request: the same as MuJoCo's nstep
    reply = client.call("step", n_steps=25, per_articulation={"Humanoid": {"ctrl": controls[0].tolist()}})
    data.ctrl[:] = controls[0]
    mujoco.mj_step(model, data, nstep=25)
    assert np.array_equal(reply["arts"]["Humanoid"]["qpos"], data.qpos)
    assert reply["per_articulation"] == reply["arts"]  # (the older docs' name too)


def test_stepped_vocabulary_is_answered_in_kind(serve):
    client = serve(humanoid_path()).client()
    reply = client.call("set_mode", mode="stepped")
    assert (reply["previous_mode"], reply["current_mode"]) == ("freerun", "stepped")
    reply = client.call("set_mode", mode="direct")
    assert (reply["previous_mode"], reply["current_mode"]) == ("direct", "direct")


def test_reset_to_a_named_keyframe(serve):
    served = serve(humanoid_path())
    client = served.client()
    model = load_mjb(client.hello()["mjb"])
    client.call("set_mode", mode="direct")
    client.call("step", n_steps=50)
    reply = client.call("reset", keyframe_name="squat")  # its name in the model root, or the compiled one
    assert reply["op"] == "reset_ok"
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, mujoco.mj_name2id(model, OBJ.mjOBJ_KEY, "Humanoid_squat"))
    mujoco.mj_forward(model, data)
    assert np.array_equal(reply["arts"]["Humanoid"]["qpos"], data.qpos)
    assert client.call("reset", keyframe_name="Humanoid_squat")["op"] == "reset_ok"
    # per-articulation joint overrides, then mj_forward
    reply = client.call("reset", per_articulation_qpos={"Humanoid": {"abdomen_y": 0.3}})
    j = mujoco.mj_name2id(model, OBJ.mjOBJ_JOINT, "Humanoid_abdomen_y")
    mujoco.mj_resetData(model, data)
    data.qpos[model.jnt_qposadr[j]] = 0.3
    assert np.array_equal(reply["arts"]["Humanoid"]["qpos"], data.qpos)


def test_puppet_state_comes_back_as_mj_kinematics(serve):
    served = serve(humanoid_path())
    client = served.client()
    model = load_mjb(client.hello()["mjb"])
    client.call("set_mode", mode="statepushed")
    data = mujoco.MjData(model)
    rng = np.random.default_rng(3)
    for _ in range(5):
        data.qpos[:] = model.qpos0 + rng.normal(0, 0.2, model.nq)
        data.qpos[3:7] /= np.linalg.norm(data.qpos[3:7])
        data.qvel[:] = rng.normal(0, 1, model.nv)
        reply = client.call("step", mode="statepushed", n_steps=0, qpos=data.qpos.tolist(),
                            qvel=data.qvel.tolist(), ctrl=[0.0] * model.nu, time=1.25, observations="full")
        mujoco.mj_kinematics(model, data)
        bodies = reply["arts"]["Humanoid"]["bodies"]
        for b in range(1, model.nbody):
            name = mujoco.mj_id2name(model, OBJ.mjOBJ_BODY, b)[len("Humanoid_"):]
            assert np.array_equal(bodies[name]["xpos"], data.xpos[b])
            assert np.array_equal(bodies[name]["xquat"], data.xquat[b])
        assert reply["time"] == 1.25
    # a puppet step without qpos, or in the wrong mode, changes nothing
    assert client.call("step", mode="statepushed")["code"] == "missing_field"
    assert client.call("step", mode="stepped")["code"] == "mode_mismatch"


def test_live_step_waits_for_new_snapshots(serve):
    served = serve(humanoid_path())
    client = served.client()
    assert client.call("set_mode", mode="live")["current_mode"] == "live"
    first = client.call("step", n_steps=1)["frame_id"]
    reply = client.call("step", n_steps=10)
    assert reply["op"] == "step_ok" and reply["frame_id"] >= first + 10
    assert reply["paused"] is False
    # paused, a live step answers at once with the state now
    client.call("set_paused", paused=True)
    start = time.perf_counter()
    paused = client.call("step", n_steps=10)
    assert paused["paused"] is True and time.perf_counter() - start < 1.0


def test_state_stream_delivers_every_snapshot_in_order(serve):
    served = serve(humanoid_path())
    client = served.client()
    client.call("set_mode", mode="direct")
    subscriber = served.subscriber()
    time.sleep(0.3)  # (a SUB only receives what is published after it joined)
    last = None
    for _ in range(200):
        last = client.call("step", n_steps=1)
    frames = []
    while True:
        got = subscriber.receive(500)
        if got is None:
            break
        topic, state = got
        assert topic == b"state/full" and state["op"] == "state_full"
        frames.append(state["frame_id"])
    assert frames and frames[-1] == last["frame_id"]
    assert np.all(np.diff(frames) == 1), "frame ids must increase by one, none dropped"
    assert len(frames) >= 200


def test_observation_levels(serve):
    client = serve(humanoid_path()).client()
    client.call("set_mode", mode="direct")
    minimal = client.call("step", observations="minimal")["arts"]["Humanoid"]
    assert set(minimal) == {"qpos", "qvel", "twist", "actions"}  # (URLab's twist at every level)
    standard = client.call("step", observations="standard")["arts"]["Humanoid"]
    assert {"ctrl", "act", "sensors"} <= set(standard) and "bodies" not in standard
    full = client.call("step", observations="full")["arts"]["Humanoid"]
    assert {"bodies", "actuator_forces"} <= set(full) and len(full["actuator_forces"]) == 21
    assert client.call("step", observations="everything")["code"] == "bad_value"


def test_free_bodies_mocap_contacts_and_options(serve):
    served = serve(DESK_TOYS)
    client = served.client()
    hello = client.hello()
    model = load_mjb(hello["mjb"])
    prefixes = [e["prefix"] for e in hello["entities"]]
    assert prefixes == ["desk_toys", "desk_toys_box", "desk_toys_ball", "desk_toys_dangler"]
    box = hello["entities"][1]
    assert box["has_free_base"] and box["qpos_offset"] == 0 and box["qvel_offset"] == 0
    client.call("set_mode", mode="direct")
    reply = client.call("step", n_steps=400)
    assert set(reply["scene"]) == {"desk_toys_box", "desk_toys_ball", "desk_toys_dangler"}
    # mocap: by the compiled name or the name in its root
    moved = client.call("set_mocap_pose", body="hand", pos=[0.1, -0.2, 0.5])
    assert moved["op"] == "set_mocap_pose_ok" and moved["pos"] == [0.1, -0.2, 0.5]
    assert client.call("read_mocap_pose", body="desk_toys_hand")["pos"] == [0.1, -0.2, 0.5]
    assert client.call("set_mocap_pose", body="box", pos=[0, 0, 1])["code"] == "not_mocap_body"
    assert client.call("set_mocap_pose", body="nobody", pos=[0, 0, 1])["code"] == "unknown_body"
    # contacts: the box and ball rest on the table after 0.8 s
    contacts = client.call("get_contacts", max_contacts=64)
    assert contacts["n_contacts"] > 0 and not contacts["truncated"]
    first = contacts["contacts"][0]
    assert len(first["force"]) == 6 and len(first["normal"]) == 3
    one = client.call("get_contacts", max_contacts=1)
    assert one["n_contacts"] == 1 and one["truncated"] == (contacts["n_contacts"] > 1)
    on_box = client.call("get_contacts", filter={"body2": "desk_toys_box"})
    assert all(c["body2"] == "desk_toys_box" for c in on_box["contacts"])
    # options: applied to the running model and echoed
    options = client.call("set_sim_options", options={"timestep": 0.001, "integrator": "rk4",
                                                      "gravity": [0, 0, -5]})
    assert options["options"]["timestep"] == 0.001 and options["options"]["integrator"] == "rk4"
    assert options["options"]["gravity"] == [0, 0, -5]
    assert served.host.session.model.opt.timestep == 0.001
    assert client.call("set_sim_options", options={"solver": "magic"})["code"] == "bad_value"
    assert served.host.session.model.opt.solver == model.opt.solver  # (nothing applied from a bad request)
    keys = client.call("list_keyframes")["keyframes"]
    assert [k["name"] for k in keys] == ["desk_toys_raised"] and len(keys[0]["qpos"]) == model.nq


def test_set_qpos_whole_or_free_base(serve):
    served = serve(humanoid_path())
    client = served.client()
    model = load_mjb(client.hello()["mjb"])
    client.call("set_mode", mode="direct")
    qpos = model.qpos0.copy()
    qpos[2] = 2.0
    reply = client.call("set_qpos", target="Humanoid", qpos=qpos.tolist())
    assert reply["op"] == "set_qpos_ok" and not reply["free_base_shortcut"]
    reply = client.call("set_qpos", target="Humanoid", qpos=[0, 0, 3, 1, 0, 0, 0])
    assert reply["free_base_shortcut"]
    assert client.call("forward")["arts"]["Humanoid"]["qpos"][2] == 3.0
    assert client.call("set_qpos", target="Humanoid", qpos=[0.0] * 5)["code"] == "dim_mismatch"


def test_recording_saves_what_was_stepped(serve, tmp_path):
    served = serve(humanoid_path())
    served.host._recordings = str(tmp_path)
    client = served.client()
    model = load_mjb(client.hello()["mjb"])
    client.call("set_mode", mode="direct")
    assert client.call("recording_start", name="walk")["op"] == "recording_start_ok"
    assert client.call("recording_start")["code"] == "recording_already_active"
    client.call("step", n_steps=30)
    stopped = client.call("recording_stop")
    assert stopped["frame_count"] == 31  # (the start, then one frame per step)
    saved = client.call("recording_save", path="walk.npz")
    assert saved["absolute_path"] == str(tmp_path / "walk.npz")
    archive = np.load(tmp_path / "walk.npz")
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=30)
    assert np.array_equal(archive["qpos"][-1], data.qpos)
    # a client names a file in the recordings folder, never a path elsewhere
    assert client.call("recording_save", path="/etc/passwd")["code"] == "path_not_writable"
    assert client.call("recording_save", path="../x.npz")["code"] == "path_not_writable"
    # replay: needs a stepped mode, plays the states back
    assert client.call("replay_load", path="walk.npz")["op"] == "replay_load_ok"
    assert "walk" in client.call("replay_list_sessions")["sessions"]
    client.call("set_mode", mode="statepushed")
    assert client.call("reset")["time"] == 0.0
    assert client.call("replay_start")["total_frames"] == 31
    deadline = time.perf_counter() + 10  # (31 frames of 5 ms, played at their own pace)
    while client.call("get_state")["time"] != data.time and time.perf_counter() < deadline:
        time.sleep(0.05)
    assert client.call("replay_stop")["op"] == "replay_stop_ok"
    assert np.array_equal(client.call("forward")["arts"]["Humanoid"]["qpos"], data.qpos)
    client.call("set_mode", mode="live")
    assert client.call("replay_start")["code"] == "replay_requires_stepped"


def test_puppet_reply_carries_the_mouse_springs_force(serve):
    """A body pulled in the viewport (the mouse spring, sent to the runner as Blender
    sends it) while a client pushes states: the reply says what the spring pulls
    with, as MuJoCo's mjv_applyPerturbForce computes it on the pushed state."""
    from mjblend.engine import commands
    from mjblend.engine.perturb import Grab

    served = serve(humanoid_path())
    client = served.client()
    model = load_mjb(client.hello()["mjb"])
    client.call("set_mode", mode="puppet")
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    push = dict(qpos=data.qpos.tolist(), qvel=data.qvel.tolist(), ctrl=[0.0] * model.nu, time=0.0)
    assert "perturbation" not in client.call("step", **push)
    torso = mujoco.mj_name2id(model, OBJ.mjOBJ_BODY, "Humanoid_torso")
    point = data.xpos[torso].copy()
    runner = served.host.runner()
    runner.send(commands.StartGrab(torso, tuple(point)))  # (what the viewport's Ctrl + drag sends)
    runner.send(commands.Drag(target=tuple(point + [0.0, 0.0, 0.3])))
    reply = client.call("step", **push)
    pulled = reply["perturbation"]
    assert pulled["body"] == "Humanoid_torso" and pulled["force"][2] > 0
    grab = Grab(model, data, torso, point)
    grab.move_to(point + [0.0, 0.0, 0.3])
    grab.apply(model, data)
    assert np.array_equal(pulled["xfrc_applied"], data.xfrc_applied[torso])



def test_stream_rate_sets_how_often_a_live_simulation_publishes(serve):
    """Bridge(stream_rate=...) (headless: --stream-rate): snapshots per second while
    the scene plays live (at most one per step: a 1 ms timestep here), every one
    streamed; the simulation's own rate comes back when the bridge stops."""
    from mjblend.engine.runner import PUBLISH_RATE

    served = serve(humanoid_path(), stream_rate=400)
    runner = served.host.runner()
    client = served.client()
    client.call("set_sim_options", options={"timestep": 0.001})
    assert abs(runner.interval - 1 / 400) < 1e-12
    subscriber = served.subscriber()
    time.sleep(0.3)
    client.call("set_mode", mode="live")
    start = runner.latest.frame
    time.sleep(1.0)
    client.call("set_mode", mode="direct")
    published = runner.latest.frame - start
    assert 250 <= published <= 460, published  # (~400 a second; a slow machine falls short, never over)
    frames = []
    while (got := subscriber.receive(300)) is not None:
        frames.append(got[1]["frame_id"])
    assert len(frames) >= published - 5 and np.all(np.diff(frames) == 1)
    client.call("set_mode", mode="live")  # (the bridge gives the simulation back, still playing)
    served.bridge.stop()
    assert runner.wait(runner.send(commands.Pause()), 5)
    assert abs(runner.interval - 1 / PUBLISH_RATE) < 1e-12


def test_include_assets_ships_the_model_as_mjcf_and_files(serve):
    """hello with include_assets (URLab's client asks when the mjb does not load, e.g.
    another MuJoCo version): the served model as MJCF with every asset file by bare
    name, and the files, compile to the served model."""
    franka = os.path.join(CORPUS, "menagerie", "franka_emika_panda", "scene.xml")
    if not os.path.exists(franka):
        pytest.skip("no corpus (../shared/corpus)")
    served = serve(franka)
    client = served.client(hello=False)
    reply = client.hello(include_assets=True)
    assets = reply["vfs_assets"]
    assert all("/" not in name for name in assets) and any(name.endswith(".stl") for name in assets)
    model = mujoco.MjModel.from_xml_string(reply["mjcf_compiled"], assets)
    ours = served.host.session.model
    assert (model.nq, model.nbody, model.ngeom, model.nmesh, model.nmeshvert) == \
        (ours.nq, ours.nbody, ours.ngeom, ours.nmesh, ours.nmeshvert)
    assert np.allclose(model.mesh_vert, ours.mesh_vert) and np.allclose(model.body_mass, ours.body_mass)


def test_include_assets_with_an_asset_gone_from_disk_says_which(serve, tmp_path):
    """A file the served model was loaded from, deleted since: URLab's path_not_readable,
    naming it; the session goes on."""
    drone = os.path.join(CORPUS, "menagerie", "skydio_x2")
    if not os.path.exists(drone):
        pytest.skip("no corpus (../shared/corpus)")
    folder = tmp_path / "skydio_x2"
    shutil.copytree(drone, folder)
    served = serve(str(folder / "scene.xml"))
    os.remove(folder / "assets" / "X2_lowpoly.obj")
    client = served.client(hello=False)
    reply = client.hello(include_assets=True)
    assert reply["op"] == "error" and reply["code"] == "path_not_readable", reply
    assert "X2_lowpoly.obj" in reply["message"]
    assert served.bridge.dispatcher.sessions == {}  # (a refused hello opens no session)
    assert client.hello()["op"] == "hello_ok"

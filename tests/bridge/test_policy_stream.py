"""What URLab's Python side reads of the bridge besides step replies, reproduced with
our own code: its policy tools' state reader (urlab_policy `_state_stream.py`: a SUB
on topic `state/full`, topic and msgpack frames, the newest snapshot's `arts` and
`scene` blocks) and its client's options mirror (`runtime.set_sim_options`: the
reply's `options` written into the client's own `model.opt`, so a puppet-mode
mj_step integrates as the server does)."""

import time

import msgpack
import mujoco
import numpy as np
import zmq
from bridge_fixtures import DESK_TOYS

# what URLab's client sends (runtime.set_sim_options), one of each kind
OPTIONS = {"timestep": 0.004, "gravity": [0.0, 0.5, -7.0], "wind": [1.0, 0.0, 0.0],
           "magnetic": [0.0, 1.0, 0.0], "density": 1.2, "viscosity": 0.01, "impratio": 2.0, "tolerance": 1e-7,
           "iterations": 33, "ls_iterations": 12, "integrator": "rk4", "cone": "elliptic", "solver": "cg",
           "noslip_iterations": 2, "noslip_tolerance": 1e-5, "ccd_iterations": 40, "ccd_tolerance": 1e-5,
           "enable_multiccd": True, "enable_sleep": True, "sleep_tolerance": 1e-3, "disableflags": 0,
           "enableflags": 0}
ENUMS = {"integrator": mujoco.mjtIntegrator, "cone": mujoco.mjtCone, "solver": mujoco.mjtSolver}


def mirror(opt, sent: dict, echoed: dict) -> None:
    """URLab's client: each option it sent, as the reply echoes it, into its model."""
    for key in sent:
        value = echoed[key]
        if key in ("gravity", "wind", "magnetic"):
            getattr(opt, key)[:] = value
        elif key in ENUMS:  # a suffix name ("rk4")
            members = ENUMS[key].__members__.items()
            (member,) = [m for name, m in members if name.split("_")[-1].lower() == value]
            setattr(opt, key, member)
        elif key in ("enableflags", "disableflags") or key.endswith("iterations"):
            setattr(opt, key, int(value))
        elif not isinstance(value, bool):
            setattr(opt, key, float(value))


def test_the_clients_options_mirror_equals_the_served_options(serve):
    served = serve(DESK_TOYS)
    client = served.client()
    local = mujoco.MjModel.from_xml_path(DESK_TOYS)
    reply = client.call("set_sim_options", options=OPTIONS)
    assert reply["op"] == "set_sim_options_ok", reply
    echoed = reply["options"]
    assert echoed["num_worker_threads"] == echoed["max_worker_threads"] == 0  # (as URLab's reply has them)
    assert isinstance(echoed["integrator"], str) and len(echoed["gravity"]) == 3
    mirror(local.opt, OPTIONS, echoed)
    ours = served.host.session.model.opt
    differ = [name for name in dir(ours) if not name.startswith("_")
              and not np.array_equal(np.asarray(getattr(ours, name)), np.asarray(getattr(local.opt, name)))]
    assert differ == []  # (enable_sleep / enable_multiccd reach it through the echoed enableflags)
    assert local.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 and local.opt.gravity[2] == -7.0


def test_the_policy_readers_snapshot_is_the_stepped_state(serve):
    served = serve(DESK_TOYS)
    client = served.client()
    assert client.call("set_mode", mode="stepped")["op"] == "set_mode_ok"
    context = zmq.Context()
    sub = context.socket(zmq.SUB)
    sub.connect(f"tcp://127.0.0.1:{served.state_port}")
    sub.setsockopt(zmq.SUBSCRIBE, b"state/full")
    sub.setsockopt(zmq.RCVTIMEO, 3000)
    try:
        time.sleep(0.3)  # (a SUB receives only what is published after it joined)
        reply = client.call("step", n_steps=5)
        snapshot = None
        while snapshot is None or snapshot["frame_id"] < reply["frame_id"]:  # its drain: the newest
            topic, payload = sub.recv(), sub.recv()
            snapshot = msgpack.unpackb(payload, raw=False, strict_map_key=False)
        assert topic == b"state/full" and snapshot["op"] == "state_full"
        assert snapshot["time"] == reply["time"] and set(snapshot["sim_time"]) == {"sec", "nsec"}
        assert set(snapshot["arts"]) == set(reply["arts"]) and snapshot["arts"]
        for prefix, block in snapshot["arts"].items():
            for key in ("qpos", "qvel", "ctrl", "act", "sensors"):
                assert key in block, (prefix, key)
            assert np.array_equal(np.asarray(block["qpos"], dtype=np.float64), reply["arts"][prefix]["qpos"])
        data = served.host.session.data
        box = snapshot["scene"]["desk_toys_box"]  # a free body: its pose, its free joint's state
        assert len(box["qpos"]) == 7 and len(box["qvel"]) == 6
        qpos = np.asarray(box["qpos"], dtype=np.float64)
        body = mujoco.mj_name2id(served.host.session.model, mujoco.mjtObj.mjOBJ_BODY, "desk_toys_box")
        assert np.array_equal(qpos[:3], data.xpos[body]) and np.array_equal(box["xquat"], data.xquat[body])
    finally:
        sub.close(linger=0)
        context.term()

"""URLab's controllers against a Blender scene (bpy module, real sockets and threads):
the PD controller configured over the bridge drives the scene's simulation bit for
bit as the same law written out around mj_step; with the control source "ui" the
actuators take what Blender's control sliders set (the object's `mujoco_ctrl`)."""

import os
import sys

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import ROOT
from helpers import CORPUS, free_port

sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))
from wire_client import WireClient  # noqa: E402

from mjblend.importer import build  # noqa: E402
from mjblend.live import bridge_host, scene_session  # noqa: E402

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
pytestmark = pytest.mark.skipif(not os.path.exists(HUMANOID), reason=f"no corpus at {CORPUS}")


@pytest.fixture
def client(clean_scene):
    build.import_file(HUMANOID, clean_scene)
    port = free_port()
    assert bpy.ops.mujoco.bridge_start(request_port=port, state_port=free_port()) == {"FINISHED"}
    client = WireClient(port)
    client.hello_reply = client.hello()
    yield client
    client.close()
    bridge_host.stop()
    scene_session.end_all()


def pd(model, data, actuators, targets, kp, kv, limit):
    """URLab's PD law by hand, in float32: target clamped to the joint's range."""
    f = np.float32
    for a, target in zip(actuators, targets, strict=True):
        joint = model.actuator_trnid[a, 0]
        target = f(target)
        if model.jnt_limited[joint]:
            target = min(max(target, f(model.jnt_range[joint, 0])), f(model.jnt_range[joint, 1]))
        q, qd = f(data.qpos[model.jnt_qposadr[joint]]), f(data.qvel[model.jnt_dofadr[joint]])
        data.ctrl[a] = min(max(f(kp) * (f(target) - q) - f(kv) * qd, -f(limit)), f(limit))


def test_a_pd_controller_drives_a_blender_scene_bit_for_bit(client):
    hello = client.hello_reply
    model = mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": hello["mjb"]})
    art = hello["articulations"][0]
    assert art["controller"]["kind"] == "pd" and art["default_control_mode"] == "raw"
    reply = client.call("configure_controller", articulation="Humanoid",
                        params={"default_kp": 2.0, "default_kv": 0.25, "default_torque_limit": 0.75})
    assert reply["op"] == "configure_controller_ok", reply
    client.call("set_mode", mode="direct")
    client.call("reset")
    targets = np.linspace(-0.5, 0.5, model.nu)
    reply = client.call("step", n_steps=60, per_articulation={"Humanoid": {"ctrl": targets.tolist()}})
    assert reply["op"] == "step_ok", reply

    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    for _ in range(60):
        pd(model, data, range(model.nu), targets, 2.0, 0.25, 0.75)
        mujoco.mj_step(model, data)
    arts = reply["arts"]["Humanoid"]
    assert np.array_equal(arts["qpos"], data.qpos) and np.array_equal(arts["ctrl"], data.ctrl)


def test_control_source_ui_gives_the_actuators_to_blenders_sliders(client):
    client.call("configure_controller", articulation="Humanoid", params={"default_kp": 2.0})
    client.call("set_mode", mode="direct")
    model = mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": client.hello_reply["mjb"]})
    client.call("step", n_steps=5, per_articulation={"Humanoid": {"ctrl": [0.2] * model.nu}})
    assert client.call("set_control_source", source="ui")["scope"] == "global"
    slider = next(obj for obj in bpy.context.scene.objects
                  if obj.mujoco.kind == "ACTUATOR" and obj.mujoco.name == "abdomen_y")
    slider.mujoco_ctrl = 0.4  # (what the controls panel's slider does)
    reply = client.call("step", n_steps=5, per_articulation={"Humanoid": {"ctrl": [0.9] * model.nu}})
    ctrl = reply["arts"]["Humanoid"]["ctrl"]
    assert ctrl[model.actuator("Humanoid_abdomen_y").id] == pytest.approx(0.4)
    assert 0.9 not in ctrl  # (the bridge's ctrl kept, not applied)
    assert client.call("set_control_source", source="zmq")["source"] == "zmq"
    ctrl = client.call("step", n_steps=1)["arts"]["Humanoid"]["ctrl"]
    assert ctrl[model.actuator("Humanoid_abdomen_y").id] != pytest.approx(0.4)  # (the PD drives again)

"""URLab's controllers over the bridge (bridge/controllers.py, engine/controllers.py):
the PD controller configured and holding a pose, computed by the runner before
every physics step and bit for bit what the same law computes by hand around
mj_step; bad params refused with nothing changed; the twist kept and returned;
the control source switched between the bridge and Blender's controls."""

import mujoco
import numpy as np
from bridge_fixtures import DESK_TOYS

from mjblend.engine import commands

# a fixed-base arm: two hinges and a slide a PD can drive (motors), and a site
# actuator it cannot (its value is written as sent)
ARM = """
<mujoco model="arm">
  <compiler angle="radian"/>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-2 2" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="fore" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" range="-0.5 2.5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.025"/>
        <body name="slider" pos="0.3 0 0">
          <joint name="reach" type="slide" axis="1 0 0" range="0 0.1"/>
          <geom type="sphere" size="0.03"/>
          <site name="tip"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="shoulder" joint="shoulder"/>
    <motor name="elbow" joint="elbow"/>
    <motor name="reach" joint="reach"/>
    <motor name="push" site="tip" gear="0 0 1 0 0 0"/>
  </actuator>
</mujoco>
"""
PD = ("shoulder", "elbow", "reach")  # the actuators the PD drives, in id order


def arm(serve, tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    served = serve(str(path))
    client = served.client()
    return served, client


def load_mjb(blob: bytes) -> mujoco.MjModel:
    return mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": blob})


def pd_by_hand(model, data, targets, kp, kv, limit):
    """URLab's UMjPDController::ComputeAndApply, written out (float32 as URLab's):
    the target clamped to the joint's range, kp * (target - q) - kv * qd, clamped."""
    out = []
    for i, name in enumerate(PD):
        joint = model.joint(f"arm_{name}")
        target = np.float32(targets[i])
        if joint.limited[0]:
            target = min(max(target, np.float32(joint.range[0])), np.float32(joint.range[1]))
        q = np.float32(data.qpos[joint.qposadr[0]])
        qd = np.float32(data.qvel[joint.dofadr[0]])
        torque = np.float32(kp[i]) * (np.float32(target) - q) - np.float32(kv[i]) * qd
        out.append(min(max(torque, -np.float32(limit[i])), np.float32(limit[i])))
    return out


def test_a_configured_pd_controller_holds_a_pose_bit_for_bit_as_by_hand(serve, tmp_path):
    served, client = arm(serve, tmp_path)
    hello = client.hello()
    block = hello["articulations"][0]
    # every articulation has URLab's PD controller, resting (raw) until configured
    assert block["default_control_mode"] == "raw" and block["controller"]["kind"] == "pd"
    params = block["controller"]["params"]
    assert params["kp"] == dict.fromkeys(PD, 100.0) and params["default_kv"] == 5.0
    assert set(block["controller"]["schema"]) == {"kp", "kv", "torque_limit", "default_kp", "default_kv",
                                                  "default_torque_limit"}

    reply = client.call("configure_controller", articulation="arm",
                        params={"kp": {"shoulder": 400.0, "elbow": 300.0}, "default_kv": 8.0,
                                "torque_limit": {"shoulder": 50.0}})
    assert reply["op"] == "configure_controller_ok" and reply["enabled"] is True
    got = reply["params"]
    assert got["kp"] == {"shoulder": 400.0, "elbow": 300.0, "reach": 100.0}
    assert got["kv"] == dict.fromkeys(PD, 8.0)  # (the joints not set follow the defaults)
    assert got["torque_limit"] == {"shoulder": 50.0, "elbow": 200.0, "reach": 200.0}
    assert client.hello()["articulations"][0]["default_control_mode"] == "ue_controller"
    kp, kv, limit = (400, 300, 100), (8, 8, 8), (50, 200, 200)

    client.call("set_mode", mode="direct")
    targets = [0.7, 1.2, 0.05]
    first = client.call("step", n_steps=200, per_articulation={
        "arm": {"ctrl": [*targets, 0.3], "control_mode": "ue_controller"}})
    held = client.call("step", n_steps=300)  # (no new targets: the controller holds these)
    assert first["op"] == held["op"] == "step_ok"

    model = load_mjb(hello["mjb"])
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    push = model.actuator("arm_push").id
    for step in range(500):
        data.ctrl[:3] = pd_by_hand(model, data, targets, kp, kv, limit)
        data.ctrl[push] = 0.3
        mujoco.mj_step(model, data)
        if step == 199:
            assert np.array_equal(first["arts"]["arm"]["qpos"], data.qpos)
            assert np.array_equal(first["arts"]["arm"]["ctrl"], data.ctrl)
    arts = held["arts"]["arm"]
    assert np.array_equal(arts["qpos"], data.qpos) and np.array_equal(arts["qvel"], data.qvel)
    assert np.array_equal(arts["ctrl"], data.ctrl)
    # and the pose is held: the joints sit at their targets
    assert np.abs(np.asarray(arts["qpos"]) - targets).max() < 0.02, arts["qpos"]
    assert np.abs(arts["qvel"]).max() < 0.05


def test_targets_clamped_to_the_joint_range_and_raw_writes_ctrl_as_sent(serve, tmp_path):
    served, client = arm(serve, tmp_path)
    client.call("set_mode", mode="direct")
    # not configured: ue_controller falls through to the raw path (URLab's without a controller)
    reply = client.call("step", per_articulation={"arm": {"ctrl": [0.1, 0.2, 0.3, 0.4],
                                                          "control_mode": "ue_controller"}})
    assert reply["arts"]["arm"]["ctrl"] == [0.1, 0.2, 0.3, 0.4]
    client.call("configure_controller", articulation="arm", params={"default_kp": 10.0})
    raw = {"ctrl": [0.5, 0.6, 0.7, 0.8], "control_mode": "raw"}
    reply = client.call("step", per_articulation={"arm": raw})
    assert reply["arts"]["arm"]["ctrl"] == [0.5, 0.6, 0.7, 0.8]
    before = reply["arts"]["arm"]
    # targets beyond the joints' ranges are clamped to them (the slide's range is 0 .. 0.1)
    reply = client.call("step", per_articulation={"arm": {"ctrl_map": {"shoulder": 5.0, "reach": 3.0}}})
    model = served.host.session.model
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = before["qpos"], before["qvel"]
    expected = pd_by_hand(model, data, [5.0, 0.6, 3.0], (10, 10, 10), (5, 5, 5), (200, 200, 200))
    assert reply["arts"]["arm"]["ctrl"] == [*map(float, expected), 0.8]


def test_bad_params_are_refused_and_nothing_changes(serve, tmp_path):
    served, client = arm(serve, tmp_path)
    before = client.call("configure_controller", articulation="arm", params={})
    assert before["op"] == "configure_controller_ok" and before["enabled"] is False  # ({} only reads)
    bad = [
        ({"articulation": "arm", "params": {"gain": 1.0}}, "controller_schema_violation"),
        ({"articulation": "arm", "params": {"kp": 5.0}}, "controller_schema_violation"),
        ({"articulation": "arm", "params": {"kp": {"shoulder": -1.0}}}, "controller_schema_violation"),
        ({"articulation": "arm", "params": {"kp": {"shoulder": True}}}, "controller_schema_violation"),
        ({"articulation": "arm", "params": {"kp": {"push": 10.0}}}, "controller_schema_violation"),
        ({"articulation": "arm", "params": {"kp": {"elbow": 10.0}, "default_kv": "x"}},
         "controller_schema_violation"),
        ({"articulation": "arm", "params": [1, 2]}, "controller_schema_violation"),
        ({"articulation": "leg", "params": {"default_kp": 1.0}}, "unknown_articulation"),
        ({"articulation": "arm"}, "missing_field"),
    ]
    for fields, code in bad:
        reply = client.call("configure_controller", **fields)
        assert reply.get("code") == code, (fields, reply)
    after = client.call("configure_controller", articulation="arm", params={})
    assert after["params"] == before["params"] and after["enabled"] is False
    # a bad control mode: the step is refused, nothing stepped
    client.call("set_mode", mode="direct")
    time = client.call("get_state")["time"]
    reply = client.call("step", per_articulation={"arm": {"ctrl": [0, 0, 0, 0], "control_mode": "pid"}})
    assert reply["code"] == "bad_value" and client.call("get_state")["time"] == time


def test_an_articulation_without_joint_actuators_has_no_controller(serve):
    served = serve(DESK_TOYS)
    client = served.client()
    hello = client.hello()
    props = [e for e in hello["entities"] if e["kind"] == "body"]
    assert props and all("controller" not in e for e in props)
    reply = client.call("configure_controller", articulation=props[0]["prefix"], params={"default_kp": 1.0})
    assert reply["code"] == "unknown_articulation"  # (a prop is no articulation, as URLab's)


def test_twist_kept_and_returned_in_observations(serve, tmp_path):
    served, client = arm(serve, tmp_path)
    reply = client.call("set_twist", articulation="arm", linear=[0.4, 0.2, 9.0], angular=[1.0, 2.0, 0.5])
    # URLab's twist: linear x, y and angular z (float), the other slots zero
    assert reply["linear"] == [float(np.float32(0.4)), float(np.float32(0.2)), 0.0]
    assert reply["angular"] == [0.0, 0.0, 0.5]
    client.call("set_mode", mode="direct")
    for level in ("minimal", "standard", "full"):
        arts = client.call("step", observations=level)["arts"]["arm"]
        assert arts["twist"] == {"linear": reply["linear"], "angular": reply["angular"]}
        assert arts["actions"] == 0
    assert client.call("set_twist", articulation="leg")["code"] == "unknown_articulation"
    assert client.call("set_twist", articulation="arm", linear=["fast"])["code"] == "bad_value"
    assert client.call("set_twist", articulation="arm", angular=[0, 0, 1, 2])["code"] == "bad_value"
    assert client.call("get_state")["arts"]["arm"]["twist"]["angular"] == [0.0, 0.0, 0.5]  # (unchanged)


def test_control_source_switches_between_the_bridge_and_blenders_controls(serve, tmp_path):
    served, client = arm(serve, tmp_path)
    client.call("configure_controller", articulation="arm", params={"default_kp": 50.0})
    client.call("set_mode", mode="direct")
    client.call("step", n_steps=10, per_articulation={"arm": {"ctrl": [0.5, 0.5, 0.05, 0.0]}})

    reply = client.call("set_control_source", source="ui")
    assert reply == {"op": "set_control_source_ok", "source": "ui", "scope": "global"}
    # Blender's controls panel sets an actuator's control (commands.SetControl, as its slider does);
    # the bridge's ctrl is kept but not applied, and the PD controller rests
    served.host.runner().send(commands.SetControl(0, 0.25))
    resting = client.call("step", n_steps=5, per_articulation={"arm": {"ctrl": [1.0, 1.0, 0.1, 9.0]}})
    ctrl = resting["arts"]["arm"]["ctrl"]
    assert ctrl[0] == 0.25 and ctrl[3] == 0.0
    again = client.call("step", n_steps=5)["arts"]["arm"]["ctrl"]
    assert again == ctrl  # (nothing computes commands while Blender's controls drive)

    reply = client.call("set_control_source", source="ZMQ", articulation="arm")
    assert (reply["source"], reply["scope"], reply["articulation"]) == ("zmq", "articulation", "arm")
    # the bridge's again: the controller drives to the targets sent meanwhile (kept, as URLab keeps them)
    state = client.call("get_state")["arts"]["arm"]
    stepped = client.call("step", n_steps=1)["arts"]["arm"]
    model = served.host.session.model
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = state["qpos"], state["qvel"]
    expected = pd_by_hand(model, data, [1.0, 1.0, 0.1], (50, 50, 50), (5, 5, 5), (200, 200, 200))
    assert stepped["ctrl"][:3] == list(map(float, expected))

    assert client.call("set_control_source", source="keyboard")["code"] == "bad_value"
    unknown = client.call("set_control_source", source="ui", articulation="leg")
    assert unknown["code"] == "unknown_articulation"
    assert client.call("set_control_source")["code"] == "missing_field"


def test_the_controller_runs_every_physics_step_while_the_scene_plays(serve, tmp_path):
    """Live mode: the runner's own physics thread applies the law (no client steps)."""
    served, client = arm(serve, tmp_path)
    client.call("configure_controller", articulation="arm", params={"default_kp": 300.0, "default_kv": 10.0})
    client.call("set_mode", mode="live")
    client.call("step", n_steps=0, per_articulation={"arm": {"ctrl": [-0.4, 0.9, 0.02, 0.0]}})
    reply = client.call("step", n_steps=1)
    while reply["time"] < 1.0:  # (a second of simulated time, however long it takes here)
        reply = client.call("step", n_steps=1)
    qpos = np.asarray(reply["arts"]["arm"]["qpos"])
    assert np.abs(qpos - [-0.4, 0.9, 0.02]).max() < 0.03, qpos
    # new gains while it runs (and while paused: answered at once, the law swapped between steps)
    client.call("set_paused", paused=True)
    reply = client.call("configure_controller", articulation="arm", params={"kp": {"shoulder": 0.0}})
    assert reply["op"] == "configure_controller_ok" and reply["params"]["kp"]["shoulder"] == 0.0
    assert served.host.session.laws["arm"].kp[0] == 0.0

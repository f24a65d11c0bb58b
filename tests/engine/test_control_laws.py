"""engine/controllers.py: a control law the runner applies before every physics step,
whatever steps (Blender's Step, live play), bit for bit the law written out by
hand around mj_step; dropped with a recompiled model. Real MuJoCo, no bpy."""

import mujoco
import numpy as np

from mjblend.engine import commands
from mjblend.engine.controllers import PDLaw, bindable
from mjblend.engine.runner import Runner
from mjblend.engine.session import EngineSession

MODEL = """
<mujoco>
  <compiler angle="radian"/>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" axis="0 1 0" range="-1 1" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
      <body name="tip" pos=".5 0 0">
        <joint name="free_hinge" axis="0 1 0"/>
        <geom type="sphere" size=".05"/>
        <site name="s"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="site" site="s" gear="0 0 1 0 0 0"/>
    <motor name="free_hinge" joint="free_hinge"/>
    <motor name="hinge" joint="hinge"/>
  </actuator>
</mujoco>
"""


def law(model, targets):
    actuators, joints = bindable(model, range(model.nu))
    return PDLaw.of(model, actuators, joints, [40.0, 30.0], [2.0, 1.5], [5.0, 100.0], targets)


def test_bindable_actuators_are_joint_transmissions_in_id_order():
    model = mujoco.MjModel.from_xml_string(MODEL)
    actuators, joints = bindable(model, [2, 0, 1])
    assert actuators.tolist() == [1, 2] and joints.tolist() == [1, 0]


def test_the_law_acts_before_every_step_bit_for_bit_and_goes_with_a_recompile():
    model = mujoco.MjModel.from_xml_string(MODEL)
    run = Runner(EngineSession(model))
    # actuator 1 drives the free hinge (no range) to 3.0; actuator 2 the hinge to 1.7, clamped to its range
    run.send(commands.SetLaws({"arm": law(model, [3.0, 1.7])}))
    run.send(commands.Step(250))  # (Blender's Step: in chunks, the law before each single step)

    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    f = np.float32
    for _ in range(250):
        for actuator, joint, kp, kv, limit, target in ((1, 1, 40, 2, 5, 3.0), (2, 0, 30, 1.5, 100, 1.0)):
            torque = f(kp) * (f(target) - f(data.qpos[joint])) - f(kv) * f(data.qvel[joint])
            data.ctrl[actuator] = min(max(torque, -f(limit)), f(limit))
        mujoco.mj_step(model, data)
    session = run.session
    assert np.array_equal(session.data.qpos, data.qpos) and np.array_equal(session.data.ctrl, data.ctrl)
    assert abs(session.data.ctrl[1]) == 5.0  # (clamped to its torque limit)

    run.send(commands.Replace(mujoco.MjModel.from_xml_string(MODEL), {}))
    assert run.session.laws == {}  # (a law indexes the old model's actuators)
    ctrl = run.session.data.ctrl.copy()
    run.send(commands.Step(3))
    assert np.array_equal(run.session.data.ctrl, ctrl)


def test_a_law_removed_stops_acting():
    model = mujoco.MjModel.from_xml_string(MODEL)
    run = Runner(EngineSession(model))
    run.send(commands.SetLaws({"arm": law(model, [0.5, 0.0])}))
    run.send(commands.Step(5))
    run.send(commands.SetLaws({"arm": None}))
    run.send(commands.SetControls(np.zeros(3)))
    run.send(commands.Step(5))
    assert run.session.laws == {} and not run.session.data.ctrl.any()

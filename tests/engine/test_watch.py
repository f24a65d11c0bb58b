"""engine/watch.py and the runner's Watch (simulate's Watch section): the watched values
a snapshot carries equal MuJoCo's own MjData, stepped alongside with plain `mj_step`
(and the kinematics the runner computes before each snapshot), bit for bit; bad
fields and indices read as simulate's texts; a recompile re-reads the fields by name.
Real MuJoCo, no bpy."""

import copy
import os

import mujoco
import numpy as np
from helpers import CORPUS, needs_corpus

from mjblend.engine import commands as cmd, watch
from mjblend.engine.runner import Runner
from mjblend.engine.session import EngineSession

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
ARM = """
<mujoco>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body name="arm" pos="0 0 .5"><joint name="hinge" axis="0 1 0" range="-1 1" limited="true"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/></body>
    <body name="ball" pos=".3 .3 .2"><freejoint/><geom size=".05"/></body>
  </worldbody>
  <actuator><motor name="motor" joint="hinge"/></actuator>
  <sensor><jointpos name="angle" joint="hinge"/><jointvel name="speed" joint="hinge"/></sensor>
</mujoco>
"""


def _kinematics(model, data):
    """What the runner computes before each snapshot (EngineSession.kinematics)."""
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    if model.ntendon:
        mujoco.mj_tendon(model, data)


def _run(model, items, steps, ctrl):
    runner = Runner(EngineSession(model), threaded=False)
    reference = copy.copy(runner.session.data)
    runner.send(cmd.Watch(watch.Request(items)))
    for i, value in enumerate(ctrl):
        runner.send(cmd.SetControl(i, value))
    reference.ctrl[:] = ctrl
    runner.send(cmd.Step(steps))
    for _ in range(steps):
        mujoco.mj_step(model, reference)
    _kinematics(model, reference)
    return runner, reference


def _check(values, reference, items):
    assert len(values) == len(items)
    for (field, index), value in zip(items, values, strict=True):
        expected = getattr(reference, field).reshape(-1)[index]
        assert isinstance(value, float)
        assert np.float64(value).tobytes() == np.float64(expected).tobytes(), (field, index)


@needs_corpus
def test_watched_humanoid_fields_equal_mujoco_bit_for_bit():
    model = mujoco.MjModel.from_xml_path(HUMANOID)
    items = (("qpos", 2), ("xpos", 3 * 5 + 1), ("efc_force", 0), ("qfrc_actuator", model.nv - 1),
             ("qvel", 7), ("cfrc_ext", 6 * 4 + 5), ("actuator_force", 3))
    ctrl = np.linspace(-0.4, 0.4, model.nu)
    runner, reference = _run(model, items, 120, ctrl)
    shot = runner.latest
    assert reference.nefc > 0 and reference.ncon > 0  # (on the floor: efc_force[0] is a real force)
    _check(shot.watch, reference, items)
    assert shot.watch[3] != 0.0 and shot.watch[2] != 0.0
    # live: more steps, new values, still MuJoCo's
    runner.send(cmd.Step(30))
    for _ in range(30):
        mujoco.mj_step(model, reference)
    _kinematics(model, reference)
    assert runner.latest.watch[0] != shot.watch[0]
    _check(runner.latest.watch, reference, items)


def test_sensordata_and_simulate_texts():
    model = mujoco.MjModel.from_xml_string(ARM)
    items = (("sensordata", 0), ("sensordata", 1), ("sensordata", 2), ("sensordata", -1), ("qpos", 1),
             ("nope", 0), ("ncon", 0), ("", 0), ("energy", 1))
    runner, reference = _run(model, items, 50, [0.7])
    shot = runner.latest
    _check(shot.watch[:2] + shot.watch[4:5], reference, items[:2] + items[4:5])
    assert shot.watch[0] != 0.0
    assert shot.watch[2:4] == (watch.INVALID_INDEX, watch.INVALID_INDEX)  # 2 sensor values: 0-1
    assert shot.watch[5:8] == (watch.INVALID_FIELD,) * 3  # (ncon is an int: not an mjtNum array)
    assert shot.watch[8] == 0.0  # energy is there (zero without the energy flag)
    # simulate prints "%g"
    assert watch.text(shot.watch[0]) == "%g" % reference.sensordata[0]
    assert watch.text(watch.INVALID_FIELD) == "invalid field"
    assert {"qpos", "xpos", "efc_force", "sensordata", "qfrc_actuator", "cfrc_ext"} <= watch.fields()
    assert not {"ncon", "nefc", "contact", "solver_niter", "time"} & watch.fields()


def test_a_recompile_rereads_the_fields_by_name():
    model = mujoco.MjModel.from_xml_string(ARM)
    items = (("qpos", 7), ("sensordata", 1), ("xpos", 3 * 2 + 2))  # the ball's qw; speed; the ball's z
    runner, _reference = _run(model, items, 20, [0.3])
    assert all(isinstance(v, float) for v in runner.latest.watch)
    smaller = mujoco.MjModel.from_xml_string(ARM.replace('<body name="ball" pos=".3 .3 .2"><freejoint/>'
                                                         '<geom size=".05"/></body>', "")
                                             .replace('<jointvel name="speed" joint="hinge"/>', ""))
    runner.send(cmd.Replace(smaller, {}))
    shot = runner.latest
    assert shot.model is smaller
    assert shot.watch == (watch.INVALID_INDEX,) * 3  # (1 qpos, 1 sensor, 2 bodies now)
    runner.send(cmd.Watch(watch.Request((("qpos", 0), ("sensordata", 0)))))
    data = runner.session.data
    assert runner.latest.watch == (float(data.qpos[0]), float(data.sensordata[0]))

"""The Joints panel's sliders (Object.mujoco_qpos), MuJoCo simulate's Joint section: a
hinge or slide joint set while paused leaves the state MuJoCo's (qpos edited, velocities
kept, mj_forward), and play / step go on from it as MuJoCo's own loop would, bit for bit;
a limited joint clamps to its range; playing, the slider changes nothing. Also the control
noise's scene settings reach the running simulation. Real bpy module, real MuJoCo."""

import bpy
import mujoco
import numpy as np
import pytest

from mjblend.engine.session import STATE
from mjblend.importer import build
from mjblend.live import scene_session

MODEL = """
<mujoco>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" axis="0 1 0" damping=".05"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
      <body name="forearm" pos=".5 0 0">
        <joint name="elbow" axis="0 1 0" range="-60 60"/>
        <geom type="capsule" fromto="0 0 0 .4 0 0" size=".04"/>
        <body name="hand" pos=".4 0 0">
          <joint name="reach" type="slide" axis="1 0 0" range="-.1 .1" damping="2"/>
          <geom type="sphere" size=".05"/>
          <site name="tip"/>
        </body>
      </body>
    </body>
    <body name="ball" pos="1 0 .3">
      <freejoint/>
      <geom type="sphere" size=".1"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="shoulder" joint="shoulder" ctrlrange="-1 1"/>
    <motor name="elbow" joint="elbow"/>
  </actuator>
  <sensor>
    <framepos objtype="site" objname="tip"/>
    <jointpos joint="elbow"/>
  </sensor>
</mujoco>
"""


@pytest.fixture
def arm(clean_scene, tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(MODEL)
    build.import_file(str(path), clean_scene)
    running = scene_session.start_simulation(clean_scene)  # (inline: the bpy module)
    yield running
    scene_session.end_all()


def joint(name):
    return next(o for o in bpy.context.scene.objects if o.mujoco.kind == "JOINT" and o.mujoco.name == name)


def state(model, data):
    out = np.empty(mujoco.mj_stateSize(model, STATE))
    mujoco.mj_getState(model, data, out, STATE)
    return out


def reference(running, steps):
    """MuJoCo's own MjData of the running model after `steps` steps from its reset."""
    model = running.model
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    mujoco.mj_step(model, data, nstep=steps)
    return model, data


def test_a_joint_set_while_paused_is_mj_forward_of_the_edited_qpos_and_play_goes_on_as_mujoco(arm):
    arm.step(150)  # (moving: velocities the edit must keep)
    model, data = reference(arm, 150)
    assert np.array_equal(arm.session.data.qvel, data.qvel) and np.abs(data.qvel).max() > 0
    elbow = joint("elbow")
    elbow.mujoco_qpos = 0.3
    value = float(np.float32(0.3))  # (a Blender FloatProperty is single precision: what the slider sets)
    adr = model.joint("elbow").qposadr[0]
    data.qpos[adr] = value  # simulate's slider: qpos written, then mj_forward (main.cc, paused)
    mujoco.mj_forward(model, data)
    shot, live = arm.latest, arm.session.data
    assert elbow.mujoco_qpos == value and live.qpos[adr] == value
    for name in ("qpos", "qvel", "sensordata"):
        assert np.array_equal(getattr(shot, name), getattr(data, name)), name
    for name in ("xpos", "xquat", "qacc", "sensordata", "actuator_force"):
        assert np.array_equal(getattr(live, name), getattr(data, name)), name
    # play / step from there: MuJoCo's own loop from the edited state
    arm.step(200)
    mujoco.mj_step(model, data, nstep=200)
    assert np.array_equal(state(model, arm.session.data), state(model, data))


def test_a_limited_joint_clamps_to_its_range_an_unlimited_one_does_not(arm):
    model = arm.model
    elbow, reach, shoulder = joint("elbow"), joint("reach"), joint("shoulder")
    elbow.mujoco_qpos = 5.0
    reach.mujoco_qpos = -1.0
    shoulder.mujoco_qpos = 4.0  # (no range: simulate's slider would stop at pi; MuJoCo takes any)
    qpos = arm.session.data.qpos
    assert qpos[model.joint("elbow").qposadr[0]] == model.jnt_range[model.joint("elbow").id, 1]
    assert qpos[model.joint("reach").qposadr[0]] == model.jnt_range[model.joint("reach").id, 0]
    assert qpos[model.joint("shoulder").qposadr[0]] == 4.0
    assert elbow.mujoco_qpos == np.float32(np.radians(60))


def test_playing_the_slider_changes_nothing(arm):
    arm.play()
    assert arm.runner.playing
    before = arm.session.data.qpos.copy()
    joint("elbow").mujoco_qpos = 0.5
    assert np.array_equal(arm.session.data.qpos, before)
    arm.pause()


def test_the_scenes_noise_settings_reach_the_simulation_and_scale_0_is_none(arm):
    settings = bpy.context.scene.mujoco_simulation
    settings.noise_seed = 3
    settings.noise_rate = 0.2
    settings.noise_scale = 0.4
    assert arm.session.noise_settings == (pytest.approx(0.4), pytest.approx(0.2), 3)
    model = arm.model
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    start = state(model, arm.session.data)
    assert np.array_equal(start, state(model, data))
    arm.step(50)
    assert not np.array_equal(state(model, arm.session.data), state(model, reference(arm, 50)[1]))
    assert np.abs(arm.session.data.ctrl).max() > 0
    settings.noise_scale = 0.0
    assert arm.session._noise is None

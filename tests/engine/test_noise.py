"""engine/controllers.Noise and EngineSession.set_noise: MuJoCo simulate's control noise
(Simulate::InjectNoise, simulate.cc) before every step, against simulate's loop written
out by hand (scalar Python, one actuator at a time, the same normals) around mj_step, bit
for bit; scale 0 leaves the simulation (and its nstep fast path) exactly as without noise.
Real MuJoCo, no bpy."""

import math

import mujoco
import numpy as np
import pytest

from mjblend.engine import commands
from mjblend.engine.runner import Runner
from mjblend.engine.session import STATE, EngineSession

MODEL = """
<mujoco>
  <option timestep="{timestep}"/>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
      <body name="tip" pos=".5 0 0">
        <joint name="slide" type="slide" axis="1 0 0" range="-.2 .2" damping="1"/>
        <geom type="sphere" size=".05"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="free" joint="hinge"/>
    <motor name="limited" joint="slide" ctrlrange="{low} 3"/>
    <position name="limited_position" joint="hinge" kp="5" ctrlrange="-1 .5"/>
  </actuator>
  <keyframe>
    <key name="held" qpos=".3 .1" ctrl=".4 -.5 .25"/>
  </keyframe>
</mujoco>
"""


def model(timestep=0.002, low=-2):
    return mujoco.MjModel.from_xml_string(MODEL.format(timestep=timestep, low=low))


def simulate_noise(m, d, std, noise_rate, key, normal):
    """Simulate::InjectNoise, line by line (mju_exp, mju_sqrt: C's exp, sqrt, as
    Python's math; the normals from `normal()`)."""
    if std <= 0:
        return
    rate = math.exp(-m.opt.timestep / noise_rate) if noise_rate else 0.0  # (C: exp(-inf) = 0)
    scale = std * math.sqrt(1 - rate * rate)
    for i in range(m.nu):
        bottom = top = midpoint = 0.0
        halfrange = 1.0
        if m.actuator_ctrllimited[i]:
            bottom = float(m.actuator_ctrlrange[i, 0])
            top = float(m.actuator_ctrlrange[i, 1])
            midpoint = 0.5 * (top + bottom)
            halfrange = 0.5 * (top - bottom)
        if key >= 0:
            midpoint = float(m.key_ctrl[key, i])
        ctrl = rate * float(d.ctrl[i]) + (1 - rate) * midpoint
        ctrl += scale * halfrange * normal()
        if m.actuator_ctrllimited[i]:
            ctrl = bottom if ctrl < bottom else top if ctrl > top else ctrl  # mju_clip
        d.ctrl[i] = ctrl


def reference(m, key, std, noise_rate, seed, steps, d=None, generator=None):
    """(MjData after `steps` of simulate's loop, the ctrl applied before each step, the generator)."""
    if d is None:
        d = mujoco.MjData(m)
        if key >= 0:
            mujoco.mj_resetDataKeyframe(m, d, key)
        mujoco.mj_forward(m, d)
    generator = generator or np.random.Generator(np.random.PCG64(seed))
    applied = []
    for _ in range(steps):
        simulate_noise(m, d, std, noise_rate, key, generator.standard_normal)
        applied.append(d.ctrl.copy())
        mujoco.mj_step(m, d)
    return d, np.array(applied), generator


def state(m, d):
    out = np.empty(mujoco.mj_stateSize(m, STATE))
    mujoco.mj_getState(m, d, out, STATE)
    return out


@pytest.mark.parametrize("key, std, noise_rate, low", [
    (-1, 0.3, 0.5, -2),  # ctrlrange midpoints (0.5 and -0.25), an unlimited motor around 0
    (0, 0.8, 0.05, -2),  # the keyframe's ctrl the midpoints; clipping at the range often
    (-1, 0.2, 0.0, -1),  # rate 0: exp(-inf) = 0, white noise around the midpoints
])
def test_each_steps_controls_are_simulates_bit_for_bit(key, std, noise_rate, low):
    m = model(low=low)
    session = EngineSession(m, keyframe=key)
    session.set_noise(std, noise_rate, 1234)
    d, applied, _ = reference(m, key, std, noise_rate, 1234, 300)
    for step in range(300):  # (one step at a time: the ctrl each step was given)
        session.step(1)
        np.testing.assert_array_equal(session.data.ctrl, applied[step])
    assert np.array_equal(state(m, session.data), state(m, d))
    low_, high = m.actuator_ctrlrange[1]
    assert (applied[:, 1] >= low_).all() and (applied[:, 1] <= high).all()
    assert len(np.unique(applied[:, 0])) == 300  # (noise on the unlimited motor too)
    if std > 0.5:  # (a wide noise: the clipping at the ranges was exercised)
        assert np.isin(applied[:, 1:], m.actuator_ctrlrange[1:]).any()


def test_a_runner_step_batch_equals_simulates_loop_and_a_reset_repeats_the_run():
    m = model()
    run = Runner(EngineSession(m))
    run.send(commands.SetNoise(0.5, 0.2, 7))
    run.send(commands.Step(500))  # (chunks of steps: the noise on every one)
    d, _, _ = reference(m, -1, 0.5, 0.2, 7, 500)
    assert np.array_equal(state(m, run.session.data), state(m, d))
    run.send(commands.Reset())
    run.send(commands.Step(500))
    assert np.array_equal(state(m, run.session.data), state(m, d))


def test_zero_scale_is_the_simulation_without_noise_on_the_nstep_fast_path(monkeypatch):
    m = model()
    quiet, noisy = EngineSession(m), EngineSession(m)
    for session in (quiet, noisy):
        session.data.ctrl[:] = (0.3, 1.0, -0.5)
    noisy.set_noise(0.0, 0.5, 99)
    calls = []
    real_step = mujoco.mj_step

    def counted(*args, **kwargs):  # (MuJoCo's own step, counted)
        calls.append(kwargs.get("nstep", 1))
        return real_step(*args, **kwargs)
    monkeypatch.setattr(mujoco, "mj_step", counted)
    quiet.step(1000)
    noisy.step(1000)
    # (chunk sizes follow measured step costs: the batches differ, their steps not)
    assert sum(calls) == 2000 and len(calls) < 200  # batches of nstep steps, not one call a step
    assert np.array_equal(state(m, noisy.data), state(m, quiet.data))
    np.testing.assert_array_equal(noisy.data.ctrl, (0.3, 1.0, -0.5))


def test_a_recompile_keeps_the_noise_with_the_new_models_ranges_and_the_draws_going_on():
    m = model()
    session = EngineSession(m, ids={"a": ("actuator", 0), "b": ("actuator", 1), "c": ("actuator", 2),
                                    "h": ("joint", 0), "s": ("joint", 1)})
    session.set_noise(0.4, 0.1, 5)
    session.step(100)
    d, _, generator = reference(m, -1, 0.4, 0.1, 5, 100)
    assert np.array_equal(state(m, session.data), state(m, d))
    wider = model(timestep=0.001, low=-3)
    session.replace(wider, dict(session.ids))
    d2 = mujoco.MjData(wider)
    mujoco.mj_setState(wider, d2, state(m, d), STATE)
    mujoco.mj_forward(wider, d2)
    session.step(100)
    d2, _, _ = reference(wider, -1, 0.4, 0.1, 5, 100, d2, generator)
    assert np.array_equal(state(wider, session.data), state(wider, d2))


def test_a_model_without_actuators_has_no_noise_until_a_recompile_gives_it_some():
    bare = mujoco.MjModel.from_xml_string("<mujoco><worldbody><body><freejoint/><geom size='.1'/>"
                                          "</body></worldbody></mujoco>")
    session = EngineSession(bare)
    session.set_noise(0.5, 0.1, 2)
    assert session._noise is None  # (nothing to add noise to: the nstep fast path stays)
    m = model()
    session.replace(m, {})
    session.step(20)
    d, _, _ = reference(m, -1, 0.5, 0.1, 2, 20, d=_started(m, 0.0))
    assert np.array_equal(state(m, session.data), state(m, d)) and np.abs(d.ctrl).max() > 0


def _started(m, time):
    d = mujoco.MjData(m)
    d.time = time
    mujoco.mj_forward(m, d)
    return d


@pytest.mark.parametrize("scale, rate", [(-0.1, 1), (math.nan, 1), (0.5, -1), (0.5, math.inf)])
def test_values_simulate_does_not_allow_are_refused_and_change_nothing(scale, rate):
    session = EngineSession(model())
    session.set_noise(0.3, 0.5, 1)
    with pytest.raises(ValueError):
        session.set_noise(scale, rate, 2)
    assert session.noise_settings == (0.3, 0.5, 1)

"""Hostile input to the engine (issue 16): durations and timesteps that cannot be
stepped are refused before a step runs, a long Step is cancelled at a step
boundary, divergence is reported at the time it happened and only for the run
that diverged. MuJoCo and numpy only."""

import math
import time

import mujoco
import numpy as np
import pytest

from mjblend.engine import commands as cmd
from mjblend.engine.runner import Runner
from mjblend.engine.session import EngineSession, TooManySteps, check_timestep, steps_for

BALL = """<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="5 5 .1"/>
  <body pos="0 0 1"><freejoint/><geom size=".1"/></body></worldbody></mujoco>"""

# A hinge with slightly negative damping, started turning: it speeds up until MuJoCo
# finds its qpos huge at t = 88.80 s (step 8881) and resets the state to qpos0, at rest,
# which is stable: a later run does not diverge.
UNSTABLE = """<mujoco><option timestep="0.01"/><worldbody><body>
  <joint name="j" axis="0 0 1" damping="-0.001"/>
  <geom type="capsule" fromto="0 0 0 .3 0 0" size=".1" mass="0.1"/></body></worldbody>
  <keyframe><key qvel="1"/></keyframe></mujoco>"""


def ball(timestep=None):
    model = mujoco.MjModel.from_xml_string(BALL)
    if timestep is not None:
        model.opt.timestep = timestep
    return model


def first_divergence(model, keyframe=0):
    """(steps, time of the state it diverged from) of plain MuJoCo, one step at a time."""
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, keyframe)
    mujoco.mj_forward(model, data)
    for step in range(1, 100_000):
        before = data.time
        mujoco.mj_step(model, data)
        if data.warning.number[3:6].any():
            return step, before
    raise AssertionError("the model did not diverge")


# ------------------------------------------------------------ refused requests


@pytest.mark.parametrize("timestep, words", [
    (math.nan, "not a number (NaN)"), (math.inf, "is inf s"), (0.0, "is 0 s"), (-0.01, "is -0.01 s"),
])
def test_a_timestep_mujoco_compiles_but_cannot_step_with_is_refused(timestep, words):
    model = ball(timestep)  # (MuJoCo compiles each of these: checked in the issue)
    with pytest.raises(ValueError, match=r"MuJoCo needs a positive") as error:
        check_timestep(model)
    assert words in str(error.value) and "Error" not in str(error.value)
    with pytest.raises(ValueError):
        steps_for(model, 1.0)
    session = EngineSession(model)
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        session.step(10)
    assert session.data.time == 0 and session.steps_taken == 0  # nothing ran


@pytest.mark.parametrize("duration, words", [
    (math.nan, "not a number (NaN)"), (math.inf, "is infinite"), (-1.0, "is negative (-1 s)"),
])
def test_a_duration_that_cannot_be_simulated_is_refused(duration, words):
    session = EngineSession(ball())
    with pytest.raises(ValueError) as error:
        session.simulate(duration)
    assert words in str(error.value)
    assert session.data.time == 0 and session.steps_taken == 0


def test_more_steps_than_the_limit_are_refused_naming_the_numbers():
    with pytest.raises(TooManySteps) as error:
        steps_for(ball(1e-300), 1.0, limit=10_000_000)
    assert str(error.value) == ("Simulating 1 s with a timestep of 1e-300 s takes 1e+300 steps, more than "
                                "the step limit of 10,000,000")
    with pytest.raises(TooManySteps, match="takes 500 steps, more than the step limit of 499"):
        steps_for(ball(), 1.0, limit=499)
    assert steps_for(ball(), 1.0, limit=500) == 500
    session = EngineSession(ball(1e-300))
    started = time.perf_counter()
    with pytest.raises(TooManySteps):
        session.simulate(1.0, limit=10_000_000)
    assert time.perf_counter() - started < 1.0 and session.steps_taken == 0


def test_playing_with_a_timestep_that_cannot_be_stepped_pauses_with_a_message():
    model = ball()
    session = EngineSession(model)
    session.play(0.0)
    model.opt.timestep = 0.0  # (e.g. an option override while it plays)
    assert session.advance(1.0) == 0  # (it would divide by the timestep)
    assert not session.playing and "timestep is 0 s" in session.message


def test_the_runner_names_a_refused_step_in_a_users_words():
    run = Runner(EngineSession(ball(math.nan)), threaded=True)
    run.start()
    try:
        seq = run.send(cmd.Step(10))
        assert run.wait(seq, 5)
        assert run.latest.message == ("Step not applied: The model's timestep is not a number (NaN): MuJoCo "
                                      "needs a positive timestep (<option timestep>, or the scene's option "
                                      "override)")
        assert run.latest.steps == 0
    finally:
        assert run.stop()


# ---------------------------------------------------------------- divergence


def test_divergence_is_reported_at_the_time_it_happened():
    model = mujoco.MjModel.from_xml_string(UNSTABLE)
    steps, diverged_at = first_divergence(model)
    assert diverged_at == pytest.approx(88.80)
    session = EngineSession(model, keyframe=0)
    assert session.simulate(100.0) == steps  # it stops at the step that diverged
    assert f"diverged at t = {diverged_at:.4f} s (mjWARN_BADQPOS)" in session.message
    assert "MuJoCo reset the state" in session.message
    # the state is the one MuJoCo reset to in that step (its time restarted from 0)
    assert session.data.time == pytest.approx(model.opt.timestep) and session.data.qvel[0] == 0


def test_divergence_while_playing_is_reported_at_the_time_it_happened():
    model = mujoco.MjModel.from_xml_string(UNSTABLE)
    steps, diverged_at = first_divergence(model)
    session = EngineSession(model, keyframe=0)
    session.set_fast_forward(True)
    session.play(0.0)
    session.advance(0.0)  # (anchors the clock)
    for _ in range(1000):
        session.advance(1.0, budget=1.0)
        if not session.playing:
            break
    assert session.steps_taken == steps
    assert f"diverged at t = {diverged_at:.4f} s" in session.message


def test_divergence_under_a_mouse_spring_is_reported_at_the_time_it_happened():
    from mjblend.engine.perturb import Grab

    model = mujoco.MjModel.from_xml_string(UNSTABLE)
    _steps, diverged_at = first_divergence(model)
    session = EngineSession(model, keyframe=0)
    session.grab_body(Grab(model, session.data, 1, (0.3, 0.0, 0.0), stiffness_scale=0.0))
    session.simulate(100.0)  # (a spring of no stiffness: the same motion, one step at a time)
    assert f"diverged at t = {diverged_at:.4f} s" in session.message


def test_a_later_run_that_did_not_diverge_has_no_divergence_message():
    model = mujoco.MjModel.from_xml_string(UNSTABLE)
    session = EngineSession(model, keyframe=0)
    session.simulate(100.0)
    assert "diverged" in session.message
    session.step(100)  # at rest after MuJoCo's reset: stable
    assert session.message == ""

    run = Runner(EngineSession(model, keyframe=0))
    run.send(cmd.Step(10_000))
    first = run.latest
    assert "diverged at t = 88.8000 s" in first.message and first.message_id == 1
    run.send(cmd.Step(100))
    later = run.latest
    assert later.message == "" and later.message_id == 1 and later.steps == first.steps + 100
    run.send(cmd.Reset())  # and a reset run that diverges again says so again, once
    run.send(cmd.Step(10_000))
    assert "diverged" in run.latest.message and run.latest.message_id == 2


# -------------------------------------------------------------------- cancel


def test_a_long_step_is_cancelled_at_a_step_boundary_in_a_consistent_state():
    model = ball()
    run = Runner(EngineSession(model), threaded=True)
    run.start()
    try:
        count = 10_000_000  # (~minutes of stepping)
        seq = run.send(cmd.Step(count))
        deadline = time.perf_counter() + 10
        while run.latest.progress[0] < 1000 and time.perf_counter() < deadline:
            time.sleep(0.01)  # its progress is published while it runs
        assert run.latest.progress[1] == count and run.latest.applied < seq
        started = time.perf_counter()
        run.cancel(seq)
        assert run.wait(seq, 5.0)
        assert time.perf_counter() - started < 1.0
        shot = run.latest
        done = shot.progress[0]
        assert 1000 <= done < count and shot.steps == done and not shot.playing and shot.message == ""
        # the state is exactly MuJoCo's after that many steps
        data = mujoco.MjData(model)
        mujoco.mj_step(model, data, nstep=done)
        assert shot.time == data.time and np.array_equal(shot.qpos, data.qpos)
        assert np.array_equal(shot.qvel, data.qvel)
        # and the runner goes on: the next Step is not cancelled
        seq = run.send(cmd.Step(10))
        assert run.wait(seq, 5.0) and run.latest.steps == done + 10 and run.latest.progress == (10, 10)
    finally:
        assert run.stop()


def test_a_step_cancelled_before_it_starts_runs_nothing():
    run = Runner(EngineSession(ball()))
    run.cancel(1)  # (inline: the next command sent is number 1)
    run.send(cmd.Step(100))
    assert run.latest.steps == 0 and run.latest.progress == (0, 100)
    run.send(cmd.Step(100))
    assert run.latest.steps == 100


def test_cancel_stops_only_the_step_it_names():
    run = Runner(EngineSession(ball()), threaded=True)
    run.start()
    try:
        run.send(cmd.Call(lambda _session: time.sleep(0.3), what="a busy moment"))  # (both Steps queue)
        first, second = run.send(cmd.Step(100)), run.send(cmd.Step(100))
        run.cancel(second)
        assert run.wait(second, 5.0)
        assert run.latest.steps == 100 and run.latest.progress == (0, 100)
        run.cancel(first)  # (done long ago: nothing to stop, nothing kept)
        seq = run.send(cmd.Step(10))
        assert run.wait(seq, 5.0) and run.latest.steps == 110
    finally:
        assert run.stop()

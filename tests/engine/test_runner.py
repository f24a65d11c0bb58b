"""engine/runner.py, commands, snapshot and history: real MuJoCo, real threads, no bpy."""

import os
import threading
import time

import mujoco
import numpy as np
import pytest
from helpers import CORPUS, corpus_params

from mjblend.engine import commands as cmd
from mjblend.engine.history import History
from mjblend.engine.runner import Runner
from mjblend.engine.session import EngineSession

MODEL = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body name="box" pos="0 0 .5"><freejoint name="free"/><geom type="box" size=".1 .1 .1"/></body>
    <body name="arm" pos="1 0 1">
      <joint name="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
    </body>
    <body name="hand" mocap="true" pos="0 2 0"><geom size=".05" contype="0" conaffinity="0"/></body>
  </worldbody>
  <actuator><motor name="motor" joint="hinge" ctrlrange="-1 1" ctrllimited="true"/></actuator>
  <sensor><jointpos joint="hinge"/><framepos objtype="body" objname="box"/></sensor>
  <keyframe><key name="tilted" qpos="0 0 2 1 0 0 0 0.5" mpos="0 2 1" mquat="1 0 0 0"/></keyframe>
</mujoco>
"""


def model():
    return mujoco.MjModel.from_xml_string(MODEL)


def runner(threaded=False, **kwargs):
    return Runner(EngineSession(model()), threaded=threaded, **kwargs)


# the same command sequence for the inline and the threaded runner
SEQUENCE = [
    cmd.SetControl(0, 0.7), cmd.Step(40),
    cmd.StartGrab(1, (0.05, 0.0, 0.45)), cmd.Step(10), cmd.Drag(target=(0.3, 0.2, 0.9)), cmd.Step(30),
    cmd.Drag(axis=(0, 0, 1), angle=0.4), cmd.Step(20), cmd.Release(), cmd.Step(25),
    cmd.SetMocap((0,), np.array([[0.0, 2.0, 0.5]]), np.array([[0.0, 1.0, 0.0, 0.0]])), cmd.Step(5),
    cmd.SetJointQpos(1, (0.25,)), cmd.ZeroControls(), cmd.Step(50),
    cmd.Reset(0), cmd.SetControl(0, -5.0), cmd.Step(33),
]


def test_snapshot_poses_are_of_the_state_at_its_time():
    run = runner()
    run.send(cmd.Step(100))
    shot = run.latest
    data = mujoco.MjData(shot.model)
    data.qpos[:], data.mocap_pos[:], data.mocap_quat[:] = shot.qpos, shot.mocap_pos, shot.mocap_quat
    mujoco.mj_kinematics(shot.model, data)
    assert shot.time == pytest.approx(0.5)
    assert np.array_equal(shot.xpos, data.xpos) and np.array_equal(shot.xquat, data.xquat)
    assert np.array_equal(shot.geom_xpos, data.geom_xpos)
    # mj_step itself leaves the poses of one step earlier: the snapshot is not that
    plain = mujoco.MjData(shot.model)
    mujoco.mj_step(shot.model, plain, nstep=100)
    assert np.array_equal(plain.qpos, shot.qpos)
    assert not np.array_equal(plain.xpos, shot.xpos)


def test_snapshots_are_immutable_copies():
    run = runner()
    shot = run.latest
    with pytest.raises(ValueError):
        shot.qpos[0] = 1.0
    run.send(cmd.Step(10))
    assert run.latest.frame > shot.frame and shot.time == 0.0


def test_stepping_stays_bit_for_bit_mujoco():
    run = runner()
    run.send(cmd.Step(333))
    data = mujoco.MjData(run.session.model)
    mujoco.mj_step(run.session.model, data, nstep=333)
    assert np.array_equal(run.latest.qpos, data.qpos) and np.array_equal(run.latest.qvel, data.qvel)


def test_threaded_run_ends_where_the_inline_one_does():
    inline = runner()
    for command in SEQUENCE:
        inline.send(command)
    threaded = runner(threaded=True)
    threaded.start()
    try:
        last = [threaded.send(command) for command in SEQUENCE][-1]
        assert threaded.wait(last, timeout=30)
        a, b = inline.latest, threaded.latest
        assert b.applied == last and a.time == b.time
        for name in ("qpos", "qvel", "ctrl", "mocap_pos", "xpos", "sensordata"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert b.ctrl[0] == -1.0  # clamped to ctrlrange
    finally:
        assert threaded.stop()


def test_commands_from_another_thread_never_meet_a_step():
    """Thousands of ctrl / grab / reset commands while the runner steps as fast as
    it can: all applied, in order, on the runner's thread, the state finite."""
    run = runner(threaded=True)
    run.start()
    applied_on = set()
    try:
        run.send(cmd.FastForward(True))
        run.send(cmd.Play())
        rng = np.random.default_rng(1)
        value = 0.0
        for i in range(3000):
            kind = i % 10
            if kind < 6:
                value = float(rng.uniform(-1, 1))
                run.send(cmd.SetControl(0, value))
            elif kind == 6:
                run.send(cmd.StartGrab(1, tuple(rng.uniform(-0.05, 0.05, 3) + (0, 0, 0.3))))
            elif kind == 7:
                run.send(cmd.Drag(target=tuple(rng.uniform(-1, 1, 3))))
            elif kind == 8:
                run.send(cmd.Release())
            elif i % 100 == 9:
                run.send(cmd.Reset())
            if i % 500 == 0:
                run.send(cmd.Call(lambda _s: applied_on.add(threading.get_ident())))
                time.sleep(0.001)  # let it step between bursts
        run.send(cmd.SetControl(0, value))
        last = run.send(cmd.Pause())
        assert run.wait(last, timeout=30)
        shot = run.latest
        assert shot.applied == last and not shot.playing
        assert shot.ctrl[0] == value
        assert np.isfinite(shot.qpos).all() and np.isfinite(shot.qvel).all()
        assert applied_on == {run._thread.ident}
        assert shot.steps > 0
    finally:
        assert run.stop()
    assert not run.alive


def test_paces_real_time_and_fast_forward_outruns_it():
    run = runner(threaded=True)
    run.start()
    try:
        run.send(cmd.Play())
        time.sleep(0.5)
        real = run.latest.time
        run.send(cmd.FastForward(True))
        start = run.latest.time
        time.sleep(0.5)
        fast = run.latest.time - start
        assert 0.2 < real < 0.8  # real time, give or take the machine's noise
        assert fast > 2 * real
        assert run.latest.fast_forward
    finally:
        assert run.stop()


def test_a_slow_step_never_delays_a_pause():
    """A model whose every step is slow: Pause shows at once and applies after
    the step in progress; the caller never waits on stepping."""
    run = runner(threaded=True)
    run.start()
    try:
        run.send(cmd.Call(lambda s: setattr(s, "_run", _slow(s._run, 0.2))))
        run.send(cmd.Play())
        time.sleep(0.3)
        start = time.perf_counter()
        seq = run.send(cmd.Pause())
        assert time.perf_counter() - start < 0.01
        assert not run.playing
        assert run.wait(seq, timeout=1.0)
        assert time.perf_counter() - start < 0.5
        assert not run.latest.playing
    finally:
        assert run.stop()


def _slow(function, seconds):
    def slow(count):
        time.sleep(seconds)  # (sleeping releases the GIL, like mj_step)
        return function(count)
    return slow


def test_divergence_pauses_with_its_message():
    xml = MODEL.replace('damping=".1"', 'damping="-1e9"')
    run = Runner(EngineSession(mujoco.MjModel.from_xml_string(xml)), threaded=True)
    run.start()
    try:
        run.send(cmd.Play())
        run.send(cmd.FastForward(True))
        deadline = time.perf_counter() + 10
        while run.latest.message_id == 0 and time.perf_counter() < deadline:
            time.sleep(0.02)
        shot = run.latest
        assert "diverged" in shot.message and not shot.playing and not run.playing
    finally:
        assert run.stop()


def test_an_exception_on_the_thread_pauses_and_keeps_it_running():
    run = runner(threaded=True)
    run.start()
    try:
        run.send(cmd.Play())
        seq = run.send(cmd.Call(lambda _s: 1 / 0, what="A test call"))
        assert run.wait(seq, timeout=5)
        assert run.latest.message == "A test call not applied (ZeroDivisionError: division by zero)"
        assert run.latest.playing  # a refused command changes nothing else

        def broken(_count):
            raise RuntimeError("MuJoCo said no")
        seq = run.send(cmd.Call(lambda s: setattr(s, "_run", broken)))
        deadline = time.perf_counter() + 5
        while run.latest.playing and time.perf_counter() < deadline:
            time.sleep(0.01)
        shot = run.latest
        assert not shot.playing and not run.playing
        assert "RuntimeError: MuJoCo said no" in shot.message
        assert shot.message.startswith("The simulation stopped")
        seq = run.send(cmd.Call(lambda s: s.__dict__.pop("_run")))
        seq = run.send(cmd.Step(3))
        assert run.wait(seq, timeout=5) and run.alive and run.latest.steps == shot.steps + 3
    finally:
        assert run.stop()


def test_inline_commands_raise_where_they_are_sent():
    run = runner()
    with pytest.raises(ValueError, match="keyframe 5 does not exist"):
        run.send(cmd.Reset(5))
    with pytest.raises(ValueError, match="takes 1 qpos"):
        run.send(cmd.SetJointQpos(1, (1.0, 2.0)))
    run.send(cmd.Step(2))
    assert run.latest.steps == 2


def test_history_steps_back_to_the_exact_state():
    run = runner()
    run.send(cmd.SetControl(0, 0.5))
    for _ in range(20):
        run.send(cmd.Step(7))
    kept = len(run.history)
    assert kept == 21 and run.latest.history == (21, 20)
    run.send(cmd.ShowHistory(5))  # 35 steps in
    reference = mujoco.MjData(run.session.model)
    reference.ctrl[0] = 0.5
    mujoco.mj_step(run.session.model, reference, nstep=35)
    shot = run.latest
    assert shot.time == reference.time and shot.history == (21, 5)
    assert np.array_equal(shot.qpos, reference.qpos) and np.array_equal(shot.qvel, reference.qvel)
    # and continues exactly as the first time; the states after it are dropped
    run.send(cmd.Step(7))
    mujoco.mj_step(run.session.model, reference, nstep=7)
    assert np.array_equal(run.latest.qpos, reference.qpos)
    assert len(run.history) == 7 and run.latest.history == (7, 6)


def test_history_keeps_the_last_seconds_within_its_memory():
    m = model()
    history = History(m, seconds=0.1, max_bytes=10**9)
    data = mujoco.MjData(m)
    for _ in range(100):
        mujoco.mj_step(m, data)
        history.record(m, data)
    times = history.times()
    assert times[-1] == pytest.approx(0.5) and times[0] >= 0.4 - 1e-9
    small = History(m, seconds=100, max_bytes=8 * mujoco.mj_stateSize(m, 8191) * 10)
    for _ in range(30):
        mujoco.mj_step(m, data)
        small.record(m, data)
    assert len(small) == small.capacity <= 10


def test_replace_keeps_state_and_starts_a_new_history():
    run = runner()
    run.send(cmd.Step(50))
    qpos = run.latest.qpos.copy()
    run.session.ids = {"hinge": ("joint", 1)}
    run.send(cmd.Replace(model(), {"hinge": ("joint", 1)}))
    shot = run.latest
    assert shot.qpos[7] == qpos[7] and shot.time == pytest.approx(0.25)
    assert shot.history == (1, 0)


@pytest.mark.parametrize("path", corpus_params())
def test_threaded_and_inline_runners_agree_on_every_corpus_model(path):
    """The same command sequence (controls, steps) on the physics thread and inline:
    the same state, bit for bit, and both MuJoCo's own stepping."""
    model = mujoco.MjModel.from_xml_path(os.path.join(CORPUS, path))
    steps = int(round(0.2 / model.opt.timestep))
    sequence = [cmd.Step(steps // 2)]
    if model.nu:
        sequence.append(cmd.SetControl(0, 0.5))
    sequence.append(cmd.Step(steps - steps // 2))
    inline, threaded = Runner(EngineSession(model)), Runner(EngineSession(model), threaded=True)
    threaded.start()
    try:
        for command in sequence:
            inline.send(command)
        assert threaded.wait([threaded.send(c) for c in sequence][-1], timeout=60)
    finally:
        assert threaded.stop()
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=steps // 2)
    if model.nu:
        data.ctrl[0] = inline.latest.ctrl[0]  # (clamped as the runner clamps)
    mujoco.mj_step(model, data, nstep=steps - steps // 2)
    for shot in (inline.latest, threaded.latest):
        assert np.array_equal(shot.qpos, data.qpos) and np.array_equal(shot.qvel, data.qvel)

"""engine/plots.py and what the runner publishes for plots: real MuJoCo, no bpy.

The plot buffer of a channel must be the history of that signal as the
simulation recorded it: these tests step a runner inline, note what MuJoCo's
data holds after every recorded batch (and check it against a second MjData
stepped the same way), and compare the snapshot's plots with it bit for bit.
"""

import os
import time

import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.engine import commands as cmd, plots
from mjblend.engine.history import STATE, History, state_offset
from mjblend.engine.runner import Runner
from mjblend.engine.session import EngineSession

DRONE = os.path.join(CORPUS, "menagerie", "skydio_x2", "scene.xml")  # gyro, accelerometer, framequat
SPECS = (plots.Spec("sensor", "body_gyro"), plots.Spec("sensor", "body_quat", 2),
         plots.Spec("sensor", "body_linacc"), plots.Spec("qpos", "#0"), plots.Spec("qvel", "#0", 5),
         plots.Spec("ctrl", "thrust2"), plots.Spec("actuator_force", "thrust3"))
HISTORY_SECONDS, WINDOW = 0.6, 0.25  # the plots' window is shorter than the history
PENDULUM = """
<mujoco>
  <worldbody>
    <body name="arm"><joint name="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
    </body>
  </worldbody>
  <actuator><motor name="motor" joint="hinge"/></actuator>
  <sensor><jointpos name="angle" joint="hinge"/></sensor>
</mujoco>
"""


class Clock:
    """The runner's wall clock, moved by the test."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Recorded:
    """What the test saw after each recorded batch: time, sensordata, actuator_force and
    the state (qpos, qvel, ctrl), read from the runner's own data (inline: this thread),
    and a reference MjData stepped alike that must agree bit for bit."""

    def __init__(self, runner):
        self.runner = runner
        self.rows = []
        self.restart()

    def restart(self):
        """(After a reset or a recompile) the reference starts from the runner's state, and the
        past from that time on is dropped, as the history drops it."""
        model, data = self.runner.session.model, self.runner.session.data
        self.reference = mujoco.MjData(model)
        state = np.empty(mujoco.mj_stateSize(model, STATE))
        mujoco.mj_getState(model, data, state, STATE)
        mujoco.mj_setState(model, self.reference, state, STATE)
        self.reference.sensordata[:] = data.sensordata
        self.reference.actuator_force[:] = data.actuator_force
        self.rows = [row for row in self.rows if row["time"] < data.time]
        self.note()

    def note(self):
        data = self.runner.session.data
        for name in ("sensordata", "actuator_force", "qpos", "qvel", "ctrl"):
            assert np.array_equal(getattr(data, name), getattr(self.reference, name)), name
        self.rows.append({"time": data.time, "sensordata": data.sensordata.copy(),
                          "actuator_force": data.actuator_force.copy(), "qpos": data.qpos.copy(),
                          "qvel": data.qvel.copy(), "ctrl": data.ctrl.copy()})

    def tick(self, seconds):
        """Wall time moves on by `seconds`: one recorded batch (if a step is owed)."""
        self.runner.clock.now += seconds
        steps = self.runner.tick()
        if steps:
            self.reference.ctrl[:] = self.runner.session.data.ctrl
            mujoco.mj_step(self.runner.session.model, self.reference, nstep=steps)
            self.note()
        return steps

    def expected(self, spec, seconds):
        """(times, values) of `spec` over the last `seconds` of what was noted."""
        model = self.runner.session.model
        rows = [r for r in self.rows if r["time"] >= self.rows[-1]["time"] - seconds]
        index = plots.find(model, plots.KINDS[spec.kind][0], spec.name)
        if spec.kind == "sensor":
            adr, dim = model.sensor_adr[index], model.sensor_dim[index]
            values = [r["sensordata"][adr:adr + dim] for r in rows]
        elif spec.kind in ("ctrl", "actuator_force"):
            values = [r[spec.kind][index:index + 1] for r in rows]
        else:
            adr = model.jnt_qposadr[index] if spec.kind == "qpos" else model.jnt_dofadr[index]
            width = {0: 7, 1: 4}.get(model.jnt_type[index], 1) if spec.kind == "qpos" else \
                {0: 6, 1: 3}.get(model.jnt_type[index], 1)
            values = [r[spec.kind][adr:adr + width] for r in rows]
        values = np.array(values)
        if spec.component != plots.ALL:
            values = values[:, [spec.component]]
        return np.array([r["time"] for r in rows]), values


def drone_runner():
    model = mujoco.MjModel.from_xml_path(DRONE)
    return Runner(EngineSession(model, keyframe=0), clock=Clock(), history_seconds=HISTORY_SECONDS)


def check_plots(runner, recorded, seconds=WINDOW):
    shot = runner.latest
    assert shot.plots is not None and shot.plots.request.specs == SPECS
    for spec, one in zip(SPECS, shot.plots.series, strict=True):
        times, values = recorded.expected(spec, seconds)
        assert one.error == "", one.error
        assert np.array_equal(shot.plots.times, times), spec
        assert np.array_equal(one.values, values), spec  # bit for bit
        assert not one.values.flags.writeable and not shot.plots.times.flags.writeable
        # and plots.series reads the same from the history itself
        channel = plots.resolve(runner.session.model, spec)
        series_times, series_values = plots.series(runner.history, channel, seconds)
        assert np.array_equal(series_times, times) and np.array_equal(series_values, values)
    return shot


def play_a_while(recorded, runner, ticks=60):
    """Ticks of uneven lengths, with the controls changed now and then."""
    rng = np.random.default_rng(3)
    stepped = 0
    for i in range(ticks):
        if i % 7 == 0:
            runner.send(cmd.SetControl(int(rng.integers(0, 4)), float(rng.uniform(0, 10))))
        stepped += recorded.tick(float(rng.uniform(0.004, 0.05)))
    return stepped


@needs_corpus
def test_the_plot_buffer_equals_the_recorded_history():
    runner = drone_runner()
    recorded = Recorded(runner)
    runner.send(cmd.Plot(plots.Request(SPECS, WINDOW)))
    runner.send(cmd.Play())
    assert play_a_while(recorded, runner) > 100
    shot = check_plots(runner, recorded)
    assert shot.time > 2 * HISTORY_SECONDS  # the ring dropped the oldest states
    assert len(shot.plots.times) < len(runner.history)  # the window is the last WINDOW seconds
    assert shot.plots.times[-1] - shot.plots.times[0] <= WINDOW
    # every value of the history: a window as long as the history
    runner.send(cmd.Plot(plots.Request(SPECS, HISTORY_SECONDS)))
    check_plots(runner, recorded, HISTORY_SECONDS)
    runner.send(cmd.Plot(plots.Request(SPECS, WINDOW)))

    # after a reset the past is gone: the plots start again at the keyframe
    runner.send(cmd.Reset(0))
    recorded.restart()
    assert len(check_plots(runner, recorded).plots.times) == 1
    play_a_while(recorded, runner, 30)
    check_plots(runner, recorded)


@needs_corpus
def test_plots_follow_a_recompile_by_name():
    """A Replace with the gyro moved last and a joint added: the addresses move, the
    plots find their channels again by name and start a new history."""
    runner = drone_runner()
    recorded = Recorded(runner)
    runner.send(cmd.Plot(plots.Request(SPECS, WINDOW)))
    runner.send(cmd.Play())
    play_a_while(recorded, runner, 20)
    spec = mujoco.MjSpec.from_file(DRONE)
    spec.delete(spec.sensor("body_gyro"))  # (the gyro goes last)
    spec.add_sensor(name="body_gyro", type=mujoco.mjtSensor.mjSENS_GYRO, objtype=mujoco.mjtObj.mjOBJ_SITE,
                    objname="imu")
    spinner = spec.worldbody.add_body(name="spinner", pos=[3, 0, 1])  # (one more qpos: the state moves)
    spinner.add_joint(name="spin", type=mujoco.mjtJoint.mjJNT_HINGE)
    spinner.add_geom(size=[0.1, 0, 0])
    model = spec.compile()
    for moved in (SPECS[0], SPECS[4], SPECS[5]):  # the gyro, qvel and ctrl (after the new qpos)
        assert plots.resolve(model, moved).columns != plots.resolve(runner.session.model, moved).columns
    runner.send(cmd.Replace(model, {}))
    recorded.rows = []
    recorded.restart()
    shot = runner.latest
    assert len(shot.plots.times) == 1
    play_a_while(recorded, runner, 30)
    check_plots(runner, recorded)


def test_channels_resolve_by_name_with_clear_errors():
    model = mujoco.MjModel.from_xml_string(PENDULUM)
    angle = plots.resolve(model, plots.Spec("sensor", "angle"))
    assert angle.signals and angle.columns == (0,) and angle.labels == ("0",)
    force = plots.resolve(model, plots.Spec("actuator_force", "motor"))
    assert force.signals and force.columns == (model.nsensordata,)
    ctrl = plots.resolve(model, plots.Spec("ctrl", "motor"))
    assert not ctrl.signals and ctrl.columns == (state_offset(model, mujoco.mjtState.mjSTATE_CTRL),)
    with pytest.raises(ValueError, match=r"no sensor named 'nope' \(sensors: angle\)"):
        plots.resolve(model, plots.Spec("sensor", "nope"))
    with pytest.raises(ValueError, match="no joint named 'motor'"):
        plots.resolve(model, plots.Spec("qpos", "motor"))
    with pytest.raises(ValueError, match="has 1 component"):
        plots.resolve(model, plots.Spec("qvel", "hinge", 1))
    with pytest.raises(ValueError, match="unknown plot kind"):
        plots.resolve(model, plots.Spec("torque", "hinge"))
    with pytest.raises(ValueError, match="has a name: 'hinge'"):
        plots.resolve(model, plots.Spec("qpos", "#0"))
    # an unknown name in a request: a plot with the error, the others plotted
    runner = Runner(EngineSession(model))
    runner.send(cmd.Plot(plots.Request((plots.Spec("sensor", "gone"), plots.Spec("sensor", "angle")))))
    runner.send(cmd.Step(10))
    gone, there = runner.latest.plots.series
    assert "no sensor named 'gone'" in gone.error and gone.values.shape == (2, 0)
    assert there.error == "" and there.values.shape == (2, 1)
    runner.send(cmd.Plot(plots.Request()))
    assert runner.latest.plots is None  # nothing asked: nothing built


def test_state_offsets_are_where_mujoco_puts_each_component():
    model = mujoco.MjModel.from_xml_string(PENDULUM)
    data = mujoco.MjData(model)
    data.qpos[0], data.qvel[0], data.ctrl[0] = 0.25, -1.5, 0.75
    state = np.empty(mujoco.mj_stateSize(model, STATE))
    mujoco.mj_getState(model, data, state, STATE)
    for bit, value in ((mujoco.mjtState.mjSTATE_QPOS, 0.25), (mujoco.mjtState.mjSTATE_QVEL, -1.5),
                       (mujoco.mjtState.mjSTATE_CTRL, 0.75)):
        assert state[state_offset(model, bit)] == value


def test_the_history_keeps_signals_within_its_byte_budget():
    model = mujoco.MjModel.from_xml_string(PENDULUM)
    row = 8 * (mujoco.mj_stateSize(model, STATE) + model.nsensordata + model.nu + 1)
    history = History(model, seconds=100, max_bytes=row * 10)
    assert history.capacity == 10
    data = mujoco.MjData(model)
    data.ctrl[0] = 1.0
    for _ in range(25):
        mujoco.mj_step(model, data)
        history.record(model, data)
    assert len(history) == 10
    newest = history.rows()[-1:]  # (read as the plots read it: signal rows are sensordata, then forces)
    signals = history.columns(newest, range(model.nsensordata + model.nu), signals=True)[0]
    assert np.array_equal(signals[:model.nsensordata], data.sensordata)
    assert np.array_equal(signals[model.nsensordata:], data.actuator_force)
    kept = history._states.nbytes + history._signals.nbytes + history._times.nbytes
    assert kept <= row * 10


def test_nice_ticks_hold_every_value():
    rng = np.random.default_rng(0)
    for _ in range(200):
        values = rng.normal(rng.uniform(-1e3, 1e3), 10 ** rng.uniform(-6, 4), size=50)
        low, high, step = plots.autoscale(values)
        assert low <= values.min() and high >= values.max()
        mantissa = step / 10 ** np.floor(np.log10(step))
        assert np.isclose(mantissa, [1, 2, 5]).any()
        assert 2 <= round((high - low) / step) <= 9
    assert plots.autoscale(np.array([2.0, 2.0]))[:2] == (1.8, 2.2)  # flat: a range around it
    assert plots.autoscale(np.array([np.nan, np.inf]))[:2] == (-1.0, 1.0)
    assert plots.tick_label(-0.0, 0.5) == "0" and plots.tick_label(0.25, 0.05) == "0.25"
    assert plots.tick_values(-0.1, 0.35, 0.1) == pytest.approx([-0.1, 0.0, 0.1, 0.2, 0.3])


def test_a_figure_maps_the_buffer_into_its_rectangle():
    runner = Runner(EngineSession(mujoco.MjModel.from_xml_string(PENDULUM)))
    runner.send(cmd.SetControl(0, 2.0))
    runner.send(cmd.Plot(plots.Request((plots.Spec("qpos", "hinge"), plots.Spec("qvel", "hinge")), 0.5)))
    for _ in range(40):
        runner.send(cmd.Step(5))
    shot = runner.latest
    fig = plots.figure("qpos", shot.plots, 0, (10, 20, 300, 100))
    times, values = shot.plots.times, shot.plots.series[0].values
    (line,) = fig.lines
    low, high = fig.yrange
    assert low <= values.min() and values.max() <= high
    assert fig.xrange == (times[-1] - 0.5, times[-1])
    assert np.allclose(line[:, 0], 10 + (times - fig.xrange[0]) / 0.5 * 300)
    assert np.allclose(line[:, 1], 20 + (values[:, 0] - low) / (high - low) * 100)
    assert line[:, 0].min() >= 10 and line[:, 0].max() <= 310.0 + 1e-9
    assert all(20 - 1e-9 <= y <= 120 + 1e-9 for y, _label in fig.yticks)


def test_building_plots_costs_little():
    """A few channels over a full 10 s window at the playing rate (120 states a second):
    what the runner adds to each snapshot it publishes."""
    model = mujoco.MjModel.from_xml_string(PENDULUM)
    history = History(model, seconds=10.0)
    data = mujoco.MjData(model)
    for _ in range(1300):
        mujoco.mj_step(model, data, nstep=4)  # (2 ms steps: a state every 8 ms, as playing)
        history.record(model, data)
    request = plots.Request(tuple(plots.Spec(kind, name) for kind, name in (
        ("sensor", "angle"), ("qpos", "hinge"), ("qvel", "hinge"), ("ctrl", "motor"))), 10.0)
    channels = plots.resolve_all(model, request)
    built = plots.build(history, request, channels)
    assert len(built.times) >= 1200
    start = time.perf_counter()
    for _ in range(200):
        plots.build(history, request, channels)
    per_snapshot = (time.perf_counter() - start) / 200
    print(f"plots.build, 4 channels x {len(built.times)} states: {per_snapshot * 1e6:.0f} us per snapshot")
    assert per_snapshot < 0.5e-3


def test_snapshots_carry_the_seconds_spent_stepping():
    runner = Runner(EngineSession(mujoco.MjModel.from_xml_string(PENDULUM)))
    assert runner.latest.step_seconds == 0.0
    start = time.perf_counter()
    runner.send(cmd.Step(2000))
    spent = time.perf_counter() - start
    shot = runner.latest
    assert 0 < shot.step_seconds <= spent
    runner.send(cmd.SetControl(0, 1.0))
    assert runner.latest.step_seconds == 0.0  # nothing stepped since the one before

"""Plots and the profiler line in Blender (bpy module): channels added with the
operators on an imported corpus model, kept by save and reload, refused with a
clear error when the model does not have them; the plot buffer of a simulation
against MuJoCo stepped alike; the lines the draw callback would draw (computed
as it computes them, without a GPU) against that buffer."""

import os
import time

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.engine import commands, plots
from mjblend.importer import build
from mjblend.live import profile, scene_session
from mjblend.ui.plots import draw

DRONE = os.path.join(CORPUS, "menagerie", "skydio_x2", "scene.xml")  # gyro, accelerometer, framequat


@pytest.fixture
def drone(clean_scene):
    build.import_file(DRONE, clean_scene)
    yield clean_scene
    scene_session.end_all()


def specs(scene):
    return [channel.spec() for channel in scene.mujoco_plots.channels]


def add(**properties):
    return bpy.ops.mujoco.plot_add(**properties)


@needs_corpus
def test_channels_are_added_checked_and_kept_in_the_file(drone, tmp_path):
    assert add(kind="SENSOR", element="body_gyro") == {"FINISHED"}  # (checks the model first)
    # the search's entries: every sensor, joint and actuator of the checked model
    assert add(channel="sensor:body_linacc") == {"FINISHED"}
    assert add(channel="qpos:#0", component=2) == {"FINISHED"}
    assert add(kind="ACTUATOR_FORCE", element="thrust3") == {"FINISHED"}
    assert add(kind="CTRL", element="thrust1") == {"FINISHED"}
    assert specs(drone) == [plots.Spec("sensor", "body_gyro"), plots.Spec("sensor", "body_linacc"),
                            plots.Spec("qpos", "#0", 2), plots.Spec("actuator_force", "thrust3"),
                            plots.Spec("ctrl", "thrust1")]
    with pytest.raises(RuntimeError, match=r"no sensor named 'nope' \(sensors: body_gyro, body_linacc, "):
        add(kind="SENSOR", element="nope")
    with pytest.raises(RuntimeError, match="no joint named 'thrust1'"):
        add(kind="QVEL", element="thrust1")
    with pytest.raises(RuntimeError, match=r"has 3 components \(0-2\), not 3"):
        add(kind="SENSOR", element="body_gyro", component=3)
    with pytest.raises(TypeError):  # not one of the search's entries
        add(channel="sensor:nope")
    assert add(kind="SENSOR", element="body_gyro") == {"CANCELLED"}  # plotted already
    assert len(drone.mujoco_plots.channels) == 5
    assert bpy.ops.mujoco.plot_remove(index=3) == {"FINISHED"}
    settings = drone.mujoco_plots
    settings.seconds, settings.show_profiler, settings.side = 2.5, True, "LEFT"
    path = str(tmp_path / "plots.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = bpy.context.scene
    assert specs(scene) == [plots.Spec("sensor", "body_gyro"), plots.Spec("sensor", "body_linacc"),
                            plots.Spec("qpos", "#0", 2), plots.Spec("ctrl", "thrust1")]
    kept = scene.mujoco_plots
    assert (kept.seconds, kept.show_profiler, kept.side, kept.show_plots) == (2.5, True, "LEFT", True)


@needs_corpus
def test_a_model_that_does_not_compile_refuses_channels(drone):
    gyro = next(o for o in drone.objects if o.mujoco.kind == "SENSOR" and o.mujoco.name == "body_gyro")
    gyro.mujoco.sensor.objname = None  # (a gyro needs its site: MuJoCo refuses it)
    with pytest.raises(RuntimeError, match="does not compile"):
        add(kind="SENSOR", element="body_gyro")
    assert len(drone.mujoco_plots.channels) == 0


def expected_history(model, batches, keyframe_ctrl):
    """What MuJoCo's data holds after each of `batches` (step counts): time, sensordata,
    actuator_force, qpos, ctrl; from the reset state."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    rows = [(data.time, data.sensordata.copy(), data.actuator_force.copy(), data.qpos.copy())]
    data.ctrl[:] = keyframe_ctrl
    for count in batches:
        mujoco.mj_step(model, data, nstep=count)
        rows.append((data.time, data.sensordata.copy(), data.actuator_force.copy(), data.qpos.copy()))
    return rows


@needs_corpus
def test_the_drawn_plots_are_the_simulated_history(drone):
    add(kind="SENSOR", element="body_gyro")
    add(kind="SENSOR", element="body_quat", component=0)
    add(kind="QPOS", element="#0")
    add(kind="ACTUATOR_FORCE", element="thrust2")
    settings = drone.mujoco_plots
    settings.seconds, settings.show_profiler = 0.3, True
    running = scene_session.start_simulation(drone)
    draw.ask(drone, running)  # (what the draw callback asks the runner for)
    thrust = np.array([2.0, 4.0, 3.0, 5.0])
    for actuator, value in enumerate(thrust):
        running.set_control(actuator, float(value))
    batches = [3, 7, 1, 12, 5, 9, 20, 4, 11, 6, 2, 15, 8, 10, 3, 5, 2, 7, 4, 6]
    for count in batches:
        running.send(commands.Step(count))
    shot = running.latest
    model = running.model
    rows = expected_history(model, batches, thrust)
    seconds = settings.seconds  # (0.3 as a float32 property keeps it)
    window = [r for r in rows if r[0] >= rows[-1][0] - seconds]
    assert 3 < len(window) < len(rows)
    assert shot.plots is not None and shot.plots.request == settings.request()
    assert np.array_equal(shot.plots.times, [r[0] for r in window])
    gyro, quat, qpos, force = shot.plots.series
    adr = model.sensor("body_gyro").adr[0]
    assert np.array_equal(gyro.values, [r[1][adr:adr + 3] for r in window])
    adr = model.sensor("body_quat").adr[0]
    assert np.array_equal(quat.values, [r[1][adr:adr + 1] for r in window])
    assert np.array_equal(qpos.values, [r[3][:7] for r in window])
    assert np.array_equal(force.values, [r[2][1:2] for r in window])

    # the figures the draw callback would draw: one per channel, first on top, in the corner
    placed = draw.layout(drone, 1400, 900, scale=1.0, insets=(0, 300))
    assert placed.left_out == 0 and len(placed.figures) == 4
    frames = [frame for frame, _fig in placed.figures]
    assert frames[0][1] > frames[-1][1]  # stacked upwards from the last channel
    assert all(f[0] + f[2] <= 1400 - 300 for f in frames)  # clear of the sidebar
    assert all(f[0] >= 0 and f[1] >= 0 for f in frames)
    for (frame, fig), series in zip(placed.figures, shot.plots.series, strict=True):
        x, y, w, h = fig.rect
        assert frame[0] <= x and x + w <= frame[0] + frame[2]
        assert frame[1] <= y and y + h <= frame[1] + frame[3]
        low, high = fig.yrange
        assert low <= series.values.min() and series.values.max() <= high  # autoscale holds them all
        assert len(fig.lines) == series.values.shape[1]
        start = shot.plots.times[-1] - seconds
        for component, line in enumerate(fig.lines):
            assert np.allclose(line[:, 0], x + (shot.plots.times - start) / seconds * w)
            assert np.allclose(line[:, 1], y + (series.values[:, component] - low) / (high - low) * h)
        assert fig.yticks and all(y - 1e-6 <= at <= y + h + 1e-6 for at, _label in fig.yticks)
        assert fig.xticks and all(x - 1e-6 <= at <= x + w + 1e-6 for at, _label in fig.xticks)
        for line in fig.lines:  # what the GPU gets: consecutive points as segments
            drawn = draw.segments(line)
            assert np.allclose(drawn[0::2, :2], line[:-1], atol=1e-3)
            assert np.allclose(drawn[1::2, :2], line[1:], atol=1e-3)
    text, _x, _y, align = placed.profiler
    assert "ms per frame" in text and align == "RIGHT"

    # removing a channel asks the runner again; the next snapshot plots three
    bpy.ops.mujoco.plot_remove(index=1)
    draw.ask(drone, running)
    assert [s.spec for s in running.latest.plots.series] == specs(drone)
    assert len(draw.layout(drone, 1400, 900).figures) == 3
    # a short view shows what fits, and says how many it left out
    short = draw.layout(drone, 1400, 200)
    assert len(short.figures) == 1 and short.left_out == 2
    settings.show_plots = False
    draw.ask(drone, running)
    assert running.latest.plots is None and draw.layout(drone, 1400, 900).figures == ()


@needs_corpus
def test_the_profiler_adds_up_every_snapshots_stepping(drone):
    running = scene_session.start_simulation(drone)
    measured = profile.of(running)
    running.send(commands.Step(200))
    first = running.latest.step_seconds
    running.send(commands.Step(300))
    second = running.latest.step_seconds
    assert first > 0 and second > 0
    assert measured.stepped == pytest.approx(first + second)
    assert measured.means() is None
    measured.ticked(0.001, now=100.0)
    profile.drew(drone, 0.002)
    measured.ticked(0.003, now=100.016)
    step, sync, drawn, fps = measured.means()
    assert step == pytest.approx((first + second) / 2)  # (the two frames' mean)
    assert sync == pytest.approx(0.002) and drawn == pytest.approx(0.001) and fps == pytest.approx(62.5)
    assert "ms per frame" in measured.line(running.latest) and "paused" in measured.line(running.latest)


def test_nothing_is_drawn_without_a_simulation(clean_scene):
    assert draw.layout(clean_scene, 1400, 900) is None


@needs_corpus
def test_laying_out_a_few_plots_costs_little(drone):
    """Four channels over a 5 s window at the playing rate (a state every 1/120 s):
    the draw callback's geometry, per frame (its GPU calls come on top: the GUI test)."""
    for kind, element in (("SENSOR", "body_gyro"), ("SENSOR", "body_linacc"), ("QVEL", "#0"),
                          ("ACTUATOR_FORCE", "thrust1")):
        add(kind=kind, element=element)
    running = scene_session.start_simulation(drone)
    draw.ask(drone, running)
    for _ in range(700):
        running.send(commands.Step(1))  # (a 10 ms step: the drone's timestep)
    for _ in range(3):
        running.latest  # noqa: B018 (publishes)
    drone.mujoco_plots.seconds = 5.0
    draw.ask(drone, running)
    assert len(running.latest.plots.times) == 501
    start = time.perf_counter()
    for _ in range(50):
        placed = draw.layout(drone, 1400, 900)
        for _frame, fig in placed.figures:
            for line in fig.lines:
                draw.segments(line)
    per_frame = (time.perf_counter() - start) / 50
    print(f"plot layout and segments, 4 channels x 501 states: {per_frame * 1e3:.3f} ms per frame")
    assert per_frame < 2e-3

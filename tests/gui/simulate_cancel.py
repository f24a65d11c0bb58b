"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

A long `mujoco.simulate` (a million steps of examples/desk_toys.xml) is invoked
in the 3D view as a user would (F3 or the menu: INVOKE), so it runs modal on the
physics thread: Blender stays responsive (this script's own timer keeps ticking,
the status bar shows the progress), then the real Escape key (xdotool) cancels
it. What it saw goes to MJBLEND_RESULT: how soon the operator ended after the
key, how far the simulation got, the state shown, and that Blender works after.
"""

import importlib
import os
import subprocess
import sys
import threading
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_mouse import blender_window, region_xy  # noqa: E402
from gui_script import ADDON, cheap_viewport, finish, physics_parked, report, run_steps, view3d  # noqa: E402

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "desk_toys.xml")
DURATION = 2000.0  # seconds: 1,000,000 steps of 2 ms


def physics_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("MJBlend physics") and t.is_alive()]


def instrument(events):
    """Record every modal() answer (time, event type, result), every progress shown in
    the status bar (time, steps done) and every cancel() (kept to the end: Blender quits)."""
    simulate = importlib.import_module(ADDON + ".operators.simulate").MUJOCO_OT_simulate
    modal, status, cancel = simulate.modal, simulate._status, simulate.cancel

    def recorded_modal(self, context, event):
        kind = event.type  # (read first: Blender 3.4 gives 'NONE' once the operator ended)
        result = modal(self, context, event)
        if kind != "TIMER" or result != {"PASS_THROUGH"}:
            events["modal"].append([time.perf_counter(), kind, sorted(result)])
        return result

    def recorded_status(self, context, shot, done):
        events["status"].append([time.perf_counter(), done])
        status(self, context, shot, done)
    def recorded_cancel(self, context):
        events["cancel"].append(time.perf_counter())
        cancel(self, context)
    simulate.modal, simulate._status, simulate.cancel = recorded_modal, recorded_status, recorded_cancel


def steps():
    live = importlib.import_module(ADDON + ".live.scene_session")
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    bpy.ops.import_scene.mjcf(filepath=MODEL)
    scene = bpy.context.scene
    window, area, region = view3d()
    cheap_viewport(area)
    yield 0.3
    with bpy.context.temp_override(window=window):  # (before any physics thread: gui_script)
        started = time.perf_counter()
        bpy.ops.wm.redraw_timer(type="DRAW_WIN_SWAP", iterations=3)
    report["frame_seconds"] = (time.perf_counter() - started) / 3  # Blender's own cost of a frame
    running = live.start_simulation(scene)  # (compiled first: the invoke runs with its thread parked)
    events = {"modal": [], "status": [], "cancel": []}
    report["cancels"] = events["cancel"]
    instrument(events)
    yield 0.5
    # Blender's own beat here, nothing simulating: software OpenGL draws slowly
    ticks = []
    started = time.perf_counter()
    while time.perf_counter() - started < 2.0:
        ticks.append(time.perf_counter())
        yield 0.05
    report["ticks_idle"] = len(ticks)
    report["tick_gap_idle"] = max(b - a for a, b in zip(ticks, ticks[1:], strict=False))

    with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
        result = bpy.ops.mujoco.simulate("INVOKE_DEFAULT", duration=DURATION)
    report["invoke"] = sorted(result)
    report["threads"] = physics_threads()
    invoked = time.perf_counter()

    # Blender stays responsive: this script's timer (on Blender's main thread) keeps its beat
    ticks = []
    while time.perf_counter() - invoked < 2.0:
        ticks.append(time.perf_counter())
        yield 0.05
    report["tick_gap_max"] = max(b - a for a, b in zip(ticks, ticks[1:], strict=False))
    report["ticks"] = len(ticks)
    shot = running.latest
    report["progress_before_esc"] = list(shot.progress)
    report["statuses"] = len(events["status"])
    report["status_growing"] = [d for _t, d in events["status"][-3:]]

    # the real Escape key, the mouse over the viewport
    x, y = region_xy(region, region.width // 2, region.height // 2)
    pressed = time.perf_counter()
    subprocess.run(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y), "key", "Escape"],
                   check=True)
    while time.perf_counter() - pressed < 5.0 and not any(r != ["PASS_THROUGH"] and t >= pressed and
                                                         kind == "TIMER" for t, kind, r in events["modal"]):
        yield 0.02
    ends = [[t - pressed, kind, r] for t, kind, r in events["modal"] if t >= pressed]
    report["after_esc"] = ends
    shot = running.latest
    report["progress_after"] = list(shot.progress)
    report["steps_after"] = shot.steps
    report["time_after"] = shot.time
    report["playing_after"] = shot.playing
    yield 0.5
    report["steps_later"] = running.latest.steps  # nothing steps after the cancel

    # the objects show the state the snapshot has (the box body's world position)
    box = next(o for o in scene.objects if o.mujoco.kind == "BODY" and o.mujoco.name == "box")
    body = shot.model.body("box").id
    report["box_error"] = float(max(abs(a - b) for a, b in zip(box.matrix_world.translation,
                                                             shot.xpos[body], strict=True)))

    # and Blender works: a short simulate (EXEC: no window needed) and a stop
    result = bpy.ops.mujoco.simulate(duration=0.1)
    report["simulate_after"] = sorted(result)
    report["steps_after_simulate"] = running.latest.steps
    bpy.ops.mujoco.stop()
    yield 0.3
    report["threads_after_stop"] = physics_threads()
    report["live_after_stop"] = live.simulation(scene) is not None

    # a long simulate again, and a file load while it runs: Blender ends the modal
    # operator (its cancel()), the load ends the simulation
    running = live.start_simulation(scene)
    with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
        bpy.ops.mujoco.simulate("INVOKE_DEFAULT", duration=DURATION)
    yield 0.5
    done, count = running.latest.progress
    report["running_before_load"] = count == 1_000_000 and 0 < done < count

    def after_load():  # (this script's timer goes with the file: a persistent one ends the run)
        report["threads_after_load"] = physics_threads()
        report["live_after_load"] = len(live.all_simulations())
        report["steps_after_load"] = running.latest.steps if running.runner is not None else None
        finish()
    bpy.app.timers.register(after_load, first_interval=1.0, persistent=True)
    bpy.ops.wm.read_homefile(use_empty=True)
    yield 60.0


run_steps(steps)

"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

A model whose step is much slower than real time (27 stacked boxes, a 0.5 ms
timestep, PGS run to its full 1000 iterations: ~13 ms a step) keeps Blender's
UI responsive while it plays: the viewport header's Play button is clicked with
the real mouse (xdotool), the simulation plays for a few seconds while the
modal operator's timer ticks are counted, then the same button (now Pause) is
clicked and the time from the click to the pause operator running, to the
button drawn as Play again and to the runner's snapshot saying paused is
measured. What it saw goes to MJBLEND_RESULT.

Few objects on purpose: under Xvfb Blender draws with software OpenGL, and
hundreds of objects cost it ~0.5 s a frame with nothing simulated (216 boxes,
measured), which would hide what MJBlend's physics thread does to the UI.
"""

import importlib
import os
import subprocess
import sys
import tempfile
import threading
import time

import bpy
import mujoco
from mathutils import Quaternion

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_mouse import blender_window, region_xy  # noqa: E402
from gui_script import ADDON, cheap_viewport, report, run_steps, view3d  # noqa: E402

SIDE, LAYERS = 3, 3  # boxes per row and column, layers: 27 free bodies
TIMESTEP = 0.0005
PLAY_SECONDS = 3.0


def stack_xml() -> str:
    """Boxes of 10 cm in a stack, each layer sunk 0.5 mm into the one below (contacts
    from the first step on); PGS with tolerance 0 runs all its iterations every step."""
    bodies = []
    for i in range(SIDE * SIDE * LAYERS):
        layer, k = divmod(i, SIDE * SIDE)
        x, y = divmod(k, SIDE)
        pos = ((x - SIDE / 2 + .5) * .104, (y - SIDE / 2 + .5) * .104, .0495 + layer * .0995)
        bodies.append(f'<body pos="{pos[0]:.4f} {pos[1]:.4f} {pos[2]:.4f}"><freejoint/>'
                      '<geom type="box" size=".05 .05 .05"/></body>')
    return (f'<mujoco><option timestep="{TIMESTEP}" solver="PGS" tolerance="0" iterations="1000"/>'
            '<worldbody><geom type="plane" size="2 2 .1"/>'
            f'{"".join(bodies)}</worldbody></mujoco>')


def step_cost(path) -> float:
    """Seconds one mj_step of the model takes here (MuJoCo alone, from its first step)."""
    model = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data)
    start = time.perf_counter()
    mujoco.mj_step(model, data, 10)
    return (time.perf_counter() - start) / 10


def physics_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("MJBlend physics") and t.is_alive()]


def instrument(events):
    """Record when the pause operator runs, every header button draw (time, icon) and
    every display tick of the modal operator (time, whether it showed a new snapshot).
    Returns a function that puts everything back."""
    simulate = importlib.import_module(ADDON + ".operators.simulate")
    sidebar = importlib.import_module(ADDON + ".ui.sidebar")
    live = importlib.import_module(ADDON + ".live.scene_session")

    pause_execute = simulate.MUJOCO_OT_pause.execute

    def execute(self, context):
        events["pause"].append(time.perf_counter())
        return pause_execute(self, context)
    simulate.MUJOCO_OT_pause.execute = execute

    tick = live.LiveSimulation.tick

    def counted_tick(self, now, selected=()):
        shown = tick(self, now, selected)
        events["ticks"].append([time.perf_counter(), shown])
        return shown
    live.LiveSimulation.tick = counted_tick

    header = bpy.types.VIEW3D_HT_header._dyn_ui_initialize()  # Blender's list of appended draws
    original = sidebar.draw_header_button

    def draw_header_button(self, context):  # (exactly self, context)
        running = live.simulation(context.scene)
        events["header"].append([time.perf_counter(), "PAUSE" if running and running.playing else "PLAY"])
        original(self, context)
    header[header.index(original)] = draw_header_button

    def restore():
        simulate.MUJOCO_OT_pause.execute = pause_execute
        live.LiveSimulation.tick = tick
        header[header.index(draw_header_button)] = original
    return restore


def click(x, y):
    """A real left click at X11 (x, y), in the background; returns its start time."""
    start = time.perf_counter()
    subprocess.Popen(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y), "click", "1"])
    return start


def first_after(times, start):
    later = [t for t in times if t >= start]
    return later[0] - start if later else None


def frame_seconds(window) -> float:
    """Blender's own cost of drawing and showing the whole window once (no simulation)."""
    with bpy.context.temp_override(window=window):
        start = time.perf_counter()
        bpy.ops.wm.redraw_timer(type="DRAW_WIN_SWAP", iterations=3)
    return (time.perf_counter() - start) / 3


def steps():
    live = importlib.import_module(ADDON + ".live.scene_session")
    path = os.path.join(tempfile.mkdtemp(), "stack.xml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(stack_xml())
    report["timestep"] = TIMESTEP
    report["step_seconds"] = step_cost(path)
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    bpy.ops.import_scene.mjcf(filepath=path)
    scene = bpy.context.scene
    window, area, _region = view3d()
    view = area.spaces.active.region_3d
    view.view_rotation = Quaternion((1, 0, 0), 1.2)
    view.view_location = (0, 0, 0.3)
    view.view_distance = 3.0
    cheap_viewport(area)
    events = {"pause": [], "ticks": [], "header": []}
    restore = instrument(events)
    yield 0.5
    report["frame_seconds"] = frame_seconds(window)  # (before any physics thread: gui_script)
    yield 0.2

    # the play / pause button is the last item of the viewport header, at its right end
    header = next(r for r in area.regions if r.type == "HEADER")
    button = region_xy(header, header.width - 20, header.height // 2)
    report["button"] = button
    clicked = click(*button)
    for _ in range(100):
        if live.simulation(scene) is not None and live.simulation(scene).modal_running:
            break
        yield 0.02
    running = live.simulation(scene)
    report["play_latency"] = time.perf_counter() - clicked if running else None
    if running is None:
        restore()
        return
    report["threads_playing"] = physics_threads()

    # play: the modal operator's timer keeps ticking while the physics thread steps
    yield 0.5
    start, first = time.perf_counter(), running.latest
    yield PLAY_SECONDS
    shot, wall = running.latest, time.perf_counter() - start
    report["played"] = {"wall": wall, "simulated": shot.time - first.time, "steps": shot.steps - first.steps,
                        "behind": shot.behind, "achieved": shot.achieved, "playing": shot.playing,
                        "fast_now": running.display.fast_now, "message": shot.message}
    times = [t for t, _shown in events["ticks"] if start <= t <= start + wall]
    report["ticks"] = len(times)
    report["ticks_shown"] = sum(1 for t, shown in events["ticks"] if start <= t <= start + wall and shown)
    report["tick_gap_max"] = max((b - a for a, b in zip(times, times[1:], strict=False)), default=None)
    report["header_playing"] = [icon for t, icon in events["header"] if t >= start][-1:]

    # click the same button, now Pause, and time how soon each part answers
    clicked = click(*button)
    snapshot_paused = None
    while time.perf_counter() - clicked < 3.0:
        if snapshot_paused is None and not running.latest.playing:
            snapshot_paused = time.perf_counter() - clicked
        if snapshot_paused is not None and events["pause"] and \
                any(icon == "PLAY" for t, icon in events["header"] if t >= clicked):
            break
        yield 0.005
    report["pause_latency"] = first_after(events["pause"], clicked)
    flips = [t for t, icon in events["header"] if icon == "PLAY"]
    report["header_flip_latency"] = first_after(flips, clicked)
    report["snapshot_pause_latency"] = snapshot_paused  # (read on this script's timer: coarse)
    report["runner_playing_after"] = running.runner.playing
    report["pauses"] = len(events["pause"])

    restore()
    bpy.ops.mujoco.stop()  # (no context override while the physics thread runs: gui_script)
    yield 0.3
    report["threads_after_stop"] = physics_threads()
    report["live_after_stop"] = live.simulation(scene) is not None


run_steps(steps)

"""Runs inside Debian's Blender user interface under Xvfb for bench/overlay_bench.py (case 4):
the 3D view's redraw time with simulate's Info line and the four MuJoCo figures on
(laid out and drawn on every redraw, as a playing simulation's new snapshot makes
them) against the same redraw with them off, interleaved, on the humanoid. Writes
its figures to MJBLEND_RESULT."""

import importlib
import json
import os
import statistics
import sys
import time

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "gui"))
from gui_script import ADDON, cheap_viewport, physics_parked, report, run_steps, view3d  # noqa: E402

SCENE, REPEAT, ITERATIONS = os.environ["MJBLEND_BENCH_SCENE"], int(os.environ["MJBLEND_BENCH_REPEAT"]), 10


def steps():
    build = importlib.import_module(ADDON + ".importer.build")
    scene_session = importlib.import_module(ADDON + ".live.scene_session")
    commands = importlib.import_module(ADDON + ".engine.commands")
    readouts = importlib.import_module(ADDON + ".ui.readouts")
    profile = importlib.import_module(ADDON + ".live.profile")
    plot_draw = importlib.import_module(ADDON + ".ui.plots.draw")
    text, builtin_shader = plot_draw._text, plot_draw.builtin_shader
    scene = bpy.context.scene
    build.import_file(SCENE, scene)
    window, area, region = view3d()
    cheap_viewport(area)
    view = area.spaces.active.region_3d
    view.view_location, view.view_distance = (0.0, 0.0, 0.8), 4.0
    settings = scene.mujoco_plots
    settings.show_plots = settings.show_profiler = False
    running = scene_session.start_simulation(scene)
    settings.show_figures = True
    readouts.ask(scene, running)
    for _ in range(60):  # (the figures' rings filled: a snapshot per batch)
        running.runner.wait(running.send(commands.Step(8)), timeout=60)
    yield 0.5

    measured = profile.of(running)  # (paused: no frame resets what the draw callbacks add up)

    def redraw():
        with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
            drawn = measured._drawn
            start = time.perf_counter()
            bpy.ops.wm.redraw_timer(type="DRAW", iterations=ITERATIONS)
            return (time.perf_counter() - start) / ITERATIONS, (measured._drawn - drawn) / ITERATIONS

    def thin(name, fallback):  # (no wide-line shader: 1-pixel GL lines)
        return None if name.startswith("POLYLINE") else builtin_shader(name, fallback)

    # the breakdown: the same without blf's text (the Info line; the figures' text is drawn from
    # textures), and with 1-pixel lines
    configs = ("off", "on", "no text", "thin lines")
    times = {config: [] for config in configs}
    callback = {config: [] for config in configs}  # MJBlend's draw callbacks (overlays, the corner)
    for repeat in range(REPEAT):
        for config in (configs if repeat % 2 else configs[::-1]):
            settings.show_info = settings.show_figures = config != "off"  # (the figures' data stay published)
            plot_draw._text = (lambda *_args, **_kw: None) if config == "no text" else text
            plot_draw.builtin_shader = thin if config == "thin lines" else builtin_shader
            redraw()  # (warm)
            whole, own = redraw()
            times[config].append(whole)
            callback[config].append(own)
    plot_draw._text, plot_draw.builtin_shader = text, builtin_shader
    extra = statistics.median([a - b for a, b in zip(times["on"], times["off"], strict=True)])
    report["figures"] = {"blender": bpy.app.version_string,
                         "redraw": {c: statistics.median(t) for c, t in times.items()},
                         "callback": {c: statistics.median(t) for c, t in callback.items()}, "extra": extra}
    with open(os.environ["MJBLEND_RESULT"] + ".figures", "w", encoding="utf-8") as fh:
        json.dump(report["figures"], fh)
    running.runner.stop()
    yield 0.2


run_steps(steps)

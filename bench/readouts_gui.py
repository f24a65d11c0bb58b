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

import blf
import bpy
import gpu
from gpu_extras.batch import batch_for_shader

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
    builtin_shader = plot_draw.builtin_shader
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

    # The breakdown. llvmpipe draws asynchronously: a callback's own time is what Python and
    # the driver spend, its rasterization lands later (in the next call that waits: a blf.draw
    # did). "synced" waits for the GPU (a pixel read) before and after the callback: its whole
    # cost. The floors, synced, in a callback of their own: one small quad, one quad the size
    # of the corner's backgrounds (4 figures and the Info line: alpha-blended pixels), and the
    # Info line with blf.
    mode = {"sync": False, "floor": None}
    floor_time = []
    flat = builtin_shader("UNIFORM_COLOR", "2D_UNIFORM_COLOR")
    info_text = readouts.info_line(running)

    def sync():
        gpu.state.active_framebuffer_get().read_color(0, 0, 1, 1, 4, 0, "FLOAT")

    def quad(w, h):
        gpu.state.blend_set("ALPHA")
        flat.bind()
        flat.uniform_float("color", plot_draw.BACKGROUND)
        batch_for_shader(flat, "TRIS", {"pos": [(10, 10), (10 + w, 10), (10 + w, 10 + h), (10, 10 + h)]},
                         indices=[(0, 1, 2), (0, 2, 3)]).draw(flat)
        gpu.state.blend_set("NONE")

    def blf_line():
        plot_draw.text_size(plot_draw.TEXT_SIZE)
        blf.color(0, *plot_draw.TEXT)
        blf.position(0, 20, 20, 0)
        blf.draw(0, info_text)

    corner = plot_draw.WIDTH, 4 * (plot_draw.HEIGHT + plot_draw.GAP) + plot_draw.PROFILER_HEIGHT
    floors = {"one quad": lambda: quad(40, 20), "backgrounds": lambda: quad(*corner), "blf line": blf_line}

    def callback():
        if mode["sync"]:
            sync()
        start = time.perf_counter()
        if mode["floor"] is None:
            draw()
        else:
            floors[mode["floor"]]()
        if mode["sync"]:
            sync()
            floor_time.append(time.perf_counter() - start)
    draw = plot_draw.draw
    for handle in plot_draw._handles:
        bpy.types.SpaceView3D.draw_handler_remove(handle, "WINDOW")
    handles = [bpy.types.SpaceView3D.draw_handler_add(callback, (), "WINDOW", "POST_PIXEL")]

    configs = ("off", "on", "synced", *(f"floor {name}" for name in floors))
    times = {config: [] for config in configs}
    callback_times = {config: [] for config in configs}  # MJBlend's draw callbacks (overlays, the corner)
    for repeat in range(REPEAT):
        for config in (configs if repeat % 2 else configs[::-1]):
            settings.show_info = settings.show_figures = config in ("on", "synced")
            mode["sync"] = config not in ("on", "off")
            mode["floor"] = config.removeprefix("floor ") if config.startswith("floor") else None
            redraw()  # (warm)
            floor_time.clear()
            whole, own = redraw()
            times[config].append(whole)
            callback_times[config].append(statistics.median(floor_time) if floor_time else own)
    mode["sync"], mode["floor"] = False, None
    for handle in handles:
        bpy.types.SpaceView3D.draw_handler_remove(handle, "WINDOW")
    plot_draw._handles[:] = [bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_PIXEL")]
    extra = statistics.median([a - b for a, b in zip(times["on"], times["off"], strict=True)])
    report["figures"] = {"blender": bpy.app.version_string,
                         "redraw": {c: statistics.median(t) for c, t in times.items()},
                         "callback": {c: statistics.median(t) for c, t in callback_times.items()},
                         "extra": extra}
    with open(os.environ["MJBLEND_RESULT"] + ".figures", "w", encoding="utf-8") as fh:
        json.dump(report["figures"], fh)
    running.runner.stop()
    yield 0.2


run_steps(steps)

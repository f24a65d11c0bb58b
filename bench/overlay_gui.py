"""Runs inside Debian's Blender (3.4) user interface under Xvfb for bench/overlay_bench.py:
the 3D view's redraw time with every MuJoCo overlay on (recomputed on every redraw,
as a playing simulation's new snapshot makes it) against the same redraw with them
off, interleaved. Writes its figures to MJBLEND_RESULT."""

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
    settings = importlib.import_module(ADDON + ".components.overlay_settings")
    draw = importlib.import_module(ADDON + ".ui.overlays.draw")
    layers = importlib.import_module(ADDON + ".ui.overlays.layers")
    scene = bpy.context.scene
    build.import_file(SCENE, scene)
    window, area, region = view3d()
    cheap_viewport(area)
    area.spaces.active.overlay.show_overlays = True
    view = area.spaces.active.region_3d
    view.view_location, view.view_distance = (1.0, 1.0, 0.0), 6.0
    running = scene_session.start_simulation(scene)
    running.runner.wait(running.send(commands.Step(400)), timeout=60)
    switches = scene.mujoco_overlays
    # every redraw computes its overlays anew, as a new snapshot each frame makes it
    owner = scene_session.of(scene)

    def forget():
        owner.overlay_layers = None
    fresh = bpy.types.SpaceView3D.draw_handler_add(forget, (), "WINDOW", "PRE_VIEW")
    yield 0.5

    def overlays(config: str):
        for name, _label, _text in settings.OVERLAYS:
            shown = config in ("all", "no labels") or (config == "contacts" and "contact" in name)
            setattr(switches, name, shown)
        switches.labels = "BODY" if config in ("all", "labels") else "NONE"
        scene.mujoco_simulation.show_inertia = config in ("all", "no labels")

    def redraw():
        with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
            start = time.perf_counter()
            bpy.ops.wm.redraw_timer(type="DRAW", iterations=ITERATIONS)
            return (time.perf_counter() - start) / ITERATIONS

    configs = ("off", "all", "no labels", "labels", "contacts")
    times = {config: [] for config in configs}
    callback = {config: [] for config in configs}
    for repeat in range(REPEAT):
        for config in (configs if repeat % 2 else configs[::-1]):
            overlays(config)
            redraw()  # (warm: the first redraw after a switch)
            times[config].append(redraw())
            callback[config].append(draw.draw_seconds)
    bpy.types.SpaceView3D.draw_handler_remove(fresh, "WINDOW")
    overlays("all")
    computed = []  # of it, the layers' computation alone (no GPU)
    for _ in range(20):
        forget()
        start = time.perf_counter()
        layers.of_scene(scene)
        computed.append(time.perf_counter() - start)
    shot = running.latest
    report["figures"] = {"ncon": len(shot.contacts), "nbody": shot.model.nbody,
                         "blender": bpy.app.version_string,
                         "redraw": {c: statistics.median(t) for c, t in times.items()},
                         "extra": {c: statistics.median([a - b for a, b in zip(t, times["off"], strict=True)])
                                   for c, t in times.items()},
                         "callback": {c: statistics.median(t) for c, t in callback.items()},
                         "computed": statistics.median(computed)}
    with open(os.environ["MJBLEND_RESULT"] + ".figures", "w", encoding="utf-8") as fh:
        json.dump(report["figures"], fh)
    running.runner.stop()
    yield 0.2


run_steps(steps)

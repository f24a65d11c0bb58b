"""Runs inside Debian's Blender user interface under Xvfb for bench/overlay_bench.py
(case 3): the 3D view's redraw time with 1000 debug markers in a served bridge's
store (MJBLEND_BENCH_MARKERS: the requests), unchanged and changing every redraw,
against the same redraw without them, interleaved. Writes its figures to
MJBLEND_RESULT.figures."""

import importlib
import json
import os
import socket
import statistics
import sys
import time

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "gui"))
from gui_script import ADDON, overlay_view, physics_parked, report, run_steps, view3d  # noqa: E402

REQUESTS, REPEAT = os.environ["MJBLEND_BENCH_MARKERS"], int(os.environ["MJBLEND_BENCH_REPEAT"])
ITERATIONS = 10
SCENE = ('<mujoco model="bench"><worldbody><geom type="plane" size="3 3 .1"/><body name="ball" pos="0 0 1">'
         '<freejoint/><geom type="sphere" size=".1"/></body></worldbody></mujoco>')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def steps():
    build = importlib.import_module(ADDON + ".importer.build")
    bridge_host = importlib.import_module(ADDON + ".live.bridge_host")
    debug_markers = importlib.import_module(ADDON + ".bridge.debug_markers")
    debug_draw = importlib.import_module(ADDON + ".ui.overlays.debug_draw")
    scene = bpy.context.scene
    for obj in list(scene.objects):
        bpy.data.objects.remove(obj)
    path = os.path.join(os.path.dirname(REQUESTS), "bench.xml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(SCENE)
    build.import_file(path, scene)
    window, area, region = view3d()
    overlay_view(area)
    view = area.spaces.active.region_3d
    view.view_location, view.view_distance = (0.0, 0.0, 0.3), 6.0
    served = bridge_host.start(scene, request_port=free_port(), state_port=free_port())
    store = served.bridge.dispatcher.debug.markers
    with open(REQUESTS, encoding="utf-8") as fh:
        requests = json.load(fh)
    yield 0.5
    bump = {"on": False, "n": 0}

    def change():  # (every redraw: the markers changed, new batches)
        if bump["on"]:
            bump["n"] += 1
            store.set_text(f"frame {bump['n']}")
    fresh = bpy.types.SpaceView3D.draw_handler_add(change, (), "WINDOW", "PRE_VIEW")

    def markers(config: str):
        store.clear()
        store.set_text("")
        if config != "off":
            for request in requests:
                store.add(debug_markers.SHAPES[request["op"]](request))
        bump["on"] = config == "changing"

    def redraw():
        with physics_parked(served.host.live), \
                bpy.context.temp_override(window=window, area=area, region=region):
            start = time.perf_counter()
            bpy.ops.wm.redraw_timer(type="DRAW", iterations=ITERATIONS)
            return (time.perf_counter() - start) / ITERATIONS

    configs = ("off", "static", "changing")
    times = {config: [] for config in configs}
    callback = {config: [] for config in configs}
    for repeat in range(REPEAT):
        for config in (configs if repeat % 2 else configs[::-1]):
            markers(config)
            redraw()  # (warm)
            times[config].append(redraw())
            drew = debug_draw.draw_seconds + debug_draw.text_seconds
            callback[config].append(drew if config != "off" else 0.0)
    bpy.types.SpaceView3D.draw_handler_remove(fresh, "WINDOW")
    markers("static")
    report["figures"] = {"blender": bpy.app.version_string, "markers": len(store),
                         "segments": sum(len(m.lines) // 2 for m in store.frame().markers),
                         "redraw": {c: statistics.median(t) for c, t in times.items()},
                         "extra": {c: statistics.median([a - b for a, b in zip(t, times["off"], strict=True)])
                                   for c, t in times.items()},
                         "callback": {c: statistics.median(t) for c, t in callback.items()},
                         "labels": debug_draw.label_path}
    with open(os.environ["MJBLEND_RESULT"] + ".figures", "w", encoding="utf-8") as fh:
        json.dump(report["figures"], fh)
    bridge_host.stop()
    yield 0.2


run_steps(steps)

"""Runs inside Blender's real user interface (Debian's blender under Xvfb) for
tests/gui/test_gui_debug_viewport.py: a ball above a floor (MJBLEND_MODEL) served
over the bridge on the test's ports (MJBLEND_BRIDGE_PORTS), the largest 3D view
drawn cheaply on dark blue (no grid, axes, cursor or gizmos: a red marker is the only red).
The test's client then draws markers, moves and reads the view's eye, tracks the
falling ball and takes screenshots over the bridge, served by the bridge's
watch timer as in any window; this script waits for the test's word
(test-done.json, or test-abort.json) and stops the bridge, and when the test asks
(grab-ask.json, the simulation paused, right after a screenshot) reads the view's
region as the X server shows it (gui_x11.grab) into grab.png."""

import importlib
import json
import os
import sys
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_x11  # noqa: E402
from gui_script import ADDON, RESULT, overlay_view, report, run_steps, view3d  # noqa: E402

MODEL = os.environ["MJBLEND_MODEL"]
REQUEST_PORT, STATE_PORT = (int(p) for p in os.environ["MJBLEND_BRIDGE_PORTS"].split(","))
FOLDER = os.path.dirname(RESULT)
WAIT = 150.0  # seconds the test may take


def steps():
    bridge_host = importlib.import_module(ADDON + ".live.bridge_host")
    build = importlib.import_module(ADDON + ".importer.build")
    scene = bpy.context.scene
    for obj in list(scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    build.import_file(MODEL, scene)
    scene.mujoco_simulation.display = "OBJECTS"
    window, area, region = view3d()
    overlay_view(area)
    area.spaces.active.show_gizmo = False  # (the navigation gizmo's red x axis)
    shading = area.spaces.active.shading
    shading.background_type, shading.background_color = "VIEWPORT", (0.0, 0.0, 0.4)
    shading.color_type, shading.single_color = "SINGLE", (0.5, 0.5, 0.5)
    yield 0.3
    bridge_host.start(scene, request_port=REQUEST_PORT, state_port=STATE_PORT)
    report["started"] = bridge_host.status() is not None
    path = os.path.join(FOLDER, "blender-serving.json")
    with open(path + ".part", "w", encoding="utf-8") as fh:
        json.dump({"request_port": REQUEST_PORT}, fh)
    os.replace(path + ".part", path)
    deadline = time.perf_counter() + WAIT
    while not any(os.path.exists(os.path.join(FOLDER, f"test-{w}.json")) for w in ("done", "abort")):
        if time.perf_counter() > deadline:
            raise TimeoutError("no word from the test")
        if os.path.exists(os.path.join(FOLDER, "grab-ask.json")) and "laid_over" not in report:
            yield 0.5  # (the frame the screenshot was taken in, unless Blender drew again since)
            top = window.height - (region.y + region.height)  # (X11 y grows downwards)
            gui_x11.save_png(os.path.join(FOLDER, "grab.png"), gui_x11.grab(
                gui_x11.blender_x_window(), region.x, top, region.width, region.height))
            # what Blender draws over the view after it (header, toolbar...): boxes in the region's picture
            unit = round(20 * bpy.context.preferences.system.ui_scale)
            report["laid_over"] = gui_x11.laid_over(area, region, unit)
            with open(os.path.join(FOLDER, "grab-done.json"), "w", encoding="utf-8") as fh:
                json.dump(report["laid_over"], fh)
        yield 0.1
    report["view"] = {"lens": area.spaces.active.lens, "shading": shading.type}
    bridge_host.stop()
    yield 0.1


run_steps(steps)

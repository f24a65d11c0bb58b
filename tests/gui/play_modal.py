"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

Imports examples/desk_toys.xml, starts `mujoco.play` with INVOKE (the modal
operator on a real window-manager timer), lets it run, opens the MuJoCo tab
of the viewport sidebar (gui_script.open_sidebar_tab), pauses, stops, and
writes what it saw to MJBLEND_RESULT; a screenshot of the running
simulation goes to MJBLEND_SCREENSHOT.

Usage (tests/gui/test_gui_simulation.py does this):
    xvfb-run blender start.blend --python-use-system-env --python play_modal.py
"""

import importlib
import os
import subprocess
import sys
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import (ADDON, SCREENSHOT, open_sidebar_tab, play_invoke, record_draws, report, run_steps,  # noqa: E402
                        screenshot_view, view3d)

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "desk_toys.xml")
report["samples"] = []


def box_height():
    """What the last sync wrote (a free body of a root at the origin: its world height)."""
    box = next(o for o in bpy.context.scene.objects if o.mujoco.kind == "BODY" and o.mujoco.name == "box")
    return box.location.z


def steps():
    live = importlib.import_module(ADDON + ".live.scene_session")
    transforms = importlib.import_module(ADDON + ".scene.transforms")
    panels = importlib.import_module(ADDON + ".ui.sidebar")
    for cls in panels.CLASSES:
        if issubclass(cls, bpy.types.Panel):
            record_draws(cls)
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    bpy.ops.import_scene.mjcf(filepath=MODEL)
    window, area, region = view3d()
    area.spaces.active.show_region_ui = True
    with bpy.context.temp_override(window=window, area=area, region=region):
        bpy.ops.view3d.view_all()
    authored = {o.name: transforms.transform(o) for o in bpy.context.scene.objects}
    report["start_height"] = box_height()
    yield 0.5

    running = play_invoke()
    report["modal_running"] = running.modal_running
    start = time.perf_counter()
    while time.perf_counter() - start < 2.0 or len(report["samples"]) < 5:
        report["samples"].append([time.perf_counter() - start, running.latest.time, box_height()])
        yield 0.1

    yield from open_sidebar_tab(window, area, "MJBLEND_PT_simulation")
    yield 0.5
    if SCREENSHOT:
        screenshot_view(SCREENSHOT)
    report["rtf"] = running.latest.achieved

    bpy.ops.mujoco.pause()  # (no context override while the physics thread runs: gui_script)
    report["paused_at_once"] = not running.playing  # the intent shows before the runner applies it
    yield 0.3  # the physics thread applies the pause between two batches
    paused_at = running.latest.time
    report["snapshot_paused"] = not running.latest.playing
    yield 0.5
    report["paused_advance"] = running.latest.time - paused_at

    bpy.ops.mujoco.stop()
    yield 0.3  # the modal operator sees the stop on its next timer event
    report["modal_after_stop"] = running.modal_running
    report["restored"] = authored == {o.name: transforms.transform(o) for o in bpy.context.scene.objects}
    report["live_after_stop"] = live.simulation(bpy.context.scene) is not None

    # Add > MuJoCo and its submenus, and the MuJoCo convert menu, open and draw
    menus = importlib.import_module(ADDON + ".ui.add_menu")
    for menu in menus.MENUS + (menus.CONVERT,):
        record_draws(menu)
        with bpy.context.temp_override(window=window, area=area, region=region):
            bpy.ops.wm.call_menu(name=menu.bl_idname)
        yield 0.3
        subprocess.run(["xdotool", "key", "Escape"], check=True)
        yield 0.2


run_steps(steps)

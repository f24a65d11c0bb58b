"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

Plots and the profiler line: dm_control's CMU humanoid falling over, two sensor
plots (its root's velocimeter and gyro) added with `mujoco.plot_add` and the
profiler line on,
played with `mujoco.play` INVOKE'd in the 3D view (the modal operator on a
real window timer, the runner on its physics thread), the sidebar's MuJoCo tab
open on the Plots panel. A screenshot of the 3D view goes to MJBLEND_SCREENSHOT;
where the figures are (screenshot pixels), the line colours, the profiler's
figures and what the draw callback cost go to MJBLEND_RESULT.
"""

import importlib
import os
import sys
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import (ADDON, SCREENSHOT, look, open_sidebar_tab, overlay_view, physics_parked,  # noqa: E402
                        play_invoke, report, run_steps, screenshot_view, view3d)
from gui_script import reopen_sidebar  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(HERE, "..", "..", "..", "shared", "corpus"))
HUMANOID = os.path.join(CORPUS, "pip", "dm_control", "suite", "humanoid_CMU.xml")
SENSORS = ("sensor_root_veloc", "sensor_root_gyro")


def show_plots_panel(sidebar, plots_panel):
    """The sidebar's Plots panel open, the tab's other panels closed on first draw; its
    draws recorded."""
    reopen_sidebar(sidebar, {plots_panel.MJBLEND_PT_plots.__name__})

def steps():
    show_plots_panel(importlib.import_module(ADDON + ".ui.sidebar"),
                     importlib.import_module(ADDON + ".ui.plots.panel"))
    build = importlib.import_module(ADDON + ".importer.build")
    plot_draw = importlib.import_module(ADDON + ".ui.plots.draw")
    profile = importlib.import_module(ADDON + ".live.profile")
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    scene = bpy.context.scene
    build.import_file(HUMANOID, scene)
    window, area, region = view3d()
    overlay_view(area)
    look(area, (0.3, 0.0, 0.5), (1.25, 0.0, 0.9), 3.5)
    report["added"] = [sorted(bpy.ops.mujoco.plot_add(kind="SENSOR", element=name)) for name in SENSORS]
    settings = scene.mujoco_plots
    settings.show_profiler = True
    settings.seconds = 3.0
    area.spaces.active.show_region_ui = True
    yield 0.5
    yield from open_sidebar_tab(window, area, "MJBLEND_PT_plots")

    running = play_invoke()
    start = time.perf_counter()
    while time.perf_counter() - start < 2.0:  # (it falls over in the first second)
        yield 0.2
    with physics_parked(running):
        shot = running.latest
        scale = bpy.context.preferences.system.ui_scale
        placed = plot_draw.layout(scene, region.width, region.height, scale, plot_draw.insets(area, region))
        offset = (region.x - area.x, region.y - area.y)  # the region in the area's screenshot
        report["figures"] = [{"frame": [frame[0] + offset[0], frame[1] + offset[1], frame[2], frame[3]],
                              "rect": [fig.rect[0] + offset[0], fig.rect[1] + offset[1], *fig.rect[2:]],
                              "title": fig.title, "labels": list(fig.labels), "points": len(fig.lines[0])}
                             for frame, fig in placed.figures]
        report["colors"] = [list(plot_draw.color(i)) for i in range(3)]
        report["area"] = [area.width, area.height]
        report["sidebar"] = plot_draw.insets(area, region)[1]
        report["time"] = shot.time
        report["playing"] = shot.playing
        report["plotted"] = [str(s.spec) for s in shot.plots.series] if shot.plots is not None else []
        measured = profile.of(running)
        report["profile"] = list(measured.means() or [])
        report["profile_line"] = measured.line(shot)
        report["frames"] = len(measured.frames)
        costs = []
        for _ in range(20):  # the draw callback's geometry alone (its GPU calls: in the profile's draw)
            begin = time.perf_counter()
            plot_draw.layout(scene, region.width, region.height, scale, plot_draw.insets(area, region))
            costs.append(time.perf_counter() - begin)
        report["layout_seconds"] = sorted(costs)[len(costs) // 2]
    if SCREENSHOT:
        screenshot_view(SCREENSHOT)
    yield 0.3
    bpy.ops.mujoco.stop()
    yield 0.5


run_steps(steps)

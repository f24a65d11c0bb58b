"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

simulate's readouts (issue 34): MuJoCo's humanoid with the sidebar's MuJoCo tab
open on the Simulation panel and its Info and Watch sub-panels expanded, two
watched values (qpos 2, and a field that does not exist) added with
`mujoco.watch_add`, the Info line and the four MuJoCo figures on, played with
`mujoco.play` INVOKE'd in the 3D view (the runner on its physics thread) for 2 s.
A screenshot of the 3D view goes to MJBLEND_SCREENSHOT; the Info rows and the
watched values beside the same snapshot's own arrays, where the figures are
(screenshot pixels), their colours and what laying them out costs go to
MJBLEND_RESULT.
"""

import importlib
import os
import sys
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import (ADDON, SCREENSHOT, look, open_sidebar_tab, overlay_view, physics_parked,  # noqa: E402
                        play_invoke, record_draws, report, run_steps, screenshot_view, view3d)

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(HERE, "..", "..", "..", "shared", "corpus"))
HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")


def open_readout_panels(readouts):
    """The Info and Watch sub-panels registered again open, their draws recorded."""
    for cls in reversed(readouts.CLASSES):
        bpy.utils.unregister_class(cls)
    for cls in readouts.CLASSES:
        cls.bl_options = set()
        record_draws(cls)
        bpy.utils.register_class(cls)


def steps():
    readouts = importlib.import_module(ADDON + ".ui.readouts")
    open_readout_panels(readouts)
    build = importlib.import_module(ADDON + ".importer.build")
    plot_draw = importlib.import_module(ADDON + ".ui.plots.draw")
    watch = importlib.import_module(ADDON + ".engine.watch")
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    scene = bpy.context.scene
    build.import_file(HUMANOID, scene)
    window, area, region = view3d()
    overlay_view(area)
    look(area, (0.0, 0.0, 0.8), (1.25, 0.0, 0.9), 4.0)
    report["added"] = [sorted(bpy.ops.mujoco.watch_add(field="qpos", index=2)),
                       sorted(bpy.ops.mujoco.watch_add(field="xpos", index=3 * 2 + 2)),
                       sorted(bpy.ops.mujoco.watch_add(field="qposs", index=0))]
    settings = scene.mujoco_plots
    settings.show_info = settings.show_figures = True
    settings.show_plots = False
    area.spaces.active.show_region_ui = True
    yield 0.5
    yield from open_sidebar_tab(window, area, "MJBLEND_PT_info")

    running = play_invoke()
    start = time.perf_counter()
    while time.perf_counter() - start < 2.0:
        yield 0.2
    for _ in range(10):  # (the panels draw the playing simulation)
        if "MJBLEND_PT_watch" in report["drawn"]:
            break
        area.tag_redraw()
        yield 0.2
    with physics_parked(running):
        shot = running.latest
        scale = bpy.context.preferences.system.ui_scale
        placed = plot_draw.layout(scene, region.width, region.height, scale, plot_draw.insets(area, region))
        offset = (region.x - area.x, region.y - area.y)  # the region in the area's screenshot
        report["figures"] = [{"frame": [frame[0] + offset[0], frame[1] + offset[1], frame[2], frame[3]],
                              "rect": [fig.rect[0] + offset[0], fig.rect[1] + offset[1], *fig.rect[2:]],
                              "title": fig.title, "labels": list(fig.labels),
                              "points": [len(line) for line in fig.lines]}
                             for frame, fig in placed.figures]
        report["colors"] = [list(plot_draw.color(i)) for i in range(6)]
        report["area"] = [area.width, area.height]
        report["time"], report["playing"] = shot.time, shot.playing
        report["watch"] = [v if isinstance(v, str) else float(v) for v in shot.watch]
        report["watch_text"] = [watch.text(v) for v in shot.watch]
        report["snapshot"] = {"qpos2": float(shot.qpos[2]), "xpos2z": float(shot.xpos[2, 2])}
        report["info_rows"] = readouts.info_rows(running)
        report["info"] = {"nefc": shot.info.nefc, "ncon": shot.info.ncon, "time": shot.info.time,
                          "contacts": len(shot.contacts), "steps_timed": int(shot.info.timer_number[0])}
        report["info_line"] = placed.info[0] if placed.info else ""
        if placed.info:  # its background strip, in the area's screenshot (as plots/draw.py draws it)
            text, x, y, align = placed.info
            width = plot_draw.text_width(text, plot_draw.TEXT_SIZE * scale)
            x = x if align == "LEFT" else x - width
            report["info_box"] = [x - 4 * scale + offset[0], y - 5 * scale + offset[1], width + 8 * scale,
                                  plot_draw.PROFILER_HEIGHT * scale]
        report["figure_data"] = {"timers": shot.figures.timers.shape[1], "sizes": shot.figures.sizes.shape[1],
                                 "nv": float(shot.figures.sizes[0, 0]), "model_nv": shot.model.nv}
        costs = []
        for _ in range(20):  # the draw callback's geometry alone
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

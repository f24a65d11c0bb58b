"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

Reload and Follow File (issue 34, part 3): a two-link arm (written here) imported and
played on the physics thread (`mujoco.play` INVOKE'd), Follow File switched on as the
Model panel's toggle does; then the file is saved again with the forearm's capsule
twice as thick, as an editor would (written and its time moved a second on), and
nothing else is done: add-on's own timer must notice the save and reload in place.
What changed (the forearm geom's object, its size, the simulation's clock and model)
goes to MJBLEND_RESULT, then a broken save (MuJoCo refuses it) and the message the
Model panel shows; a screenshot of the 3D view after the good reload to
MJBLEND_SCREENSHOT.
"""

import importlib
import os
import sys
import tempfile
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import (ADDON, SCREENSHOT, look, open_sidebar_tab, overlay_view, play_invoke,  # noqa: E402
                        report, run_steps, screenshot_view, view3d)
from gui_script import reopen_sidebar  # noqa: E402

ARM = """
<mujoco>
  <worldbody>
    <light pos="0 0 3"/>
    <geom type="plane" size="2 2 .1"/>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" axis="0 1 0" damping=".5"/>
      <geom name="upper" type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
      <body name="forearm" pos=".5 0 0">
        <joint name="elbow" axis="0 1 0" range="-90 90" damping=".2"/>
        <geom name="fore" type="capsule" fromto="0 0 0 .4 0 0" size="{size}"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""
WAIT = 3.0  # seconds the reload may take to show (the timer polls twice a second)


def save(path, text):
    """An editor's save: the new text, its modification time a second on."""
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, max(stat.st_mtime_ns, time.time_ns()) + 1_000_000_000))


def show_model_panel(sidebar):
    """The Model panel open, its draws recorded."""
    reopen_sidebar(sidebar, {"MJBLEND_PT_model"})

def fore(scene):
    return next(o for o in scene.objects if o.mujoco.kind == "GEOM" and o.mujoco.name == "fore")


def steps():
    show_model_panel(importlib.import_module(ADDON + ".ui.sidebar"))
    build = importlib.import_module(ADDON + ".importer.build")
    scene_session = importlib.import_module(ADDON + ".live.scene_session")
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    scene = bpy.context.scene
    path = os.path.join(tempfile.mkdtemp(prefix="mjblend-reload-"), "arm.xml")
    save(path, ARM.format(size=".04"))
    build.import_file(path, scene)
    window, area, _region = view3d()
    overlay_view(area)
    look(area, (0.4, 0.0, 0.8), (1.4, 0.0, 0.0), 2.5)
    area.spaces.active.show_region_ui = True
    yield 0.5
    yield from open_sidebar_tab(window, area, "MJBLEND_PT_model")
    view = area.spaces.active.region_3d
    report["view_before"] = list(view.view_location) + [view.view_distance]

    running = play_invoke()
    scene.mujoco_simulation.follow_file = True  # (the Model panel's Follow toggle)
    yield 1.0
    geom = fore(scene)
    shot = running.latest
    report["before"] = {"pointer": geom.as_pointer(), "width": min(geom.dimensions),
                        "time": shot.time, "playing": running.playing,
                        "radius": float(shot.model.geom_size[shot.model.geom("fore").id][0])}
    save(path, ARM.format(size=".08"))
    start = time.perf_counter()
    while time.perf_counter() - start < WAIT and abs(min(fore(scene).dimensions)
                                                     - report["before"]["width"]) < 1e-6:
        yield 0.1
    report["reload_seconds"] = time.perf_counter() - start
    yield 0.5  # (a few more frames of the new model playing)
    geom = fore(scene)
    shot = running.latest
    report["after"] = {"pointer": geom.as_pointer(), "width": min(geom.dimensions),
                       "time": shot.time, "playing": running.playing,
                       "same_simulation": scene_session.simulation(scene) is running,
                       "radius": float(shot.model.geom_size[shot.model.geom("fore").id][0])}
    owner = scene_session.existing(scene)
    report["reloads"] = owner.file_watch.reloads
    report["view_after"] = list(view.view_location) + [view.view_distance]
    if SCREENSHOT:
        screenshot_view(SCREENSHOT)

    report["drawn"].clear()
    save(path, ARM.format(size=".08").replace("</worldbody>", "</wrldbody>"))
    start = time.perf_counter()
    while time.perf_counter() - start < WAIT and not owner.file_watch.error:
        yield 0.1
    area.tag_redraw()
    for region in area.regions:
        region.tag_redraw()
    yield 1.0  # (the panel draws with the message)
    report["refused"] = {"error": owner.file_watch.error, "reloads": owner.file_watch.reloads,
                         "pointer": fore(scene).as_pointer(), "playing": running.playing,
                         "time": running.latest.time, "drawn": list(report["drawn"])}
    bpy.ops.mujoco.stop()
    yield 0.5


run_steps(steps)

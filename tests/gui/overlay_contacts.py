"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

The contact overlays: a box resting on a plane, simulated on the physics
thread, with the contact point and contact force overlays switched on by their
add-on keys (Shift+Alt+C, Shift+Alt+F through `mujoco.toggle_overlay`, called
as the keymap calls it). A screenshot of the 3D view goes to MJBLEND_SCREENSHOT;
the contact points and force arrow tips projected into it (pixels of the
screenshot), the overlay colours and the draw callback's time go to MJBLEND_RESULT.
"""

import importlib
import os
import sys
import tempfile

import bpy
from bpy_extras.view3d_utils import location_3d_to_region_2d

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import (ADDON, SCREENSHOT, look, overlay_view, physics_parked, report, run_steps,  # noqa: E402
                        screenshot_view, view3d)

SCENE = """<mujoco><option timestep="0.002"/><worldbody>
  <geom type="plane" size="2 2 .1" rgba=".2 .2 .25 1"/>
  <body name="box" pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1" rgba=".3 .3 .8 1"/></body>
</worldbody></mujoco>"""


def steps():
    build = importlib.import_module(ADDON + ".importer.build")
    scene_session = importlib.import_module(ADDON + ".live.scene_session")
    commands = importlib.import_module(ADDON + ".engine.commands")
    draw = importlib.import_module(ADDON + ".ui.overlays.draw")
    layers = importlib.import_module(ADDON + ".ui.overlays.layers")
    path = os.path.join(tempfile.mkdtemp(), "box.xml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(SCENE)
    build.import_file(path, bpy.context.scene)
    window, area, region = view3d()
    overlay_view(area)
    look(area, (0.0, 0.0, 0.05), (1.2, 0.0, 0.5), 1.2)
    view = area.spaces.active.region_3d
    for name in ("contact_points", "contact_forces", "labels"):  # (labels: bodies)
        with bpy.context.temp_override(window=window, area=area, region=region):
            report.setdefault("toggled", []).append(sorted(bpy.ops.mujoco.toggle_overlay(overlay=name)))
    running = scene_session.start_simulation(bpy.context.scene)
    running.runner.wait(running.send(commands.Step(250)), timeout=10)
    yield 1.0
    with physics_parked(running):
        drawn = layers.of_scene(bpy.context.scene)
        found = {layer.name: layer for layer in drawn.layers}
        offset = (region.x - area.x, region.y - area.y)

        def pixels(points):
            out = []
            for point in points:
                at = location_3d_to_region_2d(region, view, point)
                out.append([at.x + offset[0], at.y + offset[1]] if at is not None else None)
            return out
        report["contacts"] = pixels(found["contact points"].points)
        report["labels"] = [[text, *pixels([position])[0]] for text, position in drawn.labels]
        report["tips"] = pixels(found["contact forces"].points)
        report["colors"] = {"contact points": list(found["contact points"].color),
                            "contact forces": list(found["contact forces"].color)}
        report["area"] = [area.width, area.height]
        report["ncon"] = len(running.latest.contacts)
    area.tag_redraw()
    yield 1.0
    report["draw_seconds"] = draw.draw_seconds
    if SCREENSHOT:
        screenshot_view(SCREENSHOT)
    yield 0.3
    running.runner.stop()
    yield 0.3


run_steps(steps)

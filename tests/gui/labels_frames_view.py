"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

Labels, frames, groups and the Visualization panel (issue 34, part 4): a two-link arm
with a flex cloth (group 3), a skin (group 4), a box falling on the floor, two actuator
groups, a camera and a light, played with `mujoco.play` INVOKE'd in the 3D view. While
it plays:

- Shift+Alt+L pressed for real (xdotool) over the 3D view 17 times: every label kind
  and back to none; what each draw of the labels drew (how many, atlas or blf) noted;
- `mujoco.toggle_overlay(overlay="frame")` run in the 3D view 8 times: every frame
  kind, its layers noted;
- the overlay popover opened (wm.call_panel), its draws recorded;
- flex group 3 and skin group 4 switched on with `mujoco.toggle_group` (their objects
  shown); actuator group 1 disabled with `mujoco.toggle_actuator_group` (the running
  model's disableactuator, the Controls panel's rows: greyed where disabled);
- visual/map force edited on the model root (the Visualization panel's field): the
  running model's value, the same model running on.

The sidebar's MuJoCo tab is open on the Simulation panel with its Controls and
Visualization sub-panels. What it saw goes to MJBLEND_RESULT, a screenshot of the 3D
view (body labels, body frames) to MJBLEND_SCREENSHOT.
"""

import importlib
import os
import subprocess
import sys
import tempfile
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_mouse import blender_window, region_xy  # noqa: E402
from gui_script import (ADDON, SCREENSHOT, look, open_sidebar_tab, overlay_view, physics_parked,  # noqa: E402
                        play_invoke, record_draws, report, run_steps, screenshot_view, view3d)
from gui_script import reopen_sidebar  # noqa: E402

MODEL = """
<mujoco>
  <worldbody>
    <light name="lamp" pos="0 0 3" dir="0 0 -1"/>
    <camera name="side" pos="0 -3 1" xyaxes="1 0 0 0 0 1"/>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="arm" pos="0 0 1"><joint name="swing" axis="0 1 0" damping=".5"/>
      <geom name="upper" type="capsule" fromto="0 0 0 .4 0 0" size=".05"/>
      <body name="forearm" pos=".4 0 0"><joint name="bend" axis="0 1 0" damping=".2"/>
        <geom name="lower" type="capsule" fromto="0 0 0 .3 0 0" size=".04"/></body></body>
    <body name="box" pos=".6 .4 .5"><freejoint/><geom name="cube" type="box" size=".08 .08 .08"/></body>
    <body name="bob" pos="-.5 0 1"><freejoint/><geom size=".05"/></body>
    <flexcomp name="cloth" type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" group="3" pos="0 .8 .5"
      radius=".01"><edge equality="true"/></flexcomp>
  </worldbody>
  <deformable>
    <skin name="patch" group="4" vertex="0 0 0  .1 0 0  0 .1 0" face="0 1 2">
      <bone body="arm" bindpos="0 0 0" bindquat="1 0 0 0" vertid="0 1 2" vertweight="1 1 1"/>
    </skin>
  </deformable>
  <equality><connect name="string" body1="bob" anchor="0 0 .2"/></equality>
  <actuator>
    <motor name="shoulder" joint="swing" group="0" ctrlrange="-1 1"/>
    <motor name="elbow" joint="bend" group="1" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""
OPEN = ("MJBLEND_PT_simulation", "MJBLEND_PT_controls", "MJBLEND_PT_visualization")


def show_panels(sidebar, visual_panel):
    """The Simulation panel and its Controls and Visualization sub-panels open, the tab's
    other top panels closed, every panel's draws recorded; the Controls rows' `enabled`
    noted as drawn (report["control_rows"]: actuator -> enabled)."""
    reopen_sidebar(sidebar, OPEN, record_all=True)  # (Visualization: a sub-panel of Simulation)
    controls = sidebar.MJBLEND_PT_controls
    original = controls.draw_row

    class Spy:  # the column a row is drawn in, keeping the rows made in it
        def __init__(self, col):
            self.col, self.rows = col, []

        def row(self, **kwargs):
            made = self.col.row(**kwargs)
            self.rows.append(made)
            return made

        def __getattr__(self, name):
            return getattr(self.col, name)

    def draw_row(self, col, model, data, index, obj, name):
        spy = Spy(col)
        original(self, spy, model, data, index, obj, name)
        report["control_rows"][name] = [row.enabled for row in spy.rows]
    controls.draw_row = draw_row


def record_labels(overlay_draw):
    """Each draw of the labels: (the label switch, how many, "atlas" or "blf")."""
    original = overlay_draw.draw_named

    def draw_named(named, view, region):
        path = original(named, view, region)
        entry = [bpy.context.scene.mujoco_overlays.labels, len(named), path]
        if entry not in report["label_draws"]:
            report["label_draws"].append(entry)
        return path
    overlay_draw.draw_named = draw_named


def press(key):
    """A real key press with the mouse in the middle of the largest 3D view."""
    _window, _area, region = view3d()
    x, y = region_xy(region, region.width // 2, region.height // 2)
    subprocess.run(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y), "sleep", "0.1",
                    "key", key], check=True)


def hidden(scene, kind):
    obj = next(o for o in scene.objects if o.mujoco.kind == kind)
    return [obj.hide_get(), obj.hide_render]


def steps():
    report.update(control_rows={}, label_draws=[], labels=[], frames=[])
    sidebar = importlib.import_module(ADDON + ".ui.sidebar")
    show_panels(sidebar, importlib.import_module(ADDON + ".ui.visual_panel"))
    record_draws(importlib.import_module(ADDON + ".ui.overlays.popover").MJBLEND_PT_overlays)
    record_labels(importlib.import_module(ADDON + ".ui.overlays.draw"))
    layers = importlib.import_module(ADDON + ".ui.overlays.layers")
    build = importlib.import_module(ADDON + ".importer.build")
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    scene = bpy.context.scene
    path = os.path.join(tempfile.mkdtemp(prefix="mjblend-labels-"), "labels.xml")
    with open(path, "w", encoding="utf-8") as file:
        file.write(MODEL)
    build.import_file(path, scene)
    report["imported"] = {"flex": hidden(scene, "FLEX"), "skin": hidden(scene, "SKIN")}
    window, area, region = view3d()
    overlay_view(area)
    look(area, (0.3, 0.3, 0.6), (1.2, 0.0, 0.3), 3.0)
    area.spaces.active.show_region_ui = True
    yield 0.5
    yield from open_sidebar_tab(window, area, "MJBLEND_PT_simulation")

    running = play_invoke()
    for motor in (o for o in scene.objects if o.mujoco.kind == "ACTUATOR"):
        motor.mujoco_ctrl = 0.7
    yield 0.5
    with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
        bpy.ops.mujoco.toggle_group(kind="flex", group=3)
        bpy.ops.mujoco.toggle_group(kind="skin", group=4)
        bpy.ops.mujoco.toggle_actuator_group(group=1)
    yield 1.0
    report["toggled"] = {"flex": hidden(scene, "FLEX"), "skin": hidden(scene, "SKIN")}
    shot = running.latest
    report["disableactuator"] = int(shot.model.opt.disableactuator)
    report["actuator_force"] = shot.actuator_force.tolist()
    report["control_rows"] = {}  # (the rows drawn from now on)
    yield 1.0
    report["rows_after"] = dict(report["control_rows"])
    switches = scene.mujoco_overlays
    for _ in range(17):  # every label kind, then none again
        press("shift+alt+l")
        yield 0.4
        report["labels"].append([switches.labels, len(layers.of_scene(scene).labels), running.latest.time])
    for _ in range(8):  # every frame kind, then none again
        with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
            bpy.ops.mujoco.toggle_overlay(overlay="frame")
        yield 0.3
        names = sorted({layer.name.rsplit(" ", 1)[0] for layer in layers.of_scene(scene).layers
                        if " frame " in layer.name})
        report["frames"].append([switches.frame, names])
    with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
        bpy.ops.wm.call_panel(name="MJBLEND_PT_overlays", keep_open=False)
    yield 0.5
    press("Escape")  # (closed again: the screenshot shows the view)
    yield 0.3


    model = running.model
    root = next(o for o in scene.objects if o.mujoco.kind == "MODEL")
    root.mujoco.model.visual_map.force = 0.05  # (the Visualization panel's field)
    yield 1.0
    report["vis_force"] = float(running.latest.model.vis.map.force)
    report["same_model"] = running.model is model
    report["playing"] = running.latest.playing
    report["time"] = running.latest.time
    switches.labels, switches.frame = "BODY", "BODY"
    start = time.perf_counter()
    while time.perf_counter() - start < 0.5:
        yield 0.1
    if SCREENSHOT:
        screenshot_view(SCREENSHOT)
    yield 0.3
    bpy.ops.mujoco.stop()
    yield 0.5


run_steps(steps)

"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

The first look (issue 34): MuJoCo's humanoid imported; screenshots of the 3D view
(Blender's overlays on, as a user has them: empties are drawn only with them; no
floor, axes or text, which would only add pixels that do not change):
  imported    right after the import
  active      a hidden joint (the right knee) made the active object, as the Outliner does
  joints_on   the Joints overlay on (joint objects shown)
  joints_off  the Joints overlay off again
  no_helpers  every joint and frame object deleted by hand: what MuJoCo's default view shows
Written to MJBLEND_SHOTS/<name>.png; what it saw to MJBLEND_RESULT.
"""

import os
import sys
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import look, overlay_view, report, run_steps, screenshot_area, view3d  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(HERE, "..", "..", "..", "shared", "corpus"))
MODEL = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
SHOTS = os.environ["MJBLEND_SHOTS"]


def helpers(scene):
    return [o for o in scene.objects if o.mujoco.kind in ("JOINT", "FRAME")]


def steps():
    for obj in list(bpy.context.scene.objects):  # the startup cube, light and camera
        bpy.data.objects.remove(obj)
    window, area, _region = view3d()
    overlay_view(area)
    bpy.ops.import_scene.mjcf(filepath=MODEL, frame_view=False)
    scene = bpy.context.scene
    start = time.perf_counter()
    while time.perf_counter() - start < 60 and not any(o.mujoco.kind == "MODEL" for o in scene.objects):
        yield 0.2
    look(area, (0.0, 0.0, 0.9), (1.35, 0.0, 0.5), 3.2)
    root = next(o for o in scene.objects if o.mujoco.kind == "MODEL")
    for obj in bpy.context.selected_objects:
        obj.select_set(False)
    layer = bpy.context.view_layer
    layer.objects.active = None  # (nothing selected: no outline differs between the shots)
    yield 1.0
    report["joints"] = len([o for o in helpers(scene) if o.mujoco.kind == "JOINT"])
    report["visible_helpers"] = [o.name for o in helpers(scene) if o.visible_get()]
    report["root"] = root.name

    def shot(name):
        screenshot_area(os.path.join(SHOTS, name + ".png"), area)

    shot("imported")
    yield 0.3
    knee = next(o for o in helpers(scene) if o.mujoco.name == "knee_right")
    layer.objects.active = knee
    report["knee_visible"] = knee.visible_get()
    yield 0.5
    shot("active")
    layer.objects.active = None
    scene.mujoco_overlays.joints = True
    yield 0.5
    report["visible_with_joints_on"] = len([o for o in helpers(scene) if o.visible_get()])
    shot("joints_on")
    scene.mujoco_overlays.joints = False
    yield 0.5
    shot("joints_off")
    for obj in helpers(scene):
        bpy.data.objects.remove(obj)
    yield 0.5
    shot("no_helpers")
    yield 0.2


run_steps(steps)

"""Runs inside Blender's real user interface (Debian's blender under Xvfb), MJBlend
installed from its zip, no MUJOCO_GL in the environment: a bake's camera dataset made
with MuJoCo's renderer from the window (Sidebar > Timeline > Camera Dataset's
operator, called in the 3D view's context on Blender's main thread, which holds
Blender's OpenGL context: the renderer runs on a thread of its own).

Usage (tests/gui/test_gui_camera_render.py does this):
    xvfb-run blender start.blend --python-use-system-env --python dataset_window.py
"""

import os
import sys

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import report, run_steps, view3d  # noqa: E402

SCENE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blender", "data", "dataset_scene.xml")


def steps():
    for obj in list(bpy.context.scene.objects):
        bpy.data.objects.remove(obj)
    report["imported"] = sorted(bpy.ops.import_scene.mjcf(filepath=SCENE))
    report["baked"] = sorted(bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=0.2))
    folder = os.environ["MJBLEND_DATASET"]
    window, area, region = view3d()
    with bpy.context.temp_override(window=window, area=area, region=region):
        report["dataset"] = sorted(bpy.ops.mujoco.render_dataset("EXEC_DEFAULT", directory=folder,
                                                                 cameras="top,side"))
    yield 0.1


run_steps(steps)

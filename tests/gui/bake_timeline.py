"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

A bake invoked in the 3D view as a user would (the sidebar button: INVOKE) runs
modal on the physics thread and writes keys; then Blender's own animation
player, started and stopped with the real Space key (xdotool), plays the
simulation: at every frame it shows, the box body is where MuJoCo puts it at
that frame's time. What it saw goes to MJBLEND_RESULT.
"""

import importlib
import os
import subprocess
import sys
import time

import bpy
import mujoco

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_mouse import blender_window, region_xy  # noqa: E402
from gui_script import ADDON, cheap_viewport, physics_parked, report, run_steps, view3d  # noqa: E402

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "desk_toys.xml")
FPS, LAST = 24, 49  # two simulated seconds


def mujoco_box_positions(frames):
    """MuJoCo stepping the file: the box body's position at each frame's step."""
    model = mujoco.MjModel.from_xml_path(MODEL)
    data = mujoco.MjData(model)
    box, out, done = model.body("box").id, {}, 0
    for frame in frames:
        due = int(round((frame - 1) / (FPS * model.opt.timestep)))
        mujoco.mj_step(model, data, nstep=due - done)
        done = due
        mujoco.mj_kinematics(model, data)
        out[frame] = data.xpos[box].copy()
    return out


def press(region, key):
    x, y = region_xy(region, region.width // 2, region.height // 2)
    subprocess.run(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y), "key", key],
                   check=True)


def steps():
    live = importlib.import_module(ADDON + ".live.scene_session")
    timeline = importlib.import_module(ADDON + ".sync.timeline")
    scene = bpy.context.scene
    for obj in list(scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    bpy.ops.import_scene.mjcf(filepath=MODEL)
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, LAST
    window, area, region = view3d()
    cheap_viewport(area)
    yield 0.3

    running = live.start_simulation(scene)  # (compiled first: the invoke runs with its thread parked)
    with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
        result = bpy.ops.mujoco.bake("INVOKE_DEFAULT", start="KEYFRAME", keyframe=-1)
    report["invoke"] = sorted(result)
    started = time.perf_counter()
    while not timeline.is_baked(scene) and time.perf_counter() - started < 60:
        yield 0.1
    report["baked"] = [scene.mujoco_bake.frame_start, scene.mujoco_bake.frame_end]
    report["live_after_bake"] = live.simulation(scene) is not None
    yield 0.3

    # Blender's own player: Space over the viewport starts it, Space again stops it
    box = next(o for o in scene.objects if o.mujoco.kind == "BODY" and o.mujoco.name == "box")
    seen = {}

    def on_frame(scene_, depsgraph=None):
        shown = box.evaluated_get(depsgraph) if depsgraph is not None else box
        seen[scene_.frame_current] = list(shown.matrix_world.translation)
    bpy.app.handlers.frame_change_post.append(on_frame)
    scene.frame_set(1)
    press(region, "space")
    yield 3.0
    press(region, "space")
    yield 0.5
    bpy.app.handlers.frame_change_post.remove(on_frame)
    report["played"] = sorted(seen)
    report["animation_playing_after"] = bool(bpy.context.screen.is_animation_playing) \
        if bpy.context.screen is not None else None
    expected = mujoco_box_positions(sorted(seen))
    report["play_error"] = max((max(abs(a - b) for a, b in zip(seen[f], expected[f], strict=True))
                                for f in seen), default=None)
    # scrubbing: a frame chosen directly shows that frame's state
    scene.frame_set(37)
    report["scrub_error"] = max(abs(a - b) for a, b in zip(box.matrix_world.translation,
                                                          mujoco_box_positions([37])[37], strict=True))


run_steps(steps)

"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

Pokes a running simulation with the real mouse (xdotool): Ctrl + left-drag a
free box sideways, then a hinged pendulum; Esc in the middle of a drag; and,
with the simulation stopped, a Ctrl + left-drag that must stay plain Blender.
Writes what it measured to MJBLEND_RESULT and a screenshot taken during a drag
(the spring line drawn in the viewport) to MJBLEND_SCREENSHOT.
"""

import importlib
import os
import sys
import tempfile
import time

import bpy
from mathutils import Quaternion, Vector

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_mouse import (applied_force, body, double_click, drag, record_invokes, screen_xy,  # noqa: E402
                       watch_drag)
from gui_script import ADDON, SCREENSHOT, play_invoke, report, run_steps, view3d  # noqa: E402

SCENE = """<mujoco><option timestep="0.002"/><worldbody>
  <geom type="plane" size="3 3 .1"/>
  <body name="box" pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1" mass="1"/></body>
  <body name="pendulum" pos="1.2 0 1.2"><joint name="swing" axis="0 1 0" damping="0.05"/>
    <geom type="capsule" fromto="0 0 0 0 0 -.6" size=".03"/><geom name="bob" pos="0 0 -.6" size=".1"/>
  </body></worldbody></mujoco>"""


def steps():
    live = importlib.import_module(ADDON + ".live.scene_session")
    record_invokes()
    path = os.path.join(tempfile.mkdtemp(), "poke.xml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(SCENE)
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    bpy.ops.import_scene.mjcf(filepath=path)
    _window, area, _region = view3d()
    view = area.spaces.active.region_3d
    view.view_perspective = "PERSP"
    view.view_rotation = Quaternion((1, 0, 0), 1.35)  # from the front, a little above
    view.view_location = (0.6, 0, 0.5)
    view.view_distance = 4.5
    area.spaces.active.overlay.show_floor = False
    yield 0.5

    running = play_invoke()
    model = running.model
    wall0, sim0 = time.perf_counter(), running.latest.time
    yield 1.0
    report["realtime"] = [time.perf_counter() - wall0, running.latest.time - sim0]

    # 1. the free box, dragged 0.8 m sideways (-X) along the floor
    box = model.body("box").id
    start = running.latest.xpos[box].copy()
    report["box_start"] = list(start)
    report["box_pixel"] = screen_xy(start + [0, 0, 0.05])
    mouse = drag(screen_xy(start + [0, 0, 0.05]), screen_xy(start + [-0.8, 0, 0.05]), 2.0)
    grabbed, farthest = yield from watch_drag(running, box, mouse, lambda shot: shot.xpos[box][0], min,
                                              screenshot=SCREENSHOT)
    report["grabbed_box"], report["box_during"] = grabbed, farthest
    yield 0.3
    report["released_box"] = running.latest.grab is None and not applied_force(running)
    yield 1.5
    report["box_after"] = list(running.latest.xpos[box])
    report["box_speed_after"] = float(abs(running.latest.qvel[:3]).max())

    # 2. the pendulum's bob, dragged sideways (+X)
    bob = model.body("pendulum").id
    bob_geom = model.geom("bob").id
    bob_point = running.latest.geom_xpos[bob_geom].copy()
    report["bob_start"] = list(bob_point)
    mouse = drag(screen_xy(bob_point), screen_xy(bob_point + [0.5, 0, 0.1]), 1.5)
    grabbed, farthest = yield from watch_drag(running, bob, mouse,
                                              lambda shot: shot.geom_xpos[bob_geom][0], max)
    report["grabbed_pendulum"], report["bob_during"] = grabbed, farthest
    yield 0.3

    # 3. Esc in the middle of a drag lets go (the button is still held for seconds after)
    start = running.latest.xpos[box].copy()
    mouse = drag(screen_xy(start + [0, 0, 0.05]), screen_xy(start + [0.6, 0, 0.05]), 4.0, escape_after=1.0)
    for _ in range(40):  # until Blender has handled the press (it may be busy)
        if running.latest.grab is not None:
            break
        yield 0.1
    report["grab_before_escape"] = running.latest.grab is not None
    for _ in range(40):
        if running.latest.grab is None:
            break
        yield 0.1
    report["button_still_down"] = mouse.poll() is None
    report["grab_after_escape"] = running.latest.grab is not None
    report["force_after_escape"] = applied_force(running)
    mouse.wait()
    yield 0.3
    report["realtime_total"] = [time.perf_counter() - wall0, running.latest.time - sim0]

    # double-click on the pendulum's bob selects its body
    double_click(*screen_xy(running.latest.geom_xpos[bob_geom]))
    yield 0.8
    active = bpy.context.view_layer.objects.active
    report["double_click_selected"] = active.mujoco.name if active else None

    # 4. stopped: Ctrl + left-drag is plain Blender again (nothing grabbed, nothing simulated)
    bpy.ops.mujoco.stop()  # (no context override while the physics thread runs: gui_script)
    yield 0.3
    box_object = body("box")
    before = tuple(box_object.location)
    mouse = drag(screen_xy(before), screen_xy(Vector(before) + Vector((-0.5, 0, 0))), 0.5)
    yield 1.0
    mouse.wait()
    yield 0.3
    report["stopped_live"] = live.simulation(bpy.context.scene) is not None
    report["stopped_box_moved"] = tuple(box_object.location) != before


run_steps(steps)

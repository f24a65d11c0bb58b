"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

The Fast display: with the scene's display set to Fast, `mujoco.play` (INVOKE,
the modal operator on a real window timer) shows the simulation through one
instancer object while the body objects stay at their authored transforms,
hidden. A real Ctrl + left-drag (xdotool) pulls the fallen box, which is drawn
only by the instancer, far from its hidden authored object; a double-click
selects it. Pause shows the state on the objects; a reset while paused leaves
nothing drawn where the state was; stop puts everything back. Two screenshots
of the playing viewport go to MJBLEND_SCREENSHOT and MJBLEND_SCREENSHOT2 (the
swinging pendulum moves between them); what it saw goes to MJBLEND_RESULT.
"""

import importlib
import os
import sys
import tempfile
import threading
import time

import bpy
import numpy as np
from mathutils import Quaternion

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_mouse import (applied_force, body, double_click, drag, record_invokes, screen_xy,  # noqa: E402
                       watch_drag)
from gui_script import ADDON, SCREENSHOT, play_invoke, report, run_steps, screenshot_view, view3d  # noqa: E402

SCREENSHOT2 = os.environ.get("MJBLEND_SCREENSHOT2")
# the box is authored in the air and falls 0.5 m: the instance drawn on the floor
# is far from its hidden object; the pendulum starts level and keeps swinging
SCENE = """<mujoco><option timestep="0.002"/><worldbody>
  <geom type="plane" size="3 3 .1"/>
  <body name="box" pos="0 0 .6"><freejoint/><geom type="box" size=".1 .1 .1" mass="1"/></body>
  <body name="pendulum" pos="1.2 0 1.2"><joint name="swing" axis="0 1 0" damping="0.01"/>
    <geom type="capsule" fromto="0 0 0 .6 0 0" size=".03"/><geom name="bob" pos=".6 0 0" size=".1"/>
  </body></worldbody></mujoco>"""


def physics_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("MJBlend physics") and t.is_alive()]


def scene_state():
    """Every object's transform and visibility flags."""
    transforms = importlib.import_module(ADDON + ".scene.transforms")
    return {o.name: [transforms.transform(o), o.hide_viewport, o.hide_render]
            for o in bpy.context.scene.objects}


def data_counts():
    return {name: len(getattr(bpy.data, name))
            for name in ("objects", "meshes", "node_groups", "collections")}


def fast_names():
    """Names of the data blocks the Fast display makes (all named after the scene's display)."""
    return sorted(block.name for blocks in (bpy.data.objects, bpy.data.meshes, bpy.data.node_groups,
                                            bpy.data.collections)
                  for block in blocks if "fast display" in block.name)


def steps():
    live = importlib.import_module(ADDON + ".live.scene_session")
    record_invokes()
    path = os.path.join(tempfile.mkdtemp(), "fast.xml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(SCENE)
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    bpy.ops.import_scene.mjcf(filepath=path)
    scene = bpy.context.scene
    scene.mujoco_simulation.display = "FAST"
    _window, area, _region = view3d()
    view = area.spaces.active.region_3d
    view.view_perspective = "PERSP"
    view.view_rotation = Quaternion((1, 0, 0), 1.35)  # from the front, a little above
    view.view_location = (0.6, 0, 0.5)
    view.view_distance = 4.5
    area.spaces.active.overlay.show_floor = False
    before, counts = scene_state(), data_counts()
    report["threads_before"] = physics_threads()
    yield 0.5

    # ------------------------------------------------------------------ play
    running = play_invoke()
    model, display = running.model, running.display
    box = model.body("box").id
    wall0, sim0 = time.perf_counter(), running.latest.time
    report["threads_playing"] = physics_threads()
    moved_objects = set()  # objects whose transform left its authored value while Fast showed

    def check_objects():
        """While the instancer shows the simulation, no object moves."""
        if display.fast_now:
            moved_objects.update(name for name, state in scene_state().items()
                                 if name in before and state[0] != before[name][0])

    yield 0.3
    report["fast_now"] = display.fast_now
    instancer = display.instancer
    report["instancer"] = instancer.object.name if instancer is not None else None
    report["instancer_in_data"] = instancer is not None and instancer.object.name in bpy.data.objects
    sources = instancer.sources if instancer is not None else []
    report["sources"] = sorted(o.name for o in sources)
    report["sources_hidden"] = all(not o.visible_get() and o.hide_render for o in sources)
    driven = running.binding.driven
    moving = [o for body_object, _b in driven for o in [body_object, *body_object.children_recursive]]
    report["moving"] = sorted(o.name for o in moving)
    report["not_hidden"] = sorted(o.name for o in moving if o.visible_get() or not o.hide_render)
    # two screenshots while the pendulum swings (the objects stay put: only the
    # instancer can make them differ)
    swing = model.joint("swing").qposadr[0]
    screenshots = []  # simulated time and pendulum angle at each
    for picture in (SCREENSHOT, SCREENSHOT2):
        for _ in range(40):  # the second one once the pendulum has swung well away
            if not screenshots or abs(running.latest.qpos[swing] - screenshots[0][1]) > 0.8:
                break
            yield 0.05
        check_objects()
        screenshot_view(picture)
        shot = running.latest
        screenshots.append([shot.time, float(shot.qpos[swing])])
        yield 0.1
    report["screenshots"] = screenshots
    samples = []  # wall s, simulated s, box height (snapshot), box object's z, fast_now
    while len(samples) < 15:
        check_objects()
        shot = running.latest
        samples.append([time.perf_counter() - wall0, shot.time - sim0, float(shot.xpos[box][2]),
                        body("box").matrix_world.translation.z, display.fast_now])
        yield 0.1
    report["samples"] = samples
    report["achieved"] = running.latest.achieved

    # ------------------------------------ Ctrl + drag the fallen box (an instance)
    start = running.latest.xpos[box].copy()
    report["box_start"] = list(start)
    report["box_object_z"] = body("box").matrix_world.translation.z
    mouse = drag(screen_xy(start + [0, 0, 0.05]), screen_xy(start + [-0.8, 0, 0.05]), 2.0)
    grabbed, farthest = yield from watch_drag(running, box, mouse, lambda shot: shot.xpos[box][0], min,
                                              every=check_objects)
    report["grabbed_box"], report["box_during"] = grabbed, farthest
    report["fast_during_drag"] = display.fast_now
    yield 0.3
    report["released_box"] = running.latest.grab is None and not applied_force(running)

    # double-click on the box (drawn by the instancer) selects its body
    yield 0.5
    double_click(*screen_xy(running.latest.xpos[box] + [0, 0, 0.05]))
    yield 0.8
    active = bpy.context.view_layer.objects.active
    report["double_click_active"] = active.mujoco.name if active else None
    report["moved_while_fast"] = sorted(moved_objects)
    report["realtime_total"] = [time.perf_counter() - wall0, running.latest.time - sim0]

    # ----------------------------------------------------------------- pause
    bpy.ops.mujoco.pause()  # (no context override while the physics thread runs: gui_script)
    for _ in range(20):  # until the runner has paused and the display has shown it
        if not running.latest.playing and not display.fast_now:
            break
        yield 0.1
    yield 0.2
    bpy.context.view_layer.update()
    shot = running.latest
    report["paused"] = not shot.playing
    report["fast_after_pause"] = display.fast_now
    report["shown_after_pause"] = [o.name for o in sources if o.hide_viewport or o.hide_render]
    errors = {}
    for obj, body_id in running.binding.driven:
        matrix = obj.matrix_world
        position = np.array(running.binding.to_blender(shot.xpos[body_id]))
        rotation = np.array(running.binding.world.to_quaternion() @ Quaternion(shot.xquat[body_id]))
        turned = min(np.abs(np.array(matrix.to_quaternion()) - rotation).max(),
                     np.abs(np.array(matrix.to_quaternion()) + rotation).max())
        errors[obj.name] = [float(np.abs(np.array(matrix.translation) - position).max()), float(turned)]
    report["paused_pose_errors"] = errors
    report["box_object_z_paused"] = body("box").matrix_world.translation.z
    report["box_selected_paused"] = body("box").select_get()
    paused_at = running.latest.time
    yield 0.3
    report["paused_advance"] = running.latest.time - paused_at

    # paused, Reset: the objects show the authored state, and nothing else draws the
    # state before (every instance the instancer still makes is on a shown object)
    bpy.ops.mujoco.reset()
    for _ in range(20):
        if running.latest.time == 0:
            break
        yield 0.1
    yield 0.3  # (shown on the modal operator's next tick)
    bpy.context.view_layer.update()
    report["box_object_z_reset"] = body("box").matrix_world.translation.z
    depsgraph = bpy.context.evaluated_depsgraph_get()
    shown_at = [obj.matrix_world.translation.copy() for obj in sources]
    ghosts, instances = [], 0
    for instance in depsgraph.object_instances:
        parent = instance.parent
        if instance.is_instance and parent is not None and "fast display" in parent.original.name:
            instances += 1
            where = instance.matrix_world.translation
            offset = min((where - place).length for place in shown_at)
            if offset > 1e-4:
                ghosts.append([instance.instance_object.original.name, round(offset, 4)])
    report["ghosts_paused"], report["instances_paused"] = ghosts, instances

    # ------------------------------------------------------------------ stop
    bpy.ops.mujoco.stop()
    yield 0.3
    after = scene_state()
    report["restored"] = after == before
    report["not_restored"] = sorted(name for name in before if after.get(name) != before[name])
    report["counts"] = [counts, data_counts()]
    report["fast_blocks_after_stop"] = fast_names()
    report["threads_after_stop"] = physics_threads()
    report["live_after_stop"] = live.simulation(scene) is not None
    report["box_authored"] = list(before[body("box").name][0].location)


run_steps(steps)

"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

Pokes a running simulation with the real mouse (xdotool): Ctrl + left-drag a
free box sideways, then a hinged pendulum; Esc in the middle of a drag; and,
with the simulation stopped, a Ctrl + left-drag that must stay plain Blender.
Writes what it measured to MJBLEND_RESULT and a screenshot taken during a drag
(the spring line drawn in the viewport) to MJBLEND_SCREENSHOT.
"""

import importlib
import os
import subprocess
import sys
import tempfile
import time

import bpy
from bpy_extras import view3d_utils
from mathutils import Quaternion, Vector

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import ADDON, SCREENSHOT, report, run_steps, view3d  # noqa: E402

SCENE = """<mujoco><option timestep="0.002"/><worldbody>
  <geom type="plane" size="3 3 .1"/>
  <body name="box" pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1" mass="1"/></body>
  <body name="pendulum" pos="1.2 0 1.2"><joint name="swing" axis="0 1 0" damping="0.05"/>
    <geom type="capsule" fromto="0 0 0 0 0 -.6" size=".03"/><geom name="bob" pos="0 0 -.6" size=".1"/>
  </body></worldbody></mujoco>"""


def blender_window() -> str:
    """The X11 id of Blender's window: mouse moves are made relative to it (the
    window need not sit at the screen's corner)."""
    ids = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "Blender"],
                         capture_output=True, text=True, check=True).stdout.split()
    return ids[-1]


def screen_xy(point):
    """X11 coordinates of a world point in Blender's window (window y grows downwards)."""
    window, area, region = view3d()
    x, y = view3d_utils.location_3d_to_region_2d(region, area.spaces.active.region_3d, Vector(point))
    return int(region.x + x), int(window.height - (region.y + y))


def drag(start, end, seconds, escape_after=None, button=1):
    """Ctrl + drag with the real mouse, in the background (Blender keeps running)."""
    (x0, y0), (x1, y1) = start, end
    window = blender_window()
    moves = " ".join(f"mousemove --window {window} {x0 + (x1 - x0) * i // 10} {y0 + (y1 - y0) * i // 10} "
                     "sleep 0.03" for i in range(1, 11))
    middle = f"sleep {escape_after} key Escape sleep {seconds - escape_after}" if escape_after \
        else f"sleep {seconds}"
    command = (f"mousemove --window {window} {x0} {y0} sleep 0.2 keydown ctrl sleep 0.1 "
               f"mousedown {button} sleep 0.1 {moves} {middle} mouseup {button} sleep 0.1 keyup ctrl")
    return subprocess.Popen(["xdotool"] + command.split())


def watch_drag(session, body_id, mouse, coordinate, extreme, screenshot=None):
    """Follow a drag until the mouse script ends: (was `body_id` grabbed, the extreme
    value of `coordinate()` while it was). Blender may handle the press late when busy.
    `screenshot`: a file for a screenshot of the viewport half a second into the grab."""
    grabbed, seen, since = False, None, None
    while mouse.poll() is None:
        if session.grab is not None and session.grab.body == body_id:
            grabbed = True
            since = since or time.perf_counter()
            if screenshot and time.perf_counter() - since > 0.5:
                window, area, _region = view3d()
                with bpy.context.temp_override(window=window, area=area):
                    bpy.ops.screen.screenshot_area(filepath=screenshot)
                screenshot = None
            if session.data.time > 0:
                value = float(coordinate())
                seen = value if seen is None else extreme(seen, value)
        yield 0.1
    return grabbed, seen


def body(name):
    return next(o for o in bpy.context.scene.objects if o.mujoco.kind == "BODY" and o.mujoco.name == name)


def record_invokes():
    """Keep what each mujoco.perturb invoke returned (for the report)."""
    operators = importlib.import_module(ADDON + ".operators.perturb")
    original = operators.MUJOCO_OT_perturb.invoke
    report["invokes"] = []

    def invoke(self, context, event):
        result = original(self, context, event)
        coord = operators.press_position(context, event)
        obj, _location = operators.pick(context, coord)
        report["invokes"].append([coord, sorted(result), obj.name if obj else None])
        return result
    operators.MUJOCO_OT_perturb.invoke = invoke
    report["ends"] = []
    end = operators.MUJOCO_OT_perturb._end

    def logged_end(self, context, result):
        running = self._live
        still_held = running.session is not None and running.session.grab is self.grab
        report["ends"].append([sorted(result), still_held, round(time.perf_counter(), 2)])
        return end(self, context, result)
    operators.MUJOCO_OT_perturb._end = logged_end


def steps():
    live = importlib.import_module(ADDON + ".live.scene_session")
    record_invokes()
    path = os.path.join(tempfile.mkdtemp(), "poke.xml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(SCENE)
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    bpy.ops.import_scene.mjcf(filepath=path)
    window, area, region = view3d()
    view = area.spaces.active.region_3d
    view.view_perspective = "PERSP"
    view.view_rotation = Quaternion((1, 0, 0), 1.35)  # from the front, a little above
    view.view_location = (0.6, 0, 0.5)
    view.view_distance = 4.5
    area.spaces.active.overlay.show_floor = False
    yield 0.5

    with bpy.context.temp_override(window=window, area=area, region=region):
        bpy.ops.mujoco.play("INVOKE_DEFAULT")
    running = live.get(bpy.context.scene)
    session = running.session
    wall0, sim0 = time.perf_counter(), session.data.time
    yield 1.0
    report["realtime"] = [time.perf_counter() - wall0, session.data.time - sim0]

    # 1. the free box, dragged 0.8 m sideways (-X) along the floor
    box = session.model.body("box").id
    start = session.data.xpos[box].copy()
    report["box_start"] = list(start)
    report["box_pixel"] = screen_xy(start + [0, 0, 0.05])
    mouse = drag(screen_xy(start + [0, 0, 0.05]), screen_xy(start + [-0.8, 0, 0.05]), 2.0)
    grabbed, farthest = yield from watch_drag(session, box, mouse, lambda: session.data.xpos[box][0], min,
                                              screenshot=SCREENSHOT)
    report["grabbed_box"], report["box_during"] = grabbed, farthest
    yield 0.3
    report["released_box"] = session.grab is None and not session.data.xfrc_applied.any()
    yield 1.5
    report["box_after"] = list(session.data.xpos[box])
    report["box_speed_after"] = float(abs(session.data.qvel[:3]).max())

    # 2. the pendulum's bob, dragged sideways (+X)
    bob = session.model.body("pendulum").id
    bob_point = session.data.geom_xpos[session.model.geom("bob").id].copy()
    report["bob_start"] = list(bob_point)
    mouse = drag(screen_xy(bob_point), screen_xy(bob_point + [0.5, 0, 0.1]), 1.5)
    bob_geom = session.model.geom("bob").id
    grabbed, farthest = yield from watch_drag(session, bob, mouse,
                                              lambda: session.data.geom_xpos[bob_geom][0], max)
    report["grabbed_pendulum"], report["bob_during"] = grabbed, farthest
    yield 0.3

    # 3. Esc in the middle of a drag lets go (the button is still held for seconds after)
    start = session.data.xpos[box].copy()
    mouse = drag(screen_xy(start + [0, 0, 0.05]), screen_xy(start + [0.6, 0, 0.05]), 4.0, escape_after=1.0)
    for _ in range(40):  # until Blender has handled the press (it may be busy)
        if session.grab is not None:
            break
        yield 0.1
    report["grab_before_escape"] = session.grab is not None
    for _ in range(40):
        if session.grab is None:
            break
        yield 0.1
    report["button_still_down"] = mouse.poll() is None
    report["grab_after_escape"] = session.grab is not None
    report["force_after_escape"] = bool(session.data.xfrc_applied.any())
    mouse.wait()
    yield 0.3
    report["realtime_total"] = [time.perf_counter() - wall0, session.data.time - sim0]

    # double-click on the pendulum's bob selects its body
    bob_point = session.data.geom_xpos[session.model.geom("bob").id].copy()
    x, y = screen_xy(bob_point)
    subprocess.run(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y),
                    "click", "--repeat", "2", "--delay", "80", "1"], check=True)
    yield 0.8
    active = bpy.context.view_layer.objects.active
    report["double_click_selected"] = active.mujoco.name if active else None

    # 4. stopped: Ctrl + left-drag is plain Blender again (nothing grabbed, nothing simulated)
    with bpy.context.temp_override(window=window, area=area, region=region):
        bpy.ops.mujoco.stop()
    yield 0.3
    box_object = body("box")
    before = tuple(box_object.location)
    mouse = drag(screen_xy(before), screen_xy(Vector(before) + Vector((-0.5, 0, 0))), 0.5)
    yield 1.0
    mouse.wait()
    yield 0.3
    report["stopped_live"] = live.get(bpy.context.scene) is not None
    report["stopped_box_moved"] = tuple(box_object.location) != before


run_steps(steps)

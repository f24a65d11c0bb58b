"""The real mouse (xdotool) and what the GUI scripts read back about a running
simulation, inside Blender's user interface: world points to window pixels,
Ctrl + drags, clicks, following a drag in the runner's snapshots, and reading
MjData on the runner's own thread (a command: MjData belongs to the physics
thread while it runs; the UI reads `LiveSimulation.latest`).
"""

import importlib
import subprocess
import time

import bpy
from bpy_extras import view3d_utils
from gui_script import ADDON, report, screenshot_view, view3d
from mathutils import Vector


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


def region_xy(region, x, y):
    """X11 coordinates of pixel (x, y) of `region` (region y grows upwards)."""
    window = bpy.context.window_manager.windows[0]
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


def double_click(x, y):
    subprocess.run(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y),
                    "click", "--repeat", "2", "--delay", "80", "1"], check=True)


def watch_drag(running, body_id, mouse, coordinate, extreme, screenshot=None, every=None):
    """Follow a drag until the mouse script ends: (was `body_id` grabbed, the extreme
    value of `coordinate(snapshot)` while it was). Blender may handle the press late
    when busy. `screenshot`: a file for a screenshot of the viewport half a second
    into the grab; `every()` is called at each look (checks of the caller's own)."""
    grabbed, seen, since = False, None, None
    while mouse.poll() is None:
        shot = running.latest
        if every is not None:
            every()
        if shot.grab is not None and shot.grab.body == body_id:
            grabbed = True
            since = since or time.perf_counter()
            if screenshot and time.perf_counter() - since > 0.5:
                screenshot_view(screenshot)
                screenshot = None
            if shot.time > 0:
                value = float(coordinate(shot))
                seen = value if seen is None else extreme(seen, value)
        yield 0.1
    return grabbed, seen


def applied_force(running) -> bool:
    """Whether any body has an applied force (xfrc_applied), read on the runner's own
    thread (a command, waited for)."""
    commands = importlib.import_module(ADDON + ".engine.commands")
    live = importlib.import_module(ADDON + ".live.simulation")
    seen = []
    running.send(commands.Call(lambda session: seen.append(bool(session.data.xfrc_applied.any())),
                               what="read xfrc_applied"), live.SHOW_WAIT)
    assert seen, "the runner did not answer within SHOW_WAIT"
    return seen[0]


def body(name):
    """The body object of MJCF name `name`."""
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
        still_held = running.session is not None and running.latest.grab is not None
        report["ends"].append([sorted(result), still_held, round(time.perf_counter(), 2)])
        return end(self, context, result)
    operators.MUJOCO_OT_perturb._end = logged_end

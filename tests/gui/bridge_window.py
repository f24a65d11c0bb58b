"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

A network client drives the scene in a real window (issue 18). The script
imports a model (MJBLEND_MODEL), opens the sidebar's MuJoCo tab and its Bridge
panel and clicks **Start Bridge** with the real mouse (xdotool) on the free
ports the test chose (MJBLEND_BRIDGE_PORTS, set as the preferences the button
reads). The test process (tests/gui/test_gui_bridge.py) is the client: the two
take turns through files in the result's folder (`tell` writes
blender-<phase>.json, `heard` waits for test-<phase>.json; test-abort.json ends
the run). After the client's direct steps, the body objects' evaluated world
matrices are reported (Objects display) and a screenshot of the 3D view with
the Bridge panel is taken (MJBLEND_SCREENSHOT); with the Fast display set, the
client lets it play (freerun) and the instancer must draw it; then the real
**Stop Bridge** button is clicked and the test binds the ports again while this
Blender still runs.

The MuJoCo tab is shown through the sidebar's `active_panel_category`. Finding a
button in a panel: Blender has no Python API for where panels or buttons are
drawn, so the script reads the screen (from the X server: gui_x11.grab; Blender
5.2's screenshot operators save black frames under Xvfb). The Bridge panel is
the last of the MuJoCo tab (closed by default): with the viewport drawn magenta
behind the sidebar, the lowest band that is not magenta is its header; a Ctrl +
click there opens it and collapses every other panel of the tab (Blender's own
shortcut), so it stays where it is when the simulation's panels grow. Its first
button (Start, then Stop Bridge) is found by drawing the panel once with
`layout.alert` (red) and once without: the topmost rows that differ.
"""

import importlib
import json
import os
import subprocess
import sys
import threading
import time

import bpy
import numpy as np
from mathutils import Quaternion

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_mouse import blender_window  # noqa: E402
import gui_x11  # noqa: E402
from gui_script import (ADDON, RESULT, SCREENSHOT, cheap_viewport, open_sidebar_tab, record_draws,  # noqa: E402
                        report, run_steps, view3d)

MODEL = os.environ["MJBLEND_MODEL"]
REQUEST_PORT, STATE_PORT = (int(p) for p in os.environ["MJBLEND_BRIDGE_PORTS"].split(","))
FOLDER = os.path.dirname(RESULT)
WAIT = 60.0  # seconds any one wait may take (a slow, busy machine) before the run fails
MAGENTA = (1.0, 0.0, 1.0)
PROBE = {"alert": False, "draws": 0}  # the Bridge panel drawn red (alert) to find its button


class Aborted(Exception):
    pass


# ------------------------------------------------------------ the test's turns


def tell(phase, **data):
    """Write blender-<phase>.json for the test (whole, or not at all)."""
    path = os.path.join(FOLDER, f"blender-{phase}.json")
    with open(path + ".part", "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(path + ".part", path)


def heard(phase):
    """(Generator) Wait for the test's test-<phase>.json; its data."""
    path, abort = os.path.join(FOLDER, f"test-{phase}.json"), os.path.join(FOLDER, "test-abort.json")
    deadline = time.perf_counter() + WAIT
    while not os.path.exists(path):
        if os.path.exists(abort):
            raise Aborted(f"the test gave up while Blender waited for {phase!r}")
        if time.perf_counter() > deadline:
            raise TimeoutError(f"no word from the test on {phase!r} within {WAIT:g} s")
        yield 0.05
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def until(condition, what, interval=0.05):
    """(Generator) Poll `condition()` on Blender's timer until true."""
    deadline = time.perf_counter() + WAIT
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{what}: not within {WAIT:g} s")
        yield interval


# ---------------------------------------------------------------- the screen


def grab(area) -> np.ndarray:
    """The pixels of `area` as the X server shows them: (height, width, 3) floats in
    0-1, row 0 at the bottom (as Blender's regions count: window coordinates less the
    area's corner)."""
    window = bpy.context.window_manager.windows[0]
    top = window.height - (area.y + area.height)  # X11 y grows downwards
    pixels = gui_x11.grab(gui_x11.blender_x_window(), area.x, top, area.width, area.height)
    return pixels[::-1].astype(np.float32) / 255


def save_png(pixels, path) -> None:
    """A grab as a PNG file (8 bits: the screen's values)."""
    gui_x11.save_png(path, np.round(pixels[::-1] * 255).astype(np.uint8))


def settled(area, part):
    """(Generator) Screenshots of `area` until `part` of it (a region, or the area) looks
    the same twice (Blender animates panels that open and close); the last one."""
    columns = slice(part.x - area.x, part.x - area.x + part.width)
    before = None
    for _ in range(40):
        now = grab(area)
        if before is not None and np.array_equal(now[:, columns], before[:, columns]):
            return now
        before = now
        yield 0.1
    raise TimeoutError("the sidebar kept changing")


def runs(flags) -> list[tuple[int, int]]:
    """(first, last) index of each run of true `flags`, in order."""
    edges = np.diff(np.concatenate(([0], flags.astype(np.int8), [0])))
    return [(int(a), int(b) - 1) for a, b in zip(np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0],
                                                 strict=True)]


def x11(window, area, px, py):
    """X11 coordinates (y down, in Blender's window) of pixel (px, py) of an area grab."""
    return int(area.x + px), int(window.height - (area.y + py))


def click(x, y, ctrl=False):
    """(Generator) A click (with Ctrl held) while Blender handles the events as they
    come: Blender 5.2 drops Ctrl from a click it handles after the key went up."""
    modifiers = (["keydown", "ctrl", "sleep", "0.1"], ["sleep", "0.1", "keyup", "ctrl"]) if ctrl else ([], [])
    mouse = subprocess.Popen(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y), "sleep",
                              "0.05", *modifiers[0], "click", "1", *modifiers[1]])
    while mouse.poll() is None:
        yield 0.05
    assert mouse.returncode == 0, f"xdotool failed ({mouse.returncode})"


def park_mouse(window, area):
    """The pointer over the viewport, off every button (a hovered button draws lighter)."""
    subprocess.run(["xdotool", "mousemove", "--window", blender_window(), str(area.x + area.width // 3),
                    str(window.height - (area.y + area.height // 2))], check=True)


def scroll_to_end(window, area, sidebar):
    """(Generator) The sidebar scrolled to its bottom with the mouse wheel: the tab's
    panels (the Simulation panel open, with its sub-panels) can be taller than the view."""
    middle = (sidebar.x - area.x + sidebar.width // 2, sidebar.y - area.y + sidebar.height // 2)
    x, y = x11(window, area, *middle)
    subprocess.run(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y),
                    "click", "--repeat", "40", "--delay", "20", "5"], check=True)
    yield 0.3
    park_mouse(window, area)


def bridge_header(area, sidebar):
    """(Generator) Area-pixel (x, y) of the middle of the Bridge panel's header: the
    lowest band of the sidebar that is not the magenta viewport behind it (the panel
    is the tab's last and closed; every object is hidden meanwhile)."""
    space = area.spaces.active
    shading, shown = space.shading, {}
    kept = (shading.background_type, tuple(shading.background_color))
    for name in dir(space):
        if name.startswith("show_object_viewport_"):
            shown[name] = getattr(space, name)
            setattr(space, name, False)
    shading.background_type, shading.background_color = "VIEWPORT", MAGENTA
    try:
        shot = yield from settled(area, sidebar)
    finally:
        shading.background_type, shading.background_color = kept
        for name, value in shown.items():
            setattr(space, name, value)
    x = sidebar.x - area.x + 60  # (on the header, left of its drag handle)
    rows = shot[sidebar.y - area.y: sidebar.y - area.y + sidebar.height, x]
    bands = runs(np.abs(rows - MAGENTA).max(axis=1) > 0.15)
    bands = [(bottom, top) for bottom, top in bands if top - bottom >= 12]  # (not the area's edge)
    assert bands, "no panel drawn in the sidebar"
    bottom, top = bands[0]
    report["bridge_header_rows"] = [bottom, top]
    return x, sidebar.y - area.y + (bottom + top) // 2


def first_button(area, sidebar):
    """(Generator) Area-pixel (x, y) of the middle of the Bridge panel's first button:
    the topmost rows of the sidebar that change when the panel is drawn red."""
    red = None
    for alert in (True, False):
        PROBE["alert"], drawn = alert, PROBE["draws"]
        sidebar.tag_redraw()
        yield from until(lambda drawn=drawn: PROBE["draws"] > drawn, "a draw of the Bridge panel")
        shot = yield from settled(area, sidebar)
        if alert:
            red = shot
    columns = slice(sidebar.x - area.x, sidebar.x - area.x + sidebar.width)
    changed = np.abs(red[:, columns] - shot[:, columns]).max(axis=-1) > 0.1
    bands = runs(changed.any(axis=1))
    if not bands:  # (the two pictures kept beside the report)
        save_png(red, os.path.join(FOLDER, "bridge-red.png"))
        save_png(shot, os.path.join(FOLDER, "bridge-not-red.png"))
    assert bands, "drawing the Bridge panel red changed nothing: is it open? (bridge-red.png)"
    bottom, top = bands[-1]
    cols = np.nonzero(changed[bottom:top + 1].any(axis=0))[0]
    return int(sidebar.x - area.x + (cols[0] + cols[-1]) // 2), int((bottom + top) // 2)


# ------------------------------------------------------------- the simulation


def running():
    return importlib.import_module(ADDON + ".live.scene_session").simulation(bpy.context.scene)


def bridge_threads():
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("MJBlend bridge"))


def body_matrices():
    """MJCF body name -> its object's evaluated world matrix (row-major 4 x 4)."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    return {obj.mujoco.name: [list(row) for row in obj.evaluated_get(depsgraph).matrix_world]
            for obj in bpy.context.scene.objects if obj.mujoco.kind == "BODY" and obj.mujoco.name}


def instances_of(instancer_object):
    """How many instances the depsgraph draws for the Fast display's instancer."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    return sum(1 for instance in depsgraph.object_instances
               if instance.is_instance and instance.parent is not None
               and instance.parent.original == instancer_object)


def instrument():
    """Record the sidebar's draws; draw the Bridge panel red while probing."""
    sidebar = importlib.import_module(ADDON + ".ui.sidebar")
    for cls in sidebar.CLASSES:
        if issubclass(cls, bpy.types.Panel):
            record_draws(cls)
    panel = sidebar.MJBLEND_PT_bridge
    original = panel.draw

    def draw(self, context):  # (exactly self, context: gui_script.record_draws)
        self.layout.alert = PROBE["alert"]
        original(self, context)
        PROBE["draws"] += 1
    panel.draw = draw

    # how Start and Stop Bridge were called (a click on a button: an event, the 3D view)
    operators = importlib.import_module(ADDON + ".operators.bridge")
    start, stop = operators.MUJOCO_OT_bridge_start, operators.MUJOCO_OT_bridge_stop
    invoke, execute = start.invoke, stop.execute
    report["calls"] = []

    def called(name, context, result, event=None):
        report["calls"].append([name, context.area.type if context.area else None,
                                context.region.type if context.region else None,
                                event.type if event else None, sorted(result)])
        return result

    start.invoke = lambda self, context, event: called("start", context, invoke(self, context, event), event)
    stop.execute = lambda self, context: called("stop", context, execute(self, context))


def steps():
    bridge_host = importlib.import_module(ADDON + ".live.bridge_host")
    # the ports the test chose go into the preferences the button reads: kept out of
    # the user's saved preferences
    bpy.context.preferences.use_preferences_save = False
    prefs = bpy.context.preferences.addons[ADDON].preferences
    prefs.bridge_address, prefs.bridge_transport = "127.0.0.1", "ZMQ"
    prefs.bridge_request_port, prefs.bridge_state_port = REQUEST_PORT, STATE_PORT
    instrument()
    scene = bpy.context.scene
    for obj in list(scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    bpy.ops.import_scene.mjcf(filepath=MODEL)
    scene.mujoco_simulation.display = "OBJECTS"
    window, area, _region = view3d()
    cheap_viewport(area)
    space = area.spaces.active
    space.show_region_ui = True
    view = space.region_3d
    view.view_perspective = "PERSP"
    # (for the docs' picture: the model from the front, a little above, lit and textured)
    view.view_rotation = Quaternion((0, 0, 1), 0.6) @ Quaternion((1, 0, 0), 1.25)
    view.view_location, view.view_distance = (0.3, 0, 0.4), 3.0
    space.shading.light, space.shading.color_type = "STUDIO", "TEXTURE"
    sidebar = next(r for r in area.regions if r.type == "UI")
    yield 0.3

    # -------------------------------------------- Start Bridge, with the real mouse
    yield from open_sidebar_tab(window, area, "MJBLEND_PT_simulation")
    assert "MJBLEND_PT_simulation" in report["drawn"], "the sidebar's MuJoCo tab did not draw"
    yield from scroll_to_end(window, area, sidebar)
    hx, hy = yield from bridge_header(area, sidebar)
    report["header_click"] = x11(window, area, hx, hy)
    yield from click(*report["header_click"], ctrl=True)  # open it, close the others
    yield from until(lambda: PROBE["draws"] > 0, "the Bridge panel opening")
    park_mouse(window, area)
    bx, by = yield from first_button(area, sidebar)
    report["start_click"] = x11(window, area, bx, by)
    report["threads_before"] = bridge_threads()
    yield from click(*report["start_click"])
    yield from until(lambda: bridge_host.status() is not None, "the bridge started by the click")
    live = running()
    yield from until(lambda: live.modal_running, "the display sync of Start Bridge")
    status = bridge_host.status()
    report["status_started"] = status
    report["threads_serving"] = bridge_threads()
    report["threaded"] = live.runner.threaded
    park_mouse(window, area)
    tell("serving", request_port=status["request_port"], state_port=status["state_port"])

    # ------------------------------ the client's direct steps, shown by the objects
    stepped = yield from heard("stepped")
    yield from until(lambda: live.latest.time == stepped["time"] and live._shown_frame == live.latest.frame,
                     "the client's last state shown")  # (by Start Bridge's display sync, on its timer)
    shot = live.latest
    report["shown"] = {"time": shot.time, "playing": shot.playing, "fast_now": live.display.fast_now,
                       "display": scene.mujoco_simulation.display}
    report["bodies"] = body_matrices()
    report["status_direct"] = bridge_host.status()
    drawn = PROBE["draws"]  # (the panel counts requests on a timer of its own: drawn now)
    sidebar.tag_redraw()
    yield from until(lambda: PROBE["draws"] > drawn, "a draw of the Bridge panel")
    # the docs' picture: the panel while a client drives the scene; and the same view
    # without the sidebar (the test checks the panel is drawn where it differs)
    save_png((yield from settled(area, sidebar)), SCREENSHOT)
    space.show_region_ui = False
    save_png((yield from settled(area, area)), os.path.join(FOLDER, "no-sidebar.png"))
    space.show_region_ui = True  # (first_button waits for the panel's next draw)
    bx, by = yield from first_button(area, sidebar)  # (Stop Bridge, where Start was)
    report["stop_button"] = x11(window, area, bx, by)
    report["stop_button_pixel"] = [bx, by]
    report["sidebar"] = [sidebar.x - area.x, sidebar.y - area.y, sidebar.width, sidebar.height]
    report["area"] = [area.x, area.y, area.width, area.height]

    # ----------------------------------- Fast display, the client lets it play
    scene.mujoco_simulation.display = "FAST"
    tell("fast")
    yield from heard("live")
    display = live.display
    yield from until(lambda: live.latest.playing and display.fast_now and display.instancer is not None,
                     "the Fast display while the client lets it play")
    first = live.latest.time
    instancer = display.instancer.object
    yield from until(lambda: instances_of(instancer) > 0 and live.latest.time > first + 0.1,
                     "instances drawn while it plays")
    sources = display.instancer.sources
    report["fast"] = {"fast_now": display.fast_now, "playing": live.latest.playing,
                      "instancer_visible": instancer.visible_get(), "instances": instances_of(instancer),
                      "sources": len(sources), "sources_hidden": all(not o.visible_get() for o in sources),
                      "advanced": live.latest.time - first, "mode": bridge_host.status()["mode"]}

    # ------------------------------------------ Stop Bridge, with the real mouse
    yield from click(*report["stop_button"])
    yield from until(lambda: bridge_host.status() is None, "the bridge stopped by the click")
    yield from until(lambda: not bridge_threads(), "the bridge's threads ending")
    report["after_stop"] = {"threads": bridge_threads(), "simulation": running() is live,
                            "playing": live.latest.playing}
    park_mouse(window, area)
    tell("stopped")
    yield from heard("checked")  # (the test binds the ports while this Blender runs)

    bpy.ops.mujoco.stop()  # (no context override while the physics thread runs: gui_script)
    yield from until(lambda: running() is None and not live.modal_running, "the simulation's stop")


def guarded():
    """The steps; a failure tells the test at once (it would wait for a phase)."""
    try:
        yield from steps()
    except BaseException as error:
        tell("failed", error=f"{type(error).__name__}: {error}")
        raise


run_steps(guarded)

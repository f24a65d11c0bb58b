"""What the scripts run inside Blender's user interface share: the report they
write to MJBLEND_RESULT, recording panel draws (Blender only prints a draw's
exception), the largest 3D view, and the timer loop that runs a script's steps.

A script defines a generator of delays (seconds until its next step) and calls
`run_steps(steps)`; MJBlend is enabled first, every exception ends the run with
its traceback in the report, and Blender quits when the steps are done.

Operators called with a context override while the physics thread lives go
through `physics_parked` (see there); operators that need no override (pause,
stop) are called without one. Screenshots are read from the X server (gui_x11).
"""

import contextlib
import importlib
import json
import os
import subprocess
import time
import traceback

import addon_utils
import bpy

RESULT = os.environ["MJBLEND_RESULT"]
ADDON = os.environ.get("MJBLEND_ADDON", "mjblend")
SCREENSHOT = os.environ.get("MJBLEND_SCREENSHOT")
report = {"blender": bpy.app.version_string, "errors": [], "drawn": []}


def finish(error=None):
    if error:
        report["errors"].append(error)
    with open(RESULT, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
    bpy.ops.wm.quit_blender()


def record_draws(cls, entry=None):
    """Wrap `cls.draw` to note in report["drawn"] that it ran (`entry(context)`,
    default the class name) and to report what it raised."""
    original = cls.draw

    # Exactly (self, context): Blender (5.2 as 3.4) calls a draw assigned to a
    # registered panel with as many arguments as it declares: extra defaulted
    # parameters crash it (a segmentation fault).
    def draw(self, context):
        try:
            original(self, context)
            seen = entry(context) if entry else cls.__name__
            if seen not in report["drawn"]:
                report["drawn"].append(seen)
        except Exception:
            report["errors"].append(f"{cls.__name__}: {traceback.format_exc()}")
            raise
    cls.draw = draw


def reopen_sidebar(sidebar, opened=(), record_all=False) -> None:
    """The MuJoCo tab's panels registered again (a class registered again starts as it
    says): those named in `opened` open, the other top panels closed, sub-panels as they
    are; their draws recorded (every panel's with `record_all`, else the opened ones').
    All of them, parents first, in their order, so the order stays: the sidebar's own
    panels and every registered sub-panel below them (Info, View, ... of other modules;
    a sub-panel whose parent was registered again without it would draw as a top panel)."""
    panels = [cls for cls in sidebar.CLASSES if issubclass(cls, bpy.types.Panel)]
    names = {cls.__name__ for cls in panels}
    others = [cls for cls in bpy.types.Panel.__subclasses__() if cls not in panels and cls.is_registered]
    grown = True
    while grown:
        below = [cls for cls in others
                 if getattr(cls, "bl_parent_id", "") in names and cls.__name__ not in names]
        panels += below
        names |= {cls.__name__ for cls in below}
        grown = bool(below)
    for cls in reversed(panels):
        bpy.utils.unregister_class(cls)
    for cls in panels:
        if cls.__name__ in opened:
            cls.bl_options = set()
        elif not getattr(cls, "bl_parent_id", ""):
            cls.bl_options = {"DEFAULT_CLOSED"}
        if record_all or cls.__name__ in opened:
            record_draws(cls)
        bpy.utils.register_class(cls)


def view3d():
    """(window, area, region) of the largest 3D view."""
    window = bpy.context.window_manager.windows[0]
    area = max((a for a in window.screen.areas if a.type == "VIEW_3D"), key=lambda a: a.width * a.height)
    region = next(r for r in area.regions if r.type == "WINDOW")
    return window, area, region


def cheap_viewport(area) -> None:
    """Blender draws with software OpenGL here (llvmpipe under Xvfb), ~0.3 s a frame of
    the default viewport on two busy cores whatever MJBlend does (slow_model.py):
    no anti-aliasing, flat light, no outline, cavity, shadows or overlays."""
    bpy.context.preferences.system.viewport_aa = "OFF"
    shading = area.spaces.active.shading
    shading.light = "FLAT"
    shading.show_object_outline = shading.show_cavity = shading.show_shadows = False
    area.spaces.active.overlay.show_overlays = False


def overlay_view(area) -> None:
    """`cheap_viewport` with overlays on (add-on draw callbacks are overlays too) but
    none of Blender's own: no floor, axes, cursor, text or statistics."""
    cheap_viewport(area)
    overlay = area.spaces.active.overlay
    overlay.show_overlays = True
    for name in ("show_floor", "show_axis_x", "show_axis_y", "show_cursor", "show_text", "show_stats"):
        setattr(overlay, name, False)


def look(area, location, euler, distance) -> None:
    """The 3D view in perspective, looking at `location` turned by `euler` (XYZ radians) from `distance`."""
    from mathutils import Euler

    view = area.spaces.active.region_3d
    view.view_perspective = "PERSP"
    view.view_location = location
    view.view_rotation = Euler(euler).to_quaternion()
    view.view_distance = distance


def open_sidebar_tab(window, area, panel):
    """(Generator) The sidebar (it opens on another tab) switched to the tab of `panel`
    (its bl_category) until `panel` draws (record_draws must watch it; at most 6 s),
    then the pointer parked over the viewport. (Not clicks down the tab strip: on
    Blender 5 a click on the active tab collapses the sidebar to its tabs. The tab
    is read-only until a sidebar just shown has drawn once.)"""
    sidebar = next(r for r in area.regions if r.type == "UI")
    category = getattr(bpy.types, panel).bl_category
    for _ in range(20):
        if panel in report["drawn"]:
            break
        if not sidebar.is_property_readonly("active_panel_category"):
            sidebar.active_panel_category = category
        area.tag_redraw()
        yield 0.3
    subprocess.run(["xdotool", "mousemove", str(area.x + area.width // 3),
                    str(window.height - (area.y + area.height // 2))], check=True)


def run_steps(steps):
    """Enable MJBlend, then run the generator function `steps` on Blender's timers."""
    state = {}

    def tick():
        try:
            if "steps" not in state:
                addon_utils.enable(ADDON, default_set=True,
                                   handle_error=lambda e: report["errors"].append(f"enable: {e!r}"))
                state["steps"] = steps()
            delay = next(state["steps"], None)
            if delay is None:
                finish()
            return delay
        except Exception:
            finish(traceback.format_exc())
            return None

    bpy.app.timers.register(tick, first_interval=1.0)


def physics_parked(running):
    """The physics thread of `running` (a LiveSimulation, or None) parked while the
    body runs, where the runner has `parked` (engine.runner.Runner.parked: Blender on
    Python 3.11 crashes when an operator called with a context override reads it while
    another Python thread holds the GIL; tests/blender/test_context_override.py); a
    no-op otherwise (the GUI tier's Blender 5.2, on Python 3.14, would not crash)."""
    parked = getattr(getattr(running, "runner", None), "parked", None)
    return parked() if parked is not None else contextlib.nullcontext()


def running_simulation():
    """The scene's LiveSimulation, or None."""
    return importlib.import_module(ADDON + ".live.scene_session").simulation(bpy.context.scene)


def play_invoke():
    """`mujoco.play` INVOKE'd in the largest 3D view (the modal operator on a real window
    timer): the simulation is compiled first (its thread starts paused) so that the
    call with the view's context runs with the physics thread parked. Returns the
    LiveSimulation."""
    running = importlib.import_module(ADDON + ".live.scene_session").start_simulation(bpy.context.scene)
    window, area, region = view3d()
    with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
        bpy.ops.mujoco.play("INVOKE_DEFAULT")
    return running


def screenshot_view(path):
    """A screenshot of the largest 3D view as it is now (`screenshot_area`)."""
    _window, area, _region = view3d()
    screenshot_area(path, area)


def screenshot_area(path, area):
    """A screenshot of `area` as it is now: the window drawn once (the screen keeps
    the last frame Blender showed, ~1 s old here), then read from the X server
    (gui_x11: Blender's own screenshot operators save a black frame here)."""
    import gui_x11

    window = bpy.context.window_manager.windows[0]
    bpy.context.evaluated_depsgraph_get()  # what was written since the last evaluation, drawn
    with physics_parked(running_simulation()), bpy.context.temp_override(window=window, area=area):
        bpy.ops.wm.redraw_timer(type="DRAW_WIN_SWAP", iterations=1)
    gui_x11.screenshot_area(path, window, area)


def import_invoke(path):
    """File > Import MJCF of `path` as a drop on the 3D view does (INVOKE, files + directory)."""
    window, area, region = view3d()
    with bpy.context.temp_override(window=window, area=area, region=region):
        bpy.ops.import_scene.mjcf("INVOKE_DEFAULT", directory=os.path.dirname(path),
                                  files=[{"name": os.path.basename(path)}])


class Ticks(list):
    """A 20 Hz timer's firing times (perf_counter), while registered: how freely Blender
    runs its timers (it fires only between redraws and between an operator's steps)."""

    def __init__(self):
        super().__init__()
        self._timer = self.tick  # (one bound method: unregister matches it by identity)
        bpy.app.timers.register(self._timer)

    def tick(self):
        self.append(time.perf_counter())
        return 0.05

    def settled(self, limit=20.0):
        """Steps (for run_steps) until the timer ticks at its rate: Blender 5.2 redraws the
        3D view over and over for its first few seconds (also with no add-on; ~0.45 s a
        frame on llvmpipe, the timer ticking only between frames), so what a test times
        starts once 10 ticks in a row came < 0.1 s apart, as whenever Blender is idle.
        Returns the seconds it took."""
        start = time.perf_counter()
        while time.perf_counter() - start < limit and not (
                len(self) > 10 and max(b - a for a, b in zip(self[-11:-1], self[-10:], strict=True)) < 0.1):
            yield 0.1
        return time.perf_counter() - start

    def stop(self):
        bpy.app.timers.unregister(self._timer)

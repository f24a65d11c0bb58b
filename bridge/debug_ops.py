"""URLab's `debug` and `viewport` namespaces: markers drawn in Blender's 3D views,
and the 3D view's eye driven by a client.

Debug ops never wait for Blender: a bridge thread checks the request and adds
its marker to the store (bridge/debug_markers.py), which the viewport's overlay
draws. Viewport ops are Blender's: the request is checked here, then the 3D view
is read or moved on Blender's main thread (bridge/main_thread.run_call) by the
host's `viewport` (live/viewport.py). A server without Blender (ModelHost) has
no 3D view: its `meta` lists the viewport ops as unsupported, with why.

Conventions (URLab's): positions in MuJoCo metres in the model's world;
rotation_quat xyzw; rotation_euler (roll, pitch, yaw) degrees as URLab's Unreal
rotator reads them (debug_markers.euler_quat); fov horizontal degrees. The
eye's frame looks along its x axis with z up (y to its left), as URLab's
camera pose read back in MuJoCo's world.
"""

from __future__ import annotations

import mujoco
import numpy as np

from ..engine import png
from . import debug_markers, fields
from .main_thread import run_call
from .op import Op
from .wire import ProtocolError

MODES = ("lit", "unlit", "wireframe", "collision", "reflections")
POSE = ("location:array", "rotation_quat:array", "rotation_euler:array", "fov:float")
NO_BLENDER = "Blender's 3D view is driven over the bridge when a Blender scene is served, not a bare model"
DEFAULT_OFFSET = (0.0, -2.0, 1.0)  # URLab's: 2 m behind, 1 m above the tracked body
SCREENSHOT_WAIT = 5.0  # seconds a screenshot waits for the 3D view's next draw


class DebugViewport:
    """The op group (Dispatcher.parts): debug markers, the overlay text, the 3D view."""

    def __init__(self, dispatcher):
        self.d = dispatcher
        self.markers = debug_markers.MarkerStore()

    def ops(self) -> dict:
        shape_fields = {"draw_marker": ("location", "color"), "draw_line": ("from", "to", "color"),
                        "draw_box": ("center", "half_extents", "color"),
                        "draw_arrow": ("from", "to", "color"), "draw_axes": ("location",)}
        out = {name: Op(self._drawer(name), "editor_only", "debug", required, ("op:string",))
               for name, required in shape_fields.items()}
        out["clear_markers"] = Op(self.op_clear_markers, "editor_only", "debug", (), ("op:string",))
        out["set_overlay_text"] = Op(self.op_set_overlay_text, "editor_only", "debug", ("text",),
                                     ("op:string",))
        if self._viewport_served():
            out.update({
                "set_camera": Op(self.op_set_camera, "editor_only", "viewport", ("location",), POSE),
                "get_camera": Op(self.op_get_camera, "editor_only", "viewport", (), POSE),
                "frame_actor": Op(self.op_frame_actor, "editor_only", "viewport", ("target",), POSE),
                "set_viewport_mode": Op(self.op_set_viewport_mode, "editor_only", "viewport", ("mode",),
                                        ("mode:string",)),
                "track_actor": Op(self.op_track_actor, "editor_only", "viewport", ("target",),
                                  ("tracked_actor_path:string",)),
                "untrack": Op(self.op_untrack, "editor_only", "viewport", (), ("was_tracking:bool",)),
                "screenshot": Op(self.op_screenshot, "editor_only", "viewport", (),
                                 ("png:bin", "width:int", "height:int")),
            })
        return out

    def not_served(self) -> dict:
        """URLab ops this server answers `unsupported` (a bare model has no 3D view)."""
        if self._viewport_served():
            return {}
        return dict.fromkeys(("set_camera", "get_camera", "frame_actor", "set_viewport_mode", "track_actor",
                              "untrack", "screenshot"), NO_BLENDER)

    def _viewport_served(self) -> bool:
        return self.d.host.main_thread is not None and getattr(self.d.host, "viewport", None) is not None

    # ------------------------------------------------------------------ debug

    def _drawer(self, name: str):
        shape = debug_markers.SHAPES[name]

        def op(request, session=None) -> dict:
            self.markers.add(shape(request))
            return {"op": f"{name}_ok", "markers": len(self.markers)}
        return op

    def op_clear_markers(self, request, session=None) -> dict:
        # URLab clears every marker whatever the tag; MJBlend honours a tag when one is sent
        tag = fields.string(request, "tag", None)
        cleared = self.markers.clear(tag or None)
        return {"op": "clear_markers_ok", "cleared": cleared}

    def op_set_overlay_text(self, request, session=None) -> dict:
        fields.string(request, "anchor", "top_left")  # (accepted; the text is drawn top left, as URLab's v1)
        self.markers.set_text(debug_markers.overlay_text(request))
        return {"op": "set_overlay_text_ok"}

    # --------------------------------------------------------------- viewport

    def _call(self, function, what: str):
        return run_call(self.d.host.main_thread, function, what)

    def op_get_camera(self, request, session=None) -> dict:
        view = self.d.host.viewport
        return {"op": "get_camera_ok", **self._call(view.get_camera, "get_camera")}

    def op_set_camera(self, request, session=None) -> dict:
        location = fields.vector(request, "location", 3)
        turn = debug_markers.rotation(request)
        fov = fields.number(request, "fov", 0.0)
        if fov >= 180.0:
            raise ProtocolError("bad_value", f"'fov' = {fov:g}: a horizontal field of view below 180 degrees")
        view = self.d.host.viewport
        pose = self._call(lambda: view.set_camera(location, turn, fov if fov > 0 else None), "set_camera")
        return {"op": "set_camera_ok", **pose}

    def op_frame_actor(self, request, session=None) -> dict:
        shot = self._snapshot()
        bodies, _path = self._target(request, shot.model)
        low, high = bounds(shot, bodies)
        view = self.d.host.viewport
        return {"op": "frame_actor_ok", **self._call(lambda: view.frame(low, high), "frame_actor")}

    def op_track_actor(self, request, session=None) -> dict:
        shot = self._snapshot()
        bodies, path = self._target(request, shot.model)
        offset = fields.vector(request, "offset", 3, np.array(DEFAULT_OFFSET))
        smoothing = min(max(fields.number(request, "smoothing", 0.0), 0.0), 0.99)  # (URLab clamps so)
        view = self.d.host.viewport
        self._call(lambda: view.track(int(bodies[0]), offset, smoothing), "track_actor")
        return {"op": "track_actor_ok", "tracked_actor_path": path}

    def op_untrack(self, request, session=None) -> dict:
        view = self.d.host.viewport
        return {"op": "untrack_ok", "was_tracking": bool(self._call(view.untrack, "untrack"))}

    def op_set_viewport_mode(self, request, session=None) -> dict:
        mode = fields.string(request, "mode")
        if mode.lower() not in MODES:
            raise ProtocolError("invalid_mode",
                                f"unknown viewport mode {mode[:40]!r}: one of {', '.join(MODES)}")
        view = self.d.host.viewport
        self._call(lambda: view.set_mode(mode.lower()), "set_viewport_mode")
        return {"op": "set_mode_ok", "mode": mode}  # (URLab's reply op for it)

    def op_screenshot(self, request, session=None) -> dict:
        png, width, height = viewport_png(self.d.host)
        return {"op": "screenshot_ok", "png": png, "width": width, "height": height}

    # ----------------------------------------------------------------- actors

    def _snapshot(self):
        runner = self.d.host.runner()
        shot = runner.latest if runner is not None else None
        if shot is None:
            raise ProtocolError("not_ready", "no simulation is served")
        return shot

    def _target(self, request, model) -> tuple[np.ndarray, str]:
        """(body ids, the target's path) of URLab's `target`: an entity's actor_id (its
        bodies, the free-floating one first) or a body's name (with target_by
        actor_name, also an entity's name)."""
        key = fields.string(request, "target")
        fields.string(request, "target_by", "actor_id")
        entity = self.d.scene.by_prefix(model).get(key)
        if entity is not None and len(entity.bodies):
            bodies = np.asarray(entity.bodies)
            if entity.root_body >= 0:
                bodies = np.concatenate([[entity.root_body], bodies[bodies != entity.root_body]])
            return bodies, entity.prefix
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, key)
        if body > 0:
            return np.array([body]), key
        raise ProtocolError("unknown_actor", f"no actor or body {key[:80]!r} (send 'hello' for the entities)")


def bounds(shot, bodies) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) corners, in MuJoCo's world, of the geoms of `bodies` (each geom's
    box turned by its frame; planes, which have no extent, left out), else of the
    bodies' positions. ProtocolError `no_bounds` if neither."""
    model = shot.model
    geoms = np.flatnonzero(np.isin(model.geom_bodyid, bodies) & (model.geom_type != 0))
    if len(geoms):
        centre = model.geom_aabb[geoms, :3]
        half = model.geom_aabb[geoms, 3:]
        turn = shot.geom_xmat[geoms].reshape(-1, 3, 3)
        middle = shot.geom_xpos[geoms] + np.einsum("nij,nj->ni", turn, centre)
        reach = np.einsum("nij,nj->ni", np.abs(turn), half)
        return (middle - reach).min(axis=0), (middle + reach).max(axis=0)
    points = shot.xpos[np.asarray(bodies)]
    if not len(points):
        raise ProtocolError("no_bounds", "the actor has no geoms and no bodies")
    return points.min(axis=0), points.max(axis=0)


def viewport_png(host, timeout: float = SCREENSHOT_WAIT) -> tuple[bytes, int, int]:
    """(PNG bytes, width, height) of the served scene's largest 3D view as its next draw
    shows it (the scene, Blender's overlays, the debug markers). Call it from a
    bridge thread, never Blender's main thread: it asks the main thread for a capture,
    then waits for the view to draw. ProtocolError: `unsupported` without Blender,
    `no_viewport` without a window, `main_thread_timeout` if the view does not draw."""
    view = getattr(host, "viewport", None)
    if view is None:
        raise ProtocolError("unsupported", NO_BLENDER)
    capture = run_call(host.main_thread, view.ask_screenshot, "screenshot")
    if not capture.done.wait(timeout):
        raise ProtocolError("main_thread_timeout", f"the 3D view did not draw within {timeout:g} s "
                            "(is Blender's window minimised?)")
    pixels = capture.pixels
    if pixels is None:
        raise ProtocolError("no_viewport", "the scene's session ended before its 3D view drew")
    return png_bytes(pixels), int(pixels.shape[1]), int(pixels.shape[0])


def png_bytes(rgba: np.ndarray) -> bytes:
    """A PNG file of (height, width, 4) uint8 pixels, row 0 at the top."""
    return png.encode(rgba, level=3)

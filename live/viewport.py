"""Blender's 3D view driven by URLab's `viewport` ops (bridge/debug_ops.py asks; this
runs on Blender's main thread): the eye read and set in the model's world, an
actor framed, a body followed, the shading mode, a screenshot. The view's pose
functions, `Tracking` (fed by any snapshot source) and the screenshots (`Capture`,
kept by the scene's session) serve the user's own view features too
(live/view_follow.py, operators/view.py).

The view is the largest 3D view of the first window (URLab drives its
most recently focused perspective viewport). `--background` and the bpy module
have no 3D view on screen: every op answers `no_viewport` (URLab's code) there.

The eye, as URLab's camera pose read back in MuJoCo's world: location in
metres; its frame looks along x with z up (y to its left), where Blender's
view looks along its -z with y up; MuJoCo's world is Blender's moved by the
model root's frame (Binding.world). fov is horizontal degrees: Blender's view
fits a 72 mm sensor (36 mm, zoom 2) across the wider side of the region to
its lens, so the horizontal fov is 2 atan(36 / lens) in a landscape region.
"""

from __future__ import annotations

import math
import threading

import bpy
import numpy as np
from mathutils import Matrix, Quaternion, Vector

from ..bridge import debug_markers
from ..bridge.wire import ProtocolError

HALF_SENSOR = 36.0  # mm: half of Blender's view sensor (36 mm, zoom 2)
TRACK_INTERVAL = 1 / 60  # seconds between a tracking view's moves
FRAME_MARGIN = 1.1  # a framed actor's bounding sphere fills this much less than the view
# the eye's axes (x forward, y left, z up) as Blender's view axes: columns are the view's
# x (right), y (up), z (back) in the eye's frame
VIEW_IN_EYE = Matrix(((0.0, 0.0, -1.0), (-1.0, 0.0, 0.0), (0.0, 1.0, 0.0)))
# URLab's modes as Blender's shading (Blender has no collision or reflection view of its own)
MODES = {
    "lit": ("SOLID", "STUDIO", False),
    "unlit": ("SOLID", "FLAT", False),
    "wireframe": ("WIREFRAME", None, False),
    "collision": ("SOLID", "STUDIO", True),  # every geom seen through (x-ray): the shapes that collide
    "reflections": ("MATERIAL", None, False),  # Material Preview: the world's light and reflections
}


class Viewport:
    """The host's 3D view (SceneHost.viewport): every method runs on the main thread."""

    def __init__(self, host):
        self.host = host
        self.last_set: dict = {}  # the last pose set: {"state": the view's state then, "pose": as asked}
        self.tracking = Tracking(self.served_shot, self.last_set)

    def served_shot(self):
        """(the latest snapshot, MuJoCo's world in Blender's) while the bridge serves this
        host's simulation, else None (a client's track_actor ends with its bridge)."""
        from . import bridge_host  # (it makes hosts with a Viewport: imported when used)

        served = bridge_host.current()
        if served is None or served.host is not self.host:
            return None
        live = self.host.live
        runner = live.runner if live is not None else None
        shot = runner.latest if runner is not None else None
        return (shot, self.world()) if shot is not None else None

    def world(self) -> Matrix:
        """MuJoCo's world in Blender's (the model root's frame; the identity for several roots)."""
        live = self.host.live
        binding = live.binding if live is not None else None
        return binding.world.copy() if binding is not None else Matrix.Identity(4)

    def get_camera(self, area=None) -> dict:
        return pose_of(area or find_view(), self.world(), self.last_set)

    def set_camera(self, location, turn, fov, area=None) -> dict:
        area = area or find_view()
        set_pose(area, self.world(), location, turn, fov, self.last_set)
        return pose_of(area, self.world(), self.last_set)

    def frame(self, low, high, area=None) -> dict:
        area = area or find_view()
        frame_bounds(area, self.world(), np.asarray(low), np.asarray(high))
        return pose_of(area, self.world(), self.last_set)

    def track(self, body: int, offset, smoothing: float) -> None:
        find_view()
        self.tracking.start(body, np.asarray(offset, float), smoothing)

    def untrack(self) -> bool:
        return self.tracking.stop()

    def set_mode(self, mode: str) -> None:
        shading = find_view().spaces.active.shading
        kind, light, xray = MODES[mode]
        shading.type = kind
        if light is not None:
            shading.light = light
        if kind == "SOLID":
            shading.show_xray = xray
            shading.color_type = "RANDOM" if xray else "MATERIAL"
        elif kind == "WIREFRAME":
            shading.show_xray_wireframe = True

    def ask_screenshot(self) -> Capture:
        """A capture of the largest 3D view's next draw (it is tagged for one)."""
        from . import scene_session  # (it imports the simulation, which imports this module)

        return ask_capture(scene_session.of(self.host.scene), find_view())


# ------------------------------------------------------------------- the view


def find_view():
    """The largest 3D view on screen (an area), or ProtocolError `no_viewport`."""
    if bpy.app.background:
        raise ProtocolError("no_viewport", "Blender runs without a window (--background or the bpy module): "
                            "there is no 3D view to drive")
    areas = [area for window in bpy.context.window_manager.windows for area in window.screen.areas
             if area.type == "VIEW_3D"]
    if not areas:
        raise ProtocolError("no_viewport", "no 3D view is open in Blender's window")
    return max(areas, key=lambda area: area.width * area.height)


def window_size(area) -> tuple[int, int]:
    region = next((r for r in area.regions if r.type == "WINDOW"), None)
    return (region.width, region.height) if region is not None else (area.width, area.height)


def _half_width(area) -> float:
    """mm of Blender's view sensor across the region's width (its wider side takes 72 mm)."""
    width, height = window_size(area)
    return HALF_SENSOR if width >= height or height <= 0 else HALF_SENSOR * width / height


def fov_of(area) -> float:
    return math.degrees(2.0 * math.atan(_half_width(area) / area.spaces.active.lens))


def eye_of(view) -> tuple[Vector, Quaternion]:
    """(Blender world position, view rotation) of a region_3d's eye (perspective)."""
    rotation = view.view_rotation.normalized()
    return view.view_location + rotation @ Vector((0.0, 0.0, view.view_distance)), rotation


def _state(area, world: Matrix) -> tuple:
    view = area.spaces.active.region_3d
    return (area.as_pointer(), tuple(view.view_location), tuple(view.view_rotation), view.view_distance,
            view.view_perspective, area.spaces.active.lens, window_size(area), tuple(map(tuple, world)))


def pose_of(area, world: Matrix, memo: dict | None = None) -> dict:
    """URLab's camera pose of the view: location, rotation_quat (xyzw), rotation_euler
    (roll, pitch, yaw degrees), fov, in MuJoCo's world. A view not moved since
    `set_pose` (with the same `memo`) reads back the pose set (Blender keeps the view
    in single precision: a few 1e-6 degrees off otherwise)."""
    if memo and memo["state"] == _state(area, world):
        return dict(memo["pose"])
    eye, rotation = eye_of(area.spaces.active.region_3d)
    inverse = world.inverted()
    location = inverse @ eye
    turn = inverse.to_3x3().normalized() @ rotation.to_matrix() @ VIEW_IN_EYE.transposed()
    q = turn.to_quaternion().normalized()
    wxyz = np.array([q.w, q.x, q.y, q.z])
    return {"location": [float(v) for v in location], "rotation_quat": [q.x, q.y, q.z, q.w],
            "rotation_euler": [float(v) for v in debug_markers.quat_euler(wxyz)], "fov": fov_of(area)}


def set_pose(area, world: Matrix, location, turn, fov, memo: dict | None = None) -> None:
    """Put the view's eye at `location` (MuJoCo's world), turned by wxyz quaternion `turn`
    (None: as it is), with horizontal `fov` degrees (None: as it is); in perspective.
    `memo` keeps the pose asked, for pose_of."""
    space = area.spaces.active
    view = space.region_3d
    _eye, rotation = eye_of(view)
    if view.view_perspective != "PERSP":
        view.view_perspective = "PERSP"
    if turn is not None:
        eye_turn = Quaternion(tuple(float(v) for v in turn)).to_matrix()
        rotation = (world.to_3x3().normalized() @ eye_turn @ VIEW_IN_EYE).to_quaternion().normalized()
    if fov is not None:
        space.lens = _half_width(area) / math.tan(math.radians(fov) / 2.0)
    eye = world @ Vector(tuple(float(v) for v in location))
    view.view_rotation = rotation
    view.view_location = eye - rotation @ Vector((0.0, 0.0, view.view_distance))
    area.tag_redraw()
    if memo is None:
        return
    memo.clear()
    read = pose_of(area, world)  # (the view as Blender keeps it)
    wxyz = np.asarray(turn, float) / np.linalg.norm(turn) if turn is not None else None
    pose = {"location": [float(v) for v in location],
            "rotation_quat": ([*map(float, wxyz[1:]), float(wxyz[0])] if wxyz is not None
                              else read["rotation_quat"]),
            "rotation_euler": ([float(v) for v in debug_markers.quat_euler(wxyz)] if wxyz is not None
                               else read["rotation_euler"]),
            "fov": float(fov) if fov is not None and abs(read["fov"] - fov) < 1e-4 else read["fov"]}
    memo.update(state=_state(area, world), pose=pose)


def frame_bounds(area, world: Matrix, low: np.ndarray, high: np.ndarray) -> None:
    """Look at the box (low, high) of MuJoCo's world from as far as fits its bounding
    sphere in the view, the view turned as it is (Blender's View Selected does so too)."""
    space = area.spaces.active
    view = space.region_3d
    if view.view_perspective != "PERSP":
        view.view_perspective = "PERSP"
    radius = max(float(np.linalg.norm(high - low)) / 2.0, 0.05)
    width, height = window_size(area)
    horizontal = math.radians(fov_of(area))
    vertical = 2.0 * math.atan(math.tan(horizontal / 2.0) * height / max(width, 1))
    view.view_location = world @ Vector(tuple(float(v) for v in (low + high) / 2.0))
    view.view_distance = FRAME_MARGIN * radius / math.sin(min(horizontal, vertical) / 2.0)
    area.tag_redraw()


def look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray | None:
    """The eye's frame (columns x forward, y left, z up) looking from `eye` at `target`, z
    kept up (None when they coincide)."""
    forward = target - eye
    length = np.linalg.norm(forward)
    if length < 1e-9:
        return None
    forward = forward / length
    left = np.cross((0.0, 0.0, 1.0), forward)
    if np.linalg.norm(left) < 1e-6:  # (straight up or down)
        left = np.cross((0.0, 1.0, 0.0), forward)
    left /= np.linalg.norm(left)
    return np.stack([forward, left, np.cross(forward, left)], axis=1)


# ------------------------------------------------------------------ tracking


class Tracking:
    """URLab's track_actor: each 1/60 s the view moves towards the body's position plus
    `offset` turned by the body, looking at the body; `smoothing` in [0, 0.99] of the
    way is kept (0 snaps), as URLab's ticker lerps. One body at a time. `source()`
    gives (the snapshot to follow, MuJoCo's world in Blender's), or None once there
    is nothing to follow; `memo` is the view's last set pose (set_pose's)."""

    def __init__(self, source, memo: dict | None = None):
        self.source, self.memo = source, memo
        self.body, self.offset, self.smoothing = -1, np.zeros(3), 0.0
        self.active = False
        self._timer = self._tick  # (one function object: the timer is found again by it)

    def start(self, body: int, offset: np.ndarray, smoothing: float) -> None:
        self.body, self.offset, self.smoothing, self.active = body, offset, smoothing, True
        if not bpy.app.timers.is_registered(self._timer):
            bpy.app.timers.register(self._timer, first_interval=0.0)

    def stop(self) -> bool:
        was, self.active = self.active, False
        if bpy.app.timers.is_registered(self._timer):
            bpy.app.timers.unregister(self._timer)
        return was

    def _tick(self):
        try:
            going = self.active and self.tick()
        except ReferenceError:  # (the scene or its simulation went away)
            going = False
        if not going:
            self.active = False
            return None
        return TRACK_INTERVAL

    def tick(self) -> bool:
        """Move the view one step; False once there is nothing to follow."""
        found = self.source()
        if found is None:
            return False
        shot, world = found
        if self.body >= shot.model.nbody:
            return False
        try:
            area = find_view()
        except ProtocolError:
            return False
        target = shot.xpos[self.body]
        wanted = target + shot.xmat[self.body].reshape(3, 3) @ self.offset
        pose = pose_of(area, world, self.memo)
        keep = self.smoothing
        eye = np.array(pose["location"]) * keep + wanted * (1.0 - keep)
        frame = look_at(wanted, target)
        if frame is None:
            set_pose(area, world, eye, None, None, self.memo)
            return True
        x, y, z, w = pose["rotation_quat"]
        now = Quaternion((w, x, y, z))
        turned = now.slerp(Matrix(frame.tolist()).to_quaternion(), 1.0 - keep)
        set_pose(area, world, eye, np.array(turned), None, self.memo)
        return True


# ---------------------------------------------------------------- screenshot


class Capture:
    """A screenshot asked of a 3D view (the bridge's clients', the Screenshot
    operator's): the view's next draw reads its pixels and sets `done`; no mouse
    over the view needed. No operator: one called with a context override while the
    bridge's threads run Python crashes Blender on Python 3.11
    (engine/runner.Runner.parked), and Blender 5.2's screenshot operators save black
    frames under Xvfb.

    A draw callback's framebuffer is the view's overlay layer, not the picture
    (Blender merges the scene's shading under it later, when it puts the region on
    screen: solid surfaces are not in it). So the view is drawn again offscreen, in
    the last draw callback, with Blender's own merge (`draw_view`,
    GPUOffScreen.draw_view3d: the scene, its shading and Blender's overlays, colour
    managed), and what MJBlend's draw callbacks added to the overlay layer (read
    before them, `capture_before`, and after, `capture_drawn`) is laid over it as
    Blender's merge does (`lay_over`). Blender runs the draw callbacks with its
    overlays hidden too (draw_view then draws the scene alone)."""

    def __init__(self, region):
        self.region = region.as_pointer()
        self.done = threading.Event()
        self.before: np.ndarray | None = None  # the overlay layer before MJBlend's drawings (keep_alpha)
        self.pixels: np.ndarray | None = None  # (height, width, 4) uint8, row 0 at the top; None: never drawn


def ask_capture(owner, area) -> Capture:
    """A capture of `area`'s next draw, kept by scene session `owner` until then (the
    area is tagged for a redraw)."""
    capture = Capture(next(r for r in area.regions if r.type == "WINDOW"))
    owner.captures.append(capture)
    area.tag_redraw()
    return capture


def _waiting() -> list:
    from . import scene_session  # (it imports the simulation, which imports this module)

    return [(owner, c) for owner in scene_session.all_sessions() for c in owner.captures]


def _answer(waiting, region, read) -> None:
    """The captures of `region` among `waiting` answered with `read()`'s pixels (read once)."""
    pointer, pixels = region.as_pointer(), None
    for owner, capture in waiting:
        if capture.region != pointer:
            continue
        if pixels is None:
            pixels = read()
        owner.captures.remove(capture)
        capture.pixels = pixels
        capture.done.set()


def capture_before() -> None:
    """(A POST_VIEW draw callback, before MJBlend's other draw callbacks) The region's
    overlay layer as Blender drew it, for the screenshots waiting for this draw."""
    waiting = _waiting()
    if not waiting:
        return
    region = bpy.context.region
    pointer, layer = region.as_pointer(), None
    for _owner, capture in waiting:
        if capture.region == pointer:
            if layer is None:
                layer = read_region(region, keep_alpha=True)
            capture.before = layer


def capture_drawn() -> None:
    """(A POST_PIXEL draw callback, last) The region as the screen shows it, for the
    screenshots any scene session asked of it (its bridge's clients, the Screenshot
    operator) whose overlay layer was read before MJBlend drew (capture_before)."""
    context = bpy.context
    region, space, view = context.region, context.space_data, context.region_data
    pointer = region.as_pointer()
    waiting = [(owner, c) for owner, c in _waiting() if c.region == pointer and c.before is not None]
    if not waiting:
        return
    before = waiting[0][1].before  # (this draw's: capture_before read it for each of them)
    after = read_region(region, keep_alpha=True)
    _answer(waiting, region, lambda: lay_over(
        draw_view(context.scene, context.view_layer, space, region, view), before, after))


def release_captures(captures: list) -> None:
    """The captures waiting in `captures` answered without pixels (their session ends)."""
    while captures:
        captures.pop().done.set()


def read_region(region, origin=(0, 0), keep_alpha: bool = False) -> np.ndarray:
    """(height, width, 4) uint8 of the region's pixels in the framebuffer drawn now (in a
    draw callback; `origin`: where the region starts in it), row 0 at the top; alpha
    255 unless `keep_alpha`."""
    import gpu

    width, height = region.width, region.height
    buffer = gpu.state.active_framebuffer_get().read_color(*origin, width, height, 4, 0, "UBYTE")
    try:
        pixels = np.asarray(buffer, dtype=np.uint8)
    except (TypeError, ValueError):  # (a Blender whose gpu.types.Buffer has no buffer protocol)
        pixels = np.array(buffer.to_list(), dtype=np.uint8)
    pixels = pixels.reshape(height, width, 4)[::-1].copy()
    if not keep_alpha:
        pixels[..., 3] = 255  # (the framebuffer's alpha is not the picture's)
    return pixels


def draw_view(scene, view_layer, space, region, view) -> np.ndarray:
    """(height, width, 4) uint8 of the 3D view `space`'s `region` (its region_3d `view`)
    drawn offscreen as Blender puts it on screen: the scene with the view's shading
    and Blender's overlays, merged and colour managed by Blender (draw callbacks,
    gizmos and the region's info text are not in it). Call it in a draw callback."""
    import gpu

    offscreen = gpu.types.GPUOffScreen(region.width, region.height)
    try:
        offscreen.draw_view3d(scene, view_layer, space, region, view.view_matrix, view.window_matrix,
                              do_color_management=True)
        with offscreen.bind():
            return read_region(region)
    finally:
        offscreen.free()


# the overlay layer's 8-bit sRGB storage, decoded (Blender samples it linear)
_SRGB_DECODE = np.where(np.arange(256) / 255 <= 0.04045, np.arange(256) / 255 / 12.92,
                        ((np.arange(256) / 255 + 0.055) / 1.055) ** 2.4).astype(np.float32)
_DISPLAY_DECODE = ((np.arange(256) / 255) ** 2.2).astype(np.float32)  # the merge's display gamma


def lay_over(view: np.ndarray, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """`view` (draw_view's picture) with what draw callbacks added to the overlay layer
    between `before` and `after` (read_region keep_alpha) laid over it as Blender's
    merge does (OCIO's display shader: the picture in display-linear gamma 2.2, times
    one minus the layer's alpha, plus the layer). The callbacks blend over the layer
    (alpha a, colour c): after = c a + before (1 - a), so the screen shows
    view (1 - a) + c a; pixels they left alone are the view's own."""
    out = view.copy()
    changed = (before != after).any(axis=2)
    if not changed.any():
        return out
    low, high = before[changed], after[changed]
    alpha_low = low[:, 3:].astype(np.float32) / 255
    alpha_high = high[:, 3:].astype(np.float32) / 255
    opaque = alpha_low >= 1.0
    alpha = np.where(opaque, 1.0, (alpha_high - alpha_low) / np.where(opaque, 1.0, 1.0 - alpha_low))
    keep = 1.0 - np.clip(alpha, 0.0, 1.0)
    linear = (_DISPLAY_DECODE[view[changed][:, :3]] * keep + _SRGB_DECODE[high[:, :3]]
              - _SRGB_DECODE[low[:, :3]] * keep)
    out[changed, :3] = np.rint(np.clip(linear, 0.0, 1.0) ** (1 / 2.2) * 255).astype(np.uint8)
    return out

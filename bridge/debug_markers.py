"""URLab's debug drawing (`client.debug`): the markers clients drew, kept for the
viewport's overlay to draw.

A bridge thread validates a request and adds its marker here at once: no
request waits for Blender's main thread. Each marker is turned into line
segments in MuJoCo's world when it is added (a sphere's three circles, a box's
edges, an arrow's shaft and head), so a frame only concatenates them; the
overlay (ui/overlays/debug_draw.py) moves them into Blender's world by the
model root's frame and rebuilds its GPU batches only when `version` changes.

Lifetimes, as URLab's `ttl`: 0 one frame (drawn by the next frame that draws,
then gone), -1 until `clear_markers`, > 0 that many seconds. At most `CAP`
markers are held: at the cap the oldest transient one (ttl >= 0) makes room,
as a frame's markers replace the last frame's; when every held marker is
persistent, a new one is refused (`marker_limit`) until the client clears.

Nothing here imports bpy; every method may be called from any thread.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from . import fields
from .wire import ProtocolError

CAP = 10_000  # markers held at once
MARKER_RADIUS = 0.05  # metres: URLab draws a 5 cm sphere
CIRCLE_SEGMENTS = 16  # per circle (URLab's sphere has 16)
ARROW_HEAD = 0.2  # of an arrow's length, URLab's default head
MAX_LABEL = 200  # characters of a marker's label
MAX_TEXT = 2000  # characters of the overlay text
MAX_THICKNESS = 20.0  # pixels
ONE_FRAME = 1 / 30  # seconds a ttl-0 marker stays after the first frame that draws it (every view
#                     redrawing in that pass draws it too)
AXIS_COLORS = ((1.0, 0.0, 0.0, 1.0), (0.0, 1.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0))
DEFAULT_COLOR = (1.0, 1.0, 0.0, 1.0)  # URLab's yellow


@dataclass(frozen=True, eq=False)
class Marker:
    """One drawn primitive: segments (2k, 3) in MuJoCo's world with a colour per end
    (2k, 4), the line width in pixels, a label at `anchor` (or ""), the client's tag."""

    kind: str  # marker | line | arrow | box | axes
    lines: np.ndarray
    colors: np.ndarray
    thickness: float
    label: str
    anchor: np.ndarray
    tag: str
    ttl: float


@dataclass
class Frame:
    """What the overlay draws now: the markers, the overlay text, and the version they are of."""

    version: int
    markers: tuple
    text: str
    next_expiry: float | None  # monotonic time the soonest transient marker goes (a redraw then)


class _Held:
    __slots__ = ("marker", "expires")

    def __init__(self, marker: Marker, expires: float | None):
        self.marker, self.expires = marker, expires  # expires None: persistent or not yet drawn (ttl 0)


class MarkerStore:
    def __init__(self, cap: int = CAP, clock=time.monotonic):
        self.cap, self.clock = cap, clock
        self._lock = threading.Lock()
        self._held: OrderedDict[int, _Held] = OrderedDict()  # oldest first
        self._transient: OrderedDict[int, None] = OrderedDict()  # ids of ttl >= 0 markers, oldest first
        self._ids = 0
        self.version = 0  # one more for each change the overlay must draw
        self.text = ""
        self.added = 0  # markers ever added
        self.evicted = 0  # transient markers dropped at the cap before they expired
        self._soonest: float | None = None  # the soonest expiry known (none passed: no scan at the cap)

    def __len__(self) -> int:
        return len(self._held)

    # ------------------------------------------------------------------ adding

    def add(self, marker: Marker) -> int:
        """Hold `marker`; its id. ProtocolError `marker_limit` when the store is full of
        persistent markers (nothing changes then)."""
        with self._lock:
            now = self.clock()
            if len(self._held) >= self.cap and self._soonest is not None and self._soonest <= now:
                self._expire(now)
            while len(self._held) >= self.cap and self._transient:
                oldest, _ = self._transient.popitem(last=False)
                del self._held[oldest]
                self.evicted += 1
            if len(self._held) >= self.cap:
                raise ProtocolError("marker_limit", f"{len(self._held)} persistent markers (ttl -1) are "
                                    "drawn, the most held at once: send clear_markers first")
            self._ids += 1
            expires = now + marker.ttl if marker.ttl > 0 else None
            self._held[self._ids] = _Held(marker, expires)
            if expires is not None and (self._soonest is None or expires < self._soonest):
                self._soonest = expires
            if marker.ttl >= 0:
                self._transient[self._ids] = None
            self.added += 1
            self.version += 1
            return self._ids

    def clear(self, tag: str | None = None) -> int:
        """Drop every marker (those of `tag` only, when given); how many went."""
        with self._lock:
            gone = [i for i, held in self._held.items() if tag is None or held.marker.tag == tag]
            for i in gone:
                del self._held[i]
                self._transient.pop(i, None)
            if gone:
                self.version += 1
            return len(gone)

    def set_text(self, text: str) -> None:
        with self._lock:
            if text != self.text:
                self.text = text
                self.version += 1

    # ------------------------------------------------------------------ drawing

    def frame(self) -> Frame:
        """(The overlay, each frame) The markers to draw now. Expired ones are dropped
        first; ttl-0 markers drawn now go `ONE_FRAME` seconds later."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            soonest = None
            for i in self._transient:
                held = self._held[i]
                if held.expires is None:  # a ttl-0 marker's first frame
                    held.expires = now + ONE_FRAME
                soonest = held.expires if soonest is None else min(soonest, held.expires)
            self._soonest = soonest
            markers = tuple(held.marker for held in self._held.values())
            return Frame(self.version, markers, self.text, soonest)

    def _expire(self, now: float) -> None:
        gone, soonest = [], None
        for i in self._transient:
            expires = self._held[i].expires
            if expires is not None and expires <= now:
                gone.append(i)
            elif expires is not None and (soonest is None or expires < soonest):
                soonest = expires
        for i in gone:
            del self._held[i]
            del self._transient[i]
        self._soonest = soonest
        if gone:
            self.version += 1


# ---------------------------------------------------------------- requests


def color(request: dict, default=DEFAULT_COLOR) -> tuple:
    """URLab's colour: [r, g, b] (or with alpha) in 0..1, clamped as URLab clamps."""
    if request.get("color") is None:
        return default
    values = fields.as_vector(request["color"], "'color'")
    if len(values) not in (3, 4):
        raise ProtocolError("dim_mismatch", f"'color' has {len(values)} values; it takes 3 (r, g, b) or 4")
    rgba = np.clip(values, 0.0, 1.0)
    return (*map(float, rgba[:3]), float(rgba[3]) if len(rgba) == 4 else 1.0)


def ttl(request: dict) -> float:
    """URLab's ttl: 0 one frame, -1 (any negative) until cleared, > 0 seconds."""
    value = fields.number(request, "ttl", 0.0)
    return -1.0 if value < 0 else value


def thickness(request: dict) -> float:
    value = fields.number(request, "thickness", 1.0)
    if value <= 0:
        raise ProtocolError("bad_value", f"'thickness' must be above 0 (pixels), not {value:g}")
    return min(value, MAX_THICKNESS)


def label(request: dict) -> str:
    text = fields.string(request, "label", "")
    if len(text) > MAX_LABEL:
        raise ProtocolError("bad_value", f"'label' has {len(text)} characters; at most {MAX_LABEL}")
    return text


def tag(request: dict) -> str:
    text = fields.string(request, "tag", "")
    return text[:MAX_LABEL]


def quat_xyzw(values, what: str = "'rotation_quat'") -> np.ndarray:
    """URLab's xyzw quaternion as MuJoCo's wxyz, normalised."""
    q = fields.as_vector(values, what, 4)
    norm = float(np.linalg.norm(q))
    if norm < 1e-9:
        raise ProtocolError("bad_value", f"{what} is zero: not a rotation")
    return np.array([q[3], q[0], q[1], q[2]]) / norm


def euler_quat(values, what: str = "'rotation_euler'") -> np.ndarray:
    """URLab's (roll, pitch, yaw) in degrees, as its Unreal rotator means them (yaw turns
    right, pitch looks up), in MuJoCo's right-handed world (Unreal's with y flipped):
    Rz(-yaw) Ry(-pitch) Rx(roll), as MuJoCo's wxyz quaternion."""
    roll, pitch, yaw = np.radians(fields.as_vector(values, what, 3))
    return _qmul(_qmul(_axis_quat(2, -yaw), _axis_quat(1, -pitch)), _axis_quat(0, roll))


def quat_euler(q: np.ndarray) -> tuple:
    """The inverse of `euler_quat`: (roll, pitch, yaw) degrees of wxyz quaternion `q`."""
    m = quat_matrix(q)
    # m = Rz(a) Ry(b) Rx(c) with a = -yaw, b = -pitch, c = roll
    b = math.asin(max(-1.0, min(1.0, -m[2, 0])))
    a = math.atan2(m[1, 0], m[0, 0])
    c = math.atan2(m[2, 1], m[2, 2])
    return (math.degrees(c), math.degrees(-b), math.degrees(-a))


def rotation(request: dict) -> np.ndarray | None:
    """The request's rotation as a wxyz quaternion (rotation_quat first, as URLab reads it), or None."""
    if request.get("rotation_quat") is not None:
        return quat_xyzw(request["rotation_quat"])
    if request.get("rotation_euler") is not None:
        return euler_quat(request["rotation_euler"])
    return None


def _axis_quat(axis: int, angle: float) -> np.ndarray:
    q = np.zeros(4)
    q[0], q[1 + axis] = math.cos(angle / 2), math.sin(angle / 2)
    return q


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def quat_matrix(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


# ---------------------------------------------------------------- shapes

_ANGLES = np.linspace(0.0, 2 * math.pi, CIRCLE_SEGMENTS + 1)
_CIRCLE = np.stack([np.cos(_ANGLES), np.sin(_ANGLES)], axis=1)
# three great circles (xy, yz, zx) of a unit sphere, as segments
_SPHERE = np.concatenate([
    np.insert(_CIRCLE, axis, 0.0, axis=1)[np.repeat(np.arange(CIRCLE_SEGMENTS + 1), 2)[1:-1]]
    for axis in (2, 0, 1)])
_CORNERS = np.array([(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
_EDGES = np.array([(a, b) for a in range(8) for b in range(a + 1, 8)
                   if np.count_nonzero(_CORNERS[a] != _CORNERS[b]) == 1]).reshape(-1)


def _arrow(start: np.ndarray, end: np.ndarray, head: float) -> np.ndarray:
    """Segments of an arrow: the shaft and four head lines back from the tip."""
    shaft = end - start
    length = float(np.linalg.norm(shaft))
    if length < 1e-12:
        return np.array([start, end])
    forward = shaft / length
    side = np.cross(forward, (0.0, 0.0, 1.0) if abs(forward[2]) < 0.9 else (1.0, 0.0, 0.0))
    side /= np.linalg.norm(side)
    up = np.cross(forward, side)
    back = end - forward * head
    spread = head * 0.5
    tips = [back + side * spread, back - side * spread, back + up * spread, back - up * spread]
    return np.array([start, end] + [p for tip in tips for p in (end, tip)])


def _made(kind, lines, rgba, request, width=1.0, text="", anchor=None) -> Marker:
    lines = np.asarray(lines, np.float32)
    colors = np.empty((len(lines), 4), np.float32)
    colors[:] = rgba
    anchor = np.asarray(anchor if anchor is not None else lines[0], float)
    return Marker(kind, lines, colors, width, text, anchor, tag(request), ttl(request))


def marker(request: dict) -> Marker:
    where = fields.vector(request, "location", 3)
    sphere = where + _SPHERE * MARKER_RADIUS
    return _made("marker", sphere, color(request), request, 1.0, label(request), where)


def line(request: dict) -> Marker:
    start, end = fields.vector(request, "from", 3), fields.vector(request, "to", 3)
    return _made("line", [start, end], color(request), request, thickness(request))


def arrow(request: dict) -> Marker:
    start, end = fields.vector(request, "from", 3), fields.vector(request, "to", 3)
    head = ARROW_HEAD * float(np.linalg.norm(end - start))
    size = fields.number(request, "arrow_size", 0.0)
    if size > 0:  # (URLab: a size of 0 or less keeps the default)
        head = size
    return _made("arrow", _arrow(start, end, head), color(request), request, thickness(request))


def box(request: dict) -> Marker:
    centre = fields.vector(request, "center", 3)
    half = np.abs(fields.vector(request, "half_extents", 3))
    q = rotation(request)
    turn = quat_matrix(q) if q is not None else np.eye(3)
    corners = centre + (_CORNERS * half) @ turn.T
    width = thickness(request) if "thickness" in request else 1.0
    return _made("box", corners[_EDGES], color(request), request, width, anchor=centre)


def axes(request: dict) -> Marker:
    origin = fields.vector(request, "location", 3)
    scale = abs(fields.number(request, "scale", 0.2))
    q = rotation(request)
    turn = quat_matrix(q) if q is not None else np.eye(3)
    lines, colors = [], []
    for axis in range(3):
        segments = _arrow(origin, origin + turn[:, axis] * scale, ARROW_HEAD * scale)
        lines.append(segments)
        colors.append(np.tile(AXIS_COLORS[axis], (len(segments), 1)))
    width = thickness(request) if "thickness" in request else 1.0
    made = _made("axes", np.concatenate(lines), DEFAULT_COLOR, request, width, anchor=origin)
    made.colors[:] = np.concatenate(colors)
    return made


SHAPES = {"draw_marker": marker, "draw_line": line, "draw_arrow": arrow, "draw_box": box, "draw_axes": axes}


def overlay_text(request: dict) -> str:
    text = fields.string(request, "text")
    if len(text) > MAX_TEXT:
        raise ProtocolError("bad_value", f"'text' has {len(text)} characters; at most {MAX_TEXT}")
    return text

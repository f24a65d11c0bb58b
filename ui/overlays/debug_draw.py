"""Draws the debug markers bridge clients sent (URLab's `client.debug`, kept in the
served bridge's bridge/debug_markers.MarkerStore) in every 3D view, and their
labels and the overlay text with blf.

The markers are segments in MuJoCo's world: moved into Blender's by the model
root's frame (Binding.world), one GPU batch per line width (a draw call costs
more than its vertices), rebuilt only when the store or the root changes: a
redraw of unchanged markers only draws. A timer redraws the 3D views when
clients changed the markers or a marker's time is up (Blender redraws a view
only when told).
"""

from __future__ import annotations

import time

import blf
import bpy
import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader

from ...live import bridge_host, viewport
from ..drawing import text_size
from . import draw as overlay_draw

TEXT_SIZE = 14
TEXT_MARGIN = 12  # pixels from the view's top left corner
POLL = 1 / 30  # seconds between the timer's looks while a bridge is served
IDLE_POLL = 0.5
_handles: list = []
_cache: dict = {"key": None, "batches": {}, "labels": ()}
_seen = {"version": -1, "expiry": None}
draw_seconds = 0.0  # the last draw's wall time (bench/overlay_bench.py)
text_seconds = 0.0  # ... of the labels and text
label_path = ""  # how the last labels were drawn: "atlas" (one texture) or "blf" (one by one)


def served_store():
    """(the served bridge's MarkerStore, MuJoCo's world in Blender's as a 4x4 array), or None."""
    served = bridge_host.current()
    if served is None:
        return None
    debug = getattr(served.bridge.dispatcher, "debug", None)
    viewport = getattr(served.host, "viewport", None)
    if debug is None or viewport is None:
        return None
    return debug.markers, np.array(viewport.world())


def lines_by_width(markers, world: np.ndarray) -> dict:
    """{line width: (positions (n, 3), colours (n, 4))} of `markers`, float32, in
    Blender's world (`world`: MuJoCo's world in Blender's)."""
    parts: dict = {}
    for marker in markers:
        parts.setdefault(marker.thickness, []).append(marker)
    turn, move = world[:3, :3].astype("f4"), world[:3, 3].astype("f4")
    return {width: (np.concatenate([m.lines for m in found]) @ turn.T + move,
                    np.concatenate([m.colors for m in found]))
            for width, found in parts.items()}


def labels_of(markers, world: np.ndarray) -> list:
    """[(text, Blender world position)] of the labelled markers."""
    named = [(m.label, m.anchor) for m in markers if m.label]
    if not named:
        return []
    where = np.array([pos for _text, pos in named]) @ world[:3, :3].T + world[:3, 3]
    return [(text, pos) for (text, _pos), pos in zip(named, where, strict=True)]


def _batches(frame, world: np.ndarray, shader) -> tuple[dict, list]:
    key = (frame.version, world.tobytes())
    if _cache["key"] != key:
        _cache["batches"] = {width: batch_for_shader(shader, "LINES", {"pos": pos, "color": color})
                             for width, (pos, color) in lines_by_width(frame.markers, world).items()}
        _cache["labels"] = labels_of(frame.markers, world)
        _cache["key"] = key
    return _cache["batches"], _cache["labels"]


def draw() -> None:
    global draw_seconds
    found = served_store()
    if found is None:
        return
    start = time.perf_counter()
    store, world = found
    frame = store.frame()
    _seen["version"], _seen["expiry"] = frame.version, frame.next_expiry
    if not frame.markers:
        _cache["key"], _cache["batches"], _cache["labels"] = None, {}, ()
        draw_seconds = time.perf_counter() - start
        return
    shader, wide, _dots = overlay_draw.shaders()
    batches, _labels = _batches(frame, world, shader)
    gpu.state.depth_test_set("NONE")
    gpu.state.blend_set("ALPHA")
    overlay_draw.draw_lines(shader, wide, batches)
    gpu.state.blend_set("NONE")
    draw_seconds = time.perf_counter() - start


def draw_text() -> None:
    """The markers' labels (at their points) and the overlay text (top left); then the
    region's pixels for a screenshot a client asked for."""
    global text_seconds
    start = time.perf_counter()
    _draw_text()
    text_seconds = time.perf_counter() - start
    viewport.capture_drawn()


def _draw_text() -> None:
    global label_path
    found = served_store()
    view, region = bpy.context.region_data, bpy.context.region
    if found is None or view is None:
        return
    store = found[0]
    named = _cache["labels"] if _cache["key"] is not None else ()
    if named:
        label_path = overlay_draw.draw_named(named, view, region)
    text = store.text
    if text:
        text_size(TEXT_SIZE)
        blf.color(0, 1.0, 1.0, 1.0, 1.0)
        _width, tall = blf.dimensions(0, "Ag")
        y = region.height - TEXT_MARGIN - tall
        for line in text.splitlines()[:40]:
            blf.position(0, TEXT_MARGIN, y, 0)
            blf.draw(0, line)
            y -= tall * 1.3


def _poll():
    """(Timer) Redraw the 3D views when clients changed the markers or one's time is up."""
    found = served_store()
    if found is None:
        return IDLE_POLL
    store = found[0]
    expiry = _seen["expiry"]
    if store.version != _seen["version"] or (expiry is not None and store.clock() >= expiry):
        _seen["version"] = store.version
        _seen["expiry"] = None
        for window in bpy.context.window_manager.windows:
            for area in window.screen.areas:
                if area.type == "VIEW_3D":
                    area.tag_redraw()
    return POLL


def register():
    _handles.append(bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_VIEW"))
    _handles.append(bpy.types.SpaceView3D.draw_handler_add(draw_text, (), "WINDOW", "POST_PIXEL"))
    if not bpy.app.background and not bpy.app.timers.is_registered(_poll):
        bpy.app.timers.register(_poll, first_interval=IDLE_POLL, persistent=True)


def unregister():
    while _handles:
        bpy.types.SpaceView3D.draw_handler_remove(_handles.pop(), "WINDOW")
    if bpy.app.timers.is_registered(_poll):
        bpy.app.timers.unregister(_poll)
    _cache["key"], _cache["batches"], _cache["labels"] = None, {}, ()

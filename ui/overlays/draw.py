"""Draws the viewport's MuJoCo overlays (layers.py says what) and the active hidden
joint or frame (helpers.py) with Blender's `gpu` module, on top of the scene, and
their labels with `blf`.

Lines go through Blender's polyline shader where it has one (wide lines on every
GPU backend: Metal and Vulkan draw plain lines one pixel wide). A frame's GPU
batches are kept until its layers change, so redrawing a paused or unchanged
view only draws.
"""

from __future__ import annotations

import time

import blf
import bpy
import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader

from ...live import profile, scene_session
from ..drawing import builtin_shader, text_size
from . import helpers, labels, layers as overlay_layers

LABEL_SIZE = 12
LABEL_COLOR = (1.0, 1.0, 1.0, 0.95)
LABEL_OFFSET = 4  # pixels right of and above the labelled point
_handles: list = []
draw_seconds = 0.0  # wall time of the last overlay draw (the profiler shows it)


def shaders():
    """(line shader, whether it draws wide lines itself, dot shader): per-vertex colours.
    OpenGL draws wide lines itself (glLineWidth), cheaper than the polyline shader's
    geometry stage (measured on software OpenGL: bench/overlay_bench.py); Metal and
    Vulkan draw lines one pixel wide, so there the polyline shader makes them wide."""
    flat = builtin_shader("FLAT_COLOR", "3D_FLAT_COLOR")
    backend = gpu.platform.backend_type_get() if hasattr(gpu.platform, "backend_type_get") else "OPENGL"
    line = builtin_shader("POLYLINE_FLAT_COLOR", "3D_POLYLINE_FLAT_COLOR") if backend != "OPENGL" else None
    return line or flat, line is not None, flat


def draw_lines(shader, wide: bool, batches: dict) -> None:
    """{line width: batch} drawn with `shader` (bound here), each at its width (the
    shader's uniform where it draws wide lines itself, else OpenGL's line width)."""
    region = bpy.context.region
    shader.bind()
    for width, batch in batches.items():
        if wide:
            shader.uniform_float("viewportSize", (region.width, region.height))
            shader.uniform_float("lineWidth", width)
        else:
            gpu.state.line_width_set(width)
        batch.draw(shader)
    gpu.state.line_width_set(1.0)


def _by_size(layers, points: str, size: str) -> dict:
    """{line width or point size: (positions, colours)} of every layer's `points`:
    one batch, one draw call, per size (a draw call costs more than its vertices)."""
    parts: dict = {}
    for layer in layers:
        where = getattr(layer, points)
        if len(where):
            parts.setdefault(getattr(layer, size), []).append((where, layer.color))
    return {key: (np.concatenate([where for where, _color in found]).astype("f4"),
                  np.concatenate([np.tile(color, (len(where), 1)) for where, color in found]).astype("f4"))
            for key, found in parts.items()}


def _batches(layers, line_shader, dot_shader):
    """({line width: batch}, {point size: batch}) of `layers`."""
    lines = {width: batch_for_shader(line_shader, "LINES", {"pos": pos, "color": color})
             for width, (pos, color) in _by_size(layers, "lines", "line_width").items()}
    dots = {size: batch_for_shader(dot_shader, "POINTS", {"pos": pos, "color": color})
            for size, (pos, color) in _by_size(layers, "points", "point_size").items()}
    return lines, dots


def _batches_of(scene, drawn, line_shader, dot_shader):
    """`_batches` of `drawn`, cached in the scene's session."""
    owner = scene_session.of(scene)
    cached = owner.overlay_batches
    if cached is not None and cached[0] is drawn:
        return cached[1:]
    lines, dots = _batches(drawn.layers, line_shader, dot_shader)
    owner.overlay_batches = (drawn, lines, dots)
    return lines, dots


def draw() -> None:
    global draw_seconds
    start = time.perf_counter()
    scene = bpy.context.scene
    if scene is None:
        return
    drawn = overlay_layers.of_scene(scene)
    active = helpers.active_hidden(bpy.context.view_layer)  # (a few vertices: not cached)
    if not drawn.layers and not active:
        draw_seconds = time.perf_counter() - start
        return
    line, wide, dots = shaders()
    gpu.state.depth_test_set("NONE")
    gpu.state.blend_set("ALPHA")
    batches = [_batches_of(scene, drawn, line, dots)] if drawn.layers else []
    if active:
        batches.append(_batches(active, line, dots))
    for lines, points in batches:
        draw_lines(line, wide, lines)
        dots.bind()
        for size, batch in points.items():
            gpu.state.point_size_set(size)
            batch.draw(dots)
    gpu.state.point_size_set(1.0)
    gpu.state.blend_set("NONE")
    draw_seconds = time.perf_counter() - start
    profile.drew(scene, draw_seconds)  # (the profiler line's draw time)


def draw_labels() -> None:
    scene, region, view = bpy.context.scene, bpy.context.region, bpy.context.region_data
    if scene is None or view is None or scene.mujoco_overlays.labels == "NONE":
        return
    named = overlay_layers.of_scene(scene).labels
    if not named:
        return
    draw_named(named, view, region)


def draw_named(named, view, region) -> str:
    """Texts at points in Blender's world ((text, (x, y, z)) pairs) drawn in `region` as
    seen by `view`, those behind the eye left out: through the label atlas, else blf.
    Which of the two drew them ("atlas" / "blf")."""
    # every label's place in the region at once (what location_3d_to_region_2d does to each)
    homogeneous = np.c_[np.array([pos for _text, pos in named]), np.ones(len(named))] @ \
        np.array(view.perspective_matrix).T
    shown = homogeneous[:, 3] > 1e-9  # (in front of the eye)
    depth = np.where(shown, homogeneous[:, 3], 1.0)[:, None]
    at = (homogeneous[:, :2] / depth + 1.0) / 2.0 * (region.width, region.height) + LABEL_OFFSET
    texts = tuple(text for text, _pos in named)
    found = labels.atlas(texts, LABEL_SIZE, LABEL_COLOR)
    if found is not None:
        found.draw(at, shown)
        return "atlas"
    blf.color(0, *LABEL_COLOR)
    text_size(LABEL_SIZE)
    for text, (x, y), front in zip(texts, at, shown, strict=True):
        if front:
            blf.position(0, x, y, 0)
            blf.draw(0, text)
    return "blf"


def forget() -> None:
    labels.forget()


def register():
    _handles.append(bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_VIEW"))
    _handles.append(bpy.types.SpaceView3D.draw_handler_add(draw_labels, (), "WINDOW", "POST_PIXEL"))


def unregister():
    while _handles:
        bpy.types.SpaceView3D.draw_handler_remove(_handles.pop(), "WINDOW")
    forget()

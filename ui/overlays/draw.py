"""Draws the viewport's MuJoCo overlays (layers.py says what) with Blender's `gpu`
module, on top of the scene, and their labels with `blf`.

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
from bpy_extras.view3d_utils import location_3d_to_region_2d
from gpu_extras.batch import batch_for_shader

from ...live import profile
from ..drawing import builtin_shader, text_size
from . import layers as overlay_layers

LABEL_SIZE = 12
LABEL_COLOR = (1.0, 1.0, 1.0, 0.95)
_handles: list = []
_batches: dict = {}  # scene pointer -> (Drawn, [(layer, line batch, point batch)])
draw_seconds = 0.0  # wall time of the last overlay draw (the profiler shows it)


def _shaders():
    line = builtin_shader("POLYLINE_UNIFORM_COLOR", "3D_POLYLINE_UNIFORM_COLOR")
    wide = line is not None
    line = line or builtin_shader("UNIFORM_COLOR", "3D_UNIFORM_COLOR")
    dots = builtin_shader("POINT_UNIFORM_COLOR", "UNIFORM_COLOR", "3D_UNIFORM_COLOR")
    return line, wide, dots


def _batches_of(scene, drawn, line_shader, dot_shader):
    cached = _batches.get(scene.as_pointer())
    if cached is not None and cached[0] is drawn:
        return cached[1]
    made = []
    for layer in drawn.layers:
        lines = dots = None
        if len(layer.lines):
            lines = batch_for_shader(line_shader, "LINES", {"pos": layer.lines.astype("f4")})
        if len(layer.points):
            dots = batch_for_shader(dot_shader, "POINTS", {"pos": layer.points.astype("f4")})
        made.append((layer, lines, dots))
    _batches[scene.as_pointer()] = (drawn, made)
    return made


def draw() -> None:
    global draw_seconds
    start = time.perf_counter()
    scene = bpy.context.scene
    if scene is None:
        return
    drawn = overlay_layers.of_scene(scene)
    if not drawn.layers:
        draw_seconds = time.perf_counter() - start
        return
    line, wide, dots = _shaders()
    region = bpy.context.region
    gpu.state.depth_test_set("NONE")
    gpu.state.blend_set("ALPHA")
    for layer, lines, points in _batches_of(scene, drawn, line, dots):
        if lines is not None:
            line.bind()
            if wide:
                line.uniform_float("viewportSize", (region.width, region.height))
                line.uniform_float("lineWidth", layer.line_width)
            else:
                gpu.state.line_width_set(layer.line_width)
            line.uniform_float("color", layer.color)
            lines.draw(line)
        if points is not None:
            gpu.state.point_size_set(layer.point_size)
            dots.bind()
            dots.uniform_float("color", layer.color)
            points.draw(dots)
    gpu.state.line_width_set(1.0)
    gpu.state.point_size_set(1.0)
    gpu.state.blend_set("NONE")
    draw_seconds = time.perf_counter() - start
    profile.drew(scene, draw_seconds)  # (the profiler line's draw time)


def draw_labels() -> None:
    scene, region, view = bpy.context.scene, bpy.context.region, bpy.context.region_data
    if scene is None or view is None or scene.mujoco_overlays.labels == "NONE":
        return
    font = 0
    blf.color(font, *LABEL_COLOR)
    text_size(LABEL_SIZE, font)
    for text, position in overlay_layers.of_scene(scene).labels:
        at = location_3d_to_region_2d(region, view, position)
        if at is not None:
            blf.position(font, at.x + 4, at.y + 4, 0)
            blf.draw(font, text)


def forget() -> None:
    _batches.clear()
    overlay_layers.forget()


def register():
    _handles.append(bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_VIEW"))
    _handles.append(bpy.types.SpaceView3D.draw_handler_add(draw_labels, (), "WINDOW", "POST_PIXEL"))


def unregister():
    while _handles:
        bpy.types.SpaceView3D.draw_handler_remove(_handles.pop(), "WINDOW")
    forget()

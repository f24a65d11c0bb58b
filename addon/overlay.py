"""Viewport feedback while the mouse pulls a body: a line from the grab point to
the target and a dot at each end, drawn with Blender's `gpu` module."""

from __future__ import annotations

import bpy
import gpu
from gpu_extras.batch import batch_for_shader

from . import live

LINE_COLOR = (1.0, 0.55, 0.1, 1.0)
_handle = None


def _shader(*names):
    for name in names:  # built-in shader names differ across Blender versions
        try:
            return gpu.shader.from_builtin(name)
        except (ValueError, SystemError):
            continue
    raise RuntimeError(f"no built-in shader among {names}")


def grab_segments():
    """[(grab point, target)] in Blender world space, one per active grab."""
    out = []
    for running in live.all_live():
        session = running.session
        if session is not None and session.grab is not None:
            grab = session.grab
            out.append((running.to_blender(grab.grab_point(session.data)),
                        running.to_blender(grab.target)))
    return out


def draw() -> None:
    segments = grab_segments()
    if not segments:
        return
    points = [tuple(p) for segment in segments for p in segment]
    line = _shader("UNIFORM_COLOR", "3D_UNIFORM_COLOR")
    dots = _shader("POINT_UNIFORM_COLOR", "UNIFORM_COLOR", "3D_UNIFORM_COLOR")
    gpu.state.depth_test_set("NONE")
    gpu.state.line_width_set(2.0)
    line.bind()
    line.uniform_float("color", LINE_COLOR)
    batch_for_shader(line, "LINES", {"pos": points}).draw(line)
    gpu.state.point_size_set(9.0)
    dots.bind()
    dots.uniform_float("color", LINE_COLOR)
    batch_for_shader(dots, "POINTS", {"pos": points}).draw(dots)
    gpu.state.line_width_set(1.0)
    gpu.state.point_size_set(1.0)


def register():
    global _handle
    _handle = bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_VIEW")


def unregister():
    global _handle
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, "WINDOW")
        _handle = None

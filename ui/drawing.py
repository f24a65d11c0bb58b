"""What the viewport's own drawing (overlays, plots) shares: Blender's built-in
shaders by the names each release gives them, and text sizes across releases."""

from __future__ import annotations

import blf
import bpy
import gpu


def builtin_shader(*names):
    """The first of `names` this Blender has (shader names differ across releases), or None."""
    for name in names:
        try:
            return gpu.shader.from_builtin(name)
        except (ValueError, SystemError):
            continue
    return None


def text_size(size: float, font: int = 0) -> None:
    if bpy.app.version >= (4, 0, 0):
        blf.size(font, size)
    else:  # (the dpi argument went away in 4.0)
        blf.size(font, size, 72)

"""Asking Blender to draw its views again after MJBlend changed what they show."""

from __future__ import annotations

import bpy


def redraw(kinds=("VIEW_3D",)) -> None:
    """Tag every area of these kinds, in every window, for a redraw (nothing without a window)."""
    manager = bpy.context.window_manager
    for window in manager.windows if manager is not None else ():
        for area in window.screen.areas:
            if area.type in kinds:
                area.tag_redraw()

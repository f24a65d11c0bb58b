"""The 3D view's overlay layer read for a screenshot before MJBlend draws on it (a
POST_VIEW draw callback registered before MJBlend's others: Blender calls a
region's callbacks in the order they were added); debug_draw.draw_text, the
last, reads it after (live/viewport.py Capture)."""

import bpy

from ...live import viewport

_handles: list = []


def register():
    handler = bpy.types.SpaceView3D.draw_handler_add(viewport.capture_before, (), "WINDOW", "POST_VIEW")
    _handles.append(handler)


def unregister():
    while _handles:
        bpy.types.SpaceView3D.draw_handler_remove(_handles.pop(), "WINDOW")

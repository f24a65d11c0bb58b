"""MJBlend's add-on preferences: the mouse spring, and the keymap entries."""

from __future__ import annotations

import bpy
from bpy.props import FloatProperty

from ..scene.preferences import ADDON, DEFAULTS
from . import keymaps


class MJBLEND_AP_preferences(bpy.types.AddonPreferences):
    bl_idname = ADDON

    spring_stiffness: FloatProperty(
        name="Mouse Spring Stiffness", default=DEFAULTS.spring_stiffness, min=0.01, max=100.0, soft_max=10.0,
        description="Multiplies the model's own spring stiffness (<visual><map stiffness, "
                    "stiffnessrot>) when you pull a body with Ctrl+drag")

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "spring_stiffness")
        layout.label(text="Viewport keys (only while a simulation runs):")
        keymaps.draw(layout, context)


CLASSES = (MJBLEND_AP_preferences,)

"""MJBlend's add-on preferences: the mouse spring, and the keymap entries."""

from __future__ import annotations

from types import SimpleNamespace

import bpy
from bpy.props import FloatProperty

from . import keymaps

ADDON = __package__.rpartition(".")[0]  # the add-on's own module, however it is installed


class MJBLEND_AP_preferences(bpy.types.AddonPreferences):
    bl_idname = ADDON

    spring_stiffness: FloatProperty(
        name="Mouse Spring Stiffness", default=1.0, min=0.01, max=100.0, soft_max=10.0,
        description="Multiplies the model's own spring stiffness (<visual><map stiffness, "
                    "stiffnessrot>) when you pull a body with Ctrl+drag")

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "spring_stiffness")
        layout.label(text="Viewport keys (only while a simulation runs):")
        keymaps.draw(layout, context)


DEFAULTS = SimpleNamespace(spring_stiffness=1.0)


def get(context):
    """The preferences (the defaults when the add-on was loaded without them)."""
    addon = context.preferences.addons.get(ADDON)
    return addon.preferences if addon is not None and addon.preferences else DEFAULTS


CLASSES = (MJBLEND_AP_preferences,)

"""MJBlend's add-on preferences: the mouse spring, the physics thread and its history, and
the keymap entries."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, FloatProperty, IntProperty

from ..scene.preferences import ADDON, DEFAULTS
from . import keymaps


class MJBLEND_AP_preferences(bpy.types.AddonPreferences):
    bl_idname = ADDON

    spring_stiffness: FloatProperty(
        name="Mouse Spring Stiffness", default=DEFAULTS.spring_stiffness, min=0.01, max=100.0, soft_max=10.0,
        description="Multiplies the model's own spring stiffness (<visual><map stiffness, "
                    "stiffnessrot>) when you pull a body with Ctrl+drag")

    history_seconds: FloatProperty(
        name="History", default=DEFAULTS.history_seconds, min=0.0, max=3600.0, unit="TIME_ABSOLUTE",
        description="Simulated seconds kept to step back and scrub (full physics states, one per "
                    "displayed frame)")
    history_megabytes: IntProperty(
        name="History Memory", default=DEFAULTS.history_megabytes, min=1, max=65536, subtype="NONE",
        description="At most this many megabytes of kept states per simulation (big models keep "
                    "fewer seconds)")
    physics_thread: BoolProperty(
        name="Physics Thread", default=DEFAULTS.physics_thread,
        description="Step MuJoCo on its own thread in a window, so the viewport never waits on "
                    "stepping (off: on Blender's main thread, as in --background). Applies to the "
                    "next simulation started")

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "spring_stiffness")
        col = layout.column(heading="Simulation")
        col.prop(self, "physics_thread")
        col.prop(self, "history_seconds")
        col.prop(self, "history_megabytes")
        layout.label(text="Viewport keys (only while a simulation runs):")
        keymaps.draw(layout, context)


CLASSES = (MJBLEND_AP_preferences,)

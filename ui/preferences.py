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

    step_limit: IntProperty(
        name="Step Limit", default=DEFAULTS.step_limit, min=1, max=2**31 - 1,
        description="The most MuJoCo steps one Simulate Duration or Step may run (a tiny timestep "
                    "times a long duration can ask for more than a lifetime of stepping)")
    recording_megabytes: IntProperty(
        name="Recording Memory", default=DEFAULTS.recording_megabytes, min=1, max=1 << 20, subtype="NONE",
        description="At most this many megabytes of frames one recording while playing keeps (full "
                    "states, sensors and poses); it ends there, keeping what it has")
    load_memory_gigabytes: FloatProperty(
        name="Load Memory Limit", default=DEFAULTS.load_memory_gigabytes, min=0.0, max=65536.0,
        description="Gigabytes MuJoCo may use to read and compile a model at import; a model "
                    "needing more is refused with a message (0: half of this computer's memory)")
    load_seconds: FloatProperty(
        name="Load Time Limit", default=DEFAULTS.load_seconds, min=0.0, max=86400.0,
        unit="TIME_ABSOLUTE",
        description="Seconds MuJoCo may take to read and compile a model at import before it is "
                    "given up (0: no limit; in a window, Esc cancels at any time)")

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "spring_stiffness")
        col = layout.column(heading="Simulation")
        col.prop(self, "physics_thread")
        col.prop(self, "history_seconds")
        col.prop(self, "history_megabytes")
        col.prop(self, "step_limit")
        col.prop(self, "recording_megabytes")
        col = layout.column(heading="Import")
        col.prop(self, "load_memory_gigabytes")
        col.prop(self, "load_seconds")
        layout.label(text="Viewport keys (only while a simulation runs):")
        keymaps.draw(layout, context)


CLASSES = (MJBLEND_AP_preferences,)

"""MJBlend's add-on preferences: the mouse spring, the physics thread and its history, the
bridge's address, ports and transport, and the keymap entries."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

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

    bridge_address: StringProperty(
        name="Address", default=DEFAULTS.bridge_address,
        description="Where the bridge listens: 127.0.0.1 takes clients on this computer only; "
                    "another address (0.0.0.0: every network) lets other computers drive the scene")
    bridge_request_port: IntProperty(
        name="Request Port", default=DEFAULTS.bridge_request_port, min=1, max=65535,
        description="The bridge's ZMQ request port (URLab's 5559)")
    bridge_state_port: IntProperty(
        name="State Port", default=DEFAULTS.bridge_state_port, min=1, max=65535,
        description="The bridge's ZMQ state stream port (URLab's 5555)")
    bridge_transport: EnumProperty(
        name="Transport", default=DEFAULTS.bridge_transport, items=(
            ("ZMQ", "ZMQ", "Requests and the state stream over ZMQ (TCP)"),
            ("ZMQ_SHM", "ZMQ + Shared Memory",
             "Also shared memory, for a client on this computer (Linux and macOS): faster round trips")))

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "spring_stiffness")
        col = layout.column(heading="Simulation")
        col.prop(self, "physics_thread")
        col.prop(self, "history_seconds")
        col.prop(self, "history_megabytes")
        col.prop(self, "step_limit")
        col.prop(self, "recording_megabytes")
        col = layout.column(heading="Bridge")
        col.prop(self, "bridge_address")
        col.prop(self, "bridge_request_port")
        col.prop(self, "bridge_state_port")
        col.prop(self, "bridge_transport")
        col = layout.column(heading="Import")
        col.prop(self, "load_memory_gigabytes")
        col.prop(self, "load_seconds")
        layout.label(text="Viewport keys:")
        keymaps.draw(layout, context)


CLASSES = (MJBLEND_AP_preferences,)

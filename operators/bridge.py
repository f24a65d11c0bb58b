"""Bridge operators: serve the scene's simulation over the network (URLab's protocol), stop.

Thin: live/bridge_host.py makes the simulation ready (a physics thread, entity
prefixes), starts and stops the one bridge of this Blender session.
"""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, IntProperty, StringProperty

from ..engine.runner import DISPLAY_RATE
from ..live import bridge_host
from ..scene import preferences
from ..scene.errors import report_error
from .runner_wait import redraw
from .simulate import MUJOCO_OT_play


class MUJOCO_OT_bridge_start(bpy.types.Operator):
    """Serve this scene's simulation over the network (URLab's protocol: ZMQ, optionally
    shared memory): clients step, reset and read it, and the viewport shows what they do"""

    bl_idname = "mujoco.bridge_start"
    bl_label = "Start Bridge"
    bl_options = {"REGISTER"}

    # Empty / 0: the add-on preferences' (scripts and tests pass their own)
    address: StringProperty(name="Address", options={"SKIP_SAVE"},
                            description="Address to listen on (empty: the preferences')")
    request_port: IntProperty(name="Request Port", min=0, max=65535, options={"SKIP_SAVE"},
                              description="ZMQ request port (0: the preferences')")
    state_port: IntProperty(name="State Port", min=0, max=65535, options={"SKIP_SAVE"},
                            description="ZMQ state stream port (0: the preferences')")
    transport: EnumProperty(name="Transport", options={"SKIP_SAVE"}, items=(
        ("PREFERENCES", "Preferences", "The transport chosen in the preferences"),
        ("ZMQ", "ZMQ", "Requests and the state stream over ZMQ"),
        ("ZMQ_SHM", "ZMQ + Shared Memory", "Also shared memory, for a client on this computer")))

    _timer = None

    @classmethod
    def poll(cls, context):
        return context.scene is not None

    def _start(self, context):
        prefs = preferences.settings(context)
        address = self.address or prefs.bridge_address
        choice = prefs.bridge_transport if self.transport == "PREFERENCES" else self.transport
        try:
            served = bridge_host.start(context.scene, address, self.request_port or prefs.bridge_request_port,
                                       self.state_port or prefs.bridge_state_port,
                                       bridge_host.transports_of(choice), prefs=prefs)
        except bridge_host.BridgeError as error:
            report_error(self, context, error)
            return None
        zmq = served.bridge.zmq
        shm = " and shared memory" if served.bridge.shm is not None else ""
        self.report({"INFO"}, f"Bridge serving {context.scene.name!r}: requests on {zmq.request_endpoint}, "
                              f"state on {zmq.state_endpoint}{shm}")
        if not served.bridge.local_only:
            self.report({"WARNING"}, f"The bridge listens on {address}, not only on this computer: "
                                     "anyone who can reach it can drive the scene")
        redraw(context)
        return served

    def execute(self, context):
        return {"FINISHED"} if self._start(context) is not None else {"CANCELLED"}

    def invoke(self, context, _event):
        """In a window: the viewport follows whatever clients do, through the same
        display sync Play runs (started here unless it runs already; it keeps the
        simulation's play / pause state as it is)."""
        served = self._start(context)
        if served is None:
            return {"CANCELLED"}
        running = served.host.live
        if running.modal_running or context.window is None:
            return {"FINISHED"}
        self._timer = context.window_manager.event_timer_add(1 / DISPLAY_RATE, window=context.window)
        self._live = running
        running.modal_running = True
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    # Play's display sync, as is: it ticks the simulation and shows each new snapshot
    # until the simulation is stopped (whatever the bridge does meanwhile)
    modal = MUJOCO_OT_play.modal
    _finish = MUJOCO_OT_play._finish


class MUJOCO_OT_bridge_stop(bpy.types.Operator):
    """Stop serving the scene over the network: every socket closed (the simulation goes on)"""

    bl_idname = "mujoco.bridge_stop"
    bl_label = "Stop Bridge"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return bridge_host.current() is not None

    def execute(self, context):
        bridge_host.stop()
        self.report({"INFO"}, "Bridge stopped")
        redraw(context)
        return {"FINISHED"}


CLASSES = (MUJOCO_OT_bridge_start, MUJOCO_OT_bridge_stop)

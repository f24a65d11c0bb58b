"""The Simulation panel's View sub-panel: simulate's Rendering > Camera (Free,
Track the active object's body, a model camera), Copy Camera and Screenshot."""

from __future__ import annotations

import bpy

from ..live import scene_session, view_follow
from .sidebar import _SidebarPanel


class MJBLEND_PT_view(_SidebarPanel, bpy.types.Panel):
    bl_idname = "MJBLEND_PT_view"
    bl_label = "View"
    bl_parent_id = "MJBLEND_PT_simulation"

    def draw(self, context):
        layout = self.layout
        owner = scene_session.existing(context.scene)
        follow = owner.follow if owner is not None else None
        mode = follow.mode if follow is not None else view_follow.FREE
        row = layout.row(align=True)
        row.operator("mujoco.view_free", text="Free", depress=mode == view_follow.FREE)
        row.operator("mujoco.view_track", text="Track", depress=mode == view_follow.TRACK)
        running = scene_session.simulation(context.scene)
        sub = row.row(align=True)
        sub.enabled = running is not None and running.model.ncam > 0
        sub.operator_menu_enum("mujoco.view_camera", "camera", text="Camera", icon="CAMERA_DATA")
        if follow is not None:
            what = "Tracking" if mode == view_follow.TRACK else "Through"
            layout.label(text=f"{what} {follow.name}", icon="VIEW_CAMERA")
        row = layout.row(align=True)
        row.operator("mujoco.copy_camera", icon="COPYDOWN")
        row.operator("mujoco.screenshot", icon="IMAGE_DATA")


CLASSES = (MJBLEND_PT_view,)

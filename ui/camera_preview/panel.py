"""The sidebar's Camera panel (MuJoCo tab): which camera, renderer and image the
preview shows, how large and where; the frame rate, the depth range and why
nothing shows, when it does not."""

from __future__ import annotations

import textwrap

import bpy

from ...live import camera_preview


def _wrapped(layout, text: str, icon: str, alert: bool, width: int = 42) -> None:
    col = layout.column(align=True)
    col.alert = alert
    for i, line in enumerate(textwrap.wrap(text, width)):
        col.label(text=line, icon=icon if i == 0 else "BLANK1")


class MJBLEND_PT_camera_preview(bpy.types.Panel):
    """A MuJoCo camera's live image while the scene simulates"""

    bl_idname = "MJBLEND_PT_camera_preview"
    bl_label = "Camera"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "MuJoCo"
    bl_options = {"DEFAULT_CLOSED"}

    def draw_header(self, context):
        self.layout.prop(context.scene.mujoco_camera_preview, "enabled", text="")

    def draw(self, context):
        layout = self.layout
        scene = context.scene
        settings = scene.mujoco_camera_preview
        col = layout.column()
        col.use_property_split = True
        col.use_property_decorate = False
        col.prop(settings, "camera")
        col.row().prop(settings, "renderer", expand=True)
        col.row().prop(settings, "image", expand=True)
        col.prop(settings, "width")
        col.prop(settings, "max_fps")
        row = col.row(heading="Viewport")
        row.prop(settings, "show_in_viewport", text="")
        sub = row.row()
        sub.active = settings.show_in_viewport
        sub.prop(settings, "corner", text="")
        message, alert = camera_preview.status(scene)
        if message:
            _wrapped(layout.box(), message, "ERROR" if alert else "INFO", alert)
        preview = camera_preview.of(scene) if settings.enabled else None
        frame = preview.frame if preview is not None else None
        if frame is None:
            return
        box = layout.box()
        col = box.column(align=True)
        col.label(text=f"{frame.width} x {frame.height}, t = {frame.sim_time:.3f} s", icon="IMAGE_DATA")
        col.label(text=f"{preview.fps:.1f} fps rendered, {preview.shown_fps:.1f} shown")
        if settings.image == "DEPTH" and preview.depth_range is not None:
            near, far = preview.depth_range
            col.label(text=f"Depth: {near:.3f} m (yellow) to {far:.3f} m (purple)")
        col.label(text=f"Image Editor: '{preview.image_name}'")


CLASSES = (MJBLEND_PT_camera_preview,)

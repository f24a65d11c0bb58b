"""The 3D viewport header's MuJoCo popover: every overlay switch (with its
add-on key), the labels, and the groups 0-5 of geoms, sites, joints, tendons
and actuators, as MuJoCo's own viewer lists them."""

from __future__ import annotations

import bpy

from ...scan import scene_scan
from ...components import overlay_settings as settings


class MJBLEND_PT_overlays(bpy.types.Panel):
    bl_idname = "MJBLEND_PT_overlays"
    bl_label = "MuJoCo Overlays"
    bl_space_type = "VIEW_3D"
    bl_region_type = "HEADER"
    bl_ui_units_x = 13

    def draw(self, context):
        layout = self.layout
        switches = settings.get(context.scene)
        layout.label(text="MuJoCo Overlays")
        grid = layout.grid_flow(columns=2, even_columns=True, align=False)
        for name, label, _text in settings.OVERLAYS:
            grid.prop(switches, name, text=label)
        grid.prop(context.scene.mujoco_simulation, "show_inertia", text="Inertia Boxes")
        layout.prop(switches, "labels")
        layout.separator()
        layout.label(text="Groups")
        for kind in settings.GROUP_KINDS:
            row = layout.row(align=True)
            row.label(text=f"{kind.title()}s")
            for group in range(settings.NGROUP):
                row.prop(switches, f"{kind}_groups", index=group, text=str(group), toggle=True)


def draw_header_button(self, context):
    if scene_scan.model_roots(context.scene):
        self.layout.popover(panel="MJBLEND_PT_overlays", text="", icon="OVERLAY")


def register():
    bpy.utils.register_class(MJBLEND_PT_overlays)
    bpy.types.VIEW3D_HT_header.append(draw_header_button)


def unregister():
    bpy.types.VIEW3D_HT_header.remove(draw_header_button)
    bpy.utils.unregister_class(MJBLEND_PT_overlays)

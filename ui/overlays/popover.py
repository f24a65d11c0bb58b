"""The 3D viewport header's MuJoCo popover: every overlay switch (with its
add-on key), the labels and frames, the groups 0-5 of geoms, sites, joints,
tendons, actuators, flexes and skins, and which actuator groups are enabled, as
MuJoCo's own viewer lists them."""

from __future__ import annotations

import bpy

from ...scan import scene_scan
from ...components import overlay_settings as settings
from ...scene import groups as scene_groups


class MJBLEND_PT_overlays(bpy.types.Panel):
    bl_idname = "MJBLEND_PT_overlays"
    bl_label = "MuJoCo Overlays"
    bl_space_type = "VIEW_3D"
    bl_region_type = "HEADER"
    bl_ui_units_x = 16

    def draw(self, context):
        layout = self.layout
        switches = settings.get(context.scene)
        layout.label(text="MuJoCo Overlays")
        grid = layout.grid_flow(columns=2, even_columns=True, align=False)
        for name, label, _text in settings.OVERLAYS:
            grid.prop(switches, name, text=label)
        grid.prop(context.scene.mujoco_simulation, "show_inertia", text="Inertia Boxes")
        layout.prop(switches, "labels")
        layout.prop(switches, "frame")
        layout.separator()
        layout.label(text="Groups")
        for kind in settings.GROUP_KINDS:
            row = layout.row(align=True)
            row.label(text="Flexes" if kind == "flex" else f"{kind.title()}s")
            for group in range(settings.NGROUP):
                row.prop(switches, f"{kind}_groups", index=group, text=str(group), toggle=True)
            if kind == "actuator":  # simulate's Actuator Group Enable (disableactuator)
                disabled = scene_groups.disabled_actuator_groups(context.scene)
                row = layout.row(align=True)
                row.label(text="Enabled")
                for group in range(settings.NGROUP):
                    row.operator("mujoco.toggle_actuator_group", text=str(group),
                                 depress=not disabled >> group & 1).group = group


def draw_header_button(self, context):
    if scene_scan.model_roots(context.scene):
        self.layout.popover(panel="MJBLEND_PT_overlays", text="", icon="OVERLAY")


def register():
    bpy.utils.register_class(MJBLEND_PT_overlays)
    bpy.types.VIEW3D_HT_header.append(draw_header_button)


def unregister():
    bpy.types.VIEW3D_HT_header.remove(draw_header_button)
    bpy.utils.unregister_class(MJBLEND_PT_overlays)

"""The sidebar's Plots panel (MuJoCo tab): which channels are plotted, over how
many seconds, in which corner, and the profiler line's switch."""

from __future__ import annotations

import bpy

from ...live import scene_session


SHORT = {"SENSOR": "sensor", "QPOS": "qpos", "QVEL": "qvel", "CTRL": "ctrl", "ACTUATOR_FORCE": "force"}


class MJBLEND_UL_plot_channels(bpy.types.UIList):
    bl_idname = "MJBLEND_UL_plot_channels"

    def draw_item(self, context, layout, _data, item, _icon, _active_data, _active_prop, index=0):
        error = _error_of(context.scene, index)
        row = layout.row()
        row.alert = bool(error)
        part = "" if item.component < 0 else f" [{item.component}]"
        kind = "" if item.kind == "SENSOR" else SHORT[item.kind] + " "  # (a sensor: its name says enough)
        row.label(text=kind + item.element + part, icon="ERROR" if error else "GRAPH")


def _error_of(scene, index: int) -> str:
    """Why channel `index` has no plot in the running simulation ("" if it has one)."""
    running = scene_session.simulation(scene)
    shot = running.latest if running is not None else None
    if shot is None or shot.plots is None or index >= len(shot.plots.series):
        return ""
    series = shot.plots.series[index]
    channels = scene.mujoco_plots.channels
    return series.error if index < len(channels) and series.spec == channels[index].spec() else ""


class MJBLEND_PT_plots(bpy.types.Panel):
    """Plots of sensors, joints and actuators over the last seconds, and the profiler line"""

    bl_idname = "MJBLEND_PT_plots"
    bl_label = "Plots"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "MuJoCo"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        settings = context.scene.mujoco_plots
        row = layout.row(align=True)
        row.prop(settings, "show_plots", toggle=True)
        row.prop(settings, "show_profiler", toggle=True)
        row = layout.row(align=True)  # (simulate's profiler figures and Info: ui/readouts.py)
        row.prop(settings, "show_figures", toggle=True)
        row.prop(settings, "show_info", toggle=True)
        col = layout.column(align=True)
        col.prop(settings, "seconds")
        col.row().prop(settings, "side", expand=True)
        row = layout.row()
        row.template_list("MJBLEND_UL_plot_channels", "", settings, "channels", settings, "active", rows=3)
        buttons = row.column(align=True)
        buttons.operator("mujoco.plot_add", text="", icon="ADD")
        buttons.operator("mujoco.plot_remove", text="", icon="REMOVE")
        if 0 <= settings.active < len(settings.channels):
            item = settings.channels[settings.active]
            col = layout.column()
            col.use_property_split = True
            col.use_property_decorate = False
            col.prop(item, "kind")
            col.prop(item, "element")
            col.prop(item, "component")
            error = _error_of(context.scene, settings.active)
            if error:
                box = layout.box()
                box.alert = True
                box.label(text=error, icon="ERROR")
        if scene_session.simulation(context.scene) is None:
            layout.label(text="Plots draw in the viewport while it simulates", icon="INFO")


CLASSES = (MJBLEND_UL_plot_channels, MJBLEND_PT_plots)

"""simulate's Info and Watch sections as sub-panels of the sidebar's Simulation panel
(MuJoCo tab), and the requests for what they and the viewport's figures show.

Everything shown comes from the running simulation's latest snapshot (its `info`,
`watch` and `figures`, made on the runner's thread): `ask` sends the runner the
scene's watched fields and the figures' switch when they change (commands.Watch,
commands.Profile), from the panels' and the viewport's draws.
"""

from __future__ import annotations

import bpy

from ..engine import commands, info, watch
from ..live import profile, scene_session


def ask(scene, running) -> None:
    """Send the scene's watch request and the figures' switch to `running` if they changed
    since the last ones sent (once: the next snapshots answer)."""
    settings = scene.mujoco_plots
    wanted = (settings.watch_request(), settings.profile_request())
    sent = running.readout_request or (watch.Request(), info.Request())
    if wanted == sent:
        return
    if wanted[0] != sent[0]:
        running.queue(commands.Watch(wanted[0]))
    if wanted[1] != sent[1]:
        running.queue(commands.Profile(wanted[1]))
    running.readout_request = wanted


def fps(running) -> float | None:
    """Display frames per second of the last second (simulate's FPS), None before two frames."""
    means = profile.of(running).means()
    return None if means is None else means[3]


def info_rows(running) -> list[tuple[str, str]]:
    shot = running.latest
    return info.lines(shot.info, fps(running), running.playing) if shot.info is not None else []


def info_line(running) -> str:
    """The Info rows on one line (the viewport corner's)."""
    return "   ".join(f"{title} {text.strip()}" for title, text in info_rows(running))


class _Sub:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "MuJoCo"
    bl_parent_id = "MJBLEND_PT_simulation"
    bl_options = {"DEFAULT_CLOSED"}


class MJBLEND_PT_info(_Sub, bpy.types.Panel):
    """MuJoCo simulate's Info: time, constraints, CPU per step, solver, FPS, memory, energy, islands"""

    bl_idname = "MJBLEND_PT_info"
    bl_label = "Info"

    def draw(self, context):
        layout = self.layout
        running = scene_session.simulation(context.scene)
        layout.prop(context.scene.mujoco_plots, "show_info", text="Info Line in the Viewport")
        if running is None:
            layout.label(text="Shows a running simulation", icon="INFO")
            return
        ask(context.scene, running)
        shot = running.latest
        grid = layout.grid_flow(row_major=True, columns=2, even_columns=False, align=True)
        for title, text in info_rows(running):
            grid.label(text=title)
            grid.label(text=text.strip())
        if shot.info is not None and not shot.info.energy_on:
            row = layout.row()
            row.label(text="Energy: needs the energy flag")
            row.operator("mujoco.enable_energy", text="Enable", icon="CHECKBOX_HLT")


class MJBLEND_PT_watch(_Sub, bpy.types.Panel):
    """MuJoCo simulate's Watch: any MjData field by name and index, live"""

    bl_idname = "MJBLEND_PT_watch"
    bl_label = "Watch"

    def draw(self, context):
        layout = self.layout
        settings = context.scene.mujoco_plots
        running = scene_session.simulation(context.scene)
        values = ()
        if running is not None:
            ask(context.scene, running)
            shot = running.latest
            if len(shot.watch) == len(settings.watch):
                values = shot.watch
        col = layout.column(align=True)
        for index, row_settings in enumerate(settings.watch):
            row = col.row(align=True)
            row.prop(row_settings, "field", text="")
            row.prop(row_settings, "index", text="")
            value = values[index] if values else None
            shown = row.row()
            shown.alert = isinstance(value, str)
            shown.label(text="-" if value is None else watch.text(value))
            row.operator("mujoco.watch_remove", text="", icon="X").index = index
        layout.operator("mujoco.watch_add", text="Watch a Field", icon="ADD")


CLASSES = (MJBLEND_PT_info, MJBLEND_PT_watch)

"""The plot settings of a scene (saved in the .blend): the channels plotted, the
seconds they span, where the plots go, and the profiler line's switch; simulate's
readouts (issue 34): the watched MjData fields, the Info line's and the MuJoCo
figures' switches."""

from __future__ import annotations

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty, IntProperty,
                       PointerProperty, StringProperty)

from ..engine import info, plots, watch
from . import scene_settings

KIND_ITEMS = tuple((kind.upper(), label, f"{label} (the element's {kind})")
                   for kind, (_element, label) in plots.KINDS.items())
SIDES = (("RIGHT", "Right", "In the viewport's bottom right corner"),
         ("LEFT", "Left", "In the viewport's bottom left corner"))


def _redraw(self, _context):
    scene_settings.reactions().plots_changed(self)


class MJBLEND_PG_plot_channel(bpy.types.PropertyGroup):
    """One plotted signal: a sensor, a joint's qpos or qvel, an actuator's ctrl or force"""

    kind: EnumProperty(name="Kind", items=KIND_ITEMS, default="SENSOR", update=_redraw,
                       description="What of the element is plotted")
    element: StringProperty(name="Element", update=_redraw,
                            description="The MuJoCo name of the sensor, joint or actuator "
                                        "(#3: element 3, when it has no name)")
    component: IntProperty(name="Component", default=plots.ALL, min=plots.ALL, update=_redraw,
                           description="Which component to plot (-1: all of them: a sensor's dimensions, "
                                       "a ball or free joint's several values)")

    def spec(self) -> plots.Spec:
        return plots.Spec(self.kind.lower(), self.element, self.component)


class MJBLEND_PG_watch_row(bpy.types.PropertyGroup):
    """One watched value: an MjData field and an index into it (simulate's Watch)"""

    field: StringProperty(name="Field", default="qpos", update=_redraw,
                          description="The MjData array, by name (qpos, xpos, sensordata, efc_force, ...)")
    index: IntProperty(name="Index", default=0, min=0, update=_redraw,
                       description="Which number of the array, counting its rows one after the other "
                                   "(xpos[3 * body + axis])")


class MJBLEND_PG_plots(bpy.types.PropertyGroup):
    channels: CollectionProperty(type=MJBLEND_PG_plot_channel)
    active: IntProperty(name="Active Channel", default=0, min=0)
    show_plots: BoolProperty(
        name="Show Plots", default=True, update=_redraw,
        description="Plot the channels over the last seconds in a corner of the 3D viewport while the "
                    "simulation runs")
    show_profiler: BoolProperty(
        name="Show Profiler", default=False, update=_redraw,
        description="A line in the viewport's corner: milliseconds per frame spent stepping (physics "
                    "thread), syncing the viewport and drawing MJBlend's overlays and plots; frames per "
                    "second; the speed reached")
    seconds: FloatProperty(
        name="Seconds", default=5.0, min=0.1, max=600.0, soft_max=60.0, unit="TIME_ABSOLUTE", update=_redraw,
        description="How many of the last simulated seconds the plots span (at most what the history "
                    "keeps: Preferences > History)")
    side: EnumProperty(name="Corner", items=SIDES, default="RIGHT", update=_redraw,
                       description="The viewport corner the plots and the profiler line go in")

    # (issue 34, readouts: appended)
    watch: CollectionProperty(type=MJBLEND_PG_watch_row)
    show_info: BoolProperty(
        name="Show Info", default=False, update=_redraw,
        description="A line in the viewport's corner with MuJoCo simulate's Info: time, constraints "
                    "and contacts, CPU per step, solver error and iterations, FPS, arena memory, islands")
    show_figures: BoolProperty(
        name="MuJoCo Figures", default=False, update=_redraw,
        description="MuJoCo simulate's profiler figures beside the plots: solver counts and convergence "
                    "per iteration, CPU time by stage and dimensions over the last 201 snapshots")

    def watch_request(self) -> watch.Request:
        return watch.Request(tuple((row.field, int(row.index)) for row in self.watch))

    def profile_request(self) -> info.Request:
        return info.Request(bool(self.show_figures))

    def request(self) -> plots.Request:
        """What the runner is asked to plot (nothing while plots are hidden)."""
        if not self.show_plots or not len(self.channels):
            return plots.Request()
        return plots.Request(tuple(channel.spec() for channel in self.channels), float(self.seconds))


CLASSES = (MJBLEND_PG_plot_channel, MJBLEND_PG_watch_row, MJBLEND_PG_plots)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.mujoco_plots = PointerProperty(type=MJBLEND_PG_plots)


def unregister():
    del bpy.types.Scene.mujoco_plots
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

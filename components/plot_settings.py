"""The plot settings of a scene (saved in the .blend): the channels plotted, the
seconds they span, where the plots go, and the profiler line's switch."""

from __future__ import annotations

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty, IntProperty,
                       PointerProperty, StringProperty)

from ..engine import plots
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

    def request(self) -> plots.Request:
        """What the runner is asked to plot (nothing while plots are hidden)."""
        if not self.show_plots or not len(self.channels):
            return plots.Request()
        return plots.Request(tuple(channel.spec() for channel in self.channels), float(self.seconds))


CLASSES = (MJBLEND_PG_plot_channel, MJBLEND_PG_plots)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.mujoco_plots = PointerProperty(type=MJBLEND_PG_plots)


def unregister():
    del bpy.types.Scene.mujoco_plots
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

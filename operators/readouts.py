"""The Watch rows (simulate's Watch section) and the energy flag the Info panel needs."""

from __future__ import annotations

import bpy
from bpy.props import IntProperty, StringProperty

from ..live import scene_session
from ..sync import views
from .reporting import UNDOABLE


class MUJOCO_OT_watch_add(bpy.types.Operator):
    """Watch a number of MjData: a field by name and an index into it, shown live"""

    bl_idname = "mujoco.watch_add"
    bl_label = "Watch a Field"
    bl_options = UNDOABLE

    field: StringProperty(name="Field", default="qpos", description="The MjData array, by its name")
    index: IntProperty(name="Index", default=0, min=0, description="Which number of the array")

    def execute(self, context):
        row = context.scene.mujoco_plots.watch.add()
        row.field, row.index = self.field, self.index
        views.redraw()
        return {"FINISHED"}


class MUJOCO_OT_watch_remove(bpy.types.Operator):
    """Stop watching this value"""

    bl_idname = "mujoco.watch_remove"
    bl_label = "Remove Watch"
    bl_options = UNDOABLE

    index: IntProperty(name="Index", default=0, min=0)

    def execute(self, context):
        rows = context.scene.mujoco_plots.watch
        if self.index >= len(rows):
            self.report({"ERROR"}, f"No watched value {self.index} (there are {len(rows)})")
            return {"CANCELLED"}
        rows.remove(self.index)
        views.redraw()
        return {"FINISHED"}


class MUJOCO_OT_enable_energy(bpy.types.Operator):
    """Override the model's enable flags with the energy flag added (MuJoCo then computes the
    potential and kinetic energy the Info panel shows; the MJCF is untouched)"""

    bl_idname = "mujoco.enable_energy"
    bl_label = "Enable Energy"
    bl_options = UNDOABLE

    def execute(self, context):
        override = context.scene.mujoco_simulation.override
        running = scene_session.simulation(context.scene)
        flags = set(override.enableflags) if override.use_enableflags else set()
        if running is not None and not override.use_enableflags:  # (keep the model's own flags)
            bits = int(running.latest.model.opt.enableflags)
            items = override.bl_rna.properties["enableflags"].enum_items
            flags |= {item.identifier for item in items if bits & item.value}
        override.enableflags = flags | {"ENERGY"}
        override.use_enableflags = True
        return {"FINISHED"}


CLASSES = (MUJOCO_OT_watch_add, MUJOCO_OT_watch_remove, MUJOCO_OT_enable_energy)

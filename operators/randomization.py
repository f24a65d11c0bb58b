"""Domain randomization entries of the active element: add, remove (one undo step each)."""

from __future__ import annotations

import bpy

from ..components import randomization
from .reporting import UNDOABLE


def _element(context):
    """The active object, if its element kind can be randomized (the model root: the option)."""
    obj = context.active_object
    if obj is None or randomization.element_of(obj.mujoco.kind) is None:
        return None
    return obj


class MUJOCO_OT_randomization_add(bpy.types.Operator):
    """Randomize one more attribute of the active element (an attribute it does not vary yet)"""

    bl_idname = "mujoco.randomization_add"
    bl_label = "Add Randomization"
    bl_options = UNDOABLE

    @classmethod
    def poll(cls, context):
        return _element(context) is not None

    def execute(self, context):
        obj = _element(context)
        holder = obj.mujoco
        element = randomization.element_of(holder.kind)
        choices = [name for name, _l, _d in randomization.attribute_choices(element)]
        taken = {item.attribute_name for item in holder.randomize}
        attribute = next((name for name in choices if name not in taken), choices[0])
        mode = randomization.modes_of(element, attribute)[0]
        item = holder.randomize.add()
        item.attribute_name, item.mode_name = attribute, mode
        item.low, item.high = randomization.DEFAULT_RANGES[mode]
        holder.randomize_active = len(holder.randomize) - 1
        return {"FINISHED"}


class MUJOCO_OT_randomization_remove(bpy.types.Operator):
    """Remove the selected randomization entry of the active element"""

    bl_idname = "mujoco.randomization_remove"
    bl_label = "Remove Randomization"
    bl_options = UNDOABLE

    @classmethod
    def poll(cls, context):  # (any object: entries left from before its kind changed go too)
        obj = context.active_object
        return obj is not None and 0 <= obj.mujoco.randomize_active < len(obj.mujoco.randomize)

    def execute(self, context):
        holder = context.active_object.mujoco
        holder.randomize.remove(holder.randomize_active)
        holder.randomize_active = min(holder.randomize_active, len(holder.randomize) - 1)
        return {"FINISHED"}


CLASSES = (MUJOCO_OT_randomization_add, MUJOCO_OT_randomization_remove)

"""Showing and hiding MuJoCo's element groups from the keyboard, as in MuJoCo's own
viewer (the keys: ui/keymaps.py; the switches: components/overlay_settings.py; what a
switch shows and hides: sync/groups.py)."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, IntProperty

from ..components import overlay_settings as settings
from ..scene import groups as scene_groups

KINDS = [(kind, f"{kind.title()}s", f"The {kind} groups") for kind in settings.GROUP_KINDS]


def has_model(scene) -> bool:
    return scene is not None and any(obj.mujoco.kind == "MODEL" for obj in scene.objects)


class MUJOCO_OT_toggle_group(bpy.types.Operator):
    """Show or hide the elements of one MuJoCo group (geoms and sites: their objects, in the
    viewport and in renders; joints: their objects and joint overlays; tendons and
    actuators: their overlays)"""

    bl_idname = "mujoco.toggle_group"
    bl_label = "Toggle MuJoCo Group"
    bl_options = {"REGISTER", "UNDO"}

    kind: EnumProperty(name="Kind", items=KINDS, default="geom")
    group: IntProperty(name="Group", min=0, max=settings.NGROUP - 1, default=0)

    @classmethod
    def poll(cls, context):
        # Over a 3D view of a scene with a MuJoCo model only: anywhere else a number key
        # stays Blender's (the keymap item passes the key on when this fails)
        area = context.area
        if area is None or area.type != "VIEW_3D":
            cls.poll_message_set("Only over a 3D viewport")
            return False
        if not has_model(context.scene):
            cls.poll_message_set("The scene has no MuJoCo model")
            return False
        return True

    def execute(self, context):
        switches = getattr(settings.get(context.scene), f"{self.kind}_groups")
        switches[self.group] = not switches[self.group]  # (its update shows or hides the objects)
        shown = "shown" if switches[self.group] else "hidden"
        self.report({"INFO"}, f"MuJoCo {self.kind} group {self.group}: {shown}")
        return {"FINISHED"}


class MUJOCO_OT_toggle_actuator_group(bpy.types.Operator):
    """Enable or disable the actuators of one group (simulate's Actuator Group Enable):
    MuJoCo's option disableactuator, set as an option override, which reaches a running
    simulation between two steps (a disabled actuator applies no force)"""

    bl_idname = "mujoco.toggle_actuator_group"
    bl_label = "Toggle MuJoCo Actuator Group"
    bl_options = {"REGISTER", "UNDO"}

    group: IntProperty(name="Group", min=0, max=30, default=0)

    @classmethod
    def poll(cls, context):
        if not has_model(context.scene):
            cls.poll_message_set("The scene has no MuJoCo model")
            return False
        return True

    def execute(self, context):
        bits = scene_groups.disabled_actuator_groups(context.scene) ^ (1 << self.group)
        override = context.scene.mujoco_simulation.override
        override.disableactuator = bits  # (each update sends the overrides to a running simulation)
        override.use_disableactuator = True
        state = "disabled" if bits >> self.group & 1 else "enabled"
        self.report({"INFO"}, f"MuJoCo actuator group {self.group}: {state}")
        return {"FINISHED"}


CLASSES = (MUJOCO_OT_toggle_group, MUJOCO_OT_toggle_actuator_group)

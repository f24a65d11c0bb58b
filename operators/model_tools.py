"""Model-level tools: default classes (add, rename, delete, reset an attribute to
its class), validation on demand, keyframes (store, load, delete, copy the pose as a
<key>), MuJoCo's printouts of the model and data. Thin: the work is in
authoring/default_classes.py, validation.py, keyframes.py and printing.py."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, StringProperty

from ..authoring import authoring, default_classes, keyframes, printing, validation
from ..scan import scene_scan
from .reporting import UNDOABLE, run_reporting


def _root(context):
    obj = context.active_object
    return scene_scan.model_of(obj) if obj is not None else None


class MUJOCO_OT_class_add(bpy.types.Operator):
    """Add a default class under the selected one (or main)"""

    bl_idname = "mujoco.class_add"
    bl_label = "Add Class"
    bl_options = UNDOABLE

    name: StringProperty(name="Name", default="")

    @classmethod
    def poll(cls, context):
        return _root(context) is not None

    def execute(self, context):
        root = _root(context)
        model = root.mujoco.model
        parent = _active_class(root) or "main"
        name = self.name or authoring.unique_class_name(root)
        outcome = run_reporting(self, context, lambda: default_classes.add_class(root, name, parent),
                                default_classes.ClassError)
        if outcome == {"FINISHED"}:
            model.active_default = len(model.defaults) - 1
        return outcome


class _OnSelectedClass:
    """An operator on the selected default class, other than main."""

    @classmethod
    def poll(cls, context):
        root = _root(context)
        return root is not None and _active_class(root) not in (None, "main")


class MUJOCO_OT_class_rename(_OnSelectedClass, bpy.types.Operator):
    """Rename the selected default class and every use of it"""

    bl_idname = "mujoco.class_rename"
    bl_label = "Rename Class"
    bl_options = UNDOABLE

    name: StringProperty(name="New Name")

    def invoke(self, context, _event):
        self.name = _active_class(_root(context))
        return context.window_manager.invoke_props_dialog(self)

    def execute(self, context):
        root = _root(context)
        new_name = self.name.strip()
        return run_reporting(self, context,
                             lambda: default_classes.rename_class(root, _active_class(root), new_name),
                             default_classes.ClassError)


class MUJOCO_OT_class_remove(_OnSelectedClass, bpy.types.Operator):
    """Delete the selected default class (its elements and child classes move to its parent)"""

    bl_idname = "mujoco.class_remove"
    bl_label = "Delete Class"
    bl_options = UNDOABLE

    def execute(self, context):
        root = _root(context)
        default_classes.remove_class(root, _active_class(root))
        return {"FINISHED"}


def _active_class(root):
    model = root.mujoco.model
    return model.defaults[model.active_default].name if 0 <= model.active_default < len(model.defaults) \
        else None


class MUJOCO_OT_reset_to_class(bpy.types.Operator):
    """Drop the element's own value: it takes its class's"""

    bl_idname = "mujoco.reset_to_class"
    bl_label = "Reset to Class"
    bl_options = UNDOABLE

    attr: StringProperty(name="Attribute")

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and scene_scan.model_of(obj) is not None and \
            obj.mujoco.kind.lower() in default_classes.DEFAULT_KINDS

    def execute(self, context):
        default_classes.reset_to_class(context.active_object, self.attr)
        return {"FINISHED"}


class MUJOCO_OT_validate(bpy.types.Operator):
    """Compile the scene's MuJoCo models now and show the first problem"""

    bl_idname = "mujoco.validate"
    bl_label = "Check Model"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return bool(scene_scan.model_roots(context.scene))

    def execute(self, context):
        outcome = validation.validate(context.scene)
        self.report({"INFO"} if outcome.ok else {"WARNING"}, outcome.message)
        return {"FINISHED"}


class MUJOCO_OT_key_store(bpy.types.Operator):
    """Store the current pose (simulated, or the model's reference pose) as a keyframe"""

    bl_idname = "mujoco.key_store"
    bl_label = "Store Pose as Keyframe"
    bl_options = UNDOABLE

    name: StringProperty(name="Name", default="")

    @classmethod
    def poll(cls, context):
        return bool(scene_scan.model_roots(context.scene))

    def execute(self, context):
        return run_reporting(self, context, lambda: keyframes.store(context, self.name))


class _KeyOperator:
    name: StringProperty(name="Keyframe", description="Blender name of the keyframe object")

    @classmethod
    def poll(cls, context):
        return any(o.mujoco.kind == "KEY" for o in context.scene.objects)

    def key(self, context):
        """The keyframe object named `name`, or None (reported)."""
        obj = context.scene.objects.get(self.name) if self.name else None
        if obj is None or obj.mujoco.kind != "KEY":
            self.report({"ERROR"}, f"No keyframe {self.name!r}")
            return None
        return obj


class MUJOCO_OT_key_load(_KeyOperator, bpy.types.Operator):
    """Reset the simulation to this keyframe (starting it, paused, if needed)"""

    bl_idname = "mujoco.key_load"
    bl_label = "Load Keyframe"
    bl_options = {"REGISTER"}

    def execute(self, context):
        obj = self.key(context)
        if obj is None:
            return {"CANCELLED"}
        # any error: a model that does not compile, say so
        return run_reporting(self, context, lambda: keyframes.load(context, obj), Exception)


class MUJOCO_OT_key_delete(_KeyOperator, bpy.types.Operator):
    """Delete this keyframe"""

    bl_idname = "mujoco.key_delete"
    bl_label = "Delete Keyframe"
    bl_options = UNDOABLE

    def execute(self, context):
        obj = self.key(context)
        if obj is None:
            return {"CANCELLED"}
        keyframes.delete(obj)
        return {"FINISHED"}


class MUJOCO_OT_copy_pose(bpy.types.Operator):
    """Copy the current state (simulated, or the model's reference pose) to the clipboard as a <key> \
element, as MuJoCo's simulate copies it, and store it as a keyframe"""

    bl_idname = "mujoco.copy_pose"
    bl_label = "Copy Pose"
    bl_options = UNDOABLE

    full_precision: BoolProperty(
        name="Full Precision", default=False,
        description="Every value exactly (the shortest text that reads back as the same number); "
                    "off: 6 significant digits, as simulate's Copy state")
    store: BoolProperty(name="Also Store", default=True,
                        description="Also store the pose as a keyframe of the model")

    @classmethod
    def poll(cls, context):
        return bool(scene_scan.model_roots(context.scene))

    def invoke(self, context, event):
        self.full_precision = self.full_precision or event.shift  # (Shift: simulate's full precision)
        return self.execute(context)

    def execute(self, context):
        def copy():
            data = keyframes.current_state(context)
            context.window_manager.clipboard = keyframes.key_text(data, self.full_precision)
            stored = keyframes.store(context, data=data) if self.store else None
            also = f", stored as keyframe {stored.mujoco.name!r}" if stored is not None else ""
            self.report({"INFO"}, f"Copied the pose at t = {data.time:g} s as a <key>{also}")
        return run_reporting(self, context, copy)


class _Print:
    bl_options = UNDOABLE  # (a text block is made or replaced)
    text_name = ""

    @classmethod
    def poll(cls, context):
        return bool(scene_scan.model_roots(context.scene))

    def text(self, context) -> str:
        raise NotImplementedError

    def execute(self, context):
        def write():
            printing.to_text_block(self.text_name, self.text(context))
            self.report({"INFO"}, f"Printed to the text block {self.text_name!r} (Text Editor)")
        return run_reporting(self, context, write)


class MUJOCO_OT_print_model(_Print, bpy.types.Operator):
    """MuJoCo's printout of the model (mj_printModel) into the text block MJMODEL.TXT"""

    bl_idname = "mujoco.print_model"
    bl_label = "Print Model"
    text_name = printing.MODEL_TEXT

    def text(self, context):
        return printing.model_text(context)


class MUJOCO_OT_print_data(_Print, bpy.types.Operator):
    """MuJoCo's printout of the simulation's data (mj_printData) into the text block MJDATA.TXT"""

    bl_idname = "mujoco.print_data"
    bl_label = "Print Data"
    text_name = printing.DATA_TEXT

    def text(self, context):
        return printing.data_text(context)


CLASSES = (MUJOCO_OT_class_add, MUJOCO_OT_class_rename, MUJOCO_OT_class_remove, MUJOCO_OT_reset_to_class,
           MUJOCO_OT_validate, MUJOCO_OT_key_store, MUJOCO_OT_key_load, MUJOCO_OT_key_delete,
           MUJOCO_OT_copy_pose, MUJOCO_OT_print_model, MUJOCO_OT_print_data)

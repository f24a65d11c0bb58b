"""Authoring operators: Add > MuJoCo (model, every spatial kind, actuators,
sensors, equalities), and the conversions (make body, make free, geom from
mesh, apply scale to size). Thin: authoring/authoring.py and authoring/convert.py do
the work; every operator polls for where it applies and is one undo step."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, StringProperty

from ..authoring import authoring, convert
from ..scan import scene_scan
from .reporting import UNDOABLE, run_reporting

def _has_model(context) -> bool:
    return context.mode == "OBJECT" and bool(scene_scan.model_roots(context.scene))


class MUJOCO_OT_add_model(bpy.types.Operator):
    """Add a MuJoCo model root: the world body, with MuJoCo's default settings"""

    bl_idname = "mujoco.add_model"
    bl_label = "Model"
    bl_options = UNDOABLE

    name: StringProperty(name="Name", default="model")

    @classmethod
    def poll(cls, context):
        return context.mode == "OBJECT"

    def execute(self, context):
        authoring.select_only(context, authoring.new_model(context, self.name))
        return {"FINISHED"}


SPATIAL_ITEMS = [(k.upper(), k.capitalize(), f"MJCF <{k}>") for k in authoring.SPATIAL]


class MUJOCO_OT_add_element(bpy.types.Operator):
    """Add a MuJoCo element at the 3D cursor, inside the active body"""

    bl_idname = "mujoco.add_element"
    bl_label = "Add MuJoCo Element"
    bl_options = UNDOABLE

    kind: EnumProperty(name="Kind", items=SPATIAL_ITEMS)
    subtype: StringProperty(name="Type", description="Joint, geom, site or light type (MuJoCo's name)")

    @classmethod
    def poll(cls, context):
        return _has_model(context)

    def execute(self, context):
        return run_reporting(self, context,
                             lambda: authoring.add_spatial(context, self.kind.lower(), self.subtype))


class MUJOCO_OT_add_actuator(bpy.types.Operator):
    """Add an actuator (MuJoCo's shortcut presets) driving the selected joint"""

    bl_idname = "mujoco.add_actuator"
    bl_label = "Add Actuator"
    bl_options = UNDOABLE

    preset: EnumProperty(name="Actuator", items=[(p.upper(), p.capitalize(), f"MJCF <{p}>")
                                                 for p in authoring.ACTUATORS])

    @classmethod
    def poll(cls, context):
        return _has_model(context) and bool(authoring.selected(context, ("JOINT", "TENDON", "SITE", "BODY")))

    def execute(self, context):
        return run_reporting(self, context, lambda: authoring.add_actuator(context, self.preset.lower()))


class MUJOCO_OT_add_sensor(bpy.types.Operator):
    """Add a sensor reading the selected element"""

    bl_idname = "mujoco.add_sensor"
    bl_label = "Add Sensor"
    bl_options = UNDOABLE

    sensor_type: StringProperty(name="Sensor", default="JOINTPOS",
                                description="MuJoCo's sensor type (JOINTPOS, TOUCH, FRAMEPOS, ...)")

    @classmethod
    def poll(cls, context):
        return _has_model(context)

    def execute(self, context):
        return run_reporting(self, context, lambda: authoring.add_sensor(context, self.sensor_type.upper()))


class MUJOCO_OT_add_equality(bpy.types.Operator):
    """Add an equality constraint between the selected bodies, joints or tendons"""

    bl_idname = "mujoco.add_equality"
    bl_label = "Add Equality"
    bl_options = UNDOABLE

    eq_type: EnumProperty(name="Equality", items=[(t, t.capitalize(), f"MJCF <{t.lower()}>")
                                                  for t in ("CONNECT", "WELD", "JOINT", "TENDON")])

    @classmethod
    def poll(cls, context):
        return _has_model(context) and bool(authoring.selected(context, ("BODY", "JOINT", "TENDON")))

    def execute(self, context):
        return run_reporting(self, context, lambda: authoring.add_equality(context, self.eq_type))


# ------------------------------------------------------------- conversions


class MUJOCO_OT_make_body(bpy.types.Operator):
    """Wrap the selected objects into a new body at their centre"""

    bl_idname = "mujoco.make_body"
    bl_label = "Make Body"
    bl_options = UNDOABLE

    @classmethod
    def poll(cls, context):
        return _has_model(context) and any(scene_scan.model_of(o) for o in context.selected_objects)

    def execute(self, context):
        return run_reporting(self, context,
                             lambda: convert.make_body(context, list(context.selected_objects)))


class MUJOCO_OT_make_free(bpy.types.Operator):
    """Turn the selected world geoms into free bodies (a body with a free joint)"""

    bl_idname = "mujoco.make_free"
    bl_label = "Make Free"
    bl_options = UNDOABLE

    @classmethod
    def poll(cls, context):
        return any(convert.is_world_geom(o) for o in context.selected_objects)

    def execute(self, context):
        def make():
            made = [convert.make_free(context, o) for o in list(context.selected_objects)
                    if convert.is_world_geom(o)]
            self.report({"INFO"}, f"Made {len(made)} free bod{'y' if len(made) == 1 else 'ies'}")
        return run_reporting(self, context, make)


class MUJOCO_OT_geom_from_mesh(bpy.types.Operator):
    """Make the selected Blender mesh objects MuJoCo geoms: as a mesh, its convex hull,
    or the primitive MuJoCo fits best"""

    bl_idname = "mujoco.geom_from_mesh"
    bl_label = "Geom from Mesh"
    bl_options = UNDOABLE

    shape: EnumProperty(name="As", default="BEST", items=[
        ("BEST", "Best Primitive", "The primitive whose volume is closest to the mesh's "
                                   "(MuJoCo fits each one)"),
        ("MESH", "Mesh", "The mesh itself, written as a MuJoCo mesh asset"),
        ("HULL", "Convex Hull", "The mesh's convex hull as a mesh asset"),
        ("BOX", "Box", "MuJoCo's fit of a box"), ("SPHERE", "Sphere", "MuJoCo's fit of a sphere"),
        ("CAPSULE", "Capsule", "MuJoCo's fit of a capsule"),
        ("CYLINDER", "Cylinder", "MuJoCo's fit of a cylinder"),
        ("ELLIPSOID", "Ellipsoid", "MuJoCo's fit of an ellipsoid")])
    fit: EnumProperty(name="Fit", default="AABB", items=[
        ("AABB", "Bounding Box", "Fit the primitive to the mesh's bounding box (compiler fitaabb)"),
        ("INERTIA", "Inertia", "Fit the primitive to the mesh's equivalent inertia box (MuJoCo's "
                               "default for mesh-fitted geoms)")])

    @classmethod
    def poll(cls, context):
        return _has_model(context) and any(convert.is_plain_mesh(o) for o in context.selected_objects)

    def execute(self, context):
        def make():
            made = [convert.geom_from_mesh(context, o, self.shape, aabb=self.fit == "AABB")
                    for o in list(context.selected_objects) if convert.is_plain_mesh(o)]
            kinds = sorted({o.mujoco.geom.type.lower() for o in made})
            self.report({"INFO"}, f"{len(made)} geom(s): {', '.join(kinds)}")
        return run_reporting(self, context, make)


class MUJOCO_OT_apply_scale(bpy.types.Operator):
    """Fold the object scale of the selected geoms and sites into their size (and mesh
    scale), leaving unit scale"""

    bl_idname = "mujoco.apply_scale"
    bl_label = "Apply Scale to Size"
    bl_options = UNDOABLE

    @classmethod
    def poll(cls, context):
        return any(convert.has_scale(o) for o in context.selected_objects)

    def execute(self, context):
        def make():
            for obj in context.selected_objects:
                if convert.has_scale(obj):
                    convert.apply_scale(obj)
        return run_reporting(self, context, make)


CLASSES = (MUJOCO_OT_add_model, MUJOCO_OT_add_element, MUJOCO_OT_add_actuator, MUJOCO_OT_add_sensor,
           MUJOCO_OT_add_equality, MUJOCO_OT_make_body, MUJOCO_OT_make_free, MUJOCO_OT_geom_from_mesh,
           MUJOCO_OT_apply_scale)

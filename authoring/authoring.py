"""Making MuJoCo elements in Blender: new model roots, elements of every kind,
placed and parented the way a user expects, filled with MuJoCo's own defaults.

Every new element starts from a fresh `mujoco.MjSpec` element (so its values are
MuJoCo's defaults, through the same generic copy the importer uses), gets a
unique MJCF name, and displays as its kind does after an import. The operators
in operators/author.py are thin wrappers around these functions.
"""

from __future__ import annotations

import bpy
import mujoco
import numpy as np
from mathutils import Matrix

from ..components import changes, inherit, spec_io, storage_format
from ..components.kinds import ELEMENT_KINDS
from ..components.schema import SPATIAL_KINDS
from ..importer.build import LIGHT_TYPES
from . import display
from ..scan import scene_scan
from ..scene.errors import MJBlendError
from ..scene.names import first_free

SPATIAL = SPATIAL_KINDS  # the kinds Add > MuJoCo places in the body tree

# sizes a new geom or site gets (MuJoCo's own default size is zero for geoms)
GEOM_SIZES = {"SPHERE": (0.05, 0, 0), "CAPSULE": (0.02, 0.1, 0), "CYLINDER": (0.03, 0.05, 0),
              "ELLIPSOID": (0.05, 0.04, 0.03), "BOX": (0.05, 0.05, 0.05), "PLANE": (1.0, 1.0, 0.05)}
SITE_SIZES = {"SPHERE": (0.01, 0, 0), "CAPSULE": (0.005, 0.02, 0), "CYLINDER": (0.01, 0.01, 0),
              "ELLIPSOID": (0.01, 0.008, 0.006), "BOX": (0.01, 0.01, 0.01)}

# actuator presets: MjsActuator.set_to_<preset>() (MuJoCo's own shortcuts)
ACTUATORS = ("motor", "position", "velocity", "intvelocity", "damper", "cylinder", "muscle",
             "adhesion", "general")


class AuthoringError(MJBlendError):
    """An element cannot be made here; the message says what to select first."""


# ------------------------------------------------------------------ model


def model_root(context):
    """The model an addition goes to: the active object's, else the scene's only one."""
    active = context.active_object
    root = scene_scan.model_of(active) if active is not None else None
    if root is not None:
        return root
    roots = scene_scan.model_roots(context.scene)
    if len(roots) == 1:
        return roots[0]
    if not roots:
        raise AuthoringError("No MuJoCo model in the scene: add one first "
                             "(Add > MuJoCo > Model)")
    raise AuthoringError("Several MuJoCo models: select an object of the one to add to")


def new_model(context, name: str = "model"):
    """A model root (in a collection of its own) with MuJoCo's default settings and
    the 'main' default class, at the 3D cursor."""
    collection = bpy.data.collections.new(name)
    context.scene.collection.children.link(collection)
    root = bpy.data.objects.new(name, None)
    collection.objects.link(root)
    root.empty_display_type, root.empty_display_size = "CUBE", 0.05
    root.location = context.scene.cursor.location
    root.mujoco.kind, root.mujoco.name = "MODEL", name
    model = root.mujoco.model
    with changes.quiet():  # (a new spec's settings and main class: MuJoCo's, nothing stored)
        main = model.defaults.add()
        main.name = "main"
    storage_format.stamp(root)
    inherit.forget()
    return root


def fill(group, element, kind: str, targets: dict | None = None) -> None:
    """Copy a new `element` into `group`; what differs from MuJoCo's defaults counts
    as set by the element itself (so a class given later does not override it)."""
    own = spec_io.differing(element, spec_io.new_element_values(kind), kind)
    with changes.quiet():
        spec_io.element_to_props(element, group, kind, only=set(own),
                                 find=lambda _kind, wanted: (targets or {}).get(wanted))


def unique_name(root, kind: str, base: str) -> str:
    """`base` + the first number no element of `kind` in the model is called."""
    blocks = members(root) + [a.block for a in root.mujoco.model.assets if a.block is not None]
    taken = {b.mujoco.name for b in blocks if b.mujoco.kind == kind.upper()}
    return first_free(taken, lambda n: f"{base}{n}")


def unique_class_name(root) -> str:
    return first_free({c.name for c in root.mujoco.model.defaults}, lambda n: f"class{n}")


def members(root):
    """The model root and every object below it."""
    return [root] + list(root.children_recursive)


def ensure_named(obj, base: str | None = None) -> str:
    """An element's MJCF name, giving it one if it has none (references need it)."""
    if not obj.mujoco.name:
        kind = obj.mujoco.kind.lower()
        obj.mujoco.name = unique_name(scene_scan.model_of(obj), kind, base or kind)
    return obj.mujoco.name


# ---------------------------------------------------------------- spatial


def body_of(obj):
    """The nearest body (or the model root, for the world) at or above `obj`."""
    while obj is not None and obj.mujoco.kind not in ("BODY", "MODEL"):
        obj = obj.parent
    return obj


def _parent_for(context, root, kind):
    active = context.active_object
    if active is None or scene_scan.model_of(active) is not root:
        parent = root
    elif kind in ("geom", "site", "camera", "light", "frame", "body") and active.mujoco.kind == "FRAME":
        parent = active
    else:
        parent = body_of(active) or root
    if kind == "joint" and parent.mujoco.kind != "BODY":
        raise AuthoringError("A joint goes in a body: select a body (or one of its parts) first")
    return parent


def add_spatial(context, kind: str, subtype: str = ""):
    """A new body, frame, joint, geom, site, camera or light at the 3D cursor,
    parented to the active body (or frame)."""
    root = model_root(context)
    parent = _parent_for(context, root, kind)
    obj = new_spatial(root, parent, kind, subtype, Matrix.Translation(context.scene.cursor.location))
    select_only(context, obj)
    return obj


def new_spatial(root, parent, kind: str, subtype: str = "", world=None, name: str = ""):
    """A new element object of `kind` under `parent` at `world` (a world matrix),
    with MuJoCo's defaults (a sensible size for geoms and sites) and a unique name."""
    spec = mujoco.MjSpec()
    element = getattr(spec.worldbody.add_body(), "add_" + kind)()
    if kind == "joint" and subtype:
        element.type = getattr(mujoco.mjtJoint, "mjJNT_" + subtype)
    if kind == "geom" and subtype:
        element.type = getattr(mujoco.mjtGeom, "mjGEOM_" + subtype)
        element.size = GEOM_SIZES.get(subtype, element.size)
    if kind == "site" and subtype:
        element.type = getattr(mujoco.mjtGeom, "mjGEOM_" + subtype)
        element.size = SITE_SIZES.get(subtype, element.size)
    if kind == "light" and subtype:
        element.type = getattr(mujoco.mjtLightType, "mjLIGHT_" + subtype)
    base = subtype.lower() if kind == "joint" and subtype else kind
    name = name or unique_name(root, kind, base)
    obj = bpy.data.objects.new(name, _data_for(kind, element, name))
    root.users_collection[0].objects.link(obj)
    obj.mujoco.kind, obj.mujoco.name = kind.upper(), name
    fill(getattr(obj.mujoco, kind), element, kind)
    place(obj, parent, world if world is not None else parent.matrix_world)
    display.style(obj)
    return obj


def place(obj, parent, world) -> None:
    """Parent `obj` to `parent` (identity parent inverse, quaternion rotation) with
    world matrix `world` (its scale is kept)."""
    scale = obj.matrix_world.to_scale() if obj.parent is None else obj.scale.copy()
    obj.parent = parent
    obj.matrix_parent_inverse.identity()
    obj.rotation_mode = "QUATERNION"
    loc, rot, _ = (parent.matrix_world.inverted() @ world).decompose()
    obj.location, obj.rotation_quaternion, obj.scale = loc, rot, scale


def _data_for(kind, element, name):
    if kind in ("geom", "site"):
        return display.shape_mesh(kind, int(element.type), element.size)
    if kind == "camera":
        camera = bpy.data.cameras.new(name)
        camera.sensor_fit = "VERTICAL"
        camera.angle_y = np.radians(element.fovy)
        return camera
    if kind == "light":
        ltype = mujoco.mjtLightType(int(element.type)).name.split("_", 1)[1]
        light = bpy.data.lights.new(name, LIGHT_TYPES.get(ltype, "POINT"))
        light.shadow_soft_size = float(element.bulbradius)  # as the importer: MuJoCo's light radius
        return light
    return None


def select_only(context, obj):
    for other in context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    context.view_layer.objects.active = obj


# ----------------------------------------------------------- non-spatial


def _collection(root, kind):
    """The model's child collection for a kind ("<model> Actuators"), made if missing."""
    title = ELEMENT_KINDS[kind].collection
    model_collection = root.users_collection[0]
    name = f"{model_collection.name} {title}"
    for child in model_collection.children:
        if child.name == name:
            return child
    child = bpy.data.collections.new(name)
    model_collection.children.link(child)
    return child


def _new_section_object(context, root, kind, element, name, targets):
    """An object for an actuator, sensor, equality, ... with references to `targets`
    (name -> object)."""
    obj = bpy.data.objects.new(name, None)
    _collection(root, kind).objects.link(obj)
    obj.parent = root
    obj.hide_viewport = True  # data, not geometry: it is picked in the Outliner or panels
    obj.mujoco.kind, obj.mujoco.name = kind.upper(), name
    fill(getattr(obj.mujoco, kind), element, kind, targets)
    context.view_layer.objects.active = obj  # its panel shows (it is hidden: not selected)
    return obj


def selected(context, kinds):
    """Selected MuJoCo elements of `kinds`, the active one first. A hidden active object
    counts as selected: Blender never selects a hidden object, and a joint hidden as
    MuJoCo hides joints (sync/groups.py) is picked in the Outliner or a panel as active."""
    objects = list(context.selected_objects)
    active = context.active_object
    if active in objects:
        objects.remove(active)
    if active is not None and (active in context.selected_objects or not active.visible_get()):
        objects.insert(0, active)
    return [o for o in objects if o.mujoco.kind in kinds]


def add_actuator(context, preset: str):
    """An actuator of a MuJoCo preset (motor, position, ...) on the selected joint
    (or tendon, site, body for the presets that act on those)."""
    if preset not in ACTUATORS:
        raise AuthoringError(f"unknown actuator {preset!r}")
    root = model_root(context)
    targets = selected(context, ("JOINT", "TENDON", "SITE", "BODY"))
    if not targets:
        raise AuthoringError("Select the joint (or tendon, site, body) the actuator drives")
    target = targets[0]
    if preset == "adhesion" and target.mujoco.kind != "BODY":
        raise AuthoringError("An adhesion actuator acts on a body: select one")
    element = mujoco.MjSpec().add_actuator()
    if preset != "general":
        getattr(element, "set_to_" + preset)()
    element.trntype = getattr(mujoco.mjtTrn, "mjTRN_" + target.mujoco.kind)
    element.target = ensure_named(target)
    name = unique_name(root, "actuator", preset)
    element.name = name
    return _new_section_object(context, root, "actuator", element, name, {element.target: target})


SENSOR_OBJECT = {"JOINT": mujoco.mjtObj.mjOBJ_JOINT, "SITE": mujoco.mjtObj.mjOBJ_SITE,
                 "BODY": mujoco.mjtObj.mjOBJ_BODY, "GEOM": mujoco.mjtObj.mjOBJ_GEOM,
                 "ACTUATOR": mujoco.mjtObj.mjOBJ_ACTUATOR, "TENDON": mujoco.mjtObj.mjOBJ_TENDON,
                 "CAMERA": mujoco.mjtObj.mjOBJ_CAMERA}


def sensor_needs(sensor_type: str) -> tuple[str, ...]:
    """The object kinds a sensor type reads (as MuJoCo groups its sensors)."""
    name = sensor_type.lower()
    if name.startswith("joint") or name.startswith("ball"):
        return ("JOINT",)
    if name.startswith("actuator"):
        return ("ACTUATOR",)
    if name.startswith("tendon"):
        return ("TENDON",)
    if name.startswith("frame"):
        return ("SITE", "BODY", "GEOM", "CAMERA")
    if name.startswith("subtree"):
        return ("BODY",)
    if name in ("touch", "accelerometer", "velocimeter", "gyro", "force", "torque", "magnetometer",
                "rangefinder", "camprojection"):
        return ("SITE",)
    return ()


def add_sensor(context, sensor_type: str):
    """A sensor of `sensor_type` (MuJoCo's mjtSensor name, e.g. JOINTPOS) on the
    selected element it reads."""
    root = model_root(context)
    element = mujoco.MjSpec().add_sensor()
    element.type = getattr(mujoco.mjtSensor, "mjSENS_" + sensor_type)
    needs = sensor_needs(sensor_type)
    targets = {}
    if needs:
        chosen = selected(context, needs)
        if not chosen:
            raise AuthoringError(f"Select the {' or '.join(k.lower() for k in needs)} "
                                 f"the {sensor_type.lower()} sensor reads")
        target = chosen[0]
        element.objtype = SENSOR_OBJECT[target.mujoco.kind]
        element.objname = ensure_named(target)
        targets[element.objname] = target
    name = unique_name(root, "sensor", sensor_type.lower())
    element.name = name
    return _new_section_object(context, root, "sensor", element, name, targets)


def add_equality(context, eq_type: str):
    """An equality of `eq_type` (CONNECT, WELD, JOINT, TENDON) between the two
    selected bodies / joints / tendons (or one and the world)."""
    root = model_root(context)
    kind = {"CONNECT": "BODY", "WELD": "BODY", "JOINT": "JOINT", "TENDON": "TENDON"}[eq_type]
    chosen = selected(context, (kind,))
    if not chosen:
        raise AuthoringError(f"Select one or two {kind.lower()}s for the {eq_type.lower()} equality")
    element = mujoco.MjSpec().add_equality()
    element.type = getattr(mujoco.mjtEq, "mjEQ_" + eq_type)
    if kind == "BODY":
        element.objtype = mujoco.mjtObj.mjOBJ_BODY
    element.name1 = ensure_named(chosen[0])
    targets = {element.name1: chosen[0]}
    if len(chosen) > 1:
        element.name2 = ensure_named(chosen[1])
        targets[element.name2] = chosen[1]
    name = unique_name(root, "equality", eq_type.lower())
    element.name = name
    return _new_section_object(context, root, "equality", element, name, targets)

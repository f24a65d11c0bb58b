"""How MuJoCo elements look in the viewport when they are made or edited in
Blender (the importer gives imported ones the same looks): empties shaped by
kind, primitive geoms and sites rebuilt when their type or size changes."""

from __future__ import annotations

import functools

import mujoco

from ..components import spec_io
from ..importer.build import JOINT_DISPLAY, helper_sizes, joint_display_size
from ..geometry.mujoco_meshes import PrimitiveCache
from ..scan import scene_scan
from . import validation

EMPTY_LOOKS = {"MODEL": ("CUBE", 0.05), "BODY": ("PLAIN_AXES", 0.02), "FRAME": ("ARROWS", None)}
# (None: MuJoCo's frame length for the model, `sizes_for`)
PRIMITIVES = {int(getattr(mujoco.mjtGeom, "mjGEOM_" + t)) for t in
              ("PLANE", "SPHERE", "CAPSULE", "ELLIPSOID", "CYLINDER", "BOX")}
SHAPE_ATTRS = ("type", "size")

_cache = PrimitiveCache()


def shape_mesh(kind: str, geom_type: int, size):
    """The display mesh of a primitive geom or site (shared by equal shapes), or
    None for mesh, height field and sdf geoms, which show their asset."""
    if int(geom_type) not in PRIMITIVES:
        return None
    if kind == "site" and int(geom_type) == int(mujoco.mjtGeom.mjGEOM_PLANE):
        return None
    used = PrimitiveCache._USED[mujoco.mjtGeom(int(geom_type))]
    size = [float(s) for s in size][:used]
    if int(geom_type) != int(mujoco.mjtGeom.mjGEOM_PLANE) and min(size) <= 0:
        return None  # not a shape yet (a size still being typed in): keep the old look
    return _cache.get(int(geom_type), size)


@functools.cache
def _default_sizes() -> dict:
    return helper_sizes(mujoco.MjModel.from_xml_string("<mujoco/>"))


def sizes_for(root) -> dict:
    """MuJoCo's helper sizes (importer/build.py `helper_sizes`) for the model of `root`:
    from its last checked model (authoring/validation.py), which an import's model
    compiles the same as, else MuJoCo's defaults (those of an empty model)."""
    for scene in (root.users_scene if root is not None else ()):
        outcome = validation.result(scene)
        model = outcome.models.get(root.name) if outcome is not None else None
        if model is not None:
            return helper_sizes(model)
    return _default_sizes()


def style(obj, sizes: dict | None = None) -> None:
    """Empties shaped by kind (joints as arrows / sphere / axes by joint type), joints
    and frames as long as MuJoCo draws them (`sizes`: `sizes_for` the object's model);
    cameras drawn at MuJoCo's size too."""
    kind = obj.mujoco.kind
    if kind in ("JOINT", "FRAME", "CAMERA") and sizes is None:
        sizes = sizes_for(scene_scan.model_of(obj))
    if obj.type == "CAMERA":
        obj.data.display_size = sizes["camera"]
    if obj.type != "EMPTY":
        if kind == "SITE":
            obj.display_type = "SOLID"
        return
    if kind == "JOINT":
        obj.empty_display_type = JOINT_DISPLAY.get(obj.mujoco.joint.type, "PLAIN_AXES")
        obj.empty_display_size = joint_display_size(obj.mujoco.joint.type, sizes)
    elif kind in EMPTY_LOOKS:
        obj.empty_display_type, size = EMPTY_LOOKS[kind]
        obj.empty_display_size = size if size is not None else sizes["frame"]


def refresh(obj) -> None:
    """Rebuild an element's display after an edit of its type or size."""
    kind = obj.mujoco.kind.lower()
    if kind in ("geom", "site") and obj.type == "MESH":
        group = getattr(obj.mujoco, kind)
        geom_type = spec_io.read_value(group, spec_io.KINDS[kind].attr("type"))
        mesh = shape_mesh(kind, int(geom_type), group.size)
        if mesh is not None and obj.data is not mesh:
            obj.data = mesh
    elif kind == "joint":
        style(obj)


def on_edit(group, attr_name: str) -> None:
    """Every MuJoCo property edit passes here (authoring/edits.py)."""
    if attr_name not in SHAPE_ATTRS:
        return
    obj = group.id_data
    holder = getattr(obj, "mujoco", None)
    if holder is None or not hasattr(holder, "kind") or holder.kind not in ("GEOM", "SITE", "JOINT"):
        return
    if group == getattr(holder, holder.kind.lower()):
        refresh(obj)




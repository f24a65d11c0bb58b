"""How MuJoCo elements look in the viewport when they are made or edited in
Blender (the importer gives imported ones the same looks): empties shaped by
kind, primitive geoms and sites rebuilt when their type or size changes."""

from __future__ import annotations

import mujoco

from ..components import spec_io
from ..importer.build import JOINT_DISPLAY
from ..geometry.mujoco_meshes import PrimitiveCache

EMPTY_LOOKS = {"MODEL": ("CUBE", 0.05), "BODY": ("PLAIN_AXES", 0.02), "FRAME": ("ARROWS", 0.03)}
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


def style(obj) -> None:
    """Empties shaped by kind: joints as arrows / sphere / axes by joint type."""
    kind = obj.mujoco.kind
    if obj.type != "EMPTY":
        if kind == "SITE":
            obj.display_type = "SOLID"
        return
    if kind == "JOINT":
        obj.empty_display_type = JOINT_DISPLAY.get(obj.mujoco.joint.type, "PLAIN_AXES")
        obj.empty_display_size = 0.05
    elif kind in EMPTY_LOOKS:
        obj.empty_display_type, obj.empty_display_size = EMPTY_LOOKS[kind]


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




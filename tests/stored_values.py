"""Every MuJoCo property group of the open .blend, read as a script reads it.

`dump_values(bpy)` -> {group label: {attribute: {"rna": obj.mujoco.<kind>.<prop> as plain
data, "read": spec_io.read_value(...)}}} for every element (objects and assets), tendon
wrap, default class kind and model setting: what tools/make_saved_format1.py records
in tests/blender/data/saved_format1_values.json and tests/blender/test_saved_format1.py
compares. Floats as JSON keeps them exactly (NaN / inf as strings).
"""

from __future__ import annotations

import base64
import math


def plain(value):
    """A value as JSON keeps it exactly (floats by repr; NaN / inf as strings)."""
    if isinstance(value, float):
        if value != value:
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "name") and hasattr(value, "bl_rna"):  # a datablock
        return {"id": value.name}
    try:
        return [plain(v) for v in value]  # a bpy array
    except TypeError:
        return repr(value)


def rna_value(group, attr):
    """What `group.<prop>` gives a script, as plain data."""
    value = getattr(group, attr.prop)
    if attr.type in ("refvec",):
        return [[item.target.name if item.target else None, item.authored] for item in value]
    if attr.type == "stringvec":
        return [item.value for item in value]
    return plain(value)


def group_values(group, kind: str) -> dict:
    """{attribute name: {"rna": ..., "read": ...}} of every editable attribute of a group."""
    from mjblend.components import spec_io
    from mjblend.components.schema import KINDS

    out = {}
    for attr in KINDS[kind].editable:
        out[attr.name] = {"rna": rna_value(group, attr), "read": plain(spec_io.read_value(group, attr))}
    return out


def groups(bpy) -> list:
    """(label, group, kind) of every MuJoCo property group in the file: elements (objects
    and assets), wraps of tendons, default classes' kinds, model settings. In name order."""
    from mjblend.components.schema import DEFAULT_KINDS, MODEL_SETTINGS

    out = []
    blocks = [*bpy.data.objects, *bpy.data.meshes, *bpy.data.materials, *bpy.data.images]
    for block in sorted(blocks, key=lambda b: (type(b).__name__, b.name)):
        holder = getattr(block, "mujoco", None)
        if holder is None or holder.kind == "NONE":
            continue
        kind = holder.kind.lower()
        label = f"{type(block).__name__}:{block.name}"
        group = getattr(holder, kind)
        out.append((label, group, kind))
        if kind == "tendon":
            for i, wrap in enumerate(group.path):
                out.append((f"{label}/path[{i}]", wrap, "wrap"))
        if kind == "model":
            for setting in MODEL_SETTINGS:
                out.append((f"{label}/{setting}", getattr(group, setting), setting))
            for item in group.defaults:
                for dkind in DEFAULT_KINDS:
                    out.append((f"{label}/class:{item.name}/{dkind}", getattr(item, dkind), dkind))
    return out


def dump_values(bpy) -> dict:
    return {label: group_values(group, kind) for label, group, kind in groups(bpy)}

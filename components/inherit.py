"""What an attribute reads where its group does not set it (storage format 2).

A group (an element's, a default class's, a model setting's) stores only the
attributes it sets itself (values.py). Every other attribute reads what MuJoCo
would give it: for an element of a kind that takes a default class, its class's
value, else the parent class's, ... up to "main", else MuJoCo's own default; for
a class, the same chain from its parent; for anything else (kinds without
classes, settings), MuJoCo's default for a new element or a new spec.

The chain of each (model root, class, kind) is resolved once into one raw dict
(the ID-property values, as values.raw_entries writes them) and cached until
`forget()`: every class edit, undo, redo, file load and import calls it (one
generation for all roots: class edits are rare, resolving a class is cheap).
"""

from __future__ import annotations

import mujoco

from . import spec_io, values
from .schema import DEFAULT_KINDS, KINDS, MODEL_SETTINGS, NESTED_VECTOR_TYPES, VECTOR_TYPES
from .stored_keys import LENGTHS_SUFFIX

_generation = 0
_tables: dict[int, dict] = {}  # root.as_pointer() -> {(class, kind): raw dict}
_asset_roots: dict[int, object] | None = None  # asset datablock pointer -> its model root
_DEFAULTS: dict[str, dict] = {}  # kind -> raw dict of MuJoCo's defaults (never changes)


def forget() -> None:
    """Classes (or the data holding them) may have changed: resolve anew when next read."""
    global _generation, _asset_roots
    _generation += 1
    _tables.clear()
    _asset_roots = None


def generation() -> int:
    return _generation


# --------------------------------------------------------------- raw keys


def _inheritable(attr) -> bool:
    """Not the bpy pointers and lists (no `get` can compute them): a class name can be."""
    return attr.type not in ("refvec", "stringvec") and not (attr.type == "ref" and attr.ref != "default")


def raw_keys(kind: str) -> frozenset[str]:
    """The ID-property keys holding the attribute values of `kind` that a class or
    MuJoCo's defaults can give (references excepted: see default_classes.py)."""
    found = _RAW_KEYS.get(kind)
    if found is None:
        keys = set()
        for attr in KINDS[kind].editable:
            if not _inheritable(attr):
                continue
            if attr.type in VECTOR_TYPES or attr.type in NESTED_VECTOR_TYPES or attr.type == "keyvalues":
                keys.add(values.vector_key(attr))
                keys.add(values.vector_key(attr) + LENGTHS_SUFFIX)
            else:
                keys.add(attr.prop)
        found = _RAW_KEYS[kind] = frozenset(keys)
    return found


_RAW_KEYS: dict[str, frozenset] = {}


def defaults(kind: str) -> dict:
    """Raw values of MuJoCo's defaults for `kind`: the main class's starting values
    for a kind classes set, a new spec's for settings, a new element's for the rest."""
    found = _DEFAULTS.get(kind)
    if found is None:
        try:
            if kind in DEFAULT_KINDS:
                given = spec_io.values_of(getattr(mujoco.MjSpec().default, kind), kind)
            elif kind in MODEL_SETTINGS or kind == "model":
                given = spec_io.settings_values(mujoco.MjSpec(), kind)
            else:
                given = spec_io.new_element_values(kind)
        except (AttributeError, TypeError):  # (a wrap: no spec makes one alone)
            given = {}
        found = {}
        for attr in KINDS[kind].editable:
            if not _inheritable(attr):
                continue
            value = given.get(attr.name, attr.default)
            if value is None:
                continue
            try:
                values.raw_entries(found, attr, value)
            except (TypeError, ValueError, KeyError):
                pass
        _DEFAULTS[kind] = found
    return found


# ------------------------------------------------------------- the chain


def inherited(group, kind: str) -> dict:
    """{raw key: value} that `group` (of `kind`) reads where it stores nothing."""
    if kind in DEFAULT_KINDS:
        id_data = group.id_data
        holder = getattr(id_data, "mujoco", None)
        if holder is not None:
            holder_kind = holder.kind
            if holder_kind == "MODEL":
                parent = _class_parent(id_data, group, kind)
                if parent:  # ("" for main: MuJoCo's defaults)
                    return class_values(id_data, parent, kind)
            elif holder_kind.lower() == kind and kind in spec_io.CLASS_KINDS:
                root = root_of(id_data)
                if root is not None:
                    return class_values(root, holder.classname or "main", kind)
    return defaults(kind)


def raw(group, kind: str, key: str):
    """The raw value of `key`: the group's own, else what it inherits (None: neither)."""
    found = group.get(key)
    return found if found is not None else inherited(group, kind).get(key)


def class_values(root, classname: str, kind: str) -> dict:
    """Raw values a member of class `classname` of `root` reads for `kind`."""
    table = _tables.get(root.as_pointer())
    if table is None:
        table = _tables[root.as_pointer()] = {}
    found = table.get((classname, kind))
    if found is None:
        items = {item.name: item for item in root.mujoco.model.defaults}
        found = _resolve(items, classname, kind, table, 0)
    return found


def _resolve(items, classname, kind, table, depth) -> dict:
    found = table.get((classname, kind))
    if found is not None:
        return found
    item = items.get(classname)
    if item is None or depth > len(items):  # a class that is gone, or a loop of parents
        return defaults(kind) if classname == "main" or "main" not in items else \
            _resolve(items, "main", kind, table, depth + 1)
    parent = (item.parent or "main") if classname != "main" else None
    base = _resolve(items, parent, kind, table, depth + 1) if parent else defaults(kind)
    stored = item.get(kind)
    if stored is None:
        found = base
    else:
        keys = raw_keys(kind)
        mine = {k: v for k, v in stored.to_dict().items() if k in keys}
        found = {**base, **mine} if mine else base
    table[(classname, kind)] = found
    return found


def _class_parent(root, group, kind) -> str | None:
    """The class a class item's `group` inherits from ("" for main: MuJoCo's defaults),
    or None where `group` is not a class's (a model root's own group of a kind). Found
    from its path each time: a collection's items move when it grows (not cached)."""
    path = group.path_from_id()  # mujoco.model.defaults[3].geom
    if ".defaults[" not in path:
        return None
    index = int(path.split(".defaults[", 1)[1].split("]", 1)[0])
    defaults_ = root.mujoco.model.defaults
    if index >= len(defaults_):
        return None
    item = defaults_[index]
    return "" if item.name == "main" else (item.parent or "main")


def root_of(block):
    """The model root an element's datablock belongs to, or None."""
    if hasattr(block, "matrix_world"):  # an object: up its parents
        obj = block
        while obj is not None:
            holder = getattr(obj, "mujoco", None)
            if holder is not None and holder.kind == "MODEL":
                return obj
            obj = obj.parent
        return None
    global _asset_roots
    pointer = block.as_pointer()
    if _asset_roots is None or pointer not in _asset_roots:
        import bpy
        _asset_roots = {}
        for obj in bpy.data.objects:
            if obj.mujoco.kind == "MODEL":
                for entry in obj.mujoco.model.assets:
                    if entry.block is not None:
                        _asset_roots[entry.block.as_pointer()] = obj
    return _asset_roots.get(pointer)

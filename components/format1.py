"""Storage format 1 -> 2: the data step of the migration (issue 35).

Format 1 (every MJBlend up to FORMAT 1) stores every attribute of an element,
class kind or settings group: each float as a float32 bpy property plus its exact
double in `_exact[prop]` and the property's read-back in `_seen[prop]`, and the
names the group sets itself in `_own` (absent in the oldest files). Format 2
stores a group's own attributes only, presence of the key being ownership:

- a float (`float`, `float32`, `int64`) as ONE raw double (a list of doubles for a
  vector) under the property's name: format 1's value (`values.read_float`: the
  exact double while the property still reads back `_seen`, else the shortest
  decimal of the edited float32; an int64 as its double);
- every other type raw under the property's name as `values.raw_entries` writes it
  (int, bool as int, enum item index, flag mask, string, class name), variable
  arrays in `_<prop>` (+ `_len`) as before;
- references to datablocks (PointerProperty) and reference / string lists
  (CollectionProperty) are native bpy storage and are left as they are, and so is
  `_ref`; except, where the group records `_own`, a reference it does not own (a
  copy of its class's, format 1's full class copies): on an element with a class
  or on a class it stays, marked as inherited in `_class_refs`
  (values.show_class_ref: format 2 keeps class-set references materialised), elsewhere
  it is deleted with its `_ref` name. (Lists of empty slots, MuJoCo's default, are
  not own in format 2: values.own.)
- a float edited to Blender's largest float (format 1 read 3.4028235e+38 and
  refused it) is stored as FLT_MAX exactly, which format 2's scan refuses alike;
- `_exact`, `_seen`, `_own` and the keys of attributes the group does not own are
  deleted; every other key (`_pose`, `_seen_pose`, `_degree`, `_source`, the
  model's `assets` / `defaults` / settings groups, a tendon's `path`, ...) stays.

Own = the recorded `_own`, or where a group records none, the attributes whose
format-1 value differs bit for bit (`spec_io.bits`) from the one it would inherit:
a classed element's class group (format 1 keeps classes resolved: a full copy of
their chain), a class's parent class (main: MuJoCo's defaults), a kind without
classes: MuJoCo's new element, a settings group: a new spec's settings; a tendon
wrap (never recorded, no inheritance): every attribute it stores.

Interface (what storage_format's step uses):

    is_format1(group) -> bool
        the group holds `_exact`, `_seen` or `_own`.
    migrate_data(data) -> int
        (data: bpy.data) every format-1 group of every local ID with `mujoco.kind != "NONE"` (objects:
        their kind's group, a tendon's wraps; a model root: also its settings groups,
        its model group and every class item's kinds; meshes, materials, images: their
        kind's group), all planned from format 1 before any is rewritten, then
        rewritten; linked (library) IDs are left alone. Returns the number of groups
        rewritten. Idempotent: a second call finds nothing.
    migrate_root(root) -> int
        the same over one model root, the objects below it and its assets (for
        `storage_format.MIGRATIONS[1]`); IDs outside every root need migrate_data.
    to_format2(group, kind, inherited=None) -> frozenset[str]
        one group rewritten in place; `inherited`: {attribute name: value as
        spec_io.read_value gives it} used only where the group records no `_own`
        (None: what a group of `kind` with no class would inherit). Returns its own
        attribute names. A class group must be migrated AFTER everything inheriting
        from it was planned (migrate_data / migrate_root see to that).

    read_format1(group, attr) -> value
        one attribute as format 1's `spec_io.read_value` read it (tests compare).

Must run before anything else reads a group through format 2's property getters.
It reads format 1 from the raw ID properties only (`read_format1`: never RNA, never
today's values.read_float), so it works the same under format 1's property
definitions and format 2's.
"""

from __future__ import annotations

import functools

import mujoco

from . import spec_io, values
from .schema import (DEFAULT_KINDS, KINDS, MODEL_SETTINGS, NESTED_VECTOR_TYPES, NUMERIC, VECTOR_TYPES, Attr,
                     enum_items, enum_value)
from .stored_keys import CLASS_REFS, EXACT, LENGTHS_SUFFIX, OWN, REF, SEEN

FORMAT1_KEYS = (EXACT, SEEN, OWN)
# attribute types bpy keeps natively (pointers, collections): migrated as they are
_NATIVE = frozenset({"refvec", "stringvec"})
_ARRAYS = VECTOR_TYPES | NESTED_VECTOR_TYPES | {"keyvalues"}


def is_format1(group) -> bool:
    return group is not None and any(key in group for key in FORMAT1_KEYS)


def _native(attr: Attr) -> bool:
    return attr.type in _NATIVE or (attr.type == "ref" and attr.ref != "default")


def _keys_of(attr: Attr) -> tuple[str, ...]:
    """The ID property keys an attribute may be stored under."""
    if attr.type in _ARRAYS:
        key = values.vector_key(attr)
        return (key, key + LENGTHS_SUFFIX) if attr.type in NESTED_VECTOR_TYPES else (key,)
    return (attr.prop,)


def format1_values(group, kind: str) -> dict:
    """{attribute name: value} of every attribute `to_format2` may store (all but the
    native references), as format 1's `spec_io.read_value` reads them; read from the
    raw ID properties only, so it reads the same under format 2's property getters."""
    return {attr.name: read_format1(group, attr) for attr in KINDS[kind].editable if not _native(attr)}


def read_format1(group, attr: Attr):
    """One attribute of a format-1 group as `spec_io.read_value` read it in format 1.
    A key bpy never wrote holds the property's default (the schema's)."""
    t, stored = attr.type, group.get(attr.prop)
    if t in NUMERIC:
        return _format1_float(group, attr, stored)
    if t in ("int", "bool"):
        cast = int if t == "int" else bool
        if stored is None:
            default = attr.default if attr.default is not None else \
                ((0,) * attr.size if attr.is_vector else 0)
            return tuple(cast(v) for v in default) if attr.is_vector else cast(default)
        return tuple(cast(v) for v in stored) if attr.is_vector else cast(stored)
    if t == "enum":
        items = enum_items(attr.enum)
        if stored is None:  # the property's default: the schema's identifier, else the first item
            return enum_value(attr.enum, attr.default) if attr.default else items[0][2]
        return items[int(stored)][2]
    if t == "flags":
        if stored is None:
            return sum(enum_value(attr.enum, ident) for ident in (attr.default or ()))
        return int(stored)
    if t in ("string", "ref"):  # (a ref here: a class name)
        return str(stored) if stored is not None else (attr.default or "")
    if t in VECTOR_TYPES or t in NESTED_VECTOR_TYPES or t == "keyvalues":
        return _format1_array(group, attr)  # (raw: format 2's readers would read the class's)
    raise TypeError(f"{attr.name}: not a format-1 attribute type {t}")


def _format1_array(group, attr: Attr):
    """A variable-length array as format 1 read it: its raw key, absent = empty."""
    key, t = values.vector_key(attr), attr.type
    stored = group.get(key)
    if t == "bytes":
        return bytes(stored) if stored is not None else b""
    if t == "keyvalues":
        return {str(k): str(v) for k, v in stored.items()} if stored is not None else {}
    if t in NESTED_VECTOR_TYPES:
        flat, lengths = list(stored or []), list(group.get(key + LENGTHS_SUFFIX) or [])
        rows, start = [], 0
        for n in lengths:
            rows.append(flat[start:start + n])
            start += n
        return rows
    if stored is None:
        return []
    return [int(v) for v in stored] if t == "intvec" else [float(v) for v in stored]


def _format1_float(group, attr: Attr, stored):
    """format 1's `values.read_float`: per value, the exact double while the property
    (a float32) still reads back what `_seen` recorded, else the shortest decimal of it."""
    if stored is None:
        default = attr.default if attr.default is not None else \
            ((0.0,) * attr.size if attr.is_vector else 0.0)
        current = [float(v) for v in default] if attr.is_vector else [float(default)]
    else:
        current = [float(v) for v in stored] if attr.is_vector else [float(stored)]
    exact, seen = group.get(EXACT, {}).get(attr.prop), group.get(SEEN, {}).get(attr.prop)
    out = []
    for i, cur in enumerate(current):
        kept = exact is not None and seen is not None and i < len(seen) and _same(cur, seen[i])
        out.append(float(exact[i]) if kept else values.shortest_float32(cur))
    if attr.type == "int64":
        out = [int(round(v)) for v in out]
    return tuple(out) if attr.is_vector else out[0]


_TOP = values.shortest_float32(values.FLT_MAX)  # 3.4028235e+38
_EDITED_MAX = {_TOP: values.FLT_MAX, -_TOP: -values.FLT_MAX}


def _same(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)


def recorded_own(group) -> frozenset[str] | None:
    """format 1's `_own`: the attribute names a group set itself (None: no record)."""
    own = group.get(OWN)
    return frozenset(own.keys()) if own is not None else None


def _stored_names(group, kind: str) -> frozenset[str]:
    keys = set(group.keys())
    return frozenset(attr.name for attr in KINDS[kind].editable if any(k in keys for k in _keys_of(attr)))


@functools.cache
def _class_defaults(kind: str) -> dict:
    """What MuJoCo's main class gives an element of `kind` it does not set: a new spec's."""
    return spec_io.values_of(getattr(mujoco.MjSpec().default, kind), kind)


def _new_values(kind: str) -> dict | None:
    """What an unclassed group of `kind` inherits: a new spec's settings, or MuJoCo's new
    element; None where there is no such thing (a tendon wrap)."""
    if kind in MODEL_SETTINGS or kind == "model":
        return spec_io.settings_values(mujoco.MjSpec(), kind)
    try:
        return spec_io.new_element_values(kind)
    except (AttributeError, TypeError):
        return None


def _own_of(group, kind: str, read: dict, inherited: dict | None) -> frozenset[str]:
    recorded = recorded_own(group)
    if recorded is not None:
        return recorded
    if inherited is None:
        return _stored_names(group, kind)
    return frozenset(name for name, value in read.items()
                     if spec_io.bits(value) != spec_io.bits(inherited[name]))


def _plan(group, kind: str, inherited: dict | None, classed: bool = False) -> tuple[frozenset[str], dict]:
    """(own names, {key: format-2 value}) of one format-1 group, read before any write.
    References (bpy storage, kept as they are) the group does not own: on an element
    of a class, marked as its class's (`_class_refs`, values.show_class_ref); on a
    class or elsewhere, deleted with their authored names (format 1's class copies)."""
    read = format1_values(group, kind)
    own = _own_of(group, kind, read, inherited)
    raw: dict = {}
    if recorded_own(group) is not None:
        for attr in KINDS[kind].editable:
            if attr.type != "ref" or attr.ref == "default" or attr.name in own:
                continue  # (lists stay: empty slots are not own, values.own)
            if attr.type == "ref" and classed and group.get(attr.prop) is not None:
                raw.setdefault(CLASS_REFS, {})[attr.prop] = 1
            else:
                raw.setdefault(_DROP, []).append(attr.prop)
    for attr in KINDS[kind].editable:
        if attr.name not in own or _native(attr):
            continue
        value = read[attr.name]
        if attr.type in NUMERIC:
            # an edit at Blender's largest float (format 1 read it as 3.4028235e+38 and refused
            # it) becomes what format 2's set stores for one, FLT_MAX exactly (refused alike)
            doubles = [_EDITED_MAX.get(float(v), float(v)) for v in (value if attr.is_vector else [value])]
            raw[attr.prop] = doubles if attr.is_vector else doubles[0]
        else:
            values.raw_entries(raw, attr, value)
    return own, raw


_DROP = "drop"  # (in a plan: the native keys to delete)


def _rewrite(group, kind: str, raw: dict) -> None:
    raw = dict(raw)
    for prop in raw.pop(_DROP, ()):
        if prop in group:
            del group[prop]
        authored = group.get(REF)
        if authored is not None and prop in authored:
            del authored[prop]
    for key in FORMAT1_KEYS:
        if key in group:
            del group[key]
    for attr in KINDS[kind].editable:
        if _native(attr):
            continue
        for key in _keys_of(attr):
            if key in group and key not in raw:
                del group[key]
    for key, value in raw.items():
        if key in group:
            del group[key]  # (a new type: a float property's float32 becomes a double)
        group[key] = value


def to_format2(group, kind: str, inherited: dict | None = None) -> frozenset[str]:
    if inherited is None:
        inherited = _new_values(kind)
    own, raw = _plan(group, kind, inherited)
    _rewrite(group, kind, raw)
    return own


# ----------------------------------------------------------------- the walk


def _local(id_block) -> bool:
    return getattr(id_block, "library", None) is None


def _is_element(id_block) -> bool:
    holder = getattr(id_block, "mujoco", None)
    return holder is not None and holder.kind != "NONE" and _local(id_block)


def _root_of(obj):
    while obj is not None and obj.mujoco.kind != "MODEL":
        obj = obj.parent
    return obj


class _Walk:
    """Plans every format-1 group of a set of IDs first (reads), then rewrites them."""

    def __init__(self):
        self.plans: list[tuple] = []  # (group, kind, raw)
        self.class_values: dict[tuple[int, str, str], dict | None] = {}  # (root, class, kind)

    # what a classed group inherits, read in format 1 (classes are full copies there)
    def _class_value(self, root, name: str, kind: str) -> dict | None:
        key = (root.as_pointer() if root is not None else 0, name, kind)
        if key not in self.class_values:
            found = None
            if root is not None:
                item = next((c for c in root.mujoco.model.defaults if c.name == name), None)
                if item is not None:
                    found = format1_values(getattr(item, kind), kind)
            self.class_values[key] = found
        return self.class_values[key]

    def _inherited_by_element(self, holder, kind: str, root) -> dict | None:
        if kind not in DEFAULT_KINDS:
            return _new_values(kind)
        found = self._class_value(root, holder.classname or "main", kind)
        return found if found is not None else _class_defaults(kind)

    def add(self, group, kind: str, inherited_of, classed: bool = False) -> None:
        """Plan `group` if it is format 1; `inherited_of()` gives what it inherits."""
        if not is_format1(group):
            return
        inherited = inherited_of() if recorded_own(group) is None else None
        _own, raw = _plan(group, kind, inherited, classed)
        self.plans.append((group, kind, raw))

    def element(self, id_block, root) -> None:
        holder = id_block.mujoco
        kind = holder.kind.lower()
        if holder.get(kind) is None:  # (never written: reading it through RNA would make it)
            return
        group = getattr(holder, kind)
        if kind == "model":
            self.model(id_block)
            return
        self.add(group, kind, lambda: self._inherited_by_element(holder, kind, root),
                 classed=kind in DEFAULT_KINDS and bool(holder.classname))
        if kind == "tendon":
            for wrap in group.path:
                self.add(wrap, "wrap", lambda: None)

    def model(self, root) -> None:
        model = root.mujoco.model
        self.add(model, "model", lambda: _new_values("model"))
        for kind in MODEL_SETTINGS:
            if model.get(kind) is not None:
                self.add(getattr(model, kind), kind, functools.partial(_new_values, kind))
        parents = {item.name: item.parent or "main" for item in model.defaults}
        for item in model.defaults:
            for kind in DEFAULT_KINDS:
                if item.get(kind) is None:
                    continue
                if item.name == "main":
                    inherited = functools.partial(_class_defaults, kind)
                else:
                    inherited = functools.partial(self._parent_class_value, root, parents[item.name], kind)
                self.add(getattr(item, kind), kind, inherited, classed=True)  # (its parent's refs)

    def _parent_class_value(self, root, parent: str, kind: str) -> dict:
        found = self._class_value(root, parent, kind)
        return found if found is not None else _class_defaults(kind)

    def rewrite(self) -> int:
        for group, kind, raw in self.plans:
            _rewrite(group, kind, raw)
        return len(self.plans)


def _asset_roots(roots) -> dict[int, object]:
    """{as_pointer() of an asset: the model root listing it}."""
    found = {}
    for root in roots:
        for entry in root.mujoco.model.assets:
            if entry.block is not None:
                found.setdefault(entry.block.as_pointer(), root)
    return found


def migrate_data(data) -> int:
    objects = [o for o in data.objects if _is_element(o)]
    roots = [o for o in objects if o.mujoco.kind == "MODEL"]
    assets = [b for collection in (data.meshes, data.materials, data.images) for b in collection
              if _is_element(b)]
    return _migrate(objects, assets, _asset_roots(roots))


def migrate_root(root) -> int:
    if not _local(root):
        return 0
    objects = [root] + [o for o in root.children_recursive if _is_element(o)]
    assets = [entry.block for entry in root.mujoco.model.assets
              if entry.block is not None and _is_element(entry.block)]
    return _migrate(objects, assets, _asset_roots([root]))


def _migrate(objects, assets, asset_roots) -> int:
    walk = _Walk()
    for obj in objects:
        walk.element(obj, _root_of(obj))
    for block in assets:
        walk.element(block, asset_roots.get(block.as_pointer()))
    return walk.rewrite()

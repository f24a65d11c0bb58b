"""Reading and writing one attribute's value on a Blender property group.

Values here are in MuJoCo's terms: doubles, ints, enum values as ints, flag
sets as bit masks, references as element names. `spec_io` moves them between
`Mjs*` elements and property groups; this module hides how each type is kept.

Storage (format 2, stored_keys.FORMAT): a group stores only the attributes it
sets itself; the presence of an attribute's key IS its ownership. Everything
else reads what the group inherits (components/inherit.py: the class chain,
then MuJoCo's defaults), through the `get` of the attribute's bpy property.

Precision (see ARCHITECTURE.md): `bpy.props` floats are 32-bit, MuJoCo works in
doubles. A float attribute (float, float32, int64) is stored as its exact
doubles, one raw ID property under the property's own name; Blender shows them
as float32. An edit (the property's `set`, `float_set`) keeps each double whose
float32 is what the field holds (an untouched component of an edited vector,
a value typed again) and otherwise stores the shortest decimal of the float32
typed (0.1 gives 0.1, not 0.10000000149011612); an infinity or anything beyond
Blender's largest float is stored as +-FLT_MAX, as Blender's own float
properties clamp it (UnkeptNumber: no file keeps that edit).

Other raw ID properties, all named with a leading underscore so Blender's
Custom Properties panel leaves them out:
    `_ref`        the authored name of each reference, kept so that a
                  reference whose target was deleted can still be named
    `_class_refs` references shown from the element's class (bpy pointers
                  cannot be computed: a class's reference is copied, and
                  this says it is not the element's own)
    `_<prop>`     variable-length arrays (exact doubles / int32 / bytes)
"""

from __future__ import annotations

import math
from array import array
from typing import Any, Callable

import numpy as np

from ..engine.errors import MJBlendError
from .schema import (GROUP_PREFIX, KINDS, NESTED_VECTOR_TYPES, NUMERIC, VECTOR_TYPES, Attr, enum_ident,
                     enum_items, enum_value)

from .stored_keys import CLASS_REFS, EXACT, LENGTHS_SUFFIX, OWN, REF  # noqa: F401  (values.REF, ...)

# find(kind, name) -> Blender ID or None (kind None: unknown); name_of(id) -> MJCF name;
# on_missing(attr, name) is called for a reference whose target is gone.
Find = Callable[[Any, str], Any]
NameOf = Callable[[Any], str]

FLT_MAX = float(np.finfo(np.float32).max)


def shortest_float32(x: float) -> float:
    """The shortest decimal that reads back as the same float32, as a double."""
    return float(str(np.float32(x)))


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _store(group, key: str) -> Any:
    if key not in group:
        group[key] = {}
    return group[key]


def _raw(group, key: str, attr: Attr | None = None):
    """The group's own raw value of `key` (of `attr`), else the one it inherits (None:
    neither)."""
    found = group.get(key)
    if found is not None:
        return found
    from . import inherit
    kind = _ATTR_KINDS.get(id(attr)) if attr is not None else None
    return inherit.inherited(group, kind or kind_of(group)).get(key)


# id(attr) -> the kind it belongs to (a kind's attribute may live in another group: the
# simulation's option overrides)
_ATTR_KINDS = {id(attr): name for name, entry in KINDS.items() for attr in entry.attrs}


# ------------------------------------------------------------------ floats


def float32s(doubles) -> list[float]:
    """Each double as the float32 Blender holds (overflow: +-inf; NaN stays NaN)."""
    return array("f", doubles).tolist()


def shown(doubles) -> list[float]:
    """What a float property shows of each double: its float32, clamped to +-FLT_MAX as
    Blender's own float properties hold an infinity (NaN stays NaN)."""
    out = array("f", doubles).tolist()
    if math.inf in out or -math.inf in out:
        out = [min(max(v, -FLT_MAX), FLT_MAX) for v in out]
    return out


def edited_doubles(current, typed) -> list[float]:
    """What a float property's `set` stores: per value, the current double where what
    the property shows of it (`shown`) is what was typed (kept exact: an untouched
    component of an edited vector, a value typed again, a file's infinity), else the
    shortest decimal of what was typed; an infinity or a value at +-FLT_MAX (what
    Blender keeps of anything beyond) as +-FLT_MAX exactly, which the scan refuses
    (UnkeptNumber)."""
    typed = [float(v) for v in typed]
    now = shown(typed)
    held = shown(current) if current is not None and len(current) == len(typed) else None
    out = []
    for i, v32 in enumerate(now):
        if held is not None and (held[i] == v32 or (held[i] != held[i] and v32 != v32)):
            out.append(float(current[i]))
        elif v32 != v32:
            out.append(v32)
        elif v32 >= FLT_MAX or v32 <= -FLT_MAX:
            out.append(math.copysign(FLT_MAX, v32))
        else:
            out.append(float(str(np.float32(v32))))
    return out


def write_float(group, attr: Attr, value) -> None:
    """Store the exact doubles of a float attribute (the element now sets it)."""
    if isinstance(value, float):
        doubles = [value]
    elif isinstance(value, (tuple, list)):  # what spec_io reads: flat
        doubles = [float(v) for v in value]
    else:
        doubles = [float(v) for v in np.ravel(value)]
    group[attr.prop] = doubles if attr.is_vector else doubles[0]


def float_doubles(group, attr: Attr) -> list[float] | None:
    """The doubles a float attribute stands for (own or inherited), as a list."""
    stored = _raw(group, attr.prop, attr)
    if stored is None:
        return None
    return [float(stored)] if isinstance(stored, (float, int)) else [float(v) for v in stored]


def read_float(group, attr: Attr):
    if group.get(EXACT) is not None:  # format 1, linked from a library (not migrated: read-only)
        from .format1 import read_format1
        return read_format1(group, attr)
    out = float_doubles(group, attr)
    if out is None:  # nothing stored nor inherited: the property's own default
        current = getattr(group, attr.prop)
        out = [float(v) for v in current] if attr.is_vector else [float(current)]
    if attr.type == "int64":
        out = [int(round(v)) for v in out]
    return tuple(out) if attr.is_vector else out[0]


class UnkeptNumber(MJBlendError, ValueError):
    """A float attribute holds a number no MJCF file or simulation keeps as it is:
    NaN (MuJoCo's writer leaves the attribute out, its simulation gives NaN), or an
    edit at Blender's largest float, +-3.4e38, which is what Blender keeps of an
    infinity or of anything larger typed into a field (so not what the user typed).
    An infinity the imported file held is MuJoCo's own value and is kept."""

    def __init__(self, group, attr: Attr, index: int, value: float):
        self.group, self.attr, self.index, self.value = group, attr, index, value
        which = attr.xml or attr.name
        if attr.is_vector:
            which += f" (value {index + 1} of {attr.size})"
        cause = "is not a number (NaN)" if value != value else \
            "is infinite or beyond +-3.4e38, the largest number Blender keeps (it holds " \
            "3.4e38 instead): type a finite value"
        super().__init__(f"{which} {cause}")


# per attribute (by id: the schema's are made once), which of its values may be NaN,
# MuJoCo's "not set" (a body's ipos, a geom's fromto and mass, ...): where its default has one
_UNSET_NAN: dict[int, tuple] = {}


def _unset_nan(attr: Attr) -> tuple:
    found = _UNSET_NAN.get(id(attr))
    if found is None:
        default = attr.default if isinstance(attr.default, (tuple, list)) else (attr.default,)
        found = _UNSET_NAN[id(attr)] = tuple(isinstance(v, float) and v != v for v in default)
    return found


def check_kept(group, attr: Attr, values_) -> None:
    """UnkeptNumber for the first of `values_` (an attribute's doubles) that an MJCF
    file or a simulation would not keep: NaN where MuJoCo has no "unset" NaN, and
    +-FLT_MAX exactly, what an edit beyond Blender's largest float stores
    (`edited_doubles`; a file's infinity is kept as it is). A file that writes
    exactly 3.4028234663852886e+38 is refused as well: the stored double cannot say
    where it came from (format 1 could, from its read-back; no corpus model has one)."""
    unset = _unset_nan(attr)
    for i, v in enumerate(values_):
        if v != v:
            if not (i < len(unset) and unset[i]):
                raise UnkeptNumber(group, attr, i, v)
        elif v == FLT_MAX or v == -FLT_MAX:
            raise UnkeptNumber(group, attr, i, v)


def scan_float(group, attr: Attr, stored):
    """A float attribute's value for the scan from its raw `stored` doubles (a float
    or an ID-property array), as a double or a list; UnkeptNumber (`check_kept`)
    for NaN or an edit to +-3.4e38."""
    if attr.is_vector:
        out = stored.to_list() if hasattr(stored, "to_list") else [float(v) for v in stored]
        total = sum(out)
        if total - total != 0.0 or FLT_MAX in out or -FLT_MAX in out:
            check_kept(group, attr, out)
        if attr.type == "int64":
            out = [int(round(v)) for v in out]
        return out
    out = float(stored)
    if out - out != 0.0 or out == FLT_MAX or out == -FLT_MAX:
        check_kept(group, attr, [out])
    return int(round(out)) if attr.type == "int64" else out


# ------------------------------------------------------------- references


def default_name_of(id_block) -> str:
    props = getattr(id_block, "mujoco", None)
    return (props.name if props is not None else "") or id_block.name


def write_ref(group, attr: Attr, name: str, find: Find | None, kind: str | None = None) -> None:
    """Point at the element `name` of `kind` (see schema.referenced_kind)."""
    if attr.ref == "default":
        setattr(group, attr.prop, name or "")
        return
    target = find(kind, name) if (find and name) else None
    setattr(group, attr.prop, target)  # its update callback clears _ref
    if name:
        _store(group, REF)[attr.prop] = name


def read_ref(group, attr: Attr, name_of: NameOf = default_name_of,
             on_missing: Callable[[Attr, str], None] | None = None) -> str:
    if attr.ref == "default":
        return getattr(group, attr.prop)
    target = getattr(group, attr.prop)
    if target is not None:
        return name_of(target)
    authored = group.get(REF, {}).get(attr.prop, "")
    if authored and on_missing is not None:
        on_missing(attr, authored)
    return authored


def forget_ref(group, prop: str) -> None:
    """Called when the user sets a reference: the authored name no longer applies."""
    refs = group.get(REF)
    if refs is not None and prop in refs:
        del refs[prop]


def write_refvec(collection, attr: Attr, names, find: Find | None, kinds=None) -> None:
    """`kinds`: the kind of each name (one kind for all, or a list)."""
    collection.clear()
    for i, name in enumerate(names):
        kind = kinds[i] if isinstance(kinds, (list, tuple)) else kinds
        item = collection.add()
        item.target = find(kind, name) if (find and name) else None
        item.authored = name or ""


def read_refvec(collection, attr: Attr, name_of: NameOf = default_name_of,
                on_missing: Callable[[Attr, str], None] | None = None) -> list[str]:
    names = []
    for item in collection:
        if item.target is not None:
            names.append(name_of(item.target))
            continue
        if item.authored and on_missing is not None:
            on_missing(attr, item.authored)
        names.append(item.authored)
    return names


# ------------------------------------------------------ variable-length data


def vector_key(attr: Attr) -> str:
    return "_" + attr.prop


def write_vector(group, attr: Attr, value) -> None:
    key = vector_key(attr)
    if attr.type == "bytes":
        group[key] = bytes(value or b"")
    elif attr.type == "intvec":
        group[key] = [int(v) for v in np.ravel(value if value is not None else [])]
    else:  # floatvec, float32vec: float32 values are exact as doubles
        group[key] = [float(v) for v in np.ravel(value if value is not None else [])]


def read_vector(group, attr: Attr):
    stored = _raw(group, vector_key(attr), attr)
    if attr.type == "bytes":
        return bytes(stored) if stored is not None else b""
    if stored is None:
        return []
    return [int(v) for v in stored] if attr.type == "intvec" else [float(v) for v in stored]


def write_nested_vector(group, attr: Attr, rows) -> None:
    key = vector_key(attr)
    rows = [list(r) for r in (rows or [])]
    cast = int if attr.type == "intvecvec" else float
    group[key] = [cast(v) for r in rows for v in r]
    group[key + LENGTHS_SUFFIX] = [len(r) for r in rows]


def read_nested_vector(group, attr: Attr):
    key = vector_key(attr)
    if group.get(key) is not None:
        flat, lengths = list(group.get(key, [])), list(group.get(key + LENGTHS_SUFFIX, []))
    else:
        flat = list(_raw(group, key, attr) or [])
        lengths = list(_raw(group, key + LENGTHS_SUFFIX, attr) or [])
    rows, start = [], 0
    for n in lengths:
        rows.append(flat[start:start + n])
        start += n
    return rows


def vector_text(group, attr: Attr) -> str:
    """The array as MJCF writes it: space-separated numbers."""
    return " ".join(repr(v) for v in read_vector(group, attr)) if attr.type != "bytes" else ""


def set_vector_text(group, attr: Attr, text: str) -> None:
    cast = int if attr.type == "intvec" else float
    numbers = []
    for part in text.replace(",", " ").split():
        try:
            numbers.append(cast(part))
        except ValueError:
            kind = "an integer" if cast is int else "a number"
            raise ValueError(f"{attr.label}: {part!r} is not {kind}; "
                             "write values separated by spaces, as in MJCF") from None
    write_vector(group, attr, numbers)


# ------------------------------------------------------------------ others


def write_enum(group, attr: Attr, value) -> None:
    setattr(group, attr.prop, enum_ident(attr.enum, int(value)))


def read_enum(group, attr: Attr) -> int:
    return enum_value(attr.enum, getattr(group, attr.prop))


def write_flags(group, attr: Attr, mask) -> None:
    from .schema import enum_items

    mask = int(mask)
    setattr(group, attr.prop, {i for i, _, v, _ in enum_items(attr.enum) if mask & v})


def read_flags(group, attr: Attr) -> int:
    mask = 0
    for ident in getattr(group, attr.prop):
        mask |= enum_value(attr.enum, ident)
    return mask


def write_keyvalues(group, attr: Attr, mapping) -> None:
    group[vector_key(attr)] = {str(k): str(v) for k, v in dict(mapping or {}).items()}


def read_keyvalues(group, attr: Attr) -> dict:
    stored = _raw(group, vector_key(attr), attr)
    return {str(k): str(v) for k, v in stored.items()} if stored is not None else {}


# ------------------------------------------------------------ own / class


def kind_of(group) -> str:
    """The element kind a property group holds ("geom", "option", ...)."""
    return group.bl_rna.identifier.removeprefix(GROUP_PREFIX)


_OWN_KEYS: dict[str, tuple[dict, frozenset, frozenset]] = {}


def _own_keys(kind: str) -> tuple[dict, frozenset, frozenset]:
    """({raw key: attribute name}, the keys of references, the keys of collections) of a kind."""
    found = _OWN_KEYS.get(kind)
    if found is None:
        names, refs, lists = {}, set(), set()
        entry = KINDS.get(kind)
        for attr in (entry.editable if entry is not None else ()):
            t = attr.type
            if t in VECTOR_TYPES or t in NESTED_VECTOR_TYPES or t == "keyvalues":
                names[vector_key(attr)] = attr.name
            else:
                names[attr.prop] = attr.name
                if t == "ref" and attr.ref != "default":
                    refs.add(attr.prop)
                elif t in ("refvec", "stringvec"):
                    lists.add(attr.prop)
        found = _OWN_KEYS[kind] = (names, frozenset(refs), frozenset(lists))
    return found


def own(group, kind: str | None = None) -> set[str]:
    """Attribute names the group sets itself (the rest come from its class, or are
    MuJoCo's defaults): those it stores, less references shown from its class
    (`_class_refs`) and empty lists; plus references whose target is gone (`_ref`)."""
    recorded = group.get(OWN)
    if recorded is not None:  # a format-1 group that could not be migrated (linked from a library)
        return set(recorded.keys())
    names, refs, lists = _own_keys(kind or kind_of(group))
    keys = group.keys()
    out = {names[k] for k in keys if k in names}
    if refs or lists:
        shown = group.get(CLASS_REFS)
        for prop in refs:
            if prop in names and names[prop] in out and shown is not None and prop in shown:
                out.discard(names[prop])
        authored = group.get(REF)
        if authored is not None:
            for prop in authored.keys():  # (not to_dict(): ~8 us a group)
                if prop in names and authored[prop]:
                    out.add(names[prop])
        for prop in lists:  # (a list of empty slots, MuJoCo's default, is not set)
            if names[prop] in out and not any(map(_filled, group[prop])):
                out.discard(names[prop])
    return out


def _filled(item) -> bool:
    """A list item (a reference's target / authored name, a string) that says something."""
    return bool(item.get("target") or item.get("authored") or item.get("value"))


def recorded_own(group, kind: str | None = None) -> frozenset[str]:
    """`own`, as a frozenset (kept for callers that cache it)."""
    return frozenset(own(group, kind))


def drop(group, attr: Attr) -> None:
    """The group no longer sets `attr` itself: it reads its class's (or MuJoCo's) value."""
    for key in (attr.prop, vector_key(attr), vector_key(attr) + LENGTHS_SUFFIX):
        if key in group:
            del group[key]
    for store in (REF, CLASS_REFS):
        stored = group.get(store)
        if stored is not None and attr.prop in stored:
            del stored[attr.prop]


def own_ref(group, prop: str) -> None:
    """A reference set on the group itself: no longer the one its class shows."""
    shown = group.get(CLASS_REFS)
    if shown is not None and prop in shown:
        del shown[prop]


def show_class_ref(group, prop: str, target) -> None:
    """Copy a reference the element's class sets (the element does not set it)."""
    group[prop] = target
    _store(group, CLASS_REFS)[prop] = 1


# ------------------------------------------------------------ bulk writes
#
# A bulk writer (the importer, inside `changes.quiet()`) gives a fresh group all its
# attributes at once: `raw_entries` says what the write_* functions above would store
# (the same ID properties, values and types as those the bpy properties keep), and
# `write_raw` stores it with one ID-property write per key, skipping the per-attribute
# bpy setter and its update callback (~10 us each). tests/test_spec_io.py checks both
# ways store the same.

_MERGED = (REF, CLASS_REFS)  # stores keyed by property: a partial write merges into them


_ENUM_INDEX: dict[str, dict[int, int]] = {}


def _enum_index(enum: str) -> dict[int, int]:
    """{value: index} of a MuJoCo enum: a bpy enum property stores the item's index."""
    found = _ENUM_INDEX.get(enum)
    if found is None:
        found = _ENUM_INDEX[enum] = {v: i for i, (_, _, v, _) in enumerate(enum_items(enum))}
    return found


def raw_entries(out: dict, attr: Attr, value, target=None) -> bool:
    """Add to `out` (a group's ID properties, as a dict) what writing `value` to `attr`
    stores; `target` is the datablock a reference names (found by the caller). None
    marks a key to remove. False for the collection types (refvec, stringvec), which
    only their write functions fill."""
    t, prop = attr.type, attr.prop
    if t in NUMERIC:
        if isinstance(value, float):
            out[prop] = [value] if attr.is_vector else value
        else:
            doubles = [float(v) for v in (value if isinstance(value, (tuple, list)) else np.ravel(value))]
            out[prop] = doubles if attr.is_vector else doubles[0]
    elif t == "int":
        out[prop] = [int(v) for v in value] if attr.is_vector else int(value)
    elif t == "bool":
        out[prop] = [int(bool(v)) for v in value] if attr.is_vector else int(bool(value))
    elif t == "string":
        out[prop] = value[:attr.size] if attr.size else value  # a char array's maxlen
    elif t == "enum":
        out[prop] = _enum_index(attr.enum)[int(value)]
    elif t == "flags":
        out[prop] = sum(v for _, _, v, _ in enum_items(attr.enum) if int(value) & v)
    elif t == "ref":
        if attr.ref == "default":
            out[prop] = value or ""
        else:
            out[prop] = target
            out.setdefault(REF, {})[prop] = value or None
    elif t in VECTOR_TYPES or t in NESTED_VECTOR_TYPES or t == "keyvalues":
        scratch: dict = {}  # the write functions only store keys: let them write a dict
        {"intvecvec": write_nested_vector, "float32vecvec": write_nested_vector,
         "keyvalues": write_keyvalues}.get(t, write_vector)(scratch, attr, value)
        out.update(scratch)
    else:
        return False
    return True


def write_raw(group, raw: dict) -> None:
    """Store `raw_entries` output in `group`: one ID-property write per key."""
    present = set(group.keys())
    for key, value in raw.items():
        if key in _MERGED:
            store = group[key] if key in present else None
            for prop, item in value.items():
                if item is not None:
                    if store is None:
                        group[key] = {}
                        store = group[key]
                    store[prop] = item
                elif store is not None and prop in store:
                    del store[prop]
            continue
        if key in present and (value is None or isinstance(value, dict)):
            del group[key]  # a group is replaced, not merged
        if value is not None:
            group[key] = value

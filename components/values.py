"""Reading and writing one attribute's value on a Blender property group.

Values here are in MuJoCo's terms: doubles, ints, enum values as ints, flag
sets as bit masks, references as element names. `spec_io` moves them between
`Mjs*` elements and property groups; this module hides how each type is kept.

Precision (see ARCHITECTURE.md): `bpy.props` floats are 32-bit, MuJoCo works
in doubles. Each float attribute therefore also keeps, as raw ID properties,
the exact double it was given (`_exact`) and what the property read back right
after (`_seen`). While the property still reads back the same, the exact
double is the value; once the user edits it, the value is the shortest decimal
of the float32 they set (typing 0.1 gives 0.1, not 0.10000000149011612).
Comparing against the read-back, not a recomputed float32, also covers what
Blender clamps (1e300 becomes FLT_MAX) and NaN, MuJoCo's "not set" marker.

Other raw ID properties, all named with a leading underscore so Blender's
Custom Properties panel leaves them out:
    `_own`       the attributes the element sets itself (not from its class)
    `_ref`       the authored name of each reference, kept so that a
                 reference whose target was deleted can still be named
    `_<prop>`    variable-length arrays (exact doubles / int32 / bytes)
"""

from __future__ import annotations

import math
from array import array
from typing import Any, Callable

import numpy as np

from ..engine.errors import MJBlendError
from .schema import (GROUP_PREFIX, KINDS, NESTED_VECTOR_TYPES, NUMERIC, VECTOR_TYPES, Attr, enum_ident,
                     enum_items, enum_value)

from .stored_keys import EXACT, LENGTHS_SUFFIX, OWN, REF, SEEN  # noqa: F401  (values.OWN, ...)

# find(kind, name) -> Blender ID or None (kind None: unknown); name_of(id) -> MJCF name;
# on_missing(attr, name) is called for a reference whose target is gone.
Find = Callable[[Any, str], Any]
NameOf = Callable[[Any], str]


def shortest_float32(x: float) -> float:
    """The shortest decimal that reads back as the same float32, as a double."""
    return float(str(np.float32(x)))


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _store(group, key: str) -> Any:
    if key not in group:
        group[key] = {}
    return group[key]


# ------------------------------------------------------------------ floats


def write_float(group, attr: Attr, value) -> None:
    if isinstance(value, float):
        values = [float(value)]
    elif isinstance(value, tuple):  # what spec_io reads: flat
        values = [float(v) for v in value]
    else:
        values = [float(v) for v in np.ravel(value)]
    setattr(group, attr.prop, values if attr.is_vector else values[0])
    seen = getattr(group, attr.prop)
    _store(group, EXACT)[attr.prop] = values
    _store(group, SEEN)[attr.prop] = list(seen) if attr.is_vector else [seen]


def _float_values(group, attr: Attr) -> tuple[list, list]:
    """(the doubles a float attribute stands for, which of them were edited since
    they were stored exactly: Blender's float32 as its shortest decimal)."""
    current = getattr(group, attr.prop)
    current = list(current) if attr.is_vector else [current]
    exact = group.get(EXACT, {}).get(attr.prop)
    seen = group.get(SEEN, {}).get(attr.prop)
    out, edited = [], []
    for i, cur in enumerate(current):
        kept = exact is not None and seen is not None and i < len(seen) and _same(cur, seen[i])
        out.append(exact[i] if kept else shortest_float32(cur))
        edited.append(not kept)
    return out, edited


def read_float(group, attr: Attr):
    out, _edited = _float_values(group, attr)
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


def check_kept(group, attr: Attr, values_, edited=()) -> None:
    """UnkeptNumber for the first of `values_` (an attribute's doubles) that an MJCF
    file or a simulation would not keep; `edited`: which came from a Blender edit."""
    unset = _unset_nan(attr)
    for i, v in enumerate(values_):
        if v != v:
            if not (i < len(unset) and unset[i]):
                raise UnkeptNumber(group, attr, i, v)
        elif i < len(edited) and edited[i] and not -FLT_MAX < v < FLT_MAX:
            raise UnkeptNumber(group, attr, i, v)


def read_float_with(group, attr: Attr, exact_all, seen_all):
    """`read_float` for the scan, given the group's `_exact` and `_seen` stores (read
    once per group by a caller copying many attributes). The common case, a value
    that still reads back what was stored, costs one property read, three slices and
    a sum. Raises UnkeptNumber (`check_kept`) for NaN or an edit to +-3.4e38."""
    current = getattr(group, attr.prop)
    if exact_all is not None and seen_all is not None and attr.type != "int64":
        exact, seen = exact_all.get(attr.prop), seen_all.get(attr.prop)
        if exact is not None and seen is not None:
            seen = seen[:]  # tuples, all three: the cheapest copies of these arrays
            now = current[:] if attr.is_vector else (current,)
            # tuple equality: same length; NaN (never equal to itself) compared apart
            if (now == seen or _same_list(now, seen)) and len(exact) == len(seen):
                out = exact[:]
                total = sum(out)  # not finite: some value is NaN or infinite (or they overflow)
                if total - total != 0.0:
                    check_kept(group, attr, out)
                return out if attr.is_vector else out[0]
    out, edited = _float_values(group, attr)
    total = sum(out)
    if total - total != 0.0 or not -FLT_MAX < total < FLT_MAX:
        check_kept(group, attr, out, edited)
    if attr.type == "int64":
        out = [int(round(v)) for v in out]
    return tuple(out) if attr.is_vector else out[0]


def _same_list(a, b) -> bool:
    return len(a) == len(b) and all(map(_same, a, b))


def is_edited(group, attr: Attr) -> bool:
    """True once a float attribute no longer holds the exact value it was given."""
    seen = group.get(SEEN, {}).get(attr.prop)
    current = getattr(group, attr.prop)
    current = list(current) if attr.is_vector else [current]
    return seen is None or not all(_same(a, b) for a, b in zip(current, seen, strict=False))


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
    stored = group.get(vector_key(attr))
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
    flat, lengths = list(group.get(key, [])), list(group.get(key + LENGTHS_SUFFIX, []))
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
    stored = group.get(vector_key(attr))
    return {str(k): str(v) for k, v in stored.items()} if stored is not None else {}


# ------------------------------------------------------------ own / class


def own(group) -> set[str]:
    """Attribute names the element sets itself (the rest come from its class)."""
    return set(group.get(OWN, {}).keys())


def set_own(group, names) -> None:
    group[OWN] = {str(n): 1 for n in names}


def mark_own(group, name: str) -> None:
    """The element now sets `name` itself (an edit). A group with no record yet
    starts one with every attribute it already stores: a model saved before the
    import recorded `own` for every kind stores all its values, and the scan, which
    reads only a group's own attributes, must not lose them after an edit."""
    own_ = group.get(OWN)
    if own_ is None:
        group[OWN] = {**dict.fromkeys(_stored_names(group), 1), name: 1}
    else:
        own_[name] = 1


def kind_of(group) -> str:
    """The element kind a property group holds ("geom", "option", ...)."""
    return group.bl_rna.identifier.removeprefix(GROUP_PREFIX)


def _stored_names(group) -> list[str]:
    """Names of the attributes a group stores a value for (the rest read their defaults)."""
    kind = KINDS.get(kind_of(group))
    if kind is None:
        return []
    keys = set(group.keys())
    return [attr.name for attr in kind.editable if attr.prop in keys or "_" + attr.prop in keys]


def recorded_own(group) -> frozenset[str] | None:
    """`own`, or None where the group records no own set (then it sets everything)."""
    own_ = group.get(OWN)
    return frozenset(own_.keys()) if own_ is not None else None


def has_own(group) -> bool:
    """True when the group records which attributes it sets (imports and edits do)."""
    return group.get(OWN) is not None


# ------------------------------------------------------------ bulk writes
#
# A bulk writer (the importer, inside `changes.quiet()`) gives a fresh group all its
# attributes at once: `raw_entries` says what the write_* functions above would store
# (the same ID properties, values and types as those the bpy properties keep), and
# `write_raw` stores it with one ID-property write per key, skipping the per-attribute
# bpy setter and its update callback (~10 us each). tests/test_spec_io.py checks both
# ways store the same.

FLT_MAX = float(np.finfo(np.float32).max)
_MERGED = (EXACT, SEEN, REF)  # stores keyed by property: a partial write merges into them


def float32_readback(doubles: list[float]) -> list[float]:
    """What a bpy float property reads back after being set to `doubles`: clamped to
    +-FLT_MAX, as Blender clamps, and rounded to float32 (NaN stays NaN)."""
    seen = array("f", doubles).tolist()
    if math.inf in seen or -math.inf in seen:  # infinite or beyond float32: Blender clamps
        seen = array("f", [min(max(v, -FLT_MAX), FLT_MAX) for v in doubles]).tolist()
    return seen


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
            doubles = [value]
        else:
            doubles = [float(v) for v in (value if isinstance(value, (tuple, list)) else np.ravel(value))]
        seen = float32_readback(doubles)
        out[prop] = seen if attr.is_vector else seen[0]
        out.setdefault(EXACT, {})[prop] = doubles
        out.setdefault(SEEN, {})[prop] = seen
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

"""Generic copy between `Mjs*` elements and MJBlend property groups.

Driven entirely by the schema table: no per-attribute code. Spatial
attributes (pos, quat, alt, fromto, axis, dir) are the Blender transform's
business; `read_pose` / `write_stored_pose` keep their exact authored values so that
an untouched element round-trips bit for bit (ARCHITECTURE.md, Precision).

    element_to_props(geom_spec, obj.mujoco.geom, "geom", find=...)
    props_to_element(obj.mujoco.geom, geom_spec, "geom", name_of=...)
"""

from __future__ import annotations

import functools
import operator
import struct
from typing import Any, Callable

import mujoco
import numpy as np

from . import changes, inherit, values
from .stored_keys import POSE  # noqa: F401  (spec_io.POSE)
from .schema import (KINDS, NESTED_VECTOR_TYPES, NUMERIC, SPATIAL_KINDS, VECTOR_TYPES, Attr, Kind,
                     enum_ident, enum_items, referenced_kind, selector_fields)



def _resolve(obj: Any, name: str) -> tuple[Any, str]:
    """(owner, leaf attribute) of a dotted python attribute path."""
    *parents, leaf = name.split(".")
    for part in parents:
        obj = getattr(obj, "global_" if part == "global" else part)
    return obj, leaf


def get_attr(element: Any, attr: Attr):
    if "." not in attr.name:
        return getattr(element, attr.name)
    owner, leaf = _resolve(element, attr.name)
    return getattr(owner, leaf)


def set_attr(element: Any, attr: Attr, value) -> None:
    owner, leaf = (element, attr.name) if "." not in attr.name else _resolve(element, attr.name)
    if attr.type in ("enum", "flags"):
        value = _enum_cast(owner, leaf)(int(value))
    elif attr.type == "string" and attr.size:
        value = str(value)
    setattr(owner, leaf, value)


# ------------------------------------------------------------- conversions


def from_mujoco(attr: Attr, raw):
    """A value read from an Mjs element, in the plain form values.py stores."""
    t = attr.type
    if raw is None and t in NUMERIC:  # a wrap's coef / divisor where its type has none
        raw = attr.default if attr.default is not None else 0.0
    if t in NUMERIC or t == "int":
        cast = int if t == "int" else float
        if not attr.is_vector:
            return cast(raw)
        if isinstance(raw, np.ndarray):
            return tuple(raw.astype(float if cast is float else int).ravel().tolist())
        return tuple(cast(v) for v in np.ravel(raw))
    if t == "bool":
        return bool(raw)
    if t in ("enum", "flags"):
        return int(raw)
    if t == "string":
        if raw is None:
            return ""
        return raw if isinstance(raw, str) else "".join(_items(raw))  # a char array
    if t == "ref":
        return "" if raw is None else str(getattr(raw, "name", raw))
    if t in ("refvec", "stringvec"):
        return [str(v) for v in _items(raw)]
    if t in VECTOR_TYPES:
        return bytes(raw) if t == "bytes" else _items(raw)
    if t in NESTED_VECTOR_TYPES:
        return [list(row) for row in raw]
    if t == "keyvalues":
        return dict(raw)
    raise TypeError(f"{attr.name}: unknown type {t}")


def _reader(attr: Attr) -> Callable[[Any], Any]:
    """element -> `from_mujoco(attr, get_attr(element, attr))`, with the type
    tests done once: the common types convert directly."""
    *parents, leaf = attr.name.split(".")
    get = operator.attrgetter(".".join(["global_" if p == "global" else p for p in parents] + [leaf]))
    t = attr.type

    def generic(element):
        return from_mujoco(attr, get(element))

    if t in NUMERIC or t == "int":
        cast = int if t == "int" else float
        if not attr.is_vector:
            def scalar(element):
                raw = get(element)
                return cast(raw) if raw is not None else from_mujoco(attr, raw)
            return scalar
        dtype_kind = "i" if cast is int else "f"

        def vector(element):
            raw = get(element)
            if isinstance(raw, np.ndarray) and raw.ndim == 1 and raw.dtype.kind == dtype_kind:
                return tuple(raw.tolist())  # tolist gives python ints / floats
            return from_mujoco(attr, raw)
        return vector
    if t == "bool":
        return lambda element: bool(get(element))
    if t in ("enum", "flags"):
        return lambda element: int(get(element))
    return generic


def readers(kind: str | Kind) -> tuple[tuple[Attr, Callable[[Any], Any]], ...]:
    """((attr, read), ...) for every attribute of a kind (see `_reader`)."""
    return _readers_of(_kind_name(kind))


@functools.cache  # an import reads tens of thousands of attributes: made once per kind
def _readers_of(kind_name: str) -> tuple[tuple[Attr, Callable[[Any], Any]], ...]:
    return tuple((attr, _reader(attr)) for attr in KINDS[kind_name].attrs)


@functools.cache
def _spatial_readers(kind_name: str) -> tuple[tuple[Attr, Callable[[Any], Any]], ...]:
    """`readers` of a kind's spatial attributes only (its pose)."""
    return tuple((attr, read) for attr, read in _readers_of(kind_name) if attr.spatial)


def _items(vector) -> list:
    """The items of a binding vector. Indexing, not iteration: iterating an
    mj*Vec costs ~85 us even when it is empty, which adds up over a model."""
    return [vector[i] for i in range(len(vector))]


def to_mujoco(attr: Attr, value):
    """A stored value in the form the Mjs element's setter takes."""
    if attr.type in NUMERIC and attr.is_vector:
        return np.array(value, dtype=float)
    if attr.type == "int" and attr.is_vector:
        return np.array(value, dtype=int)
    return value


# ------------------------------------------------------------ group <-> value


def read_value(group, attr: Attr, name_of=values.default_name_of,
               on_missing: Callable[[Attr, str], None] | None = None):
    t = attr.type
    if t in NUMERIC:
        return values.read_float(group, attr)
    if t in ("int", "bool", "string"):
        current = getattr(group, attr.prop)
        return tuple(current) if attr.is_vector else current
    if t == "enum":
        return values.read_enum(group, attr)
    if t == "flags":
        return values.read_flags(group, attr)
    if t == "ref":
        return values.read_ref(group, attr, name_of, on_missing)
    if t == "refvec":
        return values.read_refvec(getattr(group, attr.prop), attr, name_of, on_missing)
    if t == "stringvec":
        return [item.value for item in getattr(group, attr.prop)]
    if t in VECTOR_TYPES:
        return values.read_vector(group, attr)
    if t in NESTED_VECTOR_TYPES:
        return values.read_nested_vector(group, attr)
    if t == "keyvalues":
        return values.read_keyvalues(group, attr)
    raise TypeError(f"{attr.name}: unknown type {t}")


def write_value(group, attr: Attr, value, find: values.Find | None = None,
                element=None, kind: str | Kind | None = None) -> None:
    """Store `value` in `group`. `element`/`kind` say, for a reference chosen by
    one of the element's enums (an actuator's target), what kind it names."""
    t = attr.type
    if t in NUMERIC:
        values.write_float(group, attr, value)  # raw: exact (the property's `set` rounds)
    elif t in ("int", "bool", "string"):
        setattr(group, attr.prop, value)
    elif t == "enum":
        values.write_enum(group, attr, value)
    elif t == "flags":
        values.write_flags(group, attr, value)
    elif t == "ref":
        values.write_ref(group, attr, value, find, _target_kinds(attr, element, kind))
    elif t == "refvec":
        values.write_refvec(getattr(group, attr.prop), attr, value, find,
                            _target_kinds(attr, element, kind))
    elif t == "stringvec":
        collection = getattr(group, attr.prop)
        collection.clear()
        for text in value:
            collection.add().value = text
    elif t in VECTOR_TYPES:
        values.write_vector(group, attr, value)
    elif t in NESTED_VECTOR_TYPES:
        values.write_nested_vector(group, attr, value)
    elif t == "keyvalues":
        values.write_keyvalues(group, attr, value)
    else:
        raise TypeError(f"{attr.name}: unknown type {t}")
    if t in NUMERIC or t in VECTOR_TYPES or t in NESTED_VECTOR_TYPES or t == "keyvalues":
        _written_raw(group, attr)


def _written_raw(group, attr: Attr) -> None:
    """After a raw write (no bpy `set`, no `update`): what the property's update does."""
    holder = getattr(group.id_data, "mujoco", None)
    if holder is not None and holder.kind == "MODEL":
        inherit.forget()  # (a class's value: its members read it)
    if not changes.is_quiet():
        changes.property_updated(group, None)
        changes.edited(group, attr.name)


def _target_kinds(attr: Attr, element, kind):
    """Kind (or per-item kinds) a reference names, read off the element's selector enum."""
    if not attr.ref.startswith("@"):
        return attr.ref
    if element is None or kind is None:
        return None
    for field in selector_fields(attr):
        selector = _kind(kind).attr(field)
        raw = get_attr(element, selector)
        if selector.type == "intvec":  # a tuple's objtype: one mjtObj per item
            return [referenced_kind(attr, _ident("mjtObj", v)) for v in _items(raw)]
        found = referenced_kind(attr, _ident(selector.enum, raw))
        if found is not None:
            return found
    return None


def _ident(enum: str, value) -> str | None:
    try:
        return enum_ident(enum, int(value))
    except ValueError:
        return None


# ----------------------------------------------------------- element copies


def _kind(kind: str | Kind) -> Kind:
    return kind if isinstance(kind, Kind) else KINDS[kind]


def _kind_name(kind: str | Kind) -> str:
    """The key of the per-kind caches: a kind's name (hashing a Kind hashes all its attributes)."""
    return kind if isinstance(kind, str) else kind.name


def element_to_props(element, group, kind: str | Kind, find: values.Find | None = None,
                     only: set[str] | None = None, pose_start: dict | None = None) -> dict:
    """Copy the attributes of `element` (all, or the names in `only`) into
    `group`; its pose into `_pose`: every spatial value, or with `pose_start` (the
    pose a new element of its class holds, as `unless` takes it) only those that
    differ from it (no `_pose` if none does). Inside `changes.quiet()` (a bulk
    writer) the values are stored as raw ID properties at once (values.raw_entries).
    Returns {attribute name: value} of what it copied (as `values_of` gives them)."""
    k = _kind(kind)
    pose, copied = {}, {}
    raw = {} if changes.is_quiet() else None
    for attr, read in readers(k):
        if attr.spatial:
            value = read(element)
            if pose_start is not None and \
                    bits(list(value) if type(value) is tuple else value) == pose_start.get(attr.name):
                continue  # (the scan's new element holds it already: write_stored_pose)
            if attr.type in NUMERIC:  # the readers give floats and flat tuples
                value = [value] if isinstance(value, float) else \
                    list(value) if isinstance(value, tuple) else list(np.ravel(value))
            pose[attr.prop] = value
        elif only is None or attr.name in only:
            value = copied[attr.name] = read(element)
            if raw is None or not values.raw_entries(raw, attr, value,
                                                     target_of(attr, value, find, element, k)):
                write_value(group, attr, value, find, element, k)
    if raw:
        values.write_raw(group, raw)
    if pose:
        group[POSE] = pose
    return copied


def target_of(attr: Attr, name, find: values.Find | None, element, kind: str | Kind):
    """The datablock a reference attribute names (None for other attributes)."""
    if attr.type != "ref" or attr.ref == "default" or not (find and name):
        return None
    return find(_target_kinds(attr, element, kind), name)


def class_of(element):
    """The default class (MjsDefault) an element was made from; None for a kind
    without classes. mujoco 4.0.0 gives most kinds a `classname`, a tendon a
    `default()` method instead."""
    cls = getattr(element, "classname", None)
    if cls is None:
        default = getattr(element, "default", None)
        cls = default() if callable(default) else None
    return cls


def _takes_class(kind: str) -> bool:
    """True when the binding's element of `kind` has a default class (`class_of`)."""
    struct_name = KINDS[kind].struct
    mjs = getattr(mujoco, "M" + struct_name[1:], None) if struct_name.startswith("mjs") else None
    return mjs is not None and (hasattr(mjs, "classname") or callable(getattr(mjs, "default", None)))


# kinds whose elements take a default class (their add_* takes it first)
CLASS_KINDS = frozenset(kind for kind in KINDS if _takes_class(kind))


def new_element(kind: str):
    """A new element of `kind` in a new spec: MuJoCo's defaults."""
    spec = mujoco.MjSpec()
    if kind in SPATIAL_KINDS:
        return getattr(spec.worldbody.add_body(), "add_" + kind)()
    return getattr(spec, "add_" + kind)()


@functools.cache
def new_element_values(kind: str) -> dict:
    """`values_of` a new element of `kind`; made once per kind (shared: do not change it)."""
    return values_of(new_element(kind), kind)


@functools.cache
def new_element_pose(kind: str) -> dict:
    """`bits_of(pose_of(...))` a new element of `kind` (what `unless` and `pose_start`
    take); made once per kind (shared: do not change it)."""
    return bits_of(pose_of(new_element(kind), kind))


def values_of(element, kind: str | Kind) -> dict:
    """{attribute name: value} of every editable attribute of an element."""
    return {attr.name: read(element) for attr, read in readers(kind) if not attr.spatial}


def differing(element, other, kind: str | Kind) -> list[str]:
    """Names of the editable attributes whose values differ between two elements
    of one kind (an element and its default class, a class and its parent).
    Either may be given as its `values_of` instead."""
    mine = element if isinstance(element, dict) else values_of(element, kind)
    theirs = other if isinstance(other, dict) else values_of(other, kind)
    return [attr.name for attr in _kind(kind).editable  # `!=` first: most are equal
            if mine[attr.name] != theirs[attr.name] and not same_value(mine[attr.name],
                                                                         theirs[attr.name])]


def same_value(a, b) -> bool:
    """Equal values, NaN equal to NaN (MuJoCo's "unset" marker)."""
    if a == b:
        return True
    if isinstance(a, float) and isinstance(b, float):
        return a != a and b != b
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        return all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return False


def props_to_element(group, element, kind: str | Kind, name_of=values.default_name_of,
                     on_missing: Callable[[Attr, str], None] | None = None,
                     only: set[str] | None = None, unless: dict | None = None) -> None:
    """Copy the attributes held by `group` (all, or the names in `only`) onto `element`.
    `unless`: the values the element holds already (`bits_of(values_of(...))`, e.g. a
    new element's defaults); an attribute with that same value is not set.
    The scan's inner loop: see `_copy_steps`."""
    name = _kind_name(kind)
    if only is None:
        _copy_steps(group, element, _plan(name), name_of, on_missing, unless, name)
    elif only:
        _copy_steps(group, element, _subset(name, frozenset(only)), name_of, on_missing, unless, name)


# how _copy_steps copies an attribute of each type: inline, or read_value / set_attr
_FLOAT, _PLAIN, _ENUM, _REF, _OTHER = "float", "plain", "enum", "ref", "other"
_HOW = {"float": _FLOAT, "float32": _FLOAT, "int": _PLAIN, "bool": _PLAIN, "enum": _ENUM, "ref": _REF}


def _step(attr: Attr) -> tuple:
    """(attr, how, owner path or "", leaf) of one attribute."""
    head, _, leaf = attr.name.rpartition(".")
    return attr, _HOW.get(attr.type, _OTHER), head, leaf


@functools.cache
def _plan(kind_name: str) -> tuple:
    """The `_step` of every editable attribute of a kind."""
    return tuple(_step(attr) for attr in KINDS[kind_name].editable)


@functools.cache  # per set of names: the elements of a class mostly share one
def _subset(kind_name: str, only: frozenset[str]) -> tuple:
    """The `_step`s of the editable attributes of a kind named in `only`, in schema order."""
    return tuple(step for step in _plan(kind_name) if step[0].name in only)


def _copy_steps(group, element, steps, name_of=values.default_name_of, on_missing=None,
                unless=None, kind_name: str = "") -> None:
    """Copy a plan's steps (`_step`) from `group` onto `element`: the loop of
    props_to_element and props_to_settings, and spec_io's one hand-inlined fast path.

    The scan's time is mostly Python per attribute (tens of thousands on a large
    model), so the common types (floats, ints, bools, enums, references) are read
    from the group's raw ID properties (what it stores, else what it inherits:
    no bpy property read), compared with `unless` (`bits`) and set right here, on
    one branch of the step's `how`, instead of through read_value / bits / set_attr
    (a type dispatch and a call each per attribute). Every other type goes through
    them; either way the element gets the same values."""
    get = group.get
    if get(values.EXACT) is not None:  # format 1, linked from a library (not migrated): as format 1 read
        from .format1 import read_format1
        get = _Format1Reads(group, read_format1).get
    inherited = None  # what the group inherits, read when first needed
    owners = {}  # "ialt" -> element.ialt, resolved once
    for attr, how, head, leaf in steps:
        if how is _FLOAT or how is _PLAIN or how is _ENUM:
            stored = get(attr.prop)
            if stored is None:
                if inherited is None:
                    inherited = inherit.inherited(group, kind_name or values.kind_of(group))
                stored = inherited.get(attr.prop)
            if stored is None:
                value = read_value(group, attr, name_of, on_missing)
            elif how is _FLOAT:
                value = values.scan_float(group, attr, stored)
            elif how is _PLAIN:
                if attr.is_vector:
                    value = tuple(bool(v) for v in stored) if attr.type == "bool" else \
                        tuple(int(v) for v in stored)
                else:
                    value = bool(stored) if attr.type == "bool" else int(stored)
            else:
                value = _enum_by_index(attr.enum)[int(stored)]
        elif how is _REF:  # read_ref, the common case inline: a class name or a target
            value = getattr(group, attr.prop)
            if attr.ref != "default":
                value = name_of(value) if value is not None else \
                    values.read_ref(group, attr, name_of, on_missing)
        else:
            value = read_value(group, attr, name_of, on_missing)
        if unless is not None:
            # `bits`, inline for the common kinds: a float's bytes, an int / bool as it is
            held = unless[attr.name]
            if how is _ENUM or (how is _PLAIN and not attr.is_vector):
                if value == held:
                    continue
            elif how is _FLOAT and not attr.is_vector:
                if _DOUBLE.pack(value) == held:
                    continue
            elif bits(value) == held:
                continue
        owner = _owner(element, attr, head, owners) if head else element
        if how is _FLOAT or how is _PLAIN:
            setattr(owner, leaf, list(value) if attr.is_vector else value)
        elif how is _REF:
            setattr(owner, leaf, value)  # a name (set_attr's own way for a reference)
        elif how is _ENUM:
            setattr(owner, leaf, _enum_cast(owner, leaf)(value))
        else:
            if attr.type in ("refvec", "stringvec") and not value:
                continue  # (an empty list: nothing stored, the element keeps what it holds)
            set_attr(element, attr, to_mujoco(attr, value))


class _Format1Reads:
    """`get` of a format-1 group's raw values as format 2 stores them (floats: the exact
    doubles format 1 read; others: the raw key, else the property's default)."""

    def __init__(self, group, read):
        self.group, self.read, self.kind = group, read, KINDS[values.kind_of(group)]

    def get(self, prop):
        attr = next((a for a in self.kind.editable if a.prop == prop), None)
        if attr is None or attr.type not in NUMERIC:
            return self.group.get(prop)
        value = self.read(self.group, attr)
        return list(value) if attr.is_vector else value


@functools.cache
def _enum_by_index(enum: str) -> tuple[int, ...]:
    """MuJoCo's value of each item of an enum, by the item's index (what a bpy enum stores)."""
    return tuple(value for _, _, value, _ in enum_items(enum))


def bits(value):
    """A value as a setter stores it, to compare (`unless`): floats as their bytes,
    so that NaN equals NaN and -0.0 is not 0.0 (the round trip keeps the sign)."""
    t = type(value)
    if t is float:
        return _DOUBLE.pack(value)
    if t is list or t is tuple:
        if value and type(value[0]) is float:
            try:
                return _doubles(len(value)).pack(*value)
            except struct.error:  # not all numbers
                pass
        return tuple(value)
    return value


def bits_of(values_: dict) -> dict:
    """{name: `bits`} of `values_of` or `pose_of` output: what `unless` takes."""
    return {name: bits(value) for name, value in values_.items()}


_DOUBLE = struct.Struct("d")


@functools.cache
def _doubles(n: int) -> struct.Struct:
    """The packer of `n` doubles."""
    return struct.Struct(f"{n}d")


@functools.cache
def _enum_numbers(enum: str) -> dict[str, int]:
    """{identifier: value} of a MuJoCo enum (schema.enum_value, as one lookup)."""
    return {ident: value for ident, _, value, _ in enum_items(enum)}


def read_pose(group, kind: str | Kind) -> dict:
    """The exact spatial values kept at import: {attribute name: value}."""
    stored = group.get(POSE)
    if stored is None:
        return {}
    stored = stored.to_dict()  # one conversion instead of one lookup per attribute
    out = {}
    for attr in _kind(kind).spatial:
        raw = stored.get(attr.prop)
        if raw is not None:
            if attr.type == "enum":
                out[attr.name] = int(raw)
            else:
                values_ = list(map(float, raw))
                out[attr.name] = values_ if attr.is_vector else values_[0]
    return out


def pose_of(element, kind: str | Kind) -> dict:
    """The spatial values an element holds, as `read_pose` gives them."""
    out = {}
    for attr, read in _spatial_readers(_kind_name(kind)):
        value = read(element)
        out[attr.name] = list(value) if isinstance(value, tuple) else value
    return out


def write_stored_pose(group, element, kind: str | Kind, unless: dict | None = None,
                      bits_into: dict | None = None) -> None:
    """Set the spatial attributes of `element` to the exact values kept at import
    (what `read_pose` reads): those the same as in `unless` (what the element holds
    already, `bits_of(pose_of(...))`) stay as they are, compared as stored and never
    converted. The values of an alternative orientation (alt.euler,
    ...) whose type is the quaternion are not set: MuJoCo reads them only by type.
    `bits_into`: gets {name: `bits`} of every value it leaves the element holding
    from the store (what a class passes on to its elements)."""
    stored = group.get(POSE)
    if stored is None:
        return
    stored = stored.to_dict()  # one conversion instead of one lookup per attribute
    owners = {}
    for attr, head, leaf, pack in _pose_plan(_kind_name(kind), stored):
        raw = stored.get(attr.prop)
        if raw is None:
            continue
        if unless is not None or bits_into is not None:
            try:  # `bits` of the value read_pose would make of it, without making it
                held = pack(*raw) if pack else _stored_bits(raw, attr)
            except struct.error:  # not the attribute's size
                held = _stored_bits(raw, attr)
            if bits_into is not None:
                bits_into[attr.name] = held
            if unless is not None and held == unless.get(attr.name):
                continue
        owner = _owner(element, attr, head, owners) if head else element
        if attr.type == "enum":
            setattr(owner, leaf, _enum_cast(owner, leaf)(int(raw)))
            continue
        value = list(map(float, raw))
        if not attr.is_vector:
            setattr(owner, leaf, value[0])
        elif attr.type in NUMERIC and attr.type != "int64":
            setattr(owner, leaf, value)  # a list of doubles, as to_mujoco would give
        else:
            setattr(owner, leaf, to_mujoco(attr, value))


_QUAT = int(mujoco.mjtOrientation.mjORIENTATION_QUAT)


def _owner(element, attr: Attr, head: str, owners: dict):
    """The Mjs object that holds a nested attribute ("alt.type": element.alt),
    resolved once per element (`owners`: head -> object)."""
    owner = owners.get(head)
    if owner is None:
        owner = owners[head] = _resolve(element, attr.name)[0]
    return owner


def _stored_bits(raw, attr: Attr):
    """`bits` of the value `read_pose` makes of a stored one, without making it."""
    if attr.type == "enum":
        return int(raw)
    if not attr.is_vector:
        return _DOUBLE.pack(raw[0])
    return _doubles(len(raw)).pack(*raw) if raw else ()


def _pose_plan(kind_name: str, stored: dict) -> tuple:
    """(attr, owner path or "", leaf, the struct packer of a fixed-size vector or None)
    of each spatial attribute of a kind that `stored` (a stored pose) may set: all,
    less an alternative orientation's values (alt.euler, ...) where the stored type
    is the quaternion (MuJoCo reads them only by type)."""
    type_prop, full, quat = _pose_plans(kind_name)
    return quat if type_prop and stored.get(type_prop) == _QUAT else full


@functools.cache
def _pose_plans(kind_name: str) -> tuple[str, tuple, tuple]:
    """(the property of the kind's orientation type or "", the `_pose_plan` of every
    spatial attribute, the one without the alternative orientation's values)."""
    k = KINDS[kind_name]
    kind_type = next((a for a in k.spatial if a.enum == "mjtOrientation"), None)
    full, quat = [], []
    for attr in k.spatial:
        head, _, leaf = attr.name.rpartition(".")
        pack = _doubles(attr.size).pack if attr.is_vector and attr.type in NUMERIC \
            and attr.size else None
        full.append((attr, head, leaf, pack))
        if kind_type is None or head != kind_type.name.rpartition(".")[0] or attr is kind_type:
            quat.append((attr, head, leaf, pack))
    return kind_type.prop if kind_type else "", tuple(full), tuple(quat)


def _enum_cast(owner, leaf: str) -> type:
    """What the binding's setter of an enum attribute takes: a plain int or its enum
    type, found once per Mjs class and attribute."""
    cast = _ENUM_SETTER_TYPES.get((type(owner), leaf))
    if cast is None:
        current = getattr(owner, leaf)
        cast = _ENUM_SETTER_TYPES[(type(owner), leaf)] = \
            int if isinstance(current, int) and not hasattr(current, "name") else type(current)
    return cast


# (Mjs class, enum attribute) -> `_enum_cast`. A dict, not functools.cache: the answer
# is read off a live instance (the binding says no type on its class), and the cache
# key is that instance's class.
_ENUM_SETTER_TYPES: dict[tuple[type, str], type] = {}


# ------------------------------------------------------- scene-wide settings


def spec_settings(spec, kind: str | Kind, attr: Attr | None = None):
    """The struct of the spec that holds a settings kind (option, compiler, ...)."""
    k = _kind(kind)
    path = attr.path if (attr is not None and attr.path is not None) else k.path
    return _settings_owner(spec, path)


def _settings_owner(spec, path: str | None):
    obj = spec
    for part in filter(None, (path or "").split(".")):
        obj = getattr(obj, part)
    return obj


def settings_values(spec, kind: str | Kind) -> dict:
    """{attribute name: value} of a settings kind of a spec (`values_of` of settings)."""
    k = _kind(kind)
    return {attr.name: read(spec_settings(spec, k, attr)) for attr, read in readers(k)}


def settings_to_props(spec, group, kind: str | Kind, only: set[str] | None = None) -> dict:
    """Copy scene-wide settings (all, or the names in `only`) into `group` (all at once
    inside `changes.quiet()`); returns {attribute name: value} of what it copied (as
    `settings_values`)."""
    k = _kind(kind)
    raw = {} if changes.is_quiet() else None
    copied = {}
    for attr, read in readers(k):
        if only is not None and attr.name not in only:
            continue
        value = copied[attr.name] = read(spec_settings(spec, k, attr))
        if raw is None or not values.raw_entries(raw, attr, value):
            write_value(group, attr, value)
    if raw:
        values.write_raw(group, raw)
    return copied


def props_to_settings(group, spec, kind: str | Kind, unless: dict | None = None,
                      only: set[str] | None = None) -> None:
    """Copy a settings kind's properties (all, or the names in `only`) onto the spec;
    `unless` as props_to_element's (e.g. `new_spec_settings(kind)`)."""
    name = _kind_name(kind)
    plan = _settings_plan(name, frozenset(only) if only is not None else None)
    for path, steps in plan:
        _copy_steps(group, _settings_owner(spec, path), steps, unless=unless, kind_name=name)


@functools.cache
def new_spec_settings(kind: str) -> dict:
    """The settings of a new MjSpec, as `unless` takes them; made once per kind
    (shared: do not change it)."""
    return bits_of(settings_values(mujoco.MjSpec(), kind))


def settings_differing(settings: dict, kind: str) -> list[str]:
    """Names of the attributes in `settings` ({name: value} of a settings kind) whose
    values differ from a new spec's: what a model's settings group records as its
    own (`values.own`), so that the scan reads only those (and what is edited since)."""
    fresh = new_spec_settings(kind)
    return [name for name, value in settings.items() if bits(value) != fresh[name]]


@functools.cache  # per set of names: a scan asks for the set each model's settings record
def _settings_plan(kind_name: str, only: frozenset[str] | None) -> tuple:
    """((path of the owning struct, its attributes' `_step`s), ...) of a settings kind:
    of all its attributes, or (`only`) those named."""
    k = KINDS[kind_name]
    paths: dict = {}
    for attr in k.attrs:
        if only is None or attr.name in only:
            path = attr.path if attr.path is not None else k.path
            paths.setdefault(path, []).append(_step(attr))
    return tuple((path, tuple(steps)) for path, steps in paths.items())

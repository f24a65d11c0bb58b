"""The MJCF schema: element kinds and their attributes, as MuJoCo defines them.

The rows live in `schema_table.py`, generated from mujoco's own introspection
data by `tools/gen_schema.py`; this module gives them types and names. It is
bpy-free, so the engine and the tools can use it too.

Attribute types (`Attr.type`):
    float      double (MuJoCo `double` / `mjtNum`), `size` > 0 for a fixed vector
    float32    C `float`
    int64      `mjtSize`, a 64-bit count
    int, bool  as in C; `size` > 0 for a fixed vector
    enum       one value of MuJoCo enum `Attr.enum`
    flags      a bit set of MuJoCo enum `Attr.enum`
    string     text; `size` > 0 for a fixed-length char array
    ref        the name of another element of kind `Attr.ref`, or, when `ref` is
               "@field", of the kind the element's own enum `field` selects
    floatvec, float32vec, intvec, bytes, stringvec, refvec
               variable-length arrays
    intvecvec, float32vecvec
               arrays of arrays (skin vertex ids and weights)
    keyvalues  string -> string map (plugin configuration)
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from . import schema_table
# where each kind lives in Blender: the element-kind registry's, named here too
from .kinds import DATA_KINDS, OBJECT_KINDS, PART_KINDS, SPATIAL_KINDS  # noqa: F401

MUJOCO_VERSION = schema_table.MUJOCO_VERSION
ENUMS = schema_table.ENUMS

# Identifiers a bpy PropertyGroup already uses; an attribute of that name gets
# a trailing underscore as its property name (Python does the same for
# keywords: mjVisual.global is `global_` in the bindings).
RESERVED = frozenset({"name", "rna_type", "bl_rna", "id_data", "get", "keys", "values",
                      "items", "pop", "as_pointer", "path_from_id", "driver_add",
                      "driver_remove", "keyframe_insert", "keyframe_delete",
                      "is_property_set", "is_property_hidden", "property_unset",
                      "type_recast", "bl_rna_get_subclass", "bl_rna_get_subclass_py"})

NUMERIC = frozenset({"float", "float32", "int64"})
VECTOR_TYPES = frozenset({"floatvec", "float32vec", "intvec", "bytes"})
NESTED_VECTOR_TYPES = frozenset({"intvecvec", "float32vecvec"})


@dataclass(frozen=True)
class Attr:
    """One MJCF attribute of an element kind."""

    name: str  # attribute path on the python Mjs object: "friction", "plugin.name"
    type: str
    size: int = 0
    default: Any = None
    enum: str = ""
    ref: str = ""
    spatial: bool = False  # part of the pose: the Blender transform holds it
    path: str | None = None  # spec-level settings: where the owning struct lives
    xml: str = ""  # the MJCF attribute name, where it differs from `name`
    section: str = ""  # the group MuJoCo's header puts the field in ("contact related")
    doc: str = ""

    @cached_property  # read tens of thousands of times per scan
    def prop(self) -> str:
        """The Blender property identifier of this attribute."""
        ident = self.name.replace(".", "_")
        return ident + "_" if ident in RESERVED or keyword.iskeyword(ident) else ident

    @cached_property
    def is_vector(self) -> bool:
        return self.size > 0 and self.type != "string"

    @property
    def label(self) -> str:
        """What a user of MJCF knows the attribute as ("Mesh", not "Meshname")."""
        return (self.xml or self.name.split(".")[-1]).replace("_", " ").title()


@dataclass(frozen=True)
class Kind:
    """One element kind (MJCF tag) or one block of scene-wide settings."""

    name: str
    struct: str
    attrs: tuple[Attr, ...]
    path: str | None = None  # spec-level settings: python path from the MjSpec

    def attr(self, name: str) -> Attr:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"{self.name} has no attribute {name!r}") from None

    @cached_property
    def _by_name(self) -> dict[str, Attr]:
        return {a.name: a for a in self.attrs}

    @cached_property
    def spatial(self) -> tuple[Attr, ...]:
        """The pose attributes (held by the object transform)."""
        return tuple(a for a in self.attrs if a.spatial)

    @cached_property
    def editable(self) -> tuple[Attr, ...]:
        """The attributes held as properties (the pose is the transform)."""
        return tuple(a for a in self.attrs if not a.spatial)


def _kind(name: str, entry: dict) -> Kind:
    attrs = tuple(Attr(**row) for row in entry["attrs"])
    return Kind(name=name, struct=entry["struct"], attrs=attrs, path=entry.get("path"))


KINDS: dict[str, Kind] = {name: _kind(name, entry) for name, entry in schema_table.KINDS.items()}
GROUP_PREFIX = "MJBLEND_PG_"  # a kind's property group class is GROUP_PREFIX + kind name

# The scene-wide settings, held by the model root.
MODEL_SETTINGS = ("compiler", "lengthrange", "option", "size", "statistic",
                  "visual_global", "visual_quality", "visual_headlight", "visual_map",
                  "visual_scale", "visual_rgba")
# MuJoCo's mjVisual among them: drawing only, never physics (edited live without a recompile)
VISUAL_SETTINGS = tuple(kind for kind in MODEL_SETTINGS if kind.startswith("visual_"))
DEFAULT_KINDS = tuple(schema_table.DEFAULT_KINDS)  # what a <default> class can set

# Blender ID type of each referenced kind (an asset's); everything else is an Object.
REF_ID_TYPES = DATA_KINDS


# Kinds whose names differ from the enum identifier that selects them.
_SELECTED_KINDS = {"XBODY": "body", "DOF": "joint", "JOINTINPARENT": "joint",
                   "SLIDERCRANK": "site", "SPHERE": "geom", "CYLINDER": "geom",
                   "CONNECT": "body", "WELD": "body", "FLEXVERT": "flex", "FLEXSTRAIN": "flex"}


def referenced_kind(attr: Attr, selector: str | None = None) -> str | None:
    """The kind a reference names. For an "@field" reference, `selector` is the
    identifier of the element's own enum `field` (an actuator's trntype "JOINT",
    a sensor's objtype "SITE"); None when that selects no element kind."""
    if not attr.ref.startswith("@"):
        return attr.ref
    if selector is None:
        return None
    kind = _SELECTED_KINDS.get(selector, selector.lower())
    return kind if kind in KINDS else None


def selector_fields(attr: Attr) -> list[str]:
    """The enum fields that choose what an "@a|b" reference names, in order."""
    return attr.ref[1:].split("|") if attr.ref.startswith("@") else []


def ref_id_type(attr: Attr) -> str | None:
    """Blender ID type a reference points at; None for a default-class name."""
    if attr.ref == "default":
        return None
    return REF_ID_TYPES.get(attr.ref, "Object")


def enum_items(enum: str):
    """((identifier, label, value, C name), ...) of a MuJoCo enum."""
    return ENUMS[enum]


def enum_value(enum: str, ident: str) -> int:
    for item in ENUMS[enum]:
        if item[0] == ident:
            return item[2]
    raise ValueError(f"{ident!r} is not a value of {enum}")


def enum_ident(enum: str, value: int) -> str:
    for item in ENUMS[enum]:
        if item[2] == int(value):
            return item[0]
    raise ValueError(f"{int(value)} is not a value of {enum}")


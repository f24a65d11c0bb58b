"""Blender property groups built from the schema table, never typed by hand.

- `Object.mujoco`   kind (the MJCF tag), MJCF name, default class, and one
                    sub-group per object kind (`obj.mujoco.geom.friction`);
                    the model root's sub-group holds the scene-wide settings
                    and the default classes.
- `Mesh.mujoco`     mesh and hfield assets; `Material.mujoco` materials;
                    `Image.mujoco` textures: assets live on their datablocks.

How each attribute type is kept is described in `values.py`.
"""

from __future__ import annotations

import bpy
from bpy.props import (BoolProperty, BoolVectorProperty, CollectionProperty, EnumProperty,
                       FloatProperty, FloatVectorProperty, IntProperty, IntVectorProperty,
                       PointerProperty, StringProperty)

from . import changes, values
from .schema import (DATA_KINDS, DEFAULT_KINDS, GROUP_PREFIX, KINDS, MODEL_SETTINGS, OBJECT_KINDS, Attr,
                     enum_items, ref_id_type)

TOUCH = changes.property_updated  # every edit marks its datablock for the next scan


def _tooltip(attr: Attr) -> str:
    return attr.doc or attr.label


def _is_mujoco_object(_self, obj) -> bool:
    return getattr(obj, "mujoco", None) is not None and obj.mujoco.kind != "NONE"


def _edited(attr: Attr):
    """`update` callback of an attribute: the element now sets it itself, and the
    next scan takes the change."""
    def update(self, context):
        if changes.is_quiet():
            return
        values.mark_own(self, attr.name)
        changes.property_updated(self, context)
        for hook in changes.EDIT_HOOKS:
            hook(self, attr.name)
    return update


def _class_changed(self, context) -> None:
    """An element's class changed: the next scan takes it, and the hooks show the
    class's values (authoring/default_classes.py)."""
    if changes.is_quiet():
        return
    changes.property_updated(self, context)
    for hook in changes.EDIT_HOOKS:
        hook(self, "classname")


def _ref_update(attr: Attr):
    edited = _edited(attr)

    def update(self, context):
        values.forget_ref(self, attr.prop)
        edited(self, context)
    return update


def _vector_text_prop(attr: Attr):
    """An editable text view ("0 1 2.5") of a variable-length array."""
    edited = _edited(attr)

    def get(self):
        return values.vector_text(self, attr)

    def set(self, text):
        values.set_vector_text(self, attr, text)
        edited(self, None)

    return StringProperty(name=attr.label, description=_tooltip(attr), get=get, set=set)


def _enum_prop(attr: Attr, flags: bool, update):
    items = [(ident, label, f"{cname} = {value}", value if flags else i)
             for i, (ident, label, value, cname) in enumerate(enum_items(attr.enum))]
    kwargs = dict(name=attr.label, description=_tooltip(attr), items=items, update=update)
    if flags:
        kwargs["options"] = {"ENUM_FLAG"}
        kwargs["default"] = set(attr.default or ())
    elif attr.default:
        kwargs["default"] = attr.default
    return EnumProperty(**kwargs)


class _Classes:
    """Builds and remembers the generated classes, in registration order."""

    def __init__(self):
        self.ordered: list[type] = []
        self.ref_items: dict[str, type] = {}
        self.string_item = self._make(GROUP_PREFIX + "string_item", {"value": StringProperty()})
        for id_type in ("Object", "Material", "Image", "Mesh"):
            self.ref_items[id_type] = self._make(GROUP_PREFIX + "ref_item_" + id_type.lower(), {
                "target": PointerProperty(type=getattr(bpy.types, id_type),
                                          update=lambda self, _c: setattr(self, "authored", "")),
                "authored": StringProperty(description="Name the element was authored with"),
            })
        self.kinds: dict[str, type] = {}
        for name in KINDS:
            if name not in ("model", "tendon"):
                self.kinds[name] = self._kind_group(name)
        # A tendon's path is a list of wraps.
        self.kinds["tendon"] = self._kind_group("tendon", extra={
            "path": CollectionProperty(type=self.kinds["wrap"], description="Tendon path")})
        self.default_class = self._make(GROUP_PREFIX + "default_class", {
            "name": StringProperty(name="Class", description="Name of the default class"),
            "parent": StringProperty(name="Parent", description="Class this one inherits from"),
            **{k: PointerProperty(type=self.kinds[k]) for k in DEFAULT_KINDS},
        })
        self.asset_item = self._make(GROUP_PREFIX + "asset_item", {
            "block": PointerProperty(type=bpy.types.ID, description="An asset of the model")})
        self.kinds["model"] = self._kind_group("model", extra={
            "assets": CollectionProperty(type=self.asset_item,
                                         description="The model's meshes, height fields, textures "
                                                     "and materials, in MJCF order"),
            **{k: PointerProperty(type=self.kinds[k]) for k in MODEL_SETTINGS},
            "defaults": CollectionProperty(type=self.default_class,
                                           description="Default classes of the model"),
            "active_default": IntProperty(options={"HIDDEN"}),
        })
        self.holders = {"Object": self._holder("object", OBJECT_KINDS)}
        for id_type in sorted(set(DATA_KINDS.values())):
            kinds = tuple(k for k, t in DATA_KINDS.items() if t == id_type)
            self.holders[id_type] = self._holder(id_type.lower(), kinds)

    def _make(self, name: str, annotations: dict) -> type:
        cls = type(name, (bpy.types.PropertyGroup,), {"__annotations__": annotations})
        self.ordered.append(cls)
        return cls

    def _kind_group(self, kind: str, extra: dict | None = None) -> type:
        annotations = {}
        for attr in KINDS[kind].editable:
            annotations[attr.prop] = self._attr_prop(attr)
        annotations.update(extra or {})
        return self._make(GROUP_PREFIX + kind, annotations)

    def _holder(self, what: str, kinds) -> type:
        items = [("NONE", "None", "Not a MuJoCo element", 0)]
        items += [(k.upper(), k.capitalize(), f"MJCF <{k}>", i + 1) for i, k in enumerate(kinds)]
        annotations = {
            "kind": EnumProperty(name="Kind", items=items, default="NONE", update=TOUCH,
                                 description="The MJCF element this is"),
            "name": StringProperty(name="MJCF Name", update=TOUCH,
                                   description="Name in MJCF (unique per kind; kept apart from "
                                               "the Blender name, which is shorter and global)"),
            "classname": StringProperty(name="Class", update=_class_changed,
                                        description="Default class the element takes unset "
                                                    "attributes from"),
        }
        for k in kinds:
            annotations[k] = PointerProperty(type=self.kinds[k])
        return self._make(GROUP_PREFIX + what + "_element", annotations)

    def _attr_prop(self, attr: Attr, update=None):
        """The Blender property of an attribute; `update` replaces the edit callback."""
        t, tip = attr.type, _tooltip(attr)
        edited = update or _edited(attr)
        if t in ("float", "float32", "int64"):
            precision = 0 if t == "int64" else 6
            if attr.is_vector:
                return FloatVectorProperty(name=attr.label, description=tip, size=attr.size,
                                           precision=precision, update=edited,
                                           default=tuple(_finite(attr.default, attr.size)))
            return FloatProperty(name=attr.label, description=tip, precision=precision,
                                 default=_finite(attr.default, 0), update=edited)
        if t == "int":
            if attr.is_vector:
                return IntVectorProperty(name=attr.label, description=tip, size=attr.size,
                                         default=tuple(attr.default or (0,) * attr.size), update=edited)
            return IntProperty(name=attr.label, description=tip, default=attr.default or 0,
                               update=edited)
        if t == "bool":
            if attr.is_vector:
                return BoolVectorProperty(name=attr.label, description=tip, size=attr.size,
                                          update=edited)
            return BoolProperty(name=attr.label, description=tip, default=bool(attr.default),
                                update=edited)
        if t in ("enum", "flags"):
            return _enum_prop(attr, flags=(t == "flags"), update=edited)
        if t == "string":
            return StringProperty(name=attr.label, description=tip, default=attr.default or "",
                                  maxlen=attr.size + 1 if attr.size else 0, update=edited)
        if t == "ref":
            id_type = ref_id_type(attr)
            if id_type is None:  # a default class, by name
                return StringProperty(name=attr.label, description=tip, update=edited)
            kwargs = {}
            if id_type == "Object":
                kwargs["poll"] = _is_mujoco_object
            return PointerProperty(name=attr.label, description=tip,
                                   type=getattr(bpy.types, id_type),
                                   update=_ref_update(attr), **kwargs)
        if t == "refvec":
            return CollectionProperty(name=attr.label, description=tip,
                                      type=self.ref_items[ref_id_type(attr) or "Object"])
        if t == "stringvec":
            return CollectionProperty(name=attr.label, description=tip, type=self.string_item)
        if t in ("floatvec", "float32vec", "intvec"):
            return _vector_text_prop(attr)
        if t in ("bytes", "intvecvec", "float32vecvec", "keyvalues"):
            # Raw ID properties only (see values.py); a read-only length shows in panels.
            return IntProperty(name=attr.label, description=tip, options={"HIDDEN"},
                               get=_length_getter(attr))
        raise TypeError(f"no Blender property for {attr.name} of type {t}")


def _finite(default, size):
    """A bpy default: NaN (MuJoCo's 'unset') is kept; None becomes zeros."""
    if default is None:
        return (0.0,) * size if size else 0.0
    return default


def _length_getter(attr: Attr):
    def get(self):
        if attr.type in ("intvecvec", "float32vecvec"):
            return len(values.read_nested_vector(self, attr))
        if attr.type == "keyvalues":
            return len(values.read_keyvalues(self, attr))
        return len(values.read_vector(self, attr))
    return get


_built: _Classes | None = None


def classes() -> _Classes:
    """The generated classes (built once per Python session)."""
    global _built
    if _built is None:
        _built = _Classes()
    return _built


def register():
    built = classes()
    for cls in built.ordered:
        bpy.utils.register_class(cls)
    for id_type, holder in built.holders.items():
        getattr(bpy.types, id_type).mujoco = PointerProperty(
            type=holder, name="MuJoCo", description="MuJoCo element")


def unregister():
    built = classes()
    for id_type in built.holders:
        id_class = getattr(bpy.types, id_type)
        if hasattr(id_class, "mujoco"):
            del id_class.mujoco
    for cls in reversed(built.ordered):
        bpy.utils.unregister_class(cls)


def attribute_property(attr: Attr, update=None):
    """A Blender property for `attr` outside the generated groups (e.g. the
    simulation's option overrides), with its own `update` callback."""
    return classes()._attr_prop(attr, update)

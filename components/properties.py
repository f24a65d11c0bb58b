"""Blender property groups built from the schema table, never typed by hand.

- `Object.mujoco`   kind (the MJCF tag), MJCF name, default class, and one
                    sub-group per object kind (`obj.mujoco.geom.friction`);
                    the model root's sub-group holds the scene-wide settings
                    and the default classes.
- `Mesh.mujoco`     mesh and hfield assets; `Material.mujoco` materials;
                    `Image.mujoco` textures: assets live on their datablocks.
- `Object.mujoco.randomize`  the element's domain-randomization entries (the
                    one hand-written group: randomization.py says what they hold).

How each attribute type is kept is described in `values.py`.
"""

from __future__ import annotations

import bpy
from bpy.props import (BoolProperty, BoolVectorProperty, CollectionProperty, EnumProperty,
                       FloatProperty, FloatVectorProperty, IntProperty, IntVectorProperty,
                       PointerProperty, StringProperty)

from . import changes, inherit, randomization, values
from .schema import (DATA_KINDS, DEFAULT_KINDS, GROUP_PREFIX, KINDS, MODEL_SETTINGS, OBJECT_KINDS, Attr,
                     enum_items, ref_id_type)

TOUCH = changes.property_updated  # every edit marks its datablock for the next scan


def _tooltip(attr: Attr) -> str:
    return attr.doc or attr.label


def _is_mujoco_object(_self, obj) -> bool:
    return getattr(obj, "mujoco", None) is not None and obj.mujoco.kind != "NONE"


def _edited(attr: Attr):
    """`update` callback of an attribute: the next scan takes the change (the
    element sets the attribute itself now: its `set` stored it)."""
    def update(self, context):
        if changes.is_quiet():
            return
        changes.property_updated(self, context)
        changes.edited(self, attr.name)
    return update


# ------------------------------------------------ format 2: get / set of attributes
#
# An attribute's value is the group's raw key when it sets it, else what it inherits
# (components/inherit.py). `get` gives it in the form the bpy property reads (float32
# is Blender's cast of the double), `set` stores the raw value (values.edited_doubles
# for floats). A set on a model root's group (a class, a setting) may change what other
# elements inherit: the resolved classes are forgotten.


FLT_MAX = values.FLT_MAX


def _after_set(group) -> None:
    holder = getattr(group.id_data, "mujoco", None)
    if holder is not None and holder.kind == "MODEL":
        inherit.forget()


def _raw_value(group, kind: str, prop: str):
    found = group.get(prop)
    return found if found is not None else inherit.inherited(group, kind).get(prop)


def _fallback(attr: Attr):
    """What a property reads with nothing stored nor inherited: the schema's default."""
    default = attr.default
    t = attr.type
    if t in ("float", "float32", "int64"):
        return list(_finite(default, attr.size)) if attr.is_vector else float(_finite(default, 0))
    if t == "int":
        return list(default or (0,) * attr.size) if attr.is_vector else int(default or 0)
    if t == "bool":
        return [bool(v) for v in (default or (False,) * attr.size)] if attr.is_vector else bool(default)
    if t in ("string", "ref"):
        return default or ""
    if t == "flags":
        return 0
    return 0


def _float_get_set(kind: str, attr: Attr):
    prop, fallback = attr.prop, _fallback(attr)
    # (an infinity shows as Blender's largest float, as its own float properties hold one)
    if attr.is_vector:
        def get(self):
            found = _raw_value(self, kind, prop)
            if found is None:
                return fallback
            found = found[:]
            return found if -FLT_MAX <= sum(found) <= FLT_MAX else values.shown(found)

        def set_(self, value):
            self[prop] = values.edited_doubles(_raw_value(self, kind, prop), value)
            _after_set(self)
    else:
        def get(self):
            found = _raw_value(self, kind, prop)
            if found is None:
                return fallback
            return found if -FLT_MAX <= found <= FLT_MAX or found != found else values.shown((found,))[0]

        def set_(self, value):
            current = _raw_value(self, kind, prop)
            self[prop] = values.edited_doubles(None if current is None else (current,), (value,))[0]
            _after_set(self)
    return get, set_


def _plain_get_set(kind: str, attr: Attr):
    """get / set of an int, bool, enum (its item's index), flag set (its mask) or string."""
    prop, fallback, t = attr.prop, _fallback(attr), attr.type
    if t == "bool":
        cast = (lambda v: [bool(x) for x in v]) if attr.is_vector else bool
        store = (lambda v: [int(bool(x)) for x in v]) if attr.is_vector else (lambda v: int(bool(v)))
    elif t in ("string", "ref"):  # (a ref here: a class, by name)
        cast = store = str
    else:
        cast = (lambda v: [int(x) for x in v]) if attr.is_vector else int
        store = cast

    def get(self):
        found = _raw_value(self, kind, prop)
        return cast(found) if found is not None else fallback

    def set_(self, value):
        self[prop] = store(value)
        _after_set(self)
    return get, set_


def _class_changed(self, context) -> None:
    """An element's class changed: the next scan takes it, and the hooks show the
    class's values (authoring/default_classes.py)."""
    if changes.is_quiet():
        return
    changes.property_updated(self, context)
    changes.edited(self, "classname")


def _class_renamed(_self, _context) -> None:
    """A class's name or parent changed: what its members inherit is resolved anew."""
    inherit.forget()


def _ref_update(attr: Attr):
    edited = _edited(attr)

    def update(self, context):
        values.forget_ref(self, attr.prop)
        values.own_ref(self, attr.prop)  # (set here: no longer the one its class shows)
        if not changes.is_quiet():
            _after_set(self)
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


def _enum_prop(attr: Attr, flags: bool, update, get=None, set_=None):
    items = [(ident, label, f"{cname} = {value}", value if flags else i)
             for i, (ident, label, value, cname) in enumerate(enum_items(attr.enum))]
    kwargs = dict(name=attr.label, description=_tooltip(attr), items=items, update=update)
    if get is not None:
        kwargs.update(get=get, set=set_)
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
            "name": StringProperty(name="Class", description="Name of the default class",
                                   update=_class_renamed),
            "parent": StringProperty(name="Parent", description="Class this one inherits from",
                                     update=_class_renamed),
            **{k: PointerProperty(type=self.kinds[k]) for k in DEFAULT_KINDS},
        })
        self.randomize_entry = self._make(GROUP_PREFIX + "randomize_entry", _randomize_entry())
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
            "randomize_seed": IntProperty(
                name="Seed", min=0, description="Seed of the randomization's draws: the same seed and "
                                                "resets give the same environments wherever they run"),
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
            annotations[attr.prop] = self._attr_prop(attr, kind=kind)
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
        if what == "object":
            annotations["randomize"] = CollectionProperty(
                type=self.randomize_entry, description="Domain randomization of the element's attributes")
            annotations["randomize_active"] = IntProperty(options={"HIDDEN"})
        return self._make(GROUP_PREFIX + what + "_element", annotations)

    def _attr_prop(self, attr: Attr, update=None, kind: str | None = None):
        """The Blender property of an attribute; `update` replaces the edit callback;
        `kind`: the kind whose group holds it (what it inherits, components/inherit.py)."""
        t, tip = attr.type, _tooltip(attr)
        edited = update or _edited(attr)
        kind = kind or _KIND_OF_ATTR.get(id(attr), "")
        if t in ("float", "float32", "int64"):
            precision = 0 if t == "int64" else 6
            get, set_ = _float_get_set(kind, attr)
            if attr.is_vector:
                return FloatVectorProperty(name=attr.label, description=tip, size=attr.size,
                                           precision=precision, update=edited, get=get, set=set_,
                                           default=tuple(_finite(attr.default, attr.size)))
            return FloatProperty(name=attr.label, description=tip, precision=precision,
                                 default=_finite(attr.default, 0), update=edited, get=get, set=set_)
        if t in ("int", "bool", "string", "enum", "flags") or (t == "ref" and ref_id_type(attr) is None):
            get, set_ = _plain_get_set(kind, attr)
        if t == "int":
            if attr.is_vector:
                return IntVectorProperty(name=attr.label, description=tip, size=attr.size,
                                         default=tuple(attr.default or (0,) * attr.size), update=edited,
                                         get=get, set=set_)
            return IntProperty(name=attr.label, description=tip, default=attr.default or 0,
                               update=edited, get=get, set=set_)
        if t == "bool":
            if attr.is_vector:
                return BoolVectorProperty(name=attr.label, description=tip, size=attr.size,
                                          update=edited, get=get, set=set_)
            return BoolProperty(name=attr.label, description=tip, default=bool(attr.default),
                                update=edited, get=get, set=set_)
        if t in ("enum", "flags"):
            return _enum_prop(attr, flags=(t == "flags"), update=edited, get=get, set_=set_)
        if t == "string":
            return StringProperty(name=attr.label, description=tip, default=attr.default or "",
                                  maxlen=attr.size + 1 if attr.size else 0, update=edited,
                                  get=get, set=set_)
        if t == "ref":
            id_type = ref_id_type(attr)
            if id_type is None:  # a default class, by name
                return StringProperty(name=attr.label, description=tip, update=edited, get=get, set=set_)
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


# id(attr) -> the kind it belongs to (for attribute_property: a kind's attribute elsewhere)
_KIND_OF_ATTR = {id(attr): name for name, entry in KINDS.items() for attr in entry.attrs}


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


# ----------------------------------------------------- randomization entries

# Blender keeps only pointers to the strings of dynamic enum items: they must stay alive.
_ITEMS: dict[tuple, list] = {}


def _entry_element(entry) -> str | None:
    return randomization.element_of(entry.id_data.mujoco.kind)


def _items(key, make) -> list:
    found = _ITEMS.get(key)
    if found is None:
        found = _ITEMS[key] = make() or [("NONE", "None", "Nothing to randomize on this element", 0)]
    return found


def _attribute_items(entry, _context):
    element = _entry_element(entry)
    return _items(("attribute", element), lambda: [
        (name, label, description, i)
        for i, (name, label, description) in enumerate(randomization.attribute_choices(element))])


def _get_attribute(entry) -> int:
    names = [name for name, _l, _d in randomization.attribute_choices(_entry_element(entry))]
    return names.index(entry.attribute_name) if entry.attribute_name in names else -1


def _set_attribute(entry, value) -> None:
    element = _entry_element(entry)
    choices = randomization.attribute_choices(element)
    if not 0 <= value < len(choices):
        return
    entry.attribute_name = choices[value][0]
    modes = randomization.modes_of(element, entry.attribute_name)
    if entry.mode_name not in modes:  # (body pos is offset only, inertia scale only)
        entry.mode_name = modes[0]
        entry.low, entry.high = randomization.DEFAULT_RANGES[modes[0]]
    if entry.component >= randomization.width_of(element, entry.attribute_name):
        entry.component = randomization.ALL


def _mode_items(entry, _context):
    element = _entry_element(entry)
    modes = randomization.modes_of(element, entry.attribute_name)
    return _items(("mode", modes), lambda: [
        (mode, mode.capitalize(), randomization.MODE_DESCRIPTIONS[mode], i)
        for i, mode in enumerate(randomization.MODES) if mode in modes])


def _get_mode(entry) -> int:
    return randomization.MODES.index(entry.mode_name) if entry.mode_name in randomization.MODES else -1


def _set_mode(entry, value) -> None:
    entry.mode_name = randomization.MODES[value]


def _component_items(entry, _context):
    choices = randomization.component_choices(_entry_element(entry), entry.attribute_name)
    return _items(("component", tuple(choices)), lambda: [
        ("ALL" if i == randomization.ALL else str(i), label,
         "Every component" if i == randomization.ALL else f"Only component {i} ({label})", i + 1)
        for i, label in choices])


def _get_component(entry) -> int:
    return entry.component + 1


def _set_component(entry, value) -> None:
    entry.component = value - 1


def _randomize_entry() -> dict:
    """One randomized attribute of the element holding it (batch.randomization.Entry)."""
    return {
        "attribute_name": StringProperty(options={"HIDDEN"}, description="The attribute (batch's name)"),
        "mode_name": StringProperty(options={"HIDDEN"}, description="The mode (batch's name)"),
        "attribute": EnumProperty(name="Attribute", items=_attribute_items, get=_get_attribute,
                                  set=_set_attribute, description="The attribute that varies"),
        "mode": EnumProperty(name="Mode", items=_mode_items, get=_get_mode, set=_set_mode,
                             description="How a drawn value makes the attribute's value"),
        "distribution": EnumProperty(name="Distribution", items=randomization.DISTRIBUTION_ITEMS,
                                     description="How values are drawn from the range"),
        "low": FloatProperty(name="Low", default=0.9, precision=4, description="Smallest value drawn"),
        "high": FloatProperty(name="High", default=1.1, precision=4, description="Largest value drawn"),
        "component": IntProperty(options={"HIDDEN"}, default=randomization.ALL, min=randomization.ALL,
                                 description="The one component that varies (-1: all)"),
        "index": EnumProperty(name="Component", items=_component_items, get=_get_component,
                              set=_set_component, description="All components, or one of them"),
        "independent": BoolProperty(name="Independent",
                                    description="Each component draws its own value (else one value "
                                                "serves all)"),
        "use_std": BoolProperty(name="Std", description="Give the normal distribution's standard "
                                                        "deviation (else a quarter of the range)"),
        "std": FloatProperty(name="Std", default=0.05, min=0.0, precision=4,
                             description="Standard deviation of the normal distribution"),
    }


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

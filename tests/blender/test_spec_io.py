"""Mjs element -> Blender properties -> Mjs element is exact, and survives a .blend.

Every kind and every attribute of the schema table, on elements of the real
models in ../shared/corpus and on non-default values of every type.
"""

import operator
import os

import bpy
import mujoco
import numpy as np
import pytest
from helpers import (as_comparable, fresh, corpus_params, default_classes, load_corpus_spec,
                     spec_elements)

from mjblend.components import changes, spec_io, values
from mjblend.components.schema import (DATA_KINDS, DEFAULT_KINDS, KINDS, MODEL_SETTINGS,
                                       NUMERIC, REF_ID_TYPES, enum_items)

ID_COLLECTIONS = {"Mesh": "meshes", "Material": "materials", "Image": "images"}


def new_holder(kind, label):
    """A datablock holding element `kind`: (group, handle to find it again)."""
    id_type = DATA_KINDS.get(kind, "Object")
    if id_type == "Object":
        block = bpy.data.objects.new(label, None)
        bpy.context.scene.collection.objects.link(block)
    elif id_type == "Image":
        block = bpy.data.images.new(label, 1, 1)
        block.use_fake_user = True
    else:
        block = getattr(bpy.data, ID_COLLECTIONS[id_type]).new(label)
        block.use_fake_user = True
    block.mujoco.kind = kind.upper()
    return getattr(block.mujoco, kind), (id_type, block.name)


def find_holder(kind, handle):
    id_type, name = handle
    collection = bpy.data.objects if id_type == "Object" else getattr(bpy.data, ID_COLLECTIONS[id_type])
    return getattr(collection[name].mujoco, kind)


def copy_back(group, kind, element):
    """`element` given the group's attributes and stored pose; returns (element, the
    stored pose as `read_pose` reads it)."""
    spec_io.props_to_element(group, element, kind)
    spec_io.write_stored_pose(group, element, kind)
    return element, spec_io.read_pose(group, kind)


def mismatches(kind, original, copied):
    """Names of attributes whose values differ, with both values. `copied`: what
    copy_back returned. Spatial values are compared as stored too; the copy is not
    given an alternative orientation's values (alt.euler, ...) where its type is the
    quaternion (MuJoCo reads them only by type), so those are compared as stored only."""
    copy, stored = copied
    out = []
    for attr in KINDS[kind].attrs:
        a = as_comparable(spec_io.get_attr(original, attr))
        if attr.spatial and attr.name in stored:
            b = as_comparable(stored[attr.name])
            if a != b:
                out.append(f"{kind}.{attr.name} (stored): {spec_io.get_attr(original, attr)!r} -> "
                           f"{stored[attr.name]!r}")
            if _unread_alternative(attr, original):
                continue
        if a != as_comparable(spec_io.get_attr(copy, attr)):
            out.append(f"{kind}.{attr.name}: {spec_io.get_attr(original, attr)!r} -> "
                       f"{spec_io.get_attr(copy, attr)!r}")
    return out


def _unread_alternative(attr, element):
    """An alternative orientation's value (alt.euler, ...) of an element whose
    orientation type is the quaternion."""
    head, _, leaf = attr.name.rpartition(".")
    if not head.endswith("alt") or leaf == "type":
        return False
    kind_of_orientation = operator.attrgetter(head + ".type")(element)
    return int(kind_of_orientation) == int(mujoco.mjtOrientation.mjORIENTATION_QUAT)


def save_and_reload(tmp_path):
    path = os.path.join(tmp_path, "roundtrip.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)


def wraps(element):
    return list(element.path) if hasattr(element, "path") else []


@pytest.mark.parametrize("model", corpus_params())
def test_corpus_elements_round_trip_exactly(model, clean_scene, tmp_path):
    spec = load_corpus_spec(model)
    made = []  # (kind, original element, handle)
    for i, (kind, element) in enumerate(spec_elements(spec)):
        group, handle = new_holder(kind, f"{kind}.{i}")
        spec_io.element_to_props(element, group, kind)
        made.append((kind, element, handle))
        for j, wrap in enumerate(wraps(element)):
            item = group.path.add()
            spec_io.element_to_props(wrap, item, "wrap")
            made.append(("wrap", wrap, (handle, j)))
    assert made, f"{model}: no elements"

    def check(stage):
        errors, checked = [], 0
        for kind, element, handle in made:
            if kind == "wrap":
                (tendon_handle, j) = handle
                group = find_holder("tendon", tendon_handle).path[j]
                # Wrap targets are set through MjsTendon.wrap_*, not attributes:
                # compare what the properties read back.
                for attr in KINDS["wrap"].editable:
                    a = as_comparable(spec_io.from_mujoco(attr, spec_io.get_attr(element, attr)))
                    b = as_comparable(spec_io.read_value(group, attr))
                    if a != b:
                        errors.append(f"wrap.{attr.name}: {a!r} -> {b!r}")
                    checked += 1
                continue
            copy = copy_back(find_holder(kind, handle), kind, fresh(kind))
            errors += mismatches(kind, element, copy)
            checked += len(KINDS[kind].attrs)
        assert not errors, f"{model} ({stage}): {len(errors)} differences, first: {errors[:5]}"
        return checked

    checked = check("in memory")
    save_and_reload(tmp_path)
    assert check("after .blend save and load") == checked


@pytest.mark.parametrize("model", corpus_params())
def test_corpus_settings_and_defaults_round_trip(model, clean_scene, tmp_path):
    spec = load_corpus_spec(model)
    root, _ = new_holder("model", "model")
    for kind in MODEL_SETTINGS:
        spec_io.settings_to_props(spec, getattr(root, kind), kind)
    spec_io.settings_to_props(spec, root, "model")
    classes = default_classes(spec)
    for name, default in classes.items():
        item = root.defaults.add()
        item.name = name
        for kind in DEFAULT_KINDS:
            spec_io.element_to_props(getattr(default, kind), getattr(item, kind), kind)
    save_and_reload(tmp_path)
    root = bpy.data.objects["model"].mujoco.model

    rebuilt = mujoco.MjSpec()
    for kind in MODEL_SETTINGS + ("model",):
        spec_io.props_to_settings(getattr(root, kind) if kind != "model" else root, rebuilt, kind)
    errors = []
    for kind in MODEL_SETTINGS + ("model",):
        for attr in KINDS[kind].attrs:
            a = spec_io.get_attr(spec_io.spec_settings(spec, kind, attr), attr)
            b = spec_io.get_attr(spec_io.spec_settings(rebuilt, kind, attr), attr)
            if as_comparable(a) != as_comparable(b):
                errors.append(f"{kind}.{attr.name}: {a!r} -> {b!r}")
    for item in root.defaults:
        target = rebuilt.default if item.name == "main" else rebuilt.add_default(item.name, rebuilt.default)
        for kind in DEFAULT_KINDS:
            copied = copy_back(getattr(item, kind), kind, getattr(target, kind))
            errors += [f"class {item.name}: {e}" for e in
                       mismatches(kind, getattr(classes[item.name], kind), copied)]
    assert not errors, f"{model}: {errors[:5]}"


# ------------------------------------------------------------ non-default values


def non_default(attr, current=None):
    """A value of the attribute's type that differs from its default."""
    t, n = attr.type, attr.size
    if t == "float":
        base = [0.1234567890123456 * (i + 1) + 1e-12 for i in range(n or 1)]
        return base if n else base[0]
    if t == "float32":
        base = [float(np.float32(0.3 + 0.25 * i)) for i in range(n or 1)]
        return base if n else base[0]
    if t == "int64":
        return 3_000_000_123  # beyond both int32 and float32 precision
    if t == "int":
        base = [(attr.default[i] if n else attr.default or 0) + 3 + i for i in range(n or 1)] \
            if attr.default is not None else [3 + i for i in range(n or 1)]
        return base if n else base[0]
    if t == "bool":
        return not attr.default
    if t == "enum":
        items = enum_items(attr.enum)
        return next(v for ident, _, v, _ in items if ident != attr.default)
    if t == "flags":
        items = enum_items(attr.enum)
        return items[0][2] | items[-1][2]
    if t == "string":
        return {3: "zyx", 12: ".U..LFRB.D.."}.get(n, "non default text")
    if t == "ref":
        return "the_target"
    if t == "refvec":  # a material has one texture slot per role: keep the length
        names = ["first", "", "second"]
        return (names * 10)[:len(current)] if current is not None and len(current) else names
    if t == "stringvec":
        return ["right.png", "a file with spaces.png"]
    if t == "floatvec":
        return [1 / 3, -2.5e-300, 7.0, float("inf")]
    if t == "float32vec":
        return [float(np.float32(v)) for v in (0.1, -2.0, 3.5)]
    if t == "intvec":
        return [1, -2, 2_000_000_000]
    if t == "bytes":
        return b"\x00\x01\xfe\xff"
    if t == "intvecvec":
        return [[0, 1, 2], [3]]
    if t == "float32vecvec":
        return [[0.5, 0.25], [0.125]]
    if t == "keyvalues":
        return {"key": "value", "n": "1"}
    raise AssertionError(t)


SETTABLE_KINDS = [k for k in KINDS if k != "wrap" and KINDS[k].path is None and k != "model"]


@pytest.mark.parametrize("kind", SETTABLE_KINDS)
def test_non_default_values_round_trip(kind, clean_scene, tmp_path):
    original = fresh(kind)
    for attr in KINDS[kind].attrs:
        if attr.spatial and attr.type == "enum":
            continue  # alt.type follows which alternative is set
        value = non_default(attr, spec_io.get_attr(original, attr))
        spec_io.set_attr(original, attr, spec_io.to_mujoco(attr, value))
    unchanged = [a.name for a in KINDS[kind].attrs if not a.spatial and as_comparable(
        spec_io.get_attr(original, a)) == as_comparable(spec_io.get_attr(fresh(kind), a))]
    assert not unchanged, f"test values equal the defaults for {unchanged}"
    group, handle = new_holder(kind, "element")
    spec_io.element_to_props(original, group, kind)
    save_and_reload(tmp_path)
    copy = copy_back(find_holder(kind, handle), kind, fresh(kind))
    assert mismatches(kind, original, copy) == []


def _stored(group):
    """A group's ID properties, floats compared by value (a bulk write keeps doubles
    where a bpy setter keeps float32: both read back the same)."""
    def plain(value):
        if hasattr(value, "to_dict"):
            value = value.to_dict()
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if hasattr(value, "to_list") or isinstance(value, (list, tuple)):
            return [plain(v) for v in (value.to_list() if hasattr(value, "to_list") else value)]
        return as_comparable(float(value)) if isinstance(value, float) else value
    return plain({k: group[k] for k in group.keys()})


@pytest.mark.parametrize("kind", SETTABLE_KINDS)
def test_bulk_writes_store_what_the_property_setters_store(kind, clean_scene):
    """Inside changes.quiet() element_to_props writes raw ID properties at once:
    the same keys, values and read-backs as attribute by attribute."""
    original = fresh(kind)
    for attr in KINDS[kind].attrs:
        if not (attr.spatial and attr.type == "enum"):
            spec_io.set_attr(original, attr, spec_io.to_mujoco(
                attr, non_default(attr, spec_io.get_attr(original, attr))))
    targets = {"Object": bpy.data.objects.new("the_target", None),
               "Material": bpy.data.materials.new("the_target"),
               "Mesh": bpy.data.meshes.new("the_target"), "Image": bpy.data.images.new("the_target", 1, 1)}

    def find(target_kind, name):  # the datablock of the type the reference takes
        return targets[REF_ID_TYPES.get(target_kind, "Object")] if name == "the_target" else None
    one_by_one, _ = new_holder(kind, "one by one")
    spec_io.element_to_props(original, one_by_one, kind, find=find)
    at_once, _ = new_holder(kind, "at once")
    with changes.quiet():
        spec_io.element_to_props(original, at_once, kind, find=find)
    assert _stored(at_once) == _stored(one_by_one)
    for attr in KINDS[kind].editable:
        a, b = spec_io.read_value(at_once, attr), spec_io.read_value(one_by_one, attr)
        assert as_comparable(a) == as_comparable(b), attr.name


def spec_with_non_default_settings():
    """A new spec whose every scene-wide setting is set to a value not its default."""
    spec = mujoco.MjSpec()
    for kind in MODEL_SETTINGS:
        for attr in KINDS[kind].attrs:
            owner = spec_io.spec_settings(spec, kind, attr)
            spec_io.set_attr(owner, attr, spec_io.to_mujoco(attr, non_default(attr)))
    return spec


def test_bulk_settings_store_what_the_property_setters_store(clean_scene):
    original = spec_with_non_default_settings()
    one_by_one, _ = new_holder("model", "one by one")
    at_once, _ = new_holder("model", "at once")
    for kind in MODEL_SETTINGS:
        spec_io.settings_to_props(original, getattr(one_by_one, kind), kind)
        with changes.quiet():
            spec_io.settings_to_props(original, getattr(at_once, kind), kind)
        assert _stored(getattr(at_once, kind)) == _stored(getattr(one_by_one, kind)), kind


def test_settings_non_default_values_round_trip(clean_scene, tmp_path):
    original = spec_with_non_default_settings()
    root, _ = new_holder("model", "model")
    for kind in MODEL_SETTINGS:
        spec_io.settings_to_props(original, getattr(root, kind), kind)
    save_and_reload(tmp_path)
    root = bpy.data.objects["model"].mujoco.model
    rebuilt = mujoco.MjSpec()
    for kind in MODEL_SETTINGS:
        spec_io.props_to_settings(getattr(root, kind), rebuilt, kind)
        for attr in KINDS[kind].attrs:
            a = spec_io.get_attr(spec_io.spec_settings(original, kind, attr), attr)
            b = spec_io.get_attr(spec_io.spec_settings(rebuilt, kind, attr), attr)
            assert as_comparable(a) == as_comparable(b), f"{kind}.{attr.name}: {a!r} -> {b!r}"


# ------------------------------------------------------------------ user edits


FLOAT_KINDS = [k for k in KINDS if k != "wrap" and any(a.type in NUMERIC for a in KINDS[k].editable)]


@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_edited_floats_read_back_as_typed(kind, clean_scene, tmp_path):
    """A float the user types reads back as that decimal, not a float32 expansion."""
    typed = {"float": 0.1, "float32": 0.37, "int64": 3_000_000_123.0}
    settings = kind in MODEL_SETTINGS
    group, handle = new_holder("model" if settings else kind, "element")
    if settings:
        spec_io.settings_to_props(mujoco.MjSpec(), getattr(group, kind), kind)
        group, handle = getattr(group, kind), (handle, kind)
    elif kind != "model":
        spec_io.element_to_props(fresh(kind), group, kind)
    attrs = [a for a in KINDS[kind].editable if a.type in NUMERIC]
    for attr in attrs:  # what typing into the panel does: set the bpy property
        value = typed[attr.type]
        setattr(group, attr.prop, [value] * attr.size if attr.is_vector else value)
    save_and_reload(tmp_path)
    group = getattr(find_holder("model", handle[0]), kind) if settings else find_holder(kind, handle)
    for attr in attrs:
        expected = float(str(np.float32(typed[attr.type])))
        if attr.type == "int64":
            expected = int(np.float32(typed["int64"]))
        got = spec_io.read_value(group, attr)
        got = got if attr.is_vector else (got,)
        if attr.type == "float32":  # MuJoCo keeps a C float: the float32 is the value
            assert all(np.float32(v) == np.float32(expected) for v in got), f"{kind}.{attr.name}: {got}"
            continue
        assert all(repr(v) == repr(expected) for v in got), f"{kind}.{attr.name}: {got}"


def test_untouched_double_stays_exact_but_edit_wins(clean_scene):
    group, _ = new_holder("geom", "geom")
    geom = fresh("geom")
    geom.friction = [0.123456789012345, 0.005, 0.0001]
    spec_io.element_to_props(geom, group, "geom")
    attr = KINDS["geom"].attr("friction")
    assert spec_io.read_value(group, attr)[0] == 0.123456789012345
    assert group["friction"].to_list() == [0.123456789012345, 0.005, 0.0001]  # one key: the doubles
    group.friction[0] = 0.5  # (bpy calls the property's set with the whole vector)
    assert spec_io.read_value(group, attr) == (0.5, 0.005, 0.0001)
    group.friction = tuple(group.friction)  # the same float32s typed again: still exact
    assert spec_io.read_value(group, attr) == (0.5, 0.005, 0.0001)


# ------------------------------------------------------------------ references


def test_references_follow_renames_and_report_deleted_targets(clean_scene):
    spec = mujoco.MjSpec()
    joint_obj = bpy.data.objects.new("shoulder", None)
    bpy.context.scene.collection.objects.link(joint_obj)
    joint_obj.mujoco.kind = "JOINT"
    joint_obj.mujoco.name = "shoulder"
    actuator = spec.add_actuator()
    actuator.target = "shoulder"
    actuator.trntype = mujoco.mjtTrn.mjTRN_JOINT
    group, _ = new_holder("actuator", "motor")

    def find(kind, name):
        assert kind == "joint"  # chosen by the actuator's trntype
        for obj in bpy.data.objects:
            if obj.mujoco.name == name and obj.mujoco.kind == kind.upper():
                return obj
        return None

    spec_io.element_to_props(actuator, group, "actuator", find=find)
    assert group.target == joint_obj
    joint_obj.name = "renamed in blender"
    joint_obj.mujoco.name = "elbow"  # the MJCF name is what export writes
    copy = fresh("actuator")
    spec_io.props_to_element(group, copy, "actuator")
    assert copy.target == "elbow"

    bpy.data.objects.remove(joint_obj)
    missing = []
    spec_io.props_to_element(group, copy, "actuator",
                             on_missing=lambda attr, name: missing.append((attr.name, name)))
    assert ("target", "shoulder") in missing

    group.target = None  # the user clears it: no longer an error
    missing.clear()
    spec_io.props_to_element(group, copy, "actuator", on_missing=lambda a, n: missing.append(n))
    assert missing == []


def test_which_attributes_the_element_sets_itself_is_kept(clean_scene, tmp_path):
    """Storage format 2: what a group stores is what it sets itself."""
    group, handle = new_holder("geom", "geom")
    assert values.own(group) == set()
    group.friction = (0.5, 0.01, 0.001)  # an edit: the element now sets it itself
    assert values.own(group) == {"friction"}
    group.rgba = group.rgba  # the value it reads, set: its own now as well
    assert values.own(group) == {"friction", "rgba"}
    save_and_reload(tmp_path)
    group = find_holder("geom", handle)
    assert values.own(group) == {"friction", "rgba"}
    values.drop(group, KINDS["geom"].attr("rgba"))
    assert values.own(group) == {"friction"} and "rgba" not in group.keys()


def test_arrays_edit_as_mjcf_text(clean_scene):
    group, _ = new_holder("key", "key")
    group.qpos = "0 1.5  -2e-3"
    assert spec_io.read_value(group, KINDS["key"].attr("qpos")) == [0.0, 1.5, -0.002]
    assert group.qpos == "0.0 1.5 -0.002"
    with pytest.raises(ValueError, match="'abc' is not a number"):
        values.set_vector_text(group, KINDS["key"].attr("qpos"), "1 abc")
    assert group.qpos == "0.0 1.5 -0.002"  # a bad edit changes nothing

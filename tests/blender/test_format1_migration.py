"""The data step of the migration from storage format 1 to 2 (components/format1.py),
on tests/blender/data/saved_format1.blend (made by tools/make_saved_format1.py).

The fixture's data is appended into an empty file (`bpy.data.libraries.load`), not
opened: an open runs load_post, which migrates once format 2 is registered; appended
data stays exactly as saved, in format 1, whatever this MJBlend's format is.
"""

import json
import os
import struct

import bpy
import pytest
from stored_values import groups, plain

from mjblend.components import format1, values
from mjblend.components.schema import KINDS, NUMERIC
from mjblend.components.stored_keys import EXACT, OWN, POSE, SEEN, SEEN_POSE

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
FIXTURE = os.path.join(DATA, "saved_format1.blend")


def append_fixture(link=False):
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(FIXTURE, link=link) as (source, target):
        for name in ("objects", "meshes", "materials", "images"):
            setattr(target, name, list(getattr(source, name)))
    # (appended objects are in no scene: the walk reads bpy.data, not scenes)


def recorded():
    return json.load(open(os.path.join(DATA, "saved_format1_values.json"), encoding="utf-8"))


def attrs(kind):
    return [a for a in KINDS[kind].editable if not format1._native(a)]


def doubles(value):
    value = list(value) if isinstance(value, (list, tuple)) or hasattr(value, "__len__") else [value]
    return struct.pack(f"{len(value)}d", *map(float, value))


def raw_of(group) -> dict:
    """A group's ID properties but its sub-groups and collections as plain data."""
    def plain_(v):
        if hasattr(v, "to_dict"):
            return v.to_dict()
        if hasattr(v, "__len__") and not isinstance(v, (str, bytes)) and not hasattr(v, "bl_rna"):
            return [plain_(x) for x in v]
        return v
    return {key: plain_(value) for key, value in group.items()
            if not hasattr(value, "to_dict") and key not in ("defaults", "assets", "path")}


def test_the_format1_reader_reads_what_format1_read(clean_scene):
    """read_format1 (raw ID properties only) == spec_io.read_value as format 1 recorded it,
    for every attribute it migrates of every group in the fixture."""
    append_fixture()
    expected = recorded()
    found = {label: (group, kind) for label, group, kind in groups(bpy)}
    assert set(found) == set(expected)
    for label, (group, kind) in found.items():
        for attr in attrs(kind):
            assert plain(format1.read_format1(group, attr)) == expected[label][attr.name]["read"], \
                (label, attr.name)


def test_migrated_groups_store_their_own_values_only(clean_scene):
    append_fixture()
    before, untouched = {}, {}
    for label, group, kind in groups(bpy):
        if not format1.is_format1(group):  # the model group, a tendon's wraps: no float, no `_own`
            untouched[label] = raw_of(group)
            continue
        own = format1.recorded_own(group)
        if own is None:  # a wrap: no record, nothing to inherit from: what it stores
            assert kind == "wrap", label
            own = format1._stored_names(group, kind)
            assert own and "type" in own
        before[label] = (kind, own,
                         {a.name: format1.read_format1(group, a) for a in attrs(kind)},
                         {k for k in group.keys() if k in (POSE, SEEN_POSE, values.REF, "_degree", "path")})
    assert set(untouched) == {"Object:format1"}  # (the model group holds no float)
    assert format1.migrate_data(bpy.data) == len(before)
    assert format1.migrate_data(bpy.data) == 0  # done once
    after = {label: group for label, group, _kind in groups(bpy)}
    for label, stored in untouched.items():
        assert raw_of(after[label]) == stored, label
    for label, (kind, own, read, kept) in before.items():
        group = after[label]
        keys = set(group.keys())
        assert not keys & {EXACT, SEEN, OWN}, label
        assert kept <= keys, label  # the pose, references as authored, a tendon's path stay
        for attr in attrs(kind):
            stored = [k for k in format1._keys_of(attr) if k in keys]
            if attr.name not in own:
                assert not stored, (label, attr.name)
                continue
            value = read[attr.name]
            if attr.type in NUMERIC:  # one raw double (or list of doubles) under the prop name
                raw = group[attr.prop]
                assert doubles(raw) == doubles(value), (label, attr.name)
                assert isinstance(raw, float) or raw.typecode == "d", (label, attr.name)
            else:
                expected = {}
                values.raw_entries(expected, attr, value)
                for key, item in expected.items():
                    got = group[key]
                    got = got.to_dict() if hasattr(got, "to_dict") else \
                        list(got) if hasattr(got, "__len__") and not isinstance(got, (str, bytes)) else got
                    item = list(item) if isinstance(item, tuple) else item
                    assert got == item, (label, attr.name, key)


def test_where_no_own_is_recorded_own_is_what_differs_from_the_class(clean_scene):
    """Files with no `_own`: an attribute equal to the one inherited is dropped."""
    append_fixture()
    upper = bpy.data.objects["upper"].mujoco.geom  # class arm; its own friction was edited
    same = bpy.data.objects["upper_same"].mujoco.geom  # own margin == arm's margin
    arm = next(c for c in bpy.data.objects["format1"].mujoco.model.defaults if c.name == "arm").geom
    assert "margin" in format1.recorded_own(same) and "friction" in format1.recorded_own(upper)
    margin = format1.read_format1(arm, KINDS["geom"].attr("margin"))
    for group in (upper, same, arm):
        del group[OWN]
    format1.migrate_data(bpy.data)
    assert "margin" not in same.keys() and "friction" not in same.keys()
    assert upper["friction"][0] == 0.9 and "margin" not in upper.keys()
    assert arm["margin"] == margin == 0.003  # arm's own margin differs from main's (MuJoCo's 0)
    assert "friction" not in arm.keys()  # arm's friction is main's


def test_linked_data_is_left_alone(clean_scene):
    append_fixture(link=True)
    linked = bpy.data.objects["upper"]
    assert linked.library is not None
    assert format1.migrate_data(bpy.data) == 0
    assert format1.is_format1(linked.mujoco.geom)


def test_one_root_is_migrated_with_its_assets(clean_scene):
    append_fixture()
    root = bpy.data.objects["format1"]
    stray = bpy.data.objects.new("stray", None)
    stray.mujoco.kind = "SITE"
    with_keys = stray.mujoco.site
    with_keys.size = (0.5, 0.5, 0.5)  # an element outside any model, made by hand
    with_keys[OWN] = {"size": 1}  # (what format 1 recorded: a format-1 group)
    n = format1.migrate_root(root)
    assert n == len(groups(bpy)) - 2  # all but the stray site and the model group (no float)
    assert not format1.is_format1(bpy.data.materials["red"].mujoco.material)
    assert format1.is_format1(stray.mujoco.site)
    assert format1.migrate_data(bpy.data) == 1 and stray.mujoco.site["size"][0] == 0.5


@pytest.mark.parametrize("name", ["saved_before_layout", "saved_before_kinds"])
def test_older_fixtures_migrate_to_the_same_reads(clean_scene, name):
    """The two older format-1 files: every group migrates, own values kept as format 1 read them."""
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(os.path.join(DATA, name + ".blend")) as (source, target):
        for what in ("objects", "meshes", "materials", "images"):
            setattr(target, what, list(getattr(source, what)))
    before = {label: (kind, {a.name: format1.read_format1(group, a) for a in attrs(kind)})
              for label, group, kind in groups(bpy)}
    old = sum(format1.is_format1(group) for _label, group, _kind in groups(bpy))
    assert old == len(before) - 1  # (the model group holds no float)
    assert format1.migrate_data(bpy.data) == old
    for label, group, kind in groups(bpy):
        assert not format1.is_format1(group), label
        for attr in attrs(kind):
            if attr.type in NUMERIC and attr.prop in group:
                assert doubles(group[attr.prop]) == doubles(before[label][1][attr.name]), (label, attr.name)


def test_linked_format1_data_reads_as_format1_read_it(clean_scene):
    """A model linked from a format-1 .blend cannot be migrated (read-only): its floats
    still read as format 1 read them (exact doubles), and what it sets is its `_own`."""
    from mjblend.components import spec_io

    append_fixture(link=True)
    linked = bpy.data.objects["upper"]
    assert linked.library is not None and format1.is_format1(linked.mujoco.geom)
    recorded_reads = recorded()["Object:upper"]
    group = linked.mujoco.geom
    for attr in attrs("geom"):
        if attr.type in NUMERIC:
            assert plain(spec_io.read_value(group, attr)) == recorded_reads[attr.name]["read"], attr.name
    assert values.own(group) == set(group["_own"].keys())


def test_an_edit_at_the_largest_float_stays_refused_after_migration(clean_scene):
    """Format 1 read an edit beyond Blender's largest float as 3.4028235e+38 and refused
    it (UnkeptNumber); migrated, it is what format 2's set stores for one: FLT_MAX."""
    stray = bpy.data.objects.new("stray", None)
    stray.mujoco.kind = "GEOM"
    group = stray.mujoco.geom
    group["margin"] = values.FLT_MAX  # what the float32 property held (no exact double: an edit)
    group["gap"] = 0.5
    group[OWN] = {"margin": 1, "gap": 1}
    assert format1.migrate_data(bpy.data) == 1
    assert group["margin"] == values.FLT_MAX and group["gap"] == 0.5 and OWN not in group
    with pytest.raises(values.UnkeptNumber):
        values.check_kept(group, KINDS["geom"].attr("margin"), [group["margin"]])

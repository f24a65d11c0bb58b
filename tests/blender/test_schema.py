"""The schema table is mujoco's own, complete and up to date."""

import difflib
import os

import bpy
import mujoco
import pytest
from helpers import ROOT, as_comparable, fresh, gen_schema

from mjblend.components import schema, spec_io
from mjblend.components.schema import KINDS

ISSUE_KINDS = {  # the Mjs classes the foundation issue names, and the spec-level blocks
    "body", "joint", "geom", "site", "camera", "light", "frame", "actuator", "sensor",
    "tendon", "wrap", "equality", "pair", "exclude", "key", "mesh", "hfield", "skin",
    "texture", "material", "flex", "plugin", "numeric", "text", "tuple",
    "option", "compiler", "size", "statistic", "visual_global", "visual_quality",
    "visual_headlight", "visual_map", "visual_scale", "visual_rgba",
}


def test_committed_table_is_what_the_installed_mujoco_generates():
    fresh_text = gen_schema.render(*gen_schema.build_table())
    path = os.path.join(ROOT, "components", "schema_table.py")
    committed = open(path, encoding="utf-8").read()
    diff = list(difflib.unified_diff(committed.splitlines(), fresh_text.splitlines(), lineterm="", n=0))
    assert not diff, "schema_table.py is stale (run `make schema`):\n" + "\n".join(diff[:30])
    assert schema.MUJOCO_VERSION == mujoco.__version__


def test_every_kind_the_issue_names_is_in_the_table():
    assert ISSUE_KINDS <= set(KINDS)
    assert set(schema.DEFAULT_KINDS) <= set(KINDS)


@pytest.mark.parametrize("kind", sorted(gen_schema.ELEMENT_KINDS))
def test_every_python_property_is_an_attribute_or_known_structure(kind):
    """A property mujoco adds to an Mjs class fails here until the table covers it."""
    element = fresh(kind)
    names = {a.name.split(".")[0] for a in KINDS[kind].attrs}
    properties = {n for n in dir(type(element))
                  if not n.startswith("_") and isinstance(getattr(type(element), n), property)}
    uncovered = properties - names - gen_schema.PYTHON_STRUCTURE - gen_schema.NOT_ATTRIBUTES
    uncovered -= {name for k, name in gen_schema.NOT_ATTRIBUTES_IN if k == kind}
    assert not uncovered, f"{kind}: not in the schema table: {sorted(uncovered)}"


@pytest.mark.parametrize("kind", sorted(gen_schema.ELEMENT_KINDS))
def test_table_defaults_are_mujocos_defaults(kind):
    element = fresh(kind)
    for attr in KINDS[kind].attrs:
        if attr.default is None:
            continue
        value = spec_io.from_mujoco(attr, spec_io.get_attr(element, attr))
        if attr.type == "enum":
            value = schema.enum_ident(attr.enum, value)
        elif attr.type == "flags":
            value = tuple(i for i, _, v, _ in schema.enum_items(attr.enum) if value & v)
        assert as_comparable(value) == as_comparable(attr.default), f"{kind}.{attr.name}"


def test_enums_match_mujoco():
    for name, members in schema.ENUMS.items():
        enum_class = getattr(mujoco, name)
        for ident, _label, value, cname in members:
            assert int(getattr(enum_class, cname)) == value, cname
            assert cname.endswith("_" + ident) or cname == ident


def test_every_attribute_has_a_type_a_tooltip_and_a_bpy_name():
    reserved = set(dir(bpy.types.PropertyGroup))
    known_types = {"float", "float32", "int64", "int", "bool", "enum", "flags", "string", "ref",
                   "refvec", "stringvec", "floatvec", "float32vec", "intvec", "bytes",
                   "intvecvec", "float32vecvec", "keyvalues"}
    for kind in KINDS.values():
        props = [a.prop for a in kind.attrs]
        assert len(props) == len(set(props)), f"{kind.name}: duplicate property names"
        for attr in kind.attrs:
            assert attr.type in known_types, (kind.name, attr.name)
            assert attr.doc, (kind.name, attr.name)
            assert attr.prop.isidentifier() and attr.prop not in reserved, attr.prop
            if attr.type in ("enum", "flags"):
                assert attr.enum in schema.ENUMS
            if attr.type in ("ref", "refvec"):
                assert attr.ref
    # Tooltips come mostly from MuJoCo's XML reference, not the terse C comments.
    docs = [a.doc for k in KINDS.values() for a in k.attrs]
    assert sum(len(d) > 60 for d in docs) > len(docs) / 2


def test_sections_are_the_groups_of_mujocos_headers():
    geom = KINDS["geom"]
    assert geom.attr("friction").section == "contact related"
    assert geom.attr("rgba").section == "visual"
    assert geom.attr("plugin.plugin_name").section == geom.attr("userdata").section == "other"
    assert KINDS["option"].attr("gravity").section == "physical constants"
    # the kinds whose structs MuJoCo groups with comments
    grouped = [k for k in KINDS.values() if any(a.section for a in k.attrs)]
    assert len(grouped) >= 15  # 18 with mujoco 4.0.0: body, geom, joint, actuator, option, ...

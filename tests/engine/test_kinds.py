"""components/kinds.py, the element-kind registry: every element kind MuJoCo's MjSpec
has is in it (or named below with the reason MJBlend keeps it otherwise), and each
record agrees with the schema and with what MuJoCo's bindings have of the kind."""

import dataclasses

import mujoco

from mjblend.components import kinds, schema_table
from mjblend.components.kinds import ELEMENT_KINDS

# Kinds MuJoCo names that MJBlend keeps no element object of, and why.
NOT_OWN_KINDS = {
    "model": "the model root: the object (OBJECT_KINDS' first) that holds the scene-wide settings",
    "default": "a default class: an item of its model root's `defaults`, not an object",
    "xbody": "mjOBJ_XBODY, a compiled body's inertial frame: the body's",
    "dof": "mjOBJ_DOF, a compiled degree of freedom: its joint's",
    "freejoint": "MjsBody.add_freejoint makes a joint",
}


def mujoco_kinds() -> set[str]:
    """Every element kind MuJoCo's bindings name: the object types of mjtObj, and
    what MjSpec and a body can add (`add_<kind>`)."""
    objects = {name.removeprefix("mjOBJ_").lower() for name in mujoco.mjtObj.__members__
               if name.startswith("mjOBJ_")} - {"unknown"}
    added = {name.removeprefix("add_") for owner in (mujoco.MjSpec, mujoco.MjsBody)
             for name in dir(owner) if name.startswith("add_")}
    return objects | added


def spec_lists() -> set[str]:
    """The names of MjSpec's element lists (`spec.bodies`, `spec.keys`, ...)."""
    spec = mujoco.MjSpec()
    found = set()
    for name in dir(mujoco.MjSpec):
        if name.startswith("_") or not isinstance(getattr(mujoco.MjSpec, name), property):
            continue
        try:
            value = getattr(spec, name)
        except ValueError:  # a property that can only be set (copy_during_attach)
            continue
        if isinstance(value, list):
            found.add(name)
    return found


def missing_kinds(registry, mujoco_names) -> set[str]:
    """MuJoCo's kinds that neither `registry` nor NOT_OWN_KINDS has."""
    return set(mujoco_names) - set(registry) - set(NOT_OWN_KINDS)


def disagreements(registry) -> list[str]:
    """Where `registry` ({name: ElementKind}) disagrees with the schema or MuJoCo."""
    found = []
    schema_kinds = {name for name, entry in schema_table.KINDS.items() if "path" not in entry}
    if set(registry) | set(kinds.PART_KINDS) != schema_kinds:
        found.append(f"kinds: registry {sorted(registry)}, schema {sorted(schema_kinds)}")
    if {k.plural for k in registry.values()} != spec_lists():
        found.append(f"plurals {sorted(k.plural for k in registry.values())} are not MjSpec's "
                     f"lists {sorted(spec_lists())}")
    model, option = mujoco.MjModel, mujoco.MjvOption()
    for kind in registry.values():
        attrs = {row["name"]: row for row in schema_table.KINDS.get(kind.name, {"attrs": ()})["attrs"]}
        posed = any(row.get("spatial") for row in attrs.values())
        if kind.in_body_tree != posed:  # the scan adds a body's elements with add_<kind>
            found.append(f"{kind.name}: in the body tree {kind.in_body_tree}, pose attributes {posed}")
        maker = mujoco.MjsBody if kind.in_body_tree else mujoco.MjSpec
        if not hasattr(maker, "add_" + kind.name):
            found.append(f"{kind.name}: {maker.__name__} has no add_{kind.name}")
        if (kind.section == "asset") != (kind.holder != "Object"):
            found.append(f"{kind.name}: section {kind.section}, held by {kind.holder}")
        if kind.section not in ("worldbody", "asset", *kinds.SECTIONS):
            found.append(f"{kind.name}: section {kind.section!r} is not in SECTIONS")
        if kind.section in kinds.SECTIONS and kind.section != "deformable" and not kind.collection:
            found.append(f"{kind.name}: the importer puts it in no collection")
        if kind.file_path and not hasattr(model, kind.file_path):
            found.append(f"{kind.name}: MjModel has no {kind.file_path}")
        if kind.group_switch is not None and ("group" not in attrs
                                              or not hasattr(option, kind.name + "group")):
            found.append(f"{kind.name}: a group switch, but no group attribute or mjvOption switch")
        if kind.bound and not hasattr(mujoco.mjtObj, "mjOBJ_" + kind.name.upper()):
            found.append(f"{kind.name}: bound by id, but MuJoCo gives it no object type")
    paths = {k.file_path for k in registry.values() if k.file_path}
    if paths != {name for name in dir(model) if name.endswith("_pathadr")}:
        found.append(f"file paths {sorted(paths)} are not MjModel's *_pathadr")
    drawn = {k.name for k in registry.values() if k.has_material}
    if drawn != {name.removesuffix("_matid") for name in dir(model) if name.endswith("_matid")}:
        found.append(f"kinds drawn with a material {sorted(drawn)} are not MjModel's *_matid")
    switches = sorted(k.group_switch for k in registry.values() if k.group_switch is not None)
    if switches != list(range(len(switches))):
        found.append(f"group switches {switches} are not 0, 1, ...")
    return found


def test_every_kind_mjspec_has_is_in_the_registry():
    named = mujoco_kinds()
    assert {"body", "geom", "tendon", "key", "plugin", "frame", "default"} <= named  # (read, not empty)
    assert missing_kinds(ELEMENT_KINDS, named) == set()
    assert set(NOT_OWN_KINDS) <= named and not set(NOT_OWN_KINDS) & set(ELEMENT_KINDS)  # none stale


def test_a_registry_missing_a_kind_fails():
    without_skin = {name: kind for name, kind in ELEMENT_KINDS.items() if name != "skin"}
    assert missing_kinds(without_skin, mujoco_kinds()) == {"skin"}
    assert disagreements(without_skin)  # the schema and MjSpec's lists have skins


def test_the_registry_agrees_with_the_schema_and_mujoco():
    assert disagreements(ELEMENT_KINDS) == []


def test_a_wrong_record_disagrees():
    geom = ELEMENT_KINDS["geom"]
    for wrong in (dict(plural="geometries"), dict(section="custom", collection="Custom"),
                  dict(file_path="geom_pathadr"), dict(group_switch=7)):
        registry = {**ELEMENT_KINDS, "geom": dataclasses.replace(geom, **wrong)}
        assert disagreements(registry), wrong


def test_what_the_stages_read():
    # the kind enums' order is the value a .blend stores: new kinds come after these
    assert kinds.OBJECT_KINDS[:21] == (
        "model", "body", "frame", "joint", "geom", "site", "camera", "light", "flex", "skin", "tendon",
        "actuator", "sensor", "equality", "pair", "exclude", "key", "numeric", "text", "tuple", "plugin")
    assert [k for k, holder in kinds.DATA_KINDS.items() if holder == "Mesh"][:2] == ["mesh", "hfield"]
    assert set(kinds.SECTION_KINDS) | set(kinds.SPATIAL_KINDS) | set(kinds.DATA_KINDS) == set(ELEMENT_KINDS)
    assert kinds.BOUND_KINDS >= {"body", "joint", "actuator", "sensor", "flex", "skin", "key"}
    assert kinds.GROUP_KINDS[:5] == ("geom", "site", "joint", "tendon", "actuator")  # mjvOption's order
    assert set(schema_table.DEFAULT_KINDS) <= set(ELEMENT_KINDS)

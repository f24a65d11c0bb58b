"""A .blend in storage format 1 opens, exports and reads as the MJBlend that saved it.

tests/blender/data/saved_format1.blend was saved by MJBlend as of commit a7505ab
(storage format 1: every attribute stored, floats with `_exact` / `_seen`, `_own`)
in the bpy 4.2 module by tools/make_saved_format1.py (its docstring says what the
model holds and which edits were made before saving). saved_format1.xml (+ its
.randomization.json) is what that MJBlend exported from the saved file, and
saved_format1_values.json every attribute of every element, class and settings
group as that MJBlend read it, through RNA (`obj.mujoco.<kind>.<prop>`) and through
`spec_io.read_value` (tests/stored_values.py). Format 2 (issue 35) must give the same
export and the same values, and save the file in format 2.
"""

import json
import os

import bpy
import mujoco
import pytest
from stored_values import dump_values

from mjblend.components import storage_format, stored_keys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
NAME = "saved_format1"
FORMAT1_KEYS = ("_exact", "_seen", "_own")


def expected(suffix: str) -> str:
    return open(os.path.join(DATA, NAME + suffix), encoding="utf-8").read()


def export(tmp_path, name: str) -> tuple[str, str]:
    out = tmp_path / (name + ".xml")
    assert bpy.ops.export_scene.mjcf(filepath=str(out)) == {"FINISHED"}
    randomization = tmp_path / (name + ".randomization.json")
    return out.read_text(encoding="utf-8"), randomization.read_text(encoding="utf-8")


def differences(found: dict, recorded: dict) -> list[str]:
    """The (group, attribute) pairs whose values differ, for a readable failure."""
    out = [f"{label}: missing" for label in recorded if label not in found]
    out += [f"{label}: extra" for label in found if label not in recorded]
    for label in set(found) & set(recorded):
        for attr, value in recorded[label].items():
            if found[label].get(attr) != value:
                out.append(f"{label}.{attr}: {found[label].get(attr)} != {value}")
    return out


def format1_keys() -> list[str]:
    """Where a format-1 key is left: every ID property group of every datablock."""
    found = []

    def walk(where, group):
        for key in group.keys():
            value = group[key]
            if key in FORMAT1_KEYS:
                found.append(f"{where}/{key}")
            if isinstance(value, bpy.types.ID):
                continue  # (walked as a datablock of its own; in Blender 5 its `value.keys()` are
                # its user properties, where a file saved by 4.x keeps a stale copy of `mujoco`)
            if hasattr(value, "keys"):
                walk(f"{where}/{key}", value)
            elif isinstance(value, list) or type(value).__name__ == "IDPropertyArray":
                for i, item in enumerate(value):
                    if hasattr(item, "keys"):
                        walk(f"{where}/{key}[{i}]", item)

    for collection in (bpy.data.objects, bpy.data.meshes, bpy.data.materials, bpy.data.images):
        for block in collection:
            holder = block.mujoco
            walk(f"{block.name}", holder)
    return found


def test_the_format1_file_exports_and_reads_as_it_was_saved(tmp_path):
    bpy.ops.wm.open_mainfile(filepath=os.path.join(DATA, NAME + ".blend"))
    if stored_keys.FORMAT == 1:  # it is format 1 (and format1_keys finds what format 2 must not leave)
        assert len(format1_keys()) > 100
    xml, randomization = export(tmp_path, "model")
    assert xml == expected(".xml")
    assert randomization == expected(".randomization.json")
    recorded = json.load(open(os.path.join(DATA, NAME + "_values.json"), encoding="utf-8"))
    assert differences(dump_values(bpy), recorded) == []
    # the edits made before saving are in it (tools/make_saved_format1.py EDITS)
    model = mujoco.MjModel.from_xml_string(xml)
    assert model.geom("upper").friction[0] == pytest.approx(0.9)
    assert model.body_gravcomp[model.body("base").id] == 0.5
    assert model.geom("upper").margin[0] == model.geom("upper_same").margin[0] == 0.003
    assert model.geom("upper_own").margin[0] == 0.002 and model.geom("fist").priority[0] == 3
    assert list(model.geom("upper_own").rgba) == pytest.approx([0.1, 0.2, 0.3, 1.0])
    assert model.geom("geom1").bodyid[0] == model.body("body1").id
    assert model.opt.timestep == 0.0123456789
    assert model.dof_armature[model.joint("swing").dofadr[0]] == 0.123456789


@pytest.mark.skipif(stored_keys.FORMAT == 1, reason="storage format 2 is not in yet (stored_keys.FORMAT "
                                                    "== 1): the format-1 file is this MJBlend's own format")
def test_a_format1_file_is_read_the_same_and_saved_in_format2(tmp_path):
    recorded = json.load(open(os.path.join(DATA, NAME + "_values.json"), encoding="utf-8"))
    bpy.ops.wm.open_mainfile(filepath=os.path.join(DATA, NAME + ".blend"))  # load_post migrates
    (root,) = [o for o in bpy.data.objects if o.mujoco.kind == "MODEL"]
    assert format1_keys() == []  # migrated on load, before anything read it
    files = export(tmp_path, "opened")
    assert files == (expected(".xml"), expected(".randomization.json"))
    assert differences(dump_values(bpy), recorded) == []
    path = str(tmp_path / "again.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    (root,) = [o for o in bpy.data.objects if o.mujoco.kind == "MODEL"]
    assert storage_format.format_of(root) == stored_keys.FORMAT >= 2
    assert format1_keys() == []
    assert export(tmp_path, "reopened") == files
    assert differences(dump_values(bpy), recorded) == []
    # an edit after the upgrade: the class's value is still what an element without its own shows
    arm = next(c for c in root.mujoco.model.defaults if c.name == "arm")
    arm.geom.margin = 0.25
    assert bpy.data.objects["upper"].mujoco.geom.margin == pytest.approx(0.25)
    assert bpy.data.objects["upper_own"].mujoco.geom.margin == pytest.approx(0.002)
    edited, _ = export(tmp_path, "edited")
    model = mujoco.MjModel.from_xml_string(edited)
    assert model.geom("upper").margin[0] == 0.25 and model.geom("upper_own").margin[0] == 0.002
    assert model.geom("upper_same").margin[0] == 0.003  # its own value, equal to the class's when set

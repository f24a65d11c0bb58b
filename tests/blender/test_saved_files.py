"""A .blend saved by an earlier MJBlend opens and exports the same file.

tests/blender/data/saved_before_layout.blend was saved by MJBlend as of commit
95f47f8 (before the stage layout): desk_toys imported, then edited (a geom
resized, a body moved, a body and a geom added with the Add operators); the
.xml next to it is what that MJBlend exported from it (both made by running
that tree's add-on in the bpy 4.2 module, the oldest supported release, so
every newer one opens the file: import, edit, save, export).
"""

import os

import bpy
import mujoco

from mjblend.components import storage_format, stored_keys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def test_a_blend_saved_before_the_layout_exports_the_same_file(tmp_path):
    bpy.ops.wm.open_mainfile(filepath=os.path.join(DATA, "saved_before_layout.blend"))
    out = tmp_path / "model.xml"
    assert bpy.ops.export_scene.mjcf(filepath=str(out)) == {"FINISHED"}
    expected = open(os.path.join(DATA, "saved_before_layout.xml"), encoding="utf-8").read()
    assert out.read_text(encoding="utf-8") == expected
    model = mujoco.MjModel.from_xml_path(str(out))
    # the edits made before saving are in it: the body and geom added, the resized box
    assert model.body("body1").parentid[0] == model.body("arm").id
    assert model.geom("geom1").bodyid[0] == model.body("body1").id
    assert list(model.geom_size[model.body("box").geomadr[0]]) == [0.061, 0.042, 0.033]


def test_a_save_records_the_storage_format(tmp_path):
    bpy.ops.wm.open_mainfile(filepath=os.path.join(DATA, "saved_before_layout.blend"))
    (root,) = [o for o in bpy.data.objects if o.mujoco.kind == "MODEL"]
    assert stored_keys.FORMAT_KEY not in root.mujoco.model  # saved before the key existed
    assert storage_format.format_of(root) == 1
    path = str(tmp_path / "again.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    (root,) = [o for o in bpy.data.objects if o.mujoco.kind == "MODEL"]
    assert root.mujoco.model[stored_keys.FORMAT_KEY] == stored_keys.FORMAT


def test_an_older_format_is_migrated_step_by_step_on_load(tmp_path, monkeypatch):
    bpy.ops.wm.open_mainfile(filepath=os.path.join(DATA, "saved_before_layout.blend"))
    steps = []

    def one_to_two(root):  # a storage change: a key renamed
        steps.append(root.name)
        root.mujoco.model["_renamed"] = root.mujoco.model.get(stored_keys.SOURCE, "")

    monkeypatch.setattr(storage_format, "FORMAT", 2)
    monkeypatch.setitem(storage_format.MIGRATIONS, 1, one_to_two)
    bpy.ops.wm.open_mainfile(filepath=os.path.join(DATA, "saved_before_layout.blend"))  # load_post migrates
    (root,) = [o for o in bpy.data.objects if o.mujoco.kind == "MODEL"]
    assert steps == [root.name]
    assert root.mujoco.model[stored_keys.FORMAT_KEY] == 2 and "_renamed" in root.mujoco.model
    assert storage_format.migrate([root]) == [] and steps == [root.name]  # done once


def test_a_newer_format_is_named_and_left_alone():
    bpy.ops.wm.open_mainfile(filepath=os.path.join(DATA, "saved_before_layout.blend"))
    (root,) = [o for o in bpy.data.objects if o.mujoco.kind == "MODEL"]
    root.mujoco.model[stored_keys.FORMAT_KEY] = stored_keys.FORMAT + 1
    (problem,) = storage_format.migrate([root])
    assert "saved by a newer MJBlend" in problem and root.name in problem
    assert root.mujoco.model[stored_keys.FORMAT_KEY] == stored_keys.FORMAT + 1

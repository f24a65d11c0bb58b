"""A .blend saved by an earlier MJBlend opens and exports the same file.

tests/blender/data/saved_before_layout.blend was saved by MJBlend as of commit
95f47f8 (before the stage layout): desk_toys imported, then edited (a geom
resized, a body moved, a body and a geom added with the Add operators); the
.xml next to it is what that MJBlend exported from it (both made by running
that tree's add-on in the bpy 4.2 module, the oldest supported release, so
every newer one opens the file: import, edit, save, export).

tests/blender/data/saved_before_kinds.blend was saved by MJBlend as of commit
64fb085 (before the saved property groups moved into components/), in the bpy
4.2 module: dm_control's cartpole imported, its 800x4800 skybox image deleted
(the file stays small), 0.2 s baked from frame 3, then every scene settings
group set to the values SET_BEFORE_SAVING lists; its .xml is what that MJBlend
exported from it. saved_settings.json holds every scene setting that MJBlend
read from both files (saved values and defaults alike), so a renamed class,
property or default shows.
"""

import json
import os

import bpy
import mujoco
import pytest

from mjblend.components import storage_format, stored_keys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
SAVED_FILES = ("saved_before_layout", "saved_before_kinds")
# the Scene's property groups saved in the .blend
SCENE_SETTINGS = ("mujoco_simulation", "mujoco_overlays", "mujoco_preview", "mujoco_plots", "mujoco_bake")
SET_BEFORE_SAVING = {
    "mujoco_simulation": {"realtime": 0.5, "fast_forward": True, "display": "FAST", "keyframe": 2,
                          "show_inertia": True, "active_key": 3},
    "mujoco_simulation.override": {"use_timestep": True, "timestep": 0.005, "use_gravity": True,
                                   "gravity": [0.0, 0.0, -5.0]},
    "mujoco_overlays": {"contact_points": True, "joints": True, "perturbation": False, "labels": "BODY",
                        "joint_groups": [False, True, False, True, False, True],
                        "tendon_groups": [True, True, True, True, False, False],
                        "actuator_groups": [False, False, False, False, False, True],
                        "site_groups": [True, False, False, False, False, True]},
    "mujoco_preview": {"count": 7, "spacing": 2.5},
    "mujoco_plots": {"active": 1, "show_plots": False, "show_profiler": True, "seconds": 12.5, "side": "LEFT",
                     "channels": [{"name": "", "kind": "QPOS", "element": "hinge_1", "component": 0},
                                  {"name": "", "kind": "CTRL", "element": "slide", "component": -1}]},
    "mujoco_bake": {"recording": "Scene MuJoCo recording", "frame_start": 3, "frame_end": 8, "fps": 24.0,
                    "source": "simulated from qpos0"},
}


def as_plain(group) -> dict:
    """Every property of a property group as plain values (a datablock by its name)."""
    plain = {}
    for prop in group.bl_rna.properties:
        name = prop.identifier
        if name == "rna_type":
            continue
        value = getattr(group, name)
        if prop.type == "POINTER":
            value = as_plain(value) if isinstance(value, bpy.types.PropertyGroup) else \
                (value.name if value is not None else None)
        elif prop.type == "COLLECTION":
            value = [as_plain(item) for item in value]
        elif prop.type == "ENUM" and prop.is_enum_flag:
            value = sorted(value)
        elif getattr(prop, "is_array", False):
            value = [float(v) if prop.type == "FLOAT" else v for v in value]
        plain[name] = value
    return plain


def scene_settings(scene) -> dict:
    return {name: as_plain(getattr(scene, name)) for name in SCENE_SETTINGS}


def test_saved_settings_read_back_and_the_model_exports_the_same_file(tmp_path):
    recorded = json.load(open(os.path.join(DATA, "saved_settings.json"), encoding="utf-8"))
    for name in SAVED_FILES:
        bpy.ops.wm.open_mainfile(filepath=os.path.join(DATA, name + ".blend"))
        assert scene_settings(bpy.context.scene) == recorded[name], name
        out = tmp_path / (name + ".xml")
        assert bpy.ops.export_scene.mjcf(filepath=str(out)) == {"FINISHED"}
        expected = open(os.path.join(DATA, name + ".xml"), encoding="utf-8").read()
        assert out.read_text(encoding="utf-8") == expected, name
    settings = scene_settings(bpy.context.scene)  # (saved_before_kinds)
    for path, values in SET_BEFORE_SAVING.items():
        group = settings
        for key in path.split("."):
            group = group[key]
        for key, value in values.items():  # (a float is kept as a float32: 0.005 reads 0.004999...)
            saved = pytest.approx(value) if isinstance(value, float) else value
            assert group[key] == saved, f"{path}.{key}"


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
    # saved before the key existed (format 1): migrated on load, and stamped
    assert storage_format.format_of(root) == stored_keys.FORMAT == 2
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

"""Reload and Follow File: a model reloaded from its edited file updates the scene in
place, kept elements keeping their Blender datablocks, and compiles to exactly what
MuJoCo loads from the new file."""

import os
import re

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus
from test_scan import model_differences

from mjblend.importer import build, reload
from mjblend.live import file_watch, scene_session
from mjblend.scan import scene_scan

MAIN = """<mujoco model="reloaded">
  <include file="parts.xml"/>
  <asset>
    <mesh name="tet" file="tet.obj"/>
    <material name="red" rgba="1 0 0 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping=".1"/>
      <geom name="upper" type="capsule" fromto="0 0 0 .3 0 0" size=".05" material="red"/>
      <body name="fore" pos=".3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom name="lower" type="box" size=".1 .05 .05" pos=".1 0 0"/>
        <geom name="tip" type="mesh" mesh="tet" pos=".2 0 0"/>
        <site pos=".2 0 0" size=".02"/>
      </body>
    </body>
    <body name="ball" pos="1 0 .5">
      <freejoint name="free"/>
      <geom name="ball" size=".1" rgba="0 0 1 1"/>
    </body>
  </worldbody>
  <actuator><motor name="motor" joint="shoulder" ctrlrange="-1 1"/></actuator>
</mujoco>
"""
PARTS = """<mujoco><worldbody>
  <body name="lamp" pos="0 1 .5"><geom name="bulb" size="{size}"/></body>
</worldbody></mujoco>
"""
TET = "v 0 0 0\nv {s} 0 0\nv 0 {s} 0\nv 0 0 {s}\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


@pytest.fixture
def model_files(tmp_path):
    """The model's three files; `write(main=..., parts_size=..., tet=...)` rewrites them."""
    paths = {"main": tmp_path / "robot.xml", "parts": tmp_path / "parts.xml", "tet": tmp_path / "tet.obj"}

    def write(main=MAIN, parts_size=0.07, tet=0.1):
        paths["main"].write_text(main)
        paths["parts"].write_text(PARTS.format(size=parts_size))
        paths["tet"].write_text(TET.format(s=tet))
    write()
    paths["write"] = write
    return paths


def element_blocks(root):
    """{identity: (object pointer, data pointer, material pointers)} of every element."""
    return {key: (obj.as_pointer(), obj.data.as_pointer() if obj.data is not None else 0,
                  tuple(s.material.as_pointer() for s in obj.material_slots if s.material is not None))
            for key, obj in reload.identities(root).items()}


def asset_blocks(root):
    return sorted(item.block.as_pointer() for item in root.mujoco.model.assets)


def check_compiles_as_mujoco(root, path):
    ours = scene_scan.scan_model(root).compile()
    theirs = mujoco.MjModel.from_xml_path(str(path))
    assert model_differences(ours, theirs) == []
    return ours


def imported(model_files):
    root = build.import_file(str(model_files["main"]), bpy.context.scene).root
    return root, element_blocks(root)


EDITS = {  # name -> (the files after the edit, the elements whose object or data may change)
    "geom size": (dict(main=MAIN.replace('size=".1 .05 .05"', 'size=".2 .05 .05"')), {("geom", "lower")}),
    "new body": (dict(main=MAIN.replace("  </worldbody>", '    <body name="new" pos="0 -1 1"><geom '
                                        'name="new" size=".05"/></body>\n  </worldbody>')), set()),
    "removed joint": (dict(main=MAIN.replace('<joint name="elbow" type="hinge" axis="0 1 0"/>', "")), set()),
    "changed include": (dict(parts_size=0.09), {("geom", "bulb")}),
    "changed mesh file": (dict(tet=0.15), {("geom", "tip")}),
}


@pytest.mark.parametrize("edit", EDITS)
def test_an_edit_of_the_file_updates_the_scene_in_place(edit, clean_scene, model_files):
    root, before = imported(model_files)
    files, changed = EDITS[edit]
    model_files["write"](**files)
    result = reload.reload_model(bpy.context.scene, root)
    after = element_blocks(root)
    check_compiles_as_mujoco(root, model_files["main"])
    theirs = mujoco.MjModel.from_xml_path(str(model_files["main"]))
    kept = {key for key in before if key in after}
    for key in kept - changed:
        assert after[key] == before[key], f"{key} is not the same datablock after the reload"
    for key in changed:
        assert after[key][0] == before[key][0], f"{key}: the object itself must stay"
        assert after[key][1] != before[key][1], f"{key}: shows new data"
        assert after[key][2] == before[key][2], f"{key}: its material stays"
    added, removed = set(after) - set(before), set(before) - set(after)
    assert result.added == len(added) and result.removed == len(removed)
    if edit == "new body":
        assert {("body", "new"), ("geom", "new")} <= added and not removed
    elif edit == "removed joint":
        assert removed == {("joint", "elbow")} and not added
    else:
        assert not added and not removed
    # one object per element, no staging left, no ".001" names
    assert len(after) == 1 + theirs.nbody - 1 + theirs.njnt + theirs.ngeom + theirs.nsite + theirs.nu
    assert [c.name for c in bpy.context.scene.collection.children] == ["reloaded"]
    assert not [o.name for o in bpy.data.objects if re.match(r".*\.\d\d\d$", o.name)]
    assert not [m.name for m in bpy.data.meshes if m.users == 0]


# a robot with mesh and texture files, a humanoid, a flex model
RELOADED_CORPUS = ("menagerie/franka_emika_panda/scene.xml", "mujoco_model/model/humanoid/humanoid.xml",
                   "mujoco_model/model/flex/flag.xml")


@needs_corpus
@pytest.mark.parametrize("model", RELOADED_CORPUS)
def test_reloading_an_unchanged_corpus_model_keeps_every_datablock(model, clean_scene):
    path = os.path.join(CORPUS, model)
    root = build.import_file(path, bpy.context.scene).root
    before, assets = element_blocks(root), asset_blocks(root)
    counts = {name: len(getattr(bpy.data, name)) for name in build.DATA_COLLECTIONS}
    result = reload.reload_model(bpy.context.scene, root)
    assert result.added == result.removed == result.replaced_data == 0
    assert element_blocks(root) == before and asset_blocks(root) == assets
    assert counts == {name: len(getattr(bpy.data, name)) for name in build.DATA_COLLECTIONS}
    check_compiles_as_mujoco(root, path)


def test_the_changed_mesh_shows_the_new_file(clean_scene, model_files):
    root, _ = imported(model_files)
    model_files["write"](tet=0.15)
    reload.reload_model(bpy.context.scene, root)
    tip = next(o for o in root.children_recursive if o.mujoco.name == "tip")
    assert max(v.co.length for v in tip.data.vertices) > 0.1  # MuJoCo centres the mesh: up to 0.15 * ...
    meshes = [b.block for b in root.mujoco.model.assets if isinstance(b.block, bpy.types.Mesh)]
    assert meshes == [tip.data] and tip.data.name == "tet"


def test_a_running_simulation_keeps_running_with_the_state_of_kept_joints(clean_scene, model_files):
    root, _ = imported(model_files)
    scene = bpy.context.scene
    live = scene_session.start_simulation(scene, threaded=False)
    live.step(60)
    live.play()
    assert live.playing
    data = live.session.data
    state = {name: (data.joint(name).qpos.copy(), data.joint(name).qvel.copy())
             for name in ("shoulder", "elbow", "free")}
    assert np.any(state["free"][1] != 0)  # it moves
    time = data.time
    model_files["write"](**EDITS["removed joint"][0])
    result = file_watch.reload_in_place(scene, root)
    assert result.simulation and scene_session.simulation(scene) is live and live.playing
    data, model = live.session.data, live.session.model
    assert model.njnt == 2 and data.time == time
    for name in ("shoulder", "free"):
        assert np.array_equal(data.joint(name).qpos, state[name][0])
        assert np.array_equal(data.joint(name).qvel, state[name][1])
    assert model_differences(model, mujoco.MjModel.from_xml_path(str(model_files["main"]))) == []
    live.step(10)
    assert live.session.data.time > time
    scene_session.end_simulation(live)


def test_a_file_mujoco_refuses_changes_nothing(clean_scene, model_files):
    root, before = imported(model_files)
    counts = {name: len(getattr(bpy.data, name)) for name in build.DATA_COLLECTIONS}
    model_files["write"](main=MAIN.replace('mesh="tet"', 'mesh="missing"'))
    with pytest.raises(build.ImportFailed, match="missing"):
        reload.reload_model(bpy.context.scene, root)
    assert element_blocks(root) == before
    assert counts == {name: len(getattr(bpy.data, name)) for name in build.DATA_COLLECTIONS}
    model_files["write"]()  # the last good model: the file before the edit
    check_compiles_as_mujoco(root, model_files["main"])


def test_follow_file_reloads_once_per_change_and_shows_a_refusal(clean_scene, model_files):
    root, before = imported(model_files)
    scene = bpy.context.scene
    watch = file_watch.FileWatch(scene)
    assert os.path.normpath(model_files["parts"]) in watch.files(root)
    assert os.path.normpath(model_files["tet"]) in watch.files(root)
    assert [watch.poll() for _ in range(3)] == [False, False, False]
    model_files["write"](parts_size=0.09)
    bump(model_files["parts"])
    polls = [watch.poll() for _ in range(4)]
    assert polls == [False, True, False, False] and watch.reloads == 1 and not watch.error
    bulb = next(o for o in root.children_recursive if o.mujoco.name == "bulb")
    assert bulb.as_pointer() == before[("geom", "bulb")][0]
    check_compiles_as_mujoco(root, model_files["main"])
    # a broken save: the message kept, the model as it was, until the file is good again
    kept = element_blocks(root)
    model_files["write"](main=MAIN.replace("</worldbody>", "</wrldbody>"), parts_size=0.09)
    bump(model_files["main"])
    assert [watch.poll() for _ in range(3)] == [False, False, False] and watch.reloads == 1
    assert "robot.xml" in watch.error and element_blocks(root) == kept
    model_files["write"](parts_size=0.09)
    bump(model_files["main"])
    assert [watch.poll() for _ in range(3)] == [False, True, False] and watch.reloads == 2
    assert watch.error == ""


def bump(path):
    """A save a second later (file systems with coarse times see the change too)."""
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_the_reload_operator_reloads_the_active_model(clean_scene, model_files):
    root, before = imported(model_files)
    model_files["write"](parts_size=0.09)
    bpy.context.view_layer.objects.active = root
    assert bpy.ops.mujoco.reload() == {"FINISHED"}
    after = element_blocks(root)
    assert after[("geom", "bulb")][0] == before[("geom", "bulb")][0]
    check_compiles_as_mujoco(root, model_files["main"])

"""An import built in steps (File > Import in a window: `build.ImportSteps`): stopped at
any step it leaves nothing behind; run to the end it makes what the one-call import
makes; between steps the model is not in the scene and nothing holds `changes.quiet()`."""

import os

import bpy
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.components import changes
from mjblend.importer import build, reload

HUMANOID = "mujoco_model/model/humanoid/humanoid.xml"  # classes, a skybox (the scene's world)
GRIPPER = "menagerie/robotiq_2f85/scene.xml"  # meshes, tendons, equalities, actuators
HIDDEN = """<mujoco><worldbody>
  <body name="b"><freejoint/><geom name="shown" size=".1"/><geom name="collider" group="3" size=".2"/>
    <site name="s" group="4"/></body>
</worldbody></mujoco>"""


def load(path):
    job = build.start_load(os.path.abspath(path))  # (as import_file does)
    job.run()
    return job


def data_counts():
    """The number of datablocks of every kind bpy.data holds."""
    return {p.identifier: len(getattr(bpy.data, p.identifier)) for p in bpy.data.bl_rna.properties
            if p.type == "COLLECTION"}


def step_count(path, scene):
    """How many steps the import of `path` takes, advancing one yield at a time."""
    steps = build.ImportSteps(load(path), scene)
    count = 0
    while not steps.advance(0.0):
        count += 1
    return count, steps.result


def snapshot(collection):
    """What an import made, comparable across imports: each object's name, kind, parent,
    world matrix, visibility and MuJoCo ID properties; the datablocks it uses."""
    out = {}
    for obj in collection.all_objects:
        out[obj.name] = (obj.mujoco.kind, obj.mujoco.name, obj.parent.name if obj.parent else None,
                         np.round(np.array(obj.matrix_world), 12).tolist(), obj.hide_get(),
                         obj.hide_render, obj.hide_viewport, obj.display_type,
                         obj.data.name if obj.data else None,
                         [s.material.name if s.material else None for s in obj.material_slots],
                         stored(obj))
    return out


def stored(obj):
    """`obj`'s ID properties (MJBlend's: Blender 5's system properties) as plain values,
    as text (a NaN, MuJoCo's "unset" mass or extent, equals itself there)."""
    group = obj.bl_system_properties_get() if hasattr(obj, "bl_system_properties_get") else obj
    return repr(tuple(sorted((key, reload._plain(group[key])) for key in group.keys())))


@needs_corpus
@pytest.mark.parametrize("model", [HUMANOID, GRIPPER])
def test_a_build_stopped_at_any_step_leaves_nothing_behind(model, clean_scene):
    path = os.path.join(CORPUS, model)
    total, _result = step_count(path, clean_scene)
    assert total > 10  # (the stages yield every few elements)
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    world, children = scene.world, list(scene.collection.children)
    before = data_counts()
    for stop in sorted({1, 2, total // 3, total // 2, 2 * total // 3, total - 1}):
        steps = build.ImportSteps(load(path), scene)
        for _ in range(stop):
            assert not steps.advance(0.0)
            # between steps: the model is not in the scene, no bulk write is quiet
            assert list(scene.collection.children) == children
            assert not changes.is_quiet()
        assert data_counts() != before  # (it had made something)
        steps.cancel()
        assert data_counts() == before, stop
        assert scene.world == world and list(scene.collection.children) == children
        assert steps.result is None and not changes.is_quiet()


@needs_corpus
@pytest.mark.parametrize("model", [HUMANOID, GRIPPER])
def test_a_build_in_steps_makes_what_the_one_call_import_makes(model, clean_scene):
    path = os.path.join(CORPUS, model)
    whole = build.import_file(path, clean_scene)
    expected = snapshot(whole.collection)
    world = clean_scene.world.name if clean_scene.world else None
    bpy.ops.wm.read_homefile(use_empty=True)
    _count, stepped = step_count(path, bpy.context.scene)
    assert snapshot(stepped.collection) == expected
    assert stepped.counts == whole.counts and stepped.warnings == whole.warnings
    assert (bpy.context.scene.world.name if bpy.context.scene.world else None) == world
    assert stepped.collection.name in bpy.context.scene.collection.children


def test_groups_the_scene_hides_are_hidden_once_the_model_is_in_it(clean_scene, tmp_path):
    path = tmp_path / "hidden.xml"
    path.write_text(HIDDEN)
    result = build.import_file(str(path), clean_scene)
    objects = {o.mujoco.name: o for o in result.collection.all_objects}
    assert not objects["shown"].hide_get() and not objects["shown"].hide_render
    for name in ("collider", "s"):
        assert objects[name].hide_get() and objects[name].hide_render


def test_the_build_says_how_long_each_stage_took(clean_scene, tmp_path):
    path = tmp_path / "hidden.xml"
    path.write_text(HIDDEN)
    result = build.import_file(str(path), clean_scene)
    assert set(result.timings) == {"settings", "assets", "defaults", "tree", "others", "attributes",
                                   "finish", "link", "depsgraph"}
    assert all(seconds >= 0 for seconds in result.timings.values())


def test_an_abandoned_build_leaves_the_data_to_the_file_being_replaced(clean_scene, tmp_path):
    """(A modal import's cancel(): Blender is loading another file or quitting; the sets
    the rollback would compare belong to the old file.)"""
    path = tmp_path / "hidden.xml"
    path.write_text(HIDDEN)
    objects = len(bpy.data.objects)
    steps = build.ImportSteps(load(str(path)), clean_scene)
    assert not steps.advance(0.0) and not steps.advance(0.0)
    made = len(bpy.data.objects)
    steps.abandon()
    assert made > objects and len(bpy.data.objects) == made
    assert not changes.is_quiet()

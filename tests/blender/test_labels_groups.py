"""Labels and frames of every MuJoCo kind, flex and skin groups, and actuator group
enable, in Blender (the bpy module): the switches' items are MuJoCo's mjtLabel and
mjtFrame in order; what the viewport would draw (ui/overlays/layers.py) is
engine/overlays.py's labels and frames moved into Blender's world; flex and skin
objects hide and show by group as geoms do; disabling an actuator group reaches the
running model, whose state then equals MuJoCo's own stepping with that bit."""

import copy
import os

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus
from mathutils import Matrix

from mjblend.components import overlay_settings
from mjblend.engine import commands, overlays
from mjblend.importer import build
from mjblend.live import scene_session
from mjblend.ui.overlays import layers as overlay_layers

HUMANOID = os.path.join(CORPUS, "mujoco_model/model/humanoid/humanoid.xml")

# a flex of group 3 and a skin of group 4 (hidden by MuJoCo's default switches), two
# actuator groups
DEFORMABLE = """
<mujoco>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body name="arm" pos="0 0 1"><joint name="swing" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .4 0 0"
      size=".05"/><body name="forearm" pos=".4 0 0"><joint name="bend" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/></body></body>
    <flexcomp name="cloth" type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" group="3" pos="0 1 .5"
      radius=".01"><edge equality="true"/></flexcomp>
  </worldbody>
  <deformable>
    <skin name="patch" group="4" vertex="0 0 0  .1 0 0  0 .1 0" face="0 1 2">
      <bone body="arm" bindpos="0 0 0" bindquat="1 0 0 0" vertid="0 1 2" vertweight="1 1 1"/>
    </skin>
  </deformable>
  <actuator>
    <motor name="shoulder" joint="swing" group="0"/>
    <motor name="elbow" joint="bend" group="1"/>
  </actuator>
</mujoco>
"""


@pytest.fixture
def deformable(clean_scene, tmp_path):
    path = tmp_path / "deformable.xml"
    path.write_text(DEFORMABLE)
    result = build.import_file(str(path), clean_scene)
    yield result
    scene_session.end_all()


def _objects(scene, kind):
    return [obj for obj in scene.objects if obj.mujoco.kind == kind.upper()]


def _hidden(obj):
    return obj.hide_get() and obj.hide_render


def test_switch_items_are_mujocos_kinds_in_order():
    assert [key for key, _label, _text in overlay_settings.LABELS] == list(overlays.LABEL_KINDS)
    assert [key for key, _label, _text in overlay_settings.FRAMES] == list(overlays.FRAME_KINDS)
    # saved files keep their meaning: the first five items are the ones released before
    assert [key for key, _l, _t in overlay_settings.LABELS[:5]] == ["NONE", "BODY", "JOINT", "GEOM", "SITE"]


@needs_corpus
def test_every_label_and_frame_is_drawn_where_mujoco_puts_it(clean_scene):
    scene = clean_scene
    result = build.import_file(HUMANOID, scene)
    turn = Matrix.Rotation(0.7, 3, "Z").to_quaternion()
    result.root.matrix_world = Matrix.LocRotScale((1.0, -2.0, 0.5), turn, None)
    running = scene_session.start_simulation(scene)
    try:
        running.send(commands.Step(200))
        shot = running.latest
        world = np.array(running.binding.world)
        switches = scene.mujoco_overlays
        torso = running.binding.by_id[("body", 1)]
        bpy.context.view_layer.objects.active = torso  # the selection: the active object's body
        seen = {}
        for kind in overlays.LABEL_KINDS[1:]:
            switches.labels = kind
            drawn = overlay_layers.of_scene(scene).labels
            selection = (1, shot.xmat[1].reshape(3, 3).T @ (running.binding.to_mujoco(
                torso.matrix_world.translation) - shot.xpos[1]))
            mask = overlay_layers._label_mask(shot.model, switches)
            expected = overlays.labels(shot.model, shot, kind, mask, selection)
            assert [text for text, _pos in drawn] == [text for text, _pos in expected], kind
            if expected:
                moved = np.array([pos for _t, pos in expected]) @ world[:3, :3].T + world[:3, 3]
                assert np.allclose([pos for _t, pos in drawn], moved, atol=1e-12), kind
            seen[kind] = len(drawn)
        # the humanoid has every kind but sites, tendons' paths, constraints, flexes and skins
        assert all(seen[k] for k in ("BODY", "JOINT", "GEOM", "CAMERA", "LIGHT", "ACTUATOR", "SELECTION",
                                     "SELPNT", "CONTACTPOINT", "CONTACTFORCE", "ISLAND")), seen
        switches.labels = "SELECTION"
        assert overlay_layers.of_scene(scene).labels[0][0] == shot.model.body(1).name
        switches.labels = "NONE"
        for kind in overlays.FRAME_KINDS[1:]:
            switches.frame = kind
            layers = {layer.name: layer for layer in overlay_layers.of_scene(scene).layers}
            shown = {"GEOM": np.asarray(switches.geom_groups)[shot.model.geom_group]}.get(kind)
            for k, axis in enumerate(overlays.frame_axes(shot.model, shot, kind, shown)):
                name = f"{kind.lower()} frame {'xyz'[k]}"
                if not len(axis):
                    assert name not in layers  # (humanoid: no sites)
                    continue
                assert np.allclose(layers[name].lines, axis @ world[:3, :3].T + world[:3, 3], atol=1e-12)
    finally:
        scene_session.end_all()


def test_label_and_frame_keys_cycle_through_every_kind(deformable):
    scene = bpy.context.scene
    switches = scene.mujoco_overlays
    with bpy.context.temp_override(scene=scene):
        met = []
        for _ in overlays.LABEL_KINDS:
            bpy.ops.mujoco.toggle_overlay(overlay="labels")
            met.append(switches.labels)
        assert met == list(overlays.LABEL_KINDS[1:]) + ["NONE"]
        met = []
        for _ in overlays.FRAME_KINDS:
            bpy.ops.mujoco.toggle_overlay(overlay="frame")
            met.append(switches.frame)
        assert met == list(overlays.FRAME_KINDS[1:]) + ["NONE"]


def test_flex_and_skin_objects_hide_and_show_by_group(deformable):
    scene = bpy.context.scene
    (cloth,), (patch,) = _objects(scene, "flex"), _objects(scene, "skin")
    assert _hidden(cloth) and _hidden(patch)  # groups 3 and 4: MuJoCo's default hides them
    geoms = _objects(scene, "geom")
    assert geoms and not any(_hidden(geom) for geom in geoms)
    switches = scene.mujoco_overlays
    switches.flex_groups[3] = True
    assert not _hidden(cloth) and _hidden(patch)
    switches.skin_groups[4] = True
    assert not _hidden(patch)
    switches.flex_groups[3] = False
    assert _hidden(cloth) and not _hidden(patch)
    # a hidden flex's mesh is not written while it simulates; shown, it is the snapshot's at once
    switches.flex_groups[3] = False
    running = scene_session.start_simulation(scene)
    before = [tuple(v.co) for v in cloth.data.vertices]
    running.send(commands.Step(200))
    running.show(force=True)
    assert [tuple(v.co) for v in cloth.data.vertices] == before
    switches.flex_groups[3] = True
    shot = running.latest
    moved = np.array([tuple(v.co) for v in cloth.data.vertices])
    assert np.allclose(moved, shot.flexvert_xpos, atol=1e-6) and not np.allclose(moved, before, atol=1e-3)
    # the overlays' labels follow the same switches
    switches.flex_groups[3] = False
    switches.labels = "FLEX"
    assert overlay_layers.of_scene(scene).labels == []
    switches.flex_groups[3] = True
    assert [text for text, _pos in overlay_layers.of_scene(scene).labels] == ["cloth"]
    switches.labels = "SKIN"
    assert [text for text, _pos in overlay_layers.of_scene(scene).labels] == ["patch"]


def test_disabling_an_actuator_group_reaches_the_running_model(deformable):
    scene = bpy.context.scene
    running = scene_session.start_simulation(scene)
    model = running.model
    start = copy.copy(running.runner.session.data)  # (paused: the state the steps start from)
    reference_model = copy.copy(model)
    for index in range(model.nu):
        running.send(commands.SetControl(index, 0.8))
    with bpy.context.temp_override(scene=scene):
        bpy.ops.mujoco.toggle_actuator_group(group=1)
    assert scene.mujoco_simulation.override.use_disableactuator
    running.send(commands.Step(50))
    shot = running.latest
    assert model.opt.disableactuator == 2  # the running model has the bit
    # MuJoCo itself, with that bit, from the same state and controls
    reference_model.opt.disableactuator = 2
    reference = copy.copy(start)
    reference.ctrl[:] = 0.8
    for _ in range(50):
        mujoco.mj_step(reference_model, reference)
    assert np.array_equal(shot.qpos, reference.qpos) and np.array_equal(shot.qvel, reference.qvel)
    assert shot.actuator_force[1] == 0.0 and shot.actuator_force[0] != 0.0
    # (the bit matters: without it the elbow pushes)
    reference_model.opt.disableactuator = 0
    other = copy.copy(start)
    other.ctrl[:] = 0.8
    for _ in range(50):
        mujoco.mj_step(reference_model, other)
    assert not np.array_equal(other.qpos, shot.qpos)
    # enabled again: the override stays on, with no bit
    with bpy.context.temp_override(scene=scene):
        bpy.ops.mujoco.toggle_actuator_group(group=1)
    running.send(commands.Step(1))
    assert model.opt.disableactuator == 0

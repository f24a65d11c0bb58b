"""The first look (issue 34): an imported robot looks as in MuJoCo's default view.
MuJoCo draws no joints and no frames unless asked (mjv_defaultOption), so joint
objects and MJCF frame empties are hidden after an import and show only where their
overlay is on (Joints AND the joint's group; Body Frames for frames); the active one
is drawn by the overlays even while hidden. Helpers are as long as MuJoCo draws
them (visual/scale x stat.meansize), cameras added with Add > MuJoCo as large as
imported ones, lights as large as MuJoCo's own light radius."""

import os

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.authoring import validation
from mjblend.components.stored_keys import GROUPS_APPLIED
from mjblend.importer import build
from mjblend.ui.overlays import helpers

pytestmark = needs_corpus

HUMANOID = os.path.join(CORPUS, "mujoco_model/model/humanoid/humanoid.xml")
RODENT = os.path.join(CORPUS, "pip/dm_control/locomotion/walkers/assets/rodent.xml")  # joints in group 3
FRAMED = """<mujoco><visual><scale jointlength="2" framelength="0.5"/></visual><worldbody>
  <light pos="0 0 3" bulbradius="0.07"/>
  <body name="b" pos="0 0 1"><joint name="hinge" axis="0 1 0"/><joint name="slide" type="slide" group="4"/>
    <frame name="f" pos="0.1 0 0"><geom size=".1"/></frame>
    <geom type="capsule" size=".05 .2"/></body></worldbody></mujoco>"""


def joint_objects(result, model):
    return [(result.by_id[("joint", j)], int(model.jnt_group[j])) for j in range(model.njnt)]


def shown(objects):
    return [obj.name for obj in objects if obj.visible_get()]


def import_with_model(path, scene):
    result = build.import_file(path, scene)
    return result, mujoco.MjModel.from_xml_path(path)


@pytest.mark.parametrize("path", [HUMANOID, RODENT])
def test_no_joint_shows_until_the_joints_overlay_and_its_group_are_on(clean_scene, path):
    result, model = import_with_model(path, clean_scene)
    joints = joint_objects(result, model)
    assert model.njnt > 10 and shown(obj for obj, _g in joints) == []
    geoms = [result.by_id[("geom", g)] for g in range(model.ngeom) if model.geom_group[g] < 3]
    assert geoms and all(geom.visible_get() for geom in geoms)  # (the robot itself shows)
    switches = clean_scene.mujoco_overlays
    switches.joints = True
    expected = [obj.name for obj, group in joints if group < 3]
    assert shown(obj for obj, _g in joints) == expected and expected
    switches.joint_groups[3] = True
    assert shown(obj for obj, _g in joints) == [obj.name for obj, group in joints if group <= 3]
    assert list(clean_scene[GROUPS_APPLIED]["joint"]) == [1, 1, 1, 1, 0, 0]
    switches.joints = False
    assert shown(obj for obj, _g in joints) == []
    assert list(clean_scene[GROUPS_APPLIED]["joint"]) == [0] * 6


def test_joint_switches_with_the_overlay_off_change_no_object(clean_scene):
    result, model = import_with_model(RODENT, clean_scene)
    joints = joint_objects(result, model)
    assert {group for _obj, group in joints} >= {3}
    switches = clean_scene.mujoco_overlays
    switches.joint_groups[3] = True  # (the overlay is off: nothing to show)
    switches.joint_groups[0] = False
    assert shown(obj for obj, _g in joints) == []
    switches.joints = True  # now: groups 1, 2 and 3
    assert shown(obj for obj, _g in joints) == [obj.name for obj, group in joints if group in (1, 2, 3)]


def test_a_joint_shown_by_hand_stays_until_its_own_switch_or_the_overlay_turns(clean_scene):
    result, model = import_with_model(HUMANOID, clean_scene)
    knee = result.by_id[("joint", model.joint("knee_right").id)]
    knee.hide_set(False)
    switches = clean_scene.mujoco_overlays
    switches.geom_groups[1] = False  # another kind's switch
    switches.joint_groups[4] = True  # another group's switch (the overlay off: no change)
    switches.body_frames = True  # another overlay
    assert knee.visible_get()
    switches.joints = True
    switches.joints = False
    assert not knee.visible_get()


def test_frames_show_with_the_body_frames_overlay_and_helpers_are_mujocos_size(clean_scene, tmp_path):
    path = tmp_path / "framed.xml"
    path.write_text(FRAMED)
    result, model = import_with_model(str(path), clean_scene)
    frame = next(obj for obj in clean_scene.objects if obj.mujoco.kind == "FRAME")
    hinge, slide = (result.by_id[("joint", j)] for j in range(2))
    meansize = float(model.stat.meansize)
    assert frame.empty_display_size == pytest.approx(0.5 * meansize)
    assert hinge.empty_display_size == slide.empty_display_size == pytest.approx(2 * meansize)
    assert not frame.visible_get() and not hinge.visible_get() and not slide.visible_get()
    clean_scene.mujoco_overlays.body_frames = True
    assert frame.visible_get() and not hinge.visible_get()
    clean_scene.mujoco_overlays.joints = True
    assert hinge.visible_get() and not slide.visible_get()  # (the slide is in group 4)
    clean_scene.mujoco_overlays.body_frames = False
    assert not frame.visible_get()
    light = result.by_id[("light", 0)]
    assert light.data.shadow_soft_size == pytest.approx(0.07)  # MuJoCo's light radius, not Blender's


def mujoco_joint_sizes(model):
    """{joint id: the size MuJoCo's viewer draws it at} with its Joint flag on (mjv_updateScene):
    an arrow's length (hinge, slide), a sphere's radius (ball), a box's half-size (free)."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    option = mujoco.MjvOption()
    option.flags[mujoco.mjtVisFlag.mjVIS_JOINT] = True
    option.jointgroup[:] = 1  # (every group)
    scene = mujoco.MjvScene(model, 10000)
    mujoco.mjv_updateScene(model, data, option, None, mujoco.MjvCamera(), mujoco.mjtCatBit.mjCAT_ALL, scene)
    return {int(g.objid): float(g.size[2]) for g in scene.geoms[:scene.ngeom]
            if g.objtype == mujoco.mjtObj.mjOBJ_JOINT}


BALLS = """<mujoco><worldbody><body><joint type="ball"/><geom size=".1"/></body>
  <body pos="1 0 0"><freejoint/><geom size=".3"/></body>
  <body pos="2 0 0"><joint type="slide"/><geom size=".2"/></body></worldbody></mujoco>"""


@pytest.mark.parametrize("path", [HUMANOID, RODENT, "balls"])
def test_joint_helpers_are_as_large_as_mujoco_draws_them(clean_scene, path, tmp_path):
    if path == "balls":
        path = tmp_path / "balls.xml"
        path.write_text(BALLS)
    result, model = import_with_model(str(path), clean_scene)
    expected = mujoco_joint_sizes(model)
    assert len(expected) == model.njnt
    for j, size in expected.items():
        assert result.by_id[("joint", j)].empty_display_size == pytest.approx(size, rel=1e-5), j


def test_the_active_hidden_joint_is_drawn_as_mujoco_draws_it(clean_scene):
    result, model = import_with_model(HUMANOID, clean_scene)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)  # (the pose the import shows: qpos0)
    layer = bpy.context.view_layer
    assert helpers.active_hidden(layer) == []
    length = model.vis.scale.jointlength * model.stat.meansize
    hinges = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE]
    for j in hinges[:5]:
        layer.objects.active = result.by_id[("joint", j)]
        (drawn,) = helpers.active_hidden(layer)
        start, end = drawn.lines
        np.testing.assert_allclose(start, data.xanchor[j], atol=1e-5)
        np.testing.assert_allclose(end, data.xanchor[j] + data.xaxis[j] * length, atol=1e-5)
    free = result.by_id[("joint", 0)]
    assert model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    layer.objects.active = free
    axes = helpers.active_hidden(layer)
    assert len(axes) == 3 and all(len(axis.lines) == 2 for axis in axes)
    clean_scene.mujoco_overlays.joints = True  # shown: Blender draws it, the overlays do not
    assert free.visible_get() and helpers.active_hidden(layer) == []
    layer.objects.active = result.by_id[("geom", 1)]
    assert helpers.active_hidden(layer) == []


def test_added_cameras_joints_and_lights_are_drawn_as_imported_ones(clean_scene):
    result, model = import_with_model(HUMANOID, clean_scene)
    imported = result.by_id[("camera", 0)].data.display_size
    assert imported == pytest.approx(model.vis.scale.camera * model.stat.meansize, rel=1e-6)
    validation.validate(clean_scene)  # (the window checks after edits: here by hand)
    torso = result.by_id[("body", model.body("torso").id)]
    bpy.context.view_layer.objects.active = torso
    torso.select_set(True)
    assert bpy.ops.mujoco.add_element(kind="CAMERA") == {"FINISHED"}
    camera = bpy.context.active_object
    assert camera.mujoco.kind == "CAMERA" and camera.data.display_size == pytest.approx(imported)
    bpy.context.view_layer.objects.active = torso
    assert bpy.ops.mujoco.add_element(kind="JOINT", subtype="HINGE") == {"FINISHED"}
    joint = bpy.context.active_object
    assert joint.empty_display_size == pytest.approx(result.by_id[("joint", 1)].empty_display_size)
    assert joint.visible_get()  # (just made: shown until the overlay next turns)
    assert bpy.ops.mujoco.add_element(kind="LIGHT", subtype="SPOT") == {"FINISHED"}
    assert bpy.context.active_object.data.shadow_soft_size == pytest.approx(mujoco.MjSpec().worldbody
                                                                          .add_light().bulbradius)


def test_without_a_checked_model_an_added_camera_has_mujocos_default_size(clean_scene):
    assert bpy.ops.mujoco.add_model() == {"FINISHED"}
    assert bpy.ops.mujoco.add_element(kind="CAMERA") == {"FINISHED"}
    empty = mujoco.MjModel.from_xml_string("<mujoco/>")
    assert bpy.context.active_object.data.display_size == pytest.approx(
        empty.vis.scale.camera * empty.stat.meansize)


def test_an_actuator_is_added_on_a_hidden_joint_picked_as_active(clean_scene):
    """A hidden joint cannot be selected (Blender), only made active (the Outliner): the
    Add Actuator operators take it."""
    result, model = import_with_model(HUMANOID, clean_scene)
    for obj in bpy.context.selected_objects:
        obj.select_set(False)
    knee = result.by_id[("joint", model.joint("knee_right").id)]
    bpy.context.view_layer.objects.active = knee
    assert not knee.visible_get() and not knee.select_get()
    before = {obj.name for obj in clean_scene.objects if obj.mujoco.kind == "ACTUATOR"}
    assert bpy.ops.mujoco.add_actuator(preset="MOTOR") == {"FINISHED"}
    (added,) = {obj.name for obj in clean_scene.objects if obj.mujoco.kind == "ACTUATOR"} - before
    assert clean_scene.objects[added].mujoco.actuator.target == knee


def test_an_import_into_another_scene_hides_its_helpers_there(clean_scene):
    """The scene imported into need not be the window's (the context's view layer)."""
    other = bpy.data.scenes.new("other")
    other.view_layers.new("second")
    result, model = import_with_model(HUMANOID, other)
    for layer in other.view_layers:
        assert not any(result.by_id[("joint", j)].visible_get(view_layer=layer) for j in range(model.njnt))
    assert not clean_scene.objects  # (nothing in the window's scene)


def test_the_joints_overlay_and_what_it_showed_are_undone_together(clean_scene):
    result, model = import_with_model(HUMANOID, clean_scene)
    names = [result.by_id[("joint", j)].name for j in range(model.njnt)]
    bpy.ops.ed.undo_push(message="imported")
    clean_scene.mujoco_overlays.joints = True
    bpy.ops.ed.undo_push(message="joints shown")
    bpy.ops.ed.undo()
    scene = bpy.context.scene
    assert not scene.mujoco_overlays.joints and shown(scene.objects[n] for n in names) == []
    scene.mujoco_overlays.joints = True  # (the record went back with it)
    assert shown(scene.objects[n] for n in names) == names

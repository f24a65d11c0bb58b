"""Authoring in the viewport: a robot built with MJBlend's operators only simulates
like the same model written by hand; conversions, classes, validation, keyframes."""

import math

import bmesh
import bpy
import mujoco
import numpy as np
import pytest
from mathutils import Quaternion

from mjblend.authoring import default_classes, validation
from mjblend.live import scene_session
from mjblend.scan import scene_scan
from mjblend.components import spec_io
from mjblend.operators import author, model_tools

ops = bpy.ops.mujoco

HAND_WRITTEN = """<mujoco><worldbody>
  <geom type="box" pos="0.3 0 0.2" size="0.2 0.2 0.02"/>
  <body pos="0 0 1"><joint name="j1" axis="0 1 0"/>
    <geom type="capsule" size="0.03 0.15" pos="0 0 -0.15"/>
    <body pos="0 0 -0.3"><joint name="j2" axis="0 1 0"/>
      <geom type="capsule" size="0.03 0.15" pos="0 0 -0.15"/>
      <site name="tip" pos="0 0 -0.3"/>
    </body></body></worldbody>
  <actuator><motor joint="j1"/><motor joint="j2"/></actuator>
  <sensor><jointpos joint="j1"/></sensor></mujoco>"""


def select(obj):
    for other in bpy.context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def add(kind, subtype="", at=(0, 0, 0)):
    bpy.context.scene.cursor.location = at
    assert ops.add_element(kind=kind, subtype=subtype) == {"FINISHED"}
    return bpy.context.active_object


def test_a_two_link_arm_built_with_operators_simulates_like_hand_written_mjcf(clean_scene):
    ops.add_model()
    root = bpy.context.active_object
    add("GEOM", "BOX", (0.3, 0, 0.2)).mujoco.geom.size = (0.2, 0.2, 0.02)
    select(root)
    upper = add("BODY", at=(0, 0, 1))
    hinge1 = add("JOINT", "HINGE", (0, 0, 1))
    hinge1.rotation_quaternion = Quaternion((1, 0, 0), -math.pi / 2)  # axis +Y
    select(upper)
    add("GEOM", "CAPSULE", (0, 0, 0.85)).mujoco.geom.size = (0.03, 0.15, 0)
    select(upper)
    lower = add("BODY", at=(0, 0, 0.7))
    assert lower.parent == upper
    hinge2 = add("JOINT", "HINGE", (0, 0, 0.7))
    hinge2.rotation_quaternion = Quaternion((1, 0, 0), -math.pi / 2)
    select(lower)
    add("GEOM", "CAPSULE", (0, 0, 0.55)).mujoco.geom.size = (0.03, 0.15, 0)
    select(lower)
    tip = add("SITE", "SPHERE", (0, 0, 0.4))
    motors = []
    for hinge in (hinge1, hinge2):
        select(hinge)
        assert ops.add_actuator(preset="MOTOR") == {"FINISHED"}
        motors.append(bpy.context.active_object)
        assert motors[-1].mujoco.actuator.target == hinge
    select(hinge1)
    assert ops.add_sensor(sensor_type="JOINTPOS") == {"FINISHED"}
    assert bpy.context.active_object.mujoco.sensor.objname == hinge1

    ops.play()
    motors[0].mujoco_ctrl, motors[1].mujoco_ctrl = 0.5, -0.3
    ops.simulate(duration=1.0)
    running = scene_session.simulation(bpy.context.scene)
    ours = running.session.data.site_xpos[running.session.model.site(tip.mujoco.name).id]

    model = mujoco.MjModel.from_xml_string(HAND_WRITTEN)
    data = mujoco.MjData(model)
    data.ctrl[:] = [0.5, -0.3]
    mujoco.mj_step(model, data, nstep=int(round(1.0 / model.opt.timestep)))
    mujoco.mj_kinematics(model, data)  # (what the simulation shows: the final state's poses)
    assert np.allclose(ours, data.site_xpos[model.site("tip").id], atol=1e-4)
    assert np.linalg.norm(ours - [0, 0, 0.4]) > 0.05  # it did move
    assert running.session.data.sensordata[0] == pytest.approx(data.sensordata[0], abs=1e-4)
    scene_session.end_all()


def test_make_free_drops_a_world_box(clean_scene):
    ops.add_model()
    box = add("GEOM", "BOX", (0, 0, 2))
    select(box)
    assert ops.make_free() == {"FINISHED"}
    body = box.parent
    assert body.mujoco.kind == "BODY" and any(c.mujoco.kind == "JOINT" and c.mujoco.joint.type == "FREE"
                                               for c in body.children)
    ops.simulate(duration=0.5)
    bpy.context.view_layer.update()
    assert box.matrix_world.translation.z == pytest.approx(2 - 0.5 * 9.81 * 0.25, abs=0.02)
    scene_session.end_all()


@pytest.mark.parametrize("primitive, expected, size", [
    ("primitive_cube_add", "BOX", (1, 1, 1)),
    ("primitive_uv_sphere_add", "SPHERE", (1, 0, 0)),
    ("primitive_cylinder_add", "CYLINDER", (1, 1, 0)),
])
def test_geom_from_mesh_picks_the_primitive(clean_scene, primitive, expected, size):
    ops.add_model()
    getattr(bpy.ops.mesh, primitive)(location=(0, 0, 3))
    mesh = bpy.context.active_object
    assert ops.geom_from_mesh(shape="BEST") == {"FINISHED"}
    assert mesh.mujoco.kind == "GEOM" and mesh.mujoco.geom.type == expected
    used = {"BOX": 3, "SPHERE": 1, "CYLINDER": 2}[expected]
    assert np.allclose(list(mesh.mujoco.geom.size)[:used], size[:used], rtol=0.01)
    assert validation.validate(bpy.context.scene).ok


def test_convex_hull_of_the_monkey_compiles_and_is_smaller_than_its_box(clean_scene):
    ops.add_model()
    bpy.ops.mesh.primitive_monkey_add(location=(0, 0, 1))
    monkey = bpy.context.active_object
    box = np.ptp(np.array([v.co[:] for v in monkey.data.vertices]), axis=0).prod()
    assert ops.geom_from_mesh(shape="HULL") == {"FINISHED"}
    assert monkey.mujoco.geom.type == "MESH" and monkey.mujoco.geom.meshname is not None
    outcome = validation.validate(bpy.context.scene)
    assert outcome.ok, outcome.message
    hull = bmesh.new()
    hull.from_mesh(monkey.mujoco.geom.meshname)
    assert 0 < hull.calc_volume() < box
    model = next(iter(outcome.models.values()))
    assert model.nmesh == 1 and model.mesh_vertnum[0] == len(monkey.mujoco.geom.meshname.vertices)


@pytest.mark.parametrize("subtype, scale, expect", [
    ("BOX", (2, 3, 0.5), (0.1, 0.15, 0.025)),
    ("CAPSULE", (2, 2, 3), (0.04, 0.3, 0)),
    ("SPHERE", (1.5, 1.5, 1.5), (0.075, 0, 0)),
])
def test_apply_scale_to_size_equals_the_size_written_by_hand(clean_scene, subtype, scale, expect):
    ops.add_model()
    geom = add("GEOM", subtype, (0, 0, 1))
    geom.scale = scale
    select(geom)
    assert ops.apply_scale() == {"FINISHED"}
    assert tuple(geom.scale) == (1, 1, 1)
    model = next(iter(validation.validate(bpy.context.scene).models.values()))
    spec = mujoco.MjSpec()
    spec.worldbody.add_geom(type=getattr(mujoco.mjtGeom, "mjGEOM_" + subtype), size=expect, pos=[0, 0, 1])
    by_hand = spec.compile()
    assert np.allclose(model.geom_size, by_hand.geom_size, rtol=1e-12, atol=0)
    assert np.allclose(model.geom_rbound, by_hand.geom_rbound, rtol=1e-12)


def test_a_class_change_propagates_to_elements_that_do_not_set_it(clean_scene):
    ops.add_model()
    root = bpy.context.active_object
    default_classes.add_class(root, "rubber")
    geoms = [add("GEOM", "BOX", (x, 0, 0.1)) for x in (0, 0.3, 0.6)]
    for geom in geoms:
        geom.mujoco.classname = "rubber"
    geoms[2].mujoco.geom.friction = (0.3, 0.005, 0.0001)  # this one sets its own
    rubber = default_classes.find(root, "rubber")
    rubber.geom.friction = (1.5, 0.01, 0.001)  # the class edit
    assert geoms[0].mujoco.geom.friction[0] == pytest.approx(1.5)  # shown on its elements
    model = next(iter(validation.validate(bpy.context.scene).models.values()))
    ids = [model.geom(g.mujoco.name).id for g in geoms]
    assert model.geom_friction[ids[0]][0] == model.geom_friction[ids[1]][0] == pytest.approx(1.5)
    assert model.geom_friction[ids[2]][0] == pytest.approx(0.3)
    select(geoms[2])
    ops.reset_to_class(attr="friction")  # back to the class's value
    model = next(iter(validation.validate(bpy.context.scene).models.values()))
    assert model.geom_friction[ids[2]][0] == pytest.approx(1.5)


def test_classes_rename_nest_and_delete(clean_scene):
    ops.add_model()
    root = bpy.context.active_object
    default_classes.add_class(root, "arm")
    default_classes.add_class(root, "finger", parent="arm")
    geom = add("GEOM", "SPHERE", (0, 0, 1))
    geom.mujoco.classname = "finger"
    default_classes.find(root, "arm").geom.rgba = (1, 0, 0, 1)
    assert tuple(geom.mujoco.geom.rgba) == (1, 0, 0, 1)  # through the nested class
    default_classes.rename_class(root, "finger", "tip")
    assert geom.mujoco.classname == "tip"
    default_classes.remove_class(root, "tip")
    assert geom.mujoco.classname == "arm" and default_classes.find(root, "tip") is None
    assert validation.validate(bpy.context.scene).ok
    with pytest.raises(default_classes.ClassError):
        default_classes.remove_class(root, "main")


def test_class_operators_add_rename_and_report_errors(clean_scene):
    ops.add_model()
    root = bpy.context.active_object
    model = root.mujoco.model
    assert ops.class_add(name="arm") == {"FINISHED"}
    assert model.defaults[model.active_default].name == "arm"  # the new class is selected
    with pytest.raises(RuntimeError, match="exists already"):  # an error report, in scripts
        ops.class_add(name="arm")
    assert [c.name for c in model.defaults].count("arm") == 1
    with pytest.raises(RuntimeError, match="main"):
        ops.class_rename(name="main")
    assert ops.class_rename(name="hand") == {"FINISHED"}
    assert default_classes.find(root, "hand") is not None and default_classes.find(root, "arm") is None
    assert ops.class_remove() == {"FINISHED"}
    assert default_classes.find(root, "hand") is None


def _problem(scene):
    outcome = validation.validate(scene)
    assert not outcome.ok
    return outcome


def test_validation_names_the_object_at_fault(clean_scene):
    ops.add_model()
    root = bpy.context.active_object
    body = add("BODY", at=(0, 0, 1))
    add("JOINT", "HINGE", (0, 0, 1))
    geom = add("GEOM", "SPHERE", (0, 0, 1))
    assert validation.validate(clean_scene).ok

    stray = add("JOINT", "HINGE", (0, 0, 0))  # a hinge in the world body
    stray.parent = root
    assert _problem(clean_scene).objects == [stray.name]
    bpy.data.objects.remove(stray)

    select(body)
    ops.add_actuator(preset="MOTOR")
    motor = bpy.context.active_object
    motor.mujoco.actuator.target = None  # an actuator without a target
    motor.mujoco.actuator.target = None
    outcome = _problem(clean_scene)
    assert outcome.objects == [motor.name], outcome.message
    bpy.data.objects.remove(motor)

    geom.mujoco.geom.type = "MESH"  # a mesh geom without a mesh
    assert _problem(clean_scene).objects == [geom.name]
    geom.mujoco.geom.type = "SPHERE"

    geom.mujoco.geom.mass = -1  # a negative mass
    outcome = _problem(clean_scene)
    assert outcome.objects == [geom.name] and "negative" in outcome.message


def test_keyframes_store_load_delete(clean_scene):
    ops.add_model()
    root = bpy.context.active_object
    add("BODY", at=(0, 0, 1))
    add("JOINT", "SLIDE", (0, 0, 1))
    add("GEOM", "SPHERE", (0, 0, 1))
    ops.simulate(duration=0.3)  # falling along the slide
    fallen = scene_session.simulation(clean_scene).session.data.qpos[0]
    assert ops.key_store() == {"FINISHED"}
    key = bpy.context.active_object
    assert key.mujoco.kind == "KEY"
    stored = spec_io.read_value(key.mujoco.key, spec_io.KINDS["key"].attr("qpos"))
    assert list(stored) == [fallen]
    ops.reset(keyframe=-1)
    assert scene_session.simulation(clean_scene).session.data.qpos[0] == 0
    assert ops.key_load(name=key.name) == {"FINISHED"}
    assert scene_session.simulation(clean_scene).session.data.qpos[0] == pytest.approx(fallen)
    scene_session.end_all()
    assert ops.key_delete(name=key.name) == {"FINISHED"}
    assert not [o for o in clean_scene.objects if o.mujoco.kind == "KEY"]
    assert scene_scan.model_of(root) is root


def test_every_authoring_operator_polls_and_is_one_undo_step():
    for cls in author.CLASSES + model_tools.CLASSES:
        assert any("poll" in klass.__dict__ for klass in cls.__mro__ if klass is not bpy.types.Operator), cls
        if cls.bl_idname not in ("mujoco.validate", "mujoco.key_load"):  # these change no data
            assert "UNDO" in cls.bl_options, cls


def test_operators_do_not_apply_without_a_model(clean_scene):
    assert not ops.add_element.poll()
    assert not ops.make_free.poll()
    assert not ops.apply_scale.poll()
    assert not ops.geom_from_mesh.poll()
    assert not ops.key_store.poll()
    assert ops.add_model.poll()

"""Mouse perturbation, the parts that need no window: MuJoCo's own spring force,
the mouse ray and its view plane, picking the body an object belongs to."""

import os

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import ROOT
from mathutils import Vector

from mjblend.live import scene_session
from mjblend.engine import perturb
from mjblend.engine.session import EngineSession
from mjblend.importer import build

BOX = """<mujoco><asset><mesh name="wedge" vertex="0 0 0  .4 0 0  0 .4 0  0 0 .4"/></asset>
  <worldbody><geom type="plane" size="5 5 .1"/>
  <body name="holder" pos="-2 0 1"><body name="wedge"><joint/><geom type="mesh" mesh="wedge"/></body></body>
  <body name="box" pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1" mass="2"/></body>
  <body name="arm" pos="1 0 1"><joint name="hinge" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 0 0 -.5" size=".03"/>
    <body name="lower" pos="0 0 -.5"><geom name="tip" size=".05"/>
      <body name="lowest" pos="0 0 -.1"><site name="mark" size=".02"/></body></body>
  </body></worldbody></mujoco>"""


def test_the_force_is_mujocos_own_and_release_clears_it():
    model = mujoco.MjModel.from_xml_string(BOX)
    session = EngineSession(model)
    box = model.body("box").id
    point = session.data.xpos[box] + [0.1, 0, 0.05]  # a point on the box's side
    grab = perturb.Grab(model, session.data, box, point)
    grab.move_to(point + [0.5, 0.2, 0])
    session.grab = grab
    session.step(1)
    ours = session.data.xfrc_applied[box].copy()
    # MuJoCo's viewer, by hand: the same perturbation on the same state
    reference = mujoco.MjData(model)
    mujoco.mj_forward(model, reference)
    pert = mujoco.MjvPerturb()
    pert.select, pert.active = box, int(mujoco.mjtPertBit.mjPERT_TRANSLATE)
    pert.localpos = grab.pert.localpos
    pert.localmass, pert.refpos = grab.pert.localmass, grab.pert.refpos
    pert.refselpos, pert.refquat = grab.pert.refselpos, grab.pert.refquat
    mujoco.mjv_applyPerturbForce(model, reference, pert)
    assert np.array_equal(ours, reference.xfrc_applied[box])
    assert ours[0] > 0 and ours[1] > 0  # toward the target, with a torque about the grab point
    assert np.linalg.norm(ours[3:]) > 0
    session.step(200)
    assert session.data.xpos[box][0] > 0.1  # pulled sideways
    session.release()
    assert not session.data.xfrc_applied.any()
    session.step(1)
    assert not session.data.xfrc_applied.any()


def test_stiffness_scales_mujocos_spring():
    model = mujoco.MjModel.from_xml_string(BOX)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    box = model.body("box").id
    forces = []
    for scale in (1.0, 3.0):
        grab = perturb.Grab(model, data, box, data.xpos[box], stiffness_scale=scale)
        grab.move_to(data.xpos[box] + [0.2, 0, 0])
        grab.apply(model, data)
        forces.append(data.xfrc_applied[box][0])
    assert forces[1] == pytest.approx(3 * forces[0])


def test_turning_applies_a_torque_and_a_paused_drag_moves_the_body():
    model = mujoco.MjModel.from_xml_string(BOX)
    session = EngineSession(model)
    data = session.data
    box = model.body("box").id
    grab = perturb.Grab(model, data, box, data.xpos[box], rotate=True)
    grab.turn([0, 0, 1], 0.5)
    grab.apply(model, data)
    assert data.xfrc_applied[box][5] > 0 and not data.xfrc_applied[box][:3].any()
    grab = perturb.Grab(model, data, box, data.xpos[box] + [0, 0, 0.1])
    grab.move_to(data.xpos[box] + [0.3, 0, 0.6])
    grab.apply_pose(model, data)  # paused: moves the free body itself
    assert np.allclose(data.xpos[box], [0.3, 0, 0.6])


def _camera_matrices(ortho):
    """View and projection matrices of a real Blender camera."""
    camera = bpy.data.objects.new("cam", bpy.data.cameras.new("cam"))
    bpy.context.scene.collection.objects.link(camera)
    camera.data.type = "ORTHO" if ortho else "PERSP"
    camera.location = (3, -4, 2.5)
    camera.rotation_euler = (1.1, 0, 0.6)
    bpy.context.view_layer.update()
    size = (640, 400)
    projection = camera.calc_matrix_camera(bpy.context.evaluated_depsgraph_get(), x=size[0], y=size[1])
    return np.array(camera.matrix_world.inverted()), np.array(projection), size


@pytest.mark.parametrize("ortho", [False, True], ids=["perspective", "orthographic"])
def test_mouse_ray_and_view_plane(clean_scene, ortho):
    view, projection, size = _camera_matrices(ortho)
    point = np.array([0.4, 0.3, 0.8])
    clip = projection @ view @ np.append(point, 1.0)
    pixel = ((clip[0] / clip[3] + 1) / 2 * size[0], (clip[1] / clip[3] + 1) / 2 * size[1])
    origin, direction = perturb.mouse_ray(pixel, size, view, projection)
    along = point - origin
    # (Blender keeps these matrices in float32: within 1e-6)
    assert np.linalg.norm(along - np.dot(along, direction) * direction) < 1e-6  # through the point
    # the plane facing the view through the point: the mouse there lands on the point
    assert np.allclose(perturb.drag_target(pixel, size, view, projection, point), point, atol=1e-6)
    # 40 pixels to the right: still in that plane, to the right in the view
    moved = perturb.drag_target((pixel[0] + 40, pixel[1]), size, view, projection, point)
    forward = perturb.view_forward(view)
    assert abs(np.dot(moved - point, forward)) < 1e-6
    right = np.linalg.inv(view)[:3, 0]
    assert np.dot(moved - point, right) > 0
    # Shift: the horizontal plane through the point
    flat = perturb.drag_target((pixel[0] + 40, pixel[1] + 30), size, view, projection, point,
                               horizontal=True)
    assert flat[2] == pytest.approx(point[2])
    if ortho:  # parallel rays: the same offset anywhere in the view
        assert np.allclose(direction, forward, atol=1e-6)


def test_picking_finds_the_body_of_geoms_meshes_and_sites(clean_scene, tmp_path):
    path = tmp_path / "box.xml"
    path.write_text(BOX)
    build.import_file(str(path), clean_scene)
    running = scene_session.start_simulation(clean_scene)
    model = running.session.model
    depsgraph = bpy.context.evaluated_depsgraph_get()

    def body_hit(origin, direction=(0, 0, -1)):
        hit, _location, _n, _i, obj, _m = clean_scene.ray_cast(depsgraph, Vector(origin), Vector(direction))
        return running.binding.body_of(obj) if hit else "nothing"

    assert body_hit((0, 0, 3)) == model.body("box").id  # a box geom
    assert body_hit((1, 0, 3)) == model.body("arm").id  # the capsule on the hinge
    assert body_hit((1, -3, 0.5), (0, 1, 0)) == model.body("lower").id  # a sphere, two levels down
    assert body_hit((1, -3, 0.4), (0, 1, 0)) == model.body("lowest").id  # a site, three levels down
    assert body_hit((-1.95, 0.05, 3)) == model.body("wedge").id  # a mesh geom, two levels down
    assert body_hit((3, 3, 3)) is None  # the floor: a world geom grabs nothing
    scene_session.end_all()


def test_the_example_model_can_be_grabbed_through_live(clean_scene):
    build.import_file(os.path.join(ROOT, "examples", "desk_toys.xml"), clean_scene)
    running = scene_session.start_simulation(clean_scene)
    box = running.session.model.body("box").id
    start = running.session.data.xpos[box].copy()
    running.session.grab = perturb.Grab(running.session.model, running.session.data, box, start)
    running.session.grab.move_to(start + [0, 0, 0.3])
    running.simulate(0.5)
    assert running.session.data.xpos[box][2] > start[2] + 0.1  # lifted by the spring
    running.session.release()
    scene_session.end_all()

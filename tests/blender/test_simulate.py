"""Live simulation in the bpy module: what Blender shows is what MuJoCo computes
on the original file; stop puts everything back; edits recompile and keep state."""

import os
import time

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import ROOT, disable_addon, enable_addon
from helpers import CORPUS, corpus_params, needs_corpus
from mathutils import Vector

from mjblend.app import handlers
from mjblend.authoring import validation
from mjblend.live import scene_session
from mjblend.scene.transforms import transform
from mjblend.importer import build

DESK = os.path.join(ROOT, "examples", "desk_toys.xml")


@pytest.fixture
def desk(clean_scene):
    result = build.import_file(DESK, clean_scene)
    yield result
    scene_session.end_all()


def element(kind, name):
    return next(o for o in bpy.context.scene.objects
                if o.mujoco.kind == kind.upper() and o.mujoco.name == name)


def transforms():
    return {o.name: transform(o) for o in bpy.context.scene.objects}


def mujoco_after(path, steps, prepare=None):
    model = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(model)
    if prepare:
        prepare(model, data)
    mujoco.mj_step(model, data, nstep=steps)
    mujoco.mj_kinematics(model, data)  # the poses of the final state (mj_step leaves the previous one's)
    mujoco.mj_flex(model, data)
    return model, data


def assert_bodies_match(model, data, atol=1e-5):
    """Every named body object's world pose equals MuJoCo's xpos / xmat."""
    bpy.context.view_layer.update()
    checked = 0
    for obj in bpy.context.scene.objects:
        if obj.mujoco.kind != "BODY" or not obj.mujoco.name:
            continue
        body = model.body(obj.mujoco.name).id
        world = np.array(obj.matrix_world)
        assert np.allclose(world[:3, 3], data.xpos[body], atol=atol), obj.name
        assert np.allclose(world[:3, :3], data.xmat[body].reshape(3, 3), atol=atol), obj.name
        checked += 1
    assert checked


def test_simulate_matches_mujoco_on_the_original_file(desk):
    assert bpy.ops.mujoco.simulate(duration=1.5) == {"FINISHED"}
    model, data = mujoco_after(DESK, 750)
    running = scene_session.simulation(bpy.context.scene)
    assert running.session.data.time == data.time
    assert np.array_equal(running.session.data.qpos, data.qpos)
    assert_bodies_match(model, data)


def test_stop_restores_every_transform_exactly_and_keys_nothing(desk):
    before = transforms()
    bpy.ops.mujoco.simulate(duration=1.0)
    assert transforms() != before
    bpy.ops.mujoco.stop()
    assert transforms() == before
    scene = bpy.context.scene
    assert scene_session.simulation(scene) is None and not scene_session.of(scene).held
    assert all(o.animation_data is None for o in bpy.context.scene.objects)


def test_gravity_is_minus_z_and_a_hinge_about_y_turns_the_same_way(clean_scene, tmp_path):
    path = tmp_path / "frames.xml"
    path.write_text("""<mujoco><worldbody>
        <body name="faller" pos="0 0 5"><freejoint/><geom size=".1"/></body>
        <body name="arm" pos="3 0 1"><joint axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 1 0 0" size=".05"/></body>
        </worldbody></mujoco>""")
    build.import_file(str(path), clean_scene)
    bpy.ops.mujoco.simulate(duration=0.5)
    bpy.context.view_layer.update()
    faller, arm = element("body", "faller"), element("body", "arm")
    assert faller.matrix_world.translation.z < 5 - 1.0  # fell along -Z
    assert faller.matrix_world.translation.xy.length < 1e-9
    tip = arm.matrix_world @ Vector((1.0, 0, 0))  # the end of the capsule
    assert tip.z < 1 - 0.5  # gravity swung it down: a positive turn about +Y tips +X down
    model, data = mujoco_after(str(path), 250)
    assert data.qpos[7] > 0  # MuJoCo agrees on the sign
    assert_bodies_match(model, data)
    scene_session.end_all()


def test_a_property_edit_recompiles_and_keeps_the_state(desk):
    bpy.ops.mujoco.simulate(duration=0.5)
    running = scene_session.simulation(bpy.context.scene)
    session = running.session
    old_model = session.model
    qpos_before = session.data.qpos.copy()
    bob = next(o for o in bpy.context.scene.objects
               if o.mujoco.kind == "GEOM" and o.parent == element("body", "bob"))
    bob.mujoco.geom.mass = 3.0  # an edit in the panel
    bpy.ops.mujoco.simulate(duration=0.0)
    assert session.model is not old_model  # recompiled
    assert session.data.time == pytest.approx(0.5)
    assert np.array_equal(session.data.qpos, qpos_before)
    assert session.model.body_mass[session.model.body("bob").id] == pytest.approx(3.0)
    # continuing equals MuJoCo on the edited file, from the state of the original at 0.5 s
    bpy.ops.mujoco.simulate(duration=0.2)
    original, at_half = mujoco_after(DESK, 250)
    what = int(mujoco.mjtState.mjSTATE_INTEGRATION)
    state = np.empty(mujoco.mj_stateSize(original, what))
    mujoco.mj_getState(original, at_half, state, what)
    spec = mujoco.MjSpec.from_file(DESK)
    spec.body("bob").first_geom().mass = 3.0
    edited = spec.compile()
    data = mujoco.MjData(edited)
    mujoco.mj_setState(edited, data, state, what)
    mujoco.mj_step(edited, data, nstep=100)
    assert np.array_equal(session.data.qpos, data.qpos)


def test_moving_an_element_while_simulating_recompiles(desk):
    bpy.ops.mujoco.simulate(duration=0.2)
    session = scene_session.simulation(bpy.context.scene).session
    table = element("geom", "table")
    table.location.z -= 0.1  # the user lowers the table (the depsgraph reports it)
    bpy.context.view_layer.update()
    bpy.ops.mujoco.simulate(duration=0.0)
    geom = session.model.geom("table").id
    assert session.model.geom_pos[geom][2] == pytest.approx(0.1, abs=1e-6)
    # the simulated bodies moved too, but that is not an edit: their bodies keep the authored pose
    assert session.model.body_pos[session.model.body("box").id][2] == pytest.approx(0.6)


def test_a_failed_recompile_keeps_the_last_good_model_and_names_the_object(desk):
    bpy.ops.mujoco.simulate(duration=0.1)
    running = scene_session.simulation(bpy.context.scene)
    good = running.session.model
    swing = element("joint", "swing")
    swing.mujoco.joint.type = "FREE"  # a free joint below another body does not compile
    bpy.ops.mujoco.simulate(duration=0.1)
    assert running.session.model is good
    assert running.session.data.time == pytest.approx(0.2)
    # MuJoCo rejects the jointpos sensor named 'swing' (not the joint or the motor of that name)
    assert "in sensor Element name 'swing'" in running.error
    assert running.error_objects == [element("sensor", "swing").name]
    swing.mujoco.joint.type = "HINGE"  # fixed: the next compile takes it
    bpy.ops.mujoco.simulate(duration=0.1)
    assert running.error == "" and running.session.model is not good


def test_mocap_bodies_follow_their_objects(desk):
    bpy.ops.mujoco.simulate(duration=0.01)
    hand = element("body", "hand")
    hand.location = (0.1, -0.2, 0.6)
    bpy.ops.mujoco.simulate(duration=1.0)
    session = scene_session.simulation(bpy.context.scene).session
    assert np.allclose(session.data.mocap_pos[0], [0.1, -0.2, 0.6], atol=1e-6)
    # MuJoCo, given the same mocap pose (as Blender holds it: float32) after 5 steps
    model = mujoco.MjModel.from_xml_path(DESK)
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=5)
    data.mocap_pos[0] = np.array(hand.location, dtype=np.float32)
    mujoco.mj_step(model, data, nstep=500)
    assert np.array_equal(session.data.qpos, data.qpos)  # the dangler follows the hand
    authored = scene_session.of(bpy.context.scene).held[hand.as_pointer()].transform
    bpy.ops.mujoco.stop()
    assert transform(hand) == authored  # dragging it was not an edit


def test_controls_are_clamped_and_drive_the_actuator(desk):
    bpy.ops.mujoco.play()  # EXEC here: compiles, marks as playing
    motor = element("actuator", "swing")
    motor.mujoco_ctrl = 5.0
    assert motor.mujoco_ctrl == 1.0  # ctrlrange -1 1
    bpy.ops.mujoco.simulate(duration=0.5)
    session = scene_session.simulation(bpy.context.scene).session
    model, data = mujoco_after(DESK, 250, prepare=lambda m, d: d.ctrl.__setitem__(0, 1.0))
    assert np.array_equal(session.data.qpos, data.qpos)
    bpy.ops.mujoco.zero_controls()
    assert motor.mujoco_ctrl == 0.0


def test_reset_to_qpos0_and_keyframe(desk):
    bpy.ops.mujoco.simulate(duration=0.3)
    session = scene_session.simulation(bpy.context.scene).session
    bpy.ops.mujoco.reset(keyframe=0)
    assert session.data.time == 0 and session.data.qpos[14] == pytest.approx(1.2)
    bpy.context.view_layer.update()
    arm = element("body", "arm")
    assert arm.rotation_quaternion.to_euler().y == pytest.approx(1.2, abs=1e-6)
    bpy.ops.mujoco.reset(keyframe=-1)
    assert np.array_equal(session.data.qpos, session.model.qpos0)
    with pytest.raises(RuntimeError, match="keyframe 7 does not exist"):
        bpy.ops.mujoco.reset(keyframe=7)


def test_option_overrides_apply_after_compile_only_when_switched_on(desk):
    override = bpy.context.scene.mujoco_simulation.override
    override.gravity = (0, 0, 0)  # not switched on: no effect
    bpy.ops.mujoco.simulate(duration=0.05)
    session = scene_session.simulation(bpy.context.scene).session
    assert list(session.model.opt.gravity) == [0, 0, -9.81]
    override.use_gravity = True
    assert list(session.model.opt.gravity) == [0, 0, 0]  # applied to the running model
    z = session.data.qpos[9]
    vz = session.data.qvel[8]
    bpy.ops.mujoco.simulate(duration=0.05)
    assert session.data.qpos[9] == pytest.approx(z + vz * 0.05, abs=1e-4)  # flies on, no gravity
    model_timestep = session.model.opt.timestep
    override.use_timestep, override.timestep = True, 0.001
    assert session.model.opt.timestep == 0.001 != model_timestep
    element("geom", "table").mujoco.geom.mass = 5  # a recompile keeps the overrides
    bpy.ops.mujoco.simulate(duration=0.0)
    assert session.model.opt.timestep == 0.001 and list(session.model.opt.gravity) == [0, 0, 0]


def test_divergence_pauses_and_blender_carries_on(clean_scene, tmp_path):
    path = tmp_path / "unstable.xml"
    path.write_text("""<mujoco><option timestep="0.01"/><worldbody><body name="b" pos="0 0 1">
        <joint name="j" type="slide" stiffness="1e12" ref="-1"/><geom size=".1" mass="1e-6"/>
        </body></worldbody></mujoco>""")
    build.import_file(str(path), clean_scene)
    bpy.ops.mujoco.play()
    bpy.ops.mujoco.simulate(duration=1.0)
    running = scene_session.simulation(bpy.context.scene)
    assert not running.playing and not running.latest.playing and "diverged" in running.latest.message
    scene_session.end_all()


def test_sessions_end_on_file_load_and_addon_disable(desk):
    before = transforms()
    bpy.ops.mujoco.simulate(duration=0.5)
    handlers.end_sessions()  # what load_pre / undo_pre run
    assert scene_session.all_simulations() == [] and transforms() == before
    bpy.ops.mujoco.simulate(duration=0.5)
    bpy.ops.wm.read_homefile(use_empty=True)  # a real file load
    assert scene_session.all_simulations() == [] and scene_session.all_sessions() == []  # dropped as one
    build.import_file(DESK, bpy.context.scene)
    bpy.ops.mujoco.simulate(duration=0.5)
    disable_addon()
    try:
        assert scene_session.all_sessions() == []  # (the module is still importable: its registry is empty)
        assert scene_session.all_simulations() == []
    finally:
        enable_addon()


def test_a_save_during_simulation_holds_the_authored_poses(desk, tmp_path):
    before = transforms()
    bpy.ops.mujoco.simulate(duration=0.5)
    simulated = transforms()
    path = str(tmp_path / "saved.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    assert transforms() == simulated  # the viewport still shows the simulation
    bpy.ops.wm.open_mainfile(filepath=path)
    assert transforms() == before


def test_scene_with_two_copies_simulates_both(clean_scene):
    first = build.import_file(DESK, clean_scene)
    second = build.import_file(DESK, clean_scene)
    second.root.location.x = 3
    bpy.context.view_layer.update()
    bpy.ops.mujoco.simulate(duration=0.5)
    bpy.context.view_layer.update()
    model, data = mujoco_after(DESK, 250)
    box = model.body("box").id
    boxes = sorted((o for o in clean_scene.objects if o.mujoco.kind == "BODY" and o.mujoco.name == "box"),
                   key=lambda o: o.matrix_world.translation.x)
    assert np.allclose(boxes[0].matrix_world.translation, data.xpos[box], atol=1e-5)
    assert np.allclose(np.array(boxes[1].matrix_world.translation) - [3, 0, 0], data.xpos[box], atol=1e-5)
    assert first.root != second.root
    scene_session.end_all()


@needs_corpus
def test_flex_vertices_follow_the_simulation(clean_scene):
    path = os.path.join(CORPUS, "mujoco_model/model/flex/flag.xml")
    build.import_file(path, clean_scene)
    flag = next(o for o in clean_scene.objects if o.mujoco.kind == "FLEX")
    before = np.array([v.co[:] for v in flag.data.vertices])
    bpy.ops.mujoco.simulate(duration=0.2)
    model, data = mujoco_after(path, int(round(0.2 / mujoco.MjModel.from_xml_path(path).opt.timestep)))
    after = np.array([v.co[:] for v in flag.data.vertices])
    assert np.allclose(after, data.flexvert_xpos, atol=1e-5)
    assert not np.allclose(after, before)
    bpy.ops.mujoco.stop()
    assert np.array_equal(np.array([v.co[:] for v in flag.data.vertices]), before)


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_models_simulate_like_mujoco(clean_scene, path):
    """Import, simulate one second (the runner, inline): qpos bit for bit MuJoCo's on
    the file, and the body objects where MuJoCo's kinematics of that state put them."""
    full = os.path.join(CORPUS, path)
    build.import_file(full, clean_scene)
    bpy.ops.mujoco.simulate(duration=1.0)
    model = mujoco.MjModel.from_xml_path(full)
    model, data = mujoco_after(full, int(round(1.0 / model.opt.timestep)))
    running = scene_session.simulation(bpy.context.scene)
    shot = running.latest
    assert shot.time == data.time
    assert np.array_equal(shot.qpos, data.qpos) and np.array_equal(shot.qvel, data.qvel)
    extent = max(1.0, float(np.abs(data.xpos).max()))  # (float32 objects: relative to the scene's size)
    bpy.context.view_layer.update()
    for (kind, body), obj in running.binding.by_id.items():  # (bound by id: bodies need no name)
        if kind == "body":
            world = np.array(obj.matrix_world)
            assert np.allclose(world[:3, 3], data.xpos[body], atol=2e-5 * extent), obj.name
            assert np.allclose(world[:3, :3], data.xmat[body].reshape(3, 3), atol=2e-5), obj.name
    scene_session.end_all()


def test_the_modal_operator_steps_on_timer_events(desk):
    """The modal() of mujoco.play, given TIMER events (the GUI tier runs the real timer)."""
    from types import SimpleNamespace

    from mjblend.operators.simulate import MUJOCO_OT_play

    running = scene_session.start_simulation(bpy.context.scene)
    running.play()
    operator = SimpleNamespace(_live=running, _timer=None, report=lambda *_a: None,
                               _finish=lambda _context: {"FINISHED"})
    timer = SimpleNamespace(type="TIMER")
    start_height = element("body", "box").location.z
    for _ in range(5):
        time.sleep(0.03)
        assert MUJOCO_OT_play.modal(operator, bpy.context, timer) == {"PASS_THROUGH"}
    assert running.session.data.time > 0.1
    assert element("body", "box").location.z < start_height
    bpy.ops.mujoco.pause()
    paused = running.session.data.time
    time.sleep(0.03)
    MUJOCO_OT_play.modal(operator, bpy.context, timer)
    assert running.session.data.time == paused
    bpy.ops.mujoco.stop()
    assert MUJOCO_OT_play.modal(operator, bpy.context, timer) == {"FINISHED"}


def test_step_pauses_and_advances_one_step(desk):
    bpy.ops.mujoco.play()
    bpy.ops.mujoco.step(count=3)
    session = scene_session.simulation(bpy.context.scene).session
    assert not session.playing and session.data.time == pytest.approx(3 * session.model.opt.timestep)


def _joint_state(session, name):
    joint = session.model.joint(name)
    q, v = joint.qposadr[0], joint.dofadr[0]
    return session.data.qpos[q].copy(), session.data.qvel[v].copy()


def test_changing_a_geom_size_while_running_recompiles_with_state(desk):
    bpy.ops.mujoco.simulate(duration=0.3)
    session = scene_session.simulation(bpy.context.scene).session
    before = _joint_state(session, "swing")
    bob_geom = next(o for o in bpy.context.scene.objects
                    if o.mujoco.kind == "GEOM" and o.parent == element("body", "bob"))
    bob_geom.mujoco.geom.size = (0.05, 0, 0)
    bpy.ops.mujoco.simulate(duration=0.0)
    geom = session.model.body("bob").geomadr[0]
    assert session.model.geom_size[geom][0] == pytest.approx(0.05)
    assert _joint_state(session, "swing") == before


def test_adding_a_body_while_running_recompiles_with_state(desk):
    bpy.ops.mujoco.simulate(duration=0.3)
    session = scene_session.simulation(bpy.context.scene).session
    swing, box = _joint_state(session, "swing"), session.data.qpos[:7].copy()
    body = bpy.data.objects.new("new body", None)
    bpy.context.scene.collection.objects.link(body)
    body.parent = desk.root
    body.mujoco.kind, body.mujoco.name = "BODY", "new"
    body.location = (0.4, 0.3, 1.0)
    body.rotation_mode = "QUATERNION"
    geom = bpy.data.objects.new("new geom", None)
    bpy.context.scene.collection.objects.link(geom)
    geom.parent = body
    geom.mujoco.kind = "GEOM"
    geom.mujoco.geom.size = (0.05, 0, 0)
    bpy.ops.mujoco.simulate(duration=0.0)
    assert session.model.nbody == 9
    assert _joint_state(session, "swing") == swing
    box_adr = session.model.joint("box").qposadr[0]
    assert np.array_equal(session.data.qpos[box_adr:box_adr + 7], box)


def test_moving_a_static_body_while_running_recompiles_with_state(desk):
    bpy.ops.mujoco.simulate(duration=0.3)
    session = scene_session.simulation(bpy.context.scene).session
    before = _joint_state(session, "swing")
    element("body", "post").location.x += 0.25  # no joint: the simulation does not move it
    bpy.context.view_layer.update()
    bpy.ops.mujoco.simulate(duration=0.0)
    assert session.model.body_pos[session.model.body("post").id][0] == pytest.approx(0.55)
    assert _joint_state(session, "swing") == before


def test_moving_simulated_bodies_by_hand(desk):
    bpy.ops.mujoco.simulate(duration=0.5)
    session = scene_session.simulation(bpy.context.scene).session
    swing = _joint_state(session, "swing")
    box, arm = element("body", "box"), element("body", "arm")
    for obj in bpy.context.selected_objects:
        obj.select_set(False)
    box.select_set(True)
    arm.select_set(True)
    box.location = (0.1, 0.2, 1.5)  # a free body: put there, at rest
    arm.location.x += 0.1  # a hinged body: its pivot moves, its angle stays
    bpy.ops.mujoco.simulate(duration=0.0)
    adr = session.model.joint("box").qposadr[0]
    assert np.allclose(session.data.qpos[adr:adr + 3], [0.1, 0.2, 1.5], atol=1e-7)
    assert not session.data.qvel[:6].any()
    assert session.model.body_pos[session.model.body("arm").id][0] == pytest.approx(0.1, abs=1e-6)
    assert _joint_state(session, "swing") == swing
    authored_box = scene_session.of(bpy.context.scene).held[box.as_pointer()].transform
    bpy.ops.mujoco.stop()
    assert transform(box) == authored_box  # teleporting is not an edit of the model
    assert arm.location.x == pytest.approx(0.1)  # moving the pivot is


def test_deleting_the_scene_ends_its_simulation(clean_scene):
    scene = bpy.data.scenes.new("doomed")
    build.import_file(DESK, scene)
    running = scene_session.start_simulation(scene)
    running.simulate(0.2)
    bpy.data.scenes.remove(scene)
    assert not scene_session.is_current(running)
    assert scene_session.all_simulations() == [] and scene_session.all_sessions() == []


@pytest.mark.parametrize("path", corpus_params())
def test_every_corpus_model_simulates_like_mujoco(clean_scene, path):
    """1 s of simulation: qpos bit for bit, every body object where MuJoCo puts it."""
    full = os.path.join(CORPUS, path)
    build.import_file(full, clean_scene)
    bpy.ops.mujoco.simulate(duration=1.0)
    running = scene_session.simulation(bpy.context.scene)
    model = mujoco.MjModel.from_xml_path(full)
    model, data = mujoco_after(full, int(round(1.0 / model.opt.timestep)))
    assert np.array_equal(running.session.data.qpos, data.qpos, equal_nan=True)
    bpy.context.view_layer.update()
    worst = 0.0
    for (kind, body), obj in running.binding.by_id.items():
        if kind != "body" or body == 0:
            continue
        world = np.array(obj.matrix_world)
        scale = max(1.0, float(np.abs(data.xpos[body]).max()))
        worst = max(worst, np.abs(world[:3, 3] - data.xpos[body]).max() / scale,
                    np.abs(world[:3, :3] - data.xmat[body].reshape(3, 3)).max())
    assert worst < 1e-6, f"largest difference {worst:.2e} (relative to the body's distance)"
    scene_session.end_all()


def test_a_scene_session_owns_everything_unsaved_and_goes_as_one(desk):
    """Scans, held authored poses, the last validation and the simulation belong to one
    SceneSession; undo, file load and scene deletion drop all of it."""
    scene = bpy.context.scene
    validation.validate(scene)
    bpy.ops.mujoco.simulate(duration=0.1)
    owner = scene_session.existing(scene)
    assert owner.scans.entries and owner.held and owner.validation.ok and owner.simulation is not None
    box = element("body", "box")
    assert owner.held[box.as_pointer()].obj == box
    assert owner.scans.held is owner.held  # the scan reads the one table
    bpy.ops.ed.undo_push(message="simulated")
    handlers.end_sessions()
    handlers.forget_sessions()  # what undo_pre / undo_post run
    assert scene_session.existing(scene) is None and validation.result(scene) is None
    assert scene_session.all_sessions() == []

"""The runner seen from Blender: the Fast display against MuJoCo's own poses, the
display modes, the history, and the physics thread's lifecycle (real threads,
counted) in the bpy module."""

import os
import threading
import time

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.app import handlers
from mjblend.engine import commands
from mjblend.importer import build
from mjblend.live import scene_session, simulation
from mjblend.scene.transforms import transform

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DESK = os.path.join(ROOT, "examples", "desk_toys.xml")
FAST_MODELS = ["menagerie/franka_emika_panda/scene.xml",  # meshes
               "mujoco_model/model/humanoid/humanoid.xml",  # primitives
               "mujoco_model/model/flex/flag.xml",  # flex
               "pip/dm_control/locomotion/walkers/assets/rodent.xml"]  # skin


def physics_threads():
    return [t for t in threading.enumerate() if t.name.startswith("MJBlend physics") and t.is_alive()]


def play_a_little(running, frames=4):
    """Playing (inline), a few display frames of fast-forward."""
    running.send(commands.FastForward(True))
    running.play()
    for _ in range(frames):
        running.tick(time.perf_counter())


def geom_ids(running):
    """{geom object pointer: geom id} from the scan's elements."""
    out = {}
    for scanner in running._scanners:
        for pointer, (_block, kind, element) in scanner.elements.items():
            if kind == "geom" and element.id >= 0:
                out[pointer] = element.id
    return out


def all_transforms(scene):
    return {o.name: (transform(o), o.hide_get(), o.hide_viewport, o.hide_render) for o in scene.objects}


def data_counts():
    return {name: len(getattr(bpy.data, name)) for name in
            ("objects", "meshes", "node_groups", "collections")}


@needs_corpus
@pytest.mark.parametrize("path", FAST_MODELS)
def test_fast_display_draws_every_geom_where_mujoco_has_it(clean_scene, path):
    build.import_file(os.path.join(CORPUS, path), clean_scene)
    before, counts = all_transforms(clean_scene), data_counts()
    clean_scene.mujoco_simulation.display = "FAST"
    running = scene_session.start_simulation(clean_scene)
    play_a_little(running)
    shot = running.latest
    assert running.display.fast_now and shot.playing and shot.time > 0
    depsgraph = bpy.context.evaluated_depsgraph_get()
    geoms = geom_ids(running)
    world = np.array(running.binding.world)
    # a mesh geom's frame in MuJoCo is its mesh's inertial frame: the object's frame
    # differs from it by a constant, read from the authored pose (qpos0)
    authored = mujoco.MjData(shot.model)
    mujoco.mj_kinematics(shot.model, authored)
    checked, drawn = 0, []
    for instance in depsgraph.object_instances:
        if not instance.is_instance:
            continue
        # (geoms of one shape are drawn by one object: the instance's matrix tells which)
        source = running.display.source_of(instance.instance_object.original, instance.matrix_world)
        geom = geoms.get(source.as_pointer())
        if geom is None:
            continue
        drawn.append(source.as_pointer())
        offset = np.linalg.inv(world @ _pose(authored, geom)) @ np.array(source.matrix_world)
        matrix = np.array(instance.matrix_world) @ np.linalg.inv(offset)
        assert np.abs(matrix - world @ _pose(shot, geom)).max() < 1e-5, source.name
        checked += 1
    # every visible geom that moves is drawn (hidden ones, e.g. collision groups, are not)
    moving = sum(1 for group in running.binding.groups for obj in group if obj.as_pointer() in geoms)
    assert checked == moving
    assert len(set(drawn)) == len(drawn)  # each geom drawn once
    # the authored objects stayed where they were, hidden; flex and skin follow the snapshot
    for obj, _body in running.binding.driven:
        assert not obj.visible_get()
    for obj, kind, index, _world in running.binding.deformed:
        verts = np.array([v.co[:] for v in obj.data.vertices])
        expected = shot.flexvert_xpos[shot.model.flex_vertadr[index]:][:len(verts)] if kind == "flex" \
            else shot.skin_vertices[index]
        assert np.allclose(verts, expected, atol=1e-5)
    # paused: the objects show the state once; stopped: all back, bit for bit, no instancer
    running.pause()
    running.show()
    assert not running.display.fast_now
    bpy.context.view_layer.update()
    obj, body = running.binding.driven[0]
    assert np.allclose(np.array(obj.matrix_world)[:3, 3], world[:3, :3] @ shot.xpos[body] + world[:3, 3],
                       atol=1e-5)
    bpy.ops.mujoco.stop()
    assert all_transforms(clean_scene) == before
    assert data_counts() == counts


def _pose(data, geom):
    """A geom's world pose as a 4x4 matrix (from MjData or a snapshot)."""
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = np.reshape(data.geom_xmat[geom], (3, 3)), data.geom_xpos[geom]
    return pose


def test_fast_display_follows_play_pause_and_mode_changes(clean_scene):
    build.import_file(DESK, clean_scene)
    settings = clean_scene.mujoco_simulation
    running = scene_session.start_simulation(clean_scene)
    assert settings.display == "AUTO"
    play_a_little(running)
    assert not running.display.fast_now  # Auto: a few bodies move as objects
    settings.display = "FAST"
    running.tick(time.perf_counter())
    assert running.display.fast_now and running.display.instancer is not None
    settings.display = "OBJECTS"
    running.tick(time.perf_counter())
    assert not running.display.fast_now
    assert all(obj.visible_get() for obj, _body in running.binding.driven)
    bpy.ops.mujoco.stop()


def test_auto_picks_fast_for_many_bodies(clean_scene, tmp_path):
    bodies = "".join(f'<body pos="{i % 20 * .3} {i // 20 * .3} 1"><freejoint/><geom size=".1"/></body>'
                     for i in range(300))
    path = tmp_path / "many.xml"
    path.write_text(f"<mujoco><worldbody>{bodies}</worldbody></mujoco>")
    build.import_file(str(path), clean_scene)
    running = scene_session.start_simulation(clean_scene)
    play_a_little(running, frames=1)
    assert running.display.fast_now
    bpy.ops.mujoco.stop()


def test_the_box_shows_the_state_it_is_in(clean_scene):
    """The objects show the kinematics of the state at the snapshot's time, not the
    pose `mj_step` left behind (one step earlier)."""
    bpy.ops.mujoco.add_model()
    bpy.context.scene.cursor.location = (0, 0, 0)
    bpy.ops.mujoco.add_element(kind="GEOM", subtype="PLANE")
    bpy.context.view_layer.objects.active = clean_scene.objects[0]
    bpy.context.scene.cursor.location = (0, 0, 0.5)
    bpy.ops.mujoco.add_element(kind="BODY")
    box = bpy.context.active_object
    bpy.ops.mujoco.add_element(kind="JOINT", subtype="FREE")
    bpy.context.view_layer.objects.active = box
    bpy.ops.mujoco.add_element(kind="GEOM", subtype="BOX")
    bpy.ops.mujoco.simulate(duration=0.5)
    running = scene_session.simulation(clean_scene)
    qpos = running.latest.qpos
    assert box.location.z == np.float32(qpos[2])
    assert tuple(box.rotation_quaternion) == tuple(np.float32(qpos[3:7]))
    bpy.ops.mujoco.stop()


def test_history_scrubs_back_to_an_exact_state(clean_scene):
    build.import_file(DESK, clean_scene)
    running = scene_session.start_simulation(clean_scene)
    for _ in range(10):
        bpy.ops.mujoco.step(count=5)
    settings = clean_scene.mujoco_simulation
    assert running.latest.history == (11, 10) and settings.history == 10
    settings.history = 4  # 20 steps in
    model = running.model
    reference = mujoco.MjData(model)
    mujoco.mj_step(model, reference, nstep=20)
    assert np.array_equal(running.latest.qpos, reference.qpos)
    bpy.ops.mujoco.history_step(offset=-1)
    mujoco.mj_resetData(model, reference)
    mujoco.mj_step(model, reference, nstep=15)
    assert np.array_equal(running.latest.qpos, reference.qpos) and settings.history == 3
    bpy.ops.mujoco.stop()


@pytest.fixture
def threaded():
    simulation.THREADED = True
    yield
    simulation.THREADED = None
    scene_session.end_all()


def test_a_threaded_run_ends_where_the_inline_one_does(clean_scene, threaded):
    build.import_file(DESK, clean_scene)
    running = scene_session.start_simulation(clean_scene)
    assert running.runner.threaded and len(physics_threads()) == 1
    actuator = next(iter(running.binding.actuator_ids.values()), None)
    sequence = [commands.Step(50), commands.Step(70)]
    if actuator is not None:
        sequence.insert(1, commands.SetControl(actuator, 0.3))
    last = [running.runner.send(c) for c in sequence][-1]
    assert running.runner.wait(last, timeout=30)
    threaded_qpos = running.latest.qpos.copy()
    scene_session.end_simulation(running)
    assert physics_threads() == []
    simulation.THREADED = False
    running = scene_session.start_simulation(clean_scene)
    for command in sequence:
        running.runner.send(command)
    assert np.array_equal(running.latest.qpos, threaded_qpos)


def test_no_physics_thread_outlives_stop_load_undo_or_disable(clean_scene, threaded):
    build.import_file(DESK, clean_scene)

    def start():
        running = scene_session.start_simulation(bpy.context.scene)
        running.play()
        time.sleep(0.05)
        assert len(physics_threads()) == 1 and running.latest.time > 0
        return running

    start()
    bpy.ops.mujoco.stop()
    assert physics_threads() == []
    start()
    handlers.end_sessions()  # what undo_pre and redo_pre run
    assert physics_threads() == []
    start()
    bpy.ops.wm.read_homefile(use_empty=True)  # a real file load
    assert physics_threads() == [] and scene_session.all_simulations() == []
    build.import_file(DESK, bpy.context.scene)
    start()
    scene = bpy.context.scene
    bpy.ops.scene.new(type="EMPTY")
    bpy.data.scenes.remove(scene)  # the simulated scene deleted: its session notices when next asked
    for live in scene_session.all_simulations():
        assert not scene_session.is_current(live)
    assert physics_threads() == []
    build.import_file(DESK, bpy.context.scene)
    start()
    from addon_loader import disable_addon, enable_addon
    disable_addon()
    try:
        assert physics_threads() == []
    finally:
        enable_addon()


def test_a_diverging_model_pauses_on_its_thread_with_its_message(clean_scene, tmp_path, threaded):
    path = tmp_path / "unstable.xml"
    path.write_text("""<mujoco><option timestep="0.01"/><worldbody><body name="b" pos="0 0 1">
        <joint name="j" type="slide" stiffness="1e12" ref="-1"/><geom size=".1" mass="1e-6"/>
        </body></worldbody></mujoco>""")
    build.import_file(str(path), clean_scene)
    running = scene_session.start_simulation(clean_scene)
    running.play()
    deadline = time.perf_counter() + 10
    while running.playing and time.perf_counter() < deadline:
        time.sleep(0.01)
    assert not running.playing and "diverged" in running.take_message()
    assert running.runner.alive  # paused, not dead: Reset and Play still work
    bpy.ops.mujoco.stop()
    assert physics_threads() == []

"""The timeline (issue 17): a bake puts MuJoCo's simulation on Blender's timeline, frame
by frame, as MuJoCo computes it on the original file; trajectories recorded elsewhere
import the same way; Clear Bake and undo put back exactly what was there."""

import math
import os

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import ROOT
from helpers import CORPUS, corpus_params, load_tool, needs_corpus

from mjblend.engine import trajectory
from mjblend.engine.recording import STATE, state_slices, steps_at
from mjblend.importer import build
from mjblend.live import scene_session
from mjblend.scene.transforms import transform
from mjblend.sync import timeline

DESK = os.path.join(ROOT, "examples", "desk_toys.xml")
HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")


FLOAT32_CHAIN = 4e-6  # float32 world matrices composed down a chain of bodies


@pytest.fixture
def desk(clean_scene):
    build.import_file(DESK, clean_scene)
    yield clean_scene
    scene_session.end_all()


def fps_of(scene):
    return scene.render.fps / scene.render.fps_base


def body_objects(scene, model):
    """(object, body id) of every named body object."""
    return [(o, model.body(o.mujoco.name).id) for o in scene.objects
            if o.mujoco.kind == "BODY" and o.mujoco.name]


def mujoco_frames(path, frames, fps, prepare=None):
    """MuJoCo stepping the file: (model, [(qpos, xpos, xmat, flexvert_xpos)] at each frame's step)."""
    model = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(model)
    if prepare:
        prepare(model, data)
    out, done = [], 0
    for k in range(frames):
        due = steps_at(k, fps, model.opt.timestep)
        mujoco.mj_step(model, data, nstep=due - done) if due > done else None
        done = due
        mujoco.mj_kinematics(model, data)
        mujoco.mj_flex(model, data)
        out.append((data.qpos.copy(), data.xpos.copy(), data.xmat.copy(), data.flexvert_xpos.copy()))
    return model, out


def worst_pose_error(scene, objects, xpos, xmat) -> float:
    """Largest difference of the evaluated world matrices of `objects` from MuJoCo's
    poses (positions relative to the body's distance from the origin, as float32 holds them)."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    worst = 0.0
    for obj, body in objects:
        world = np.array(obj.evaluated_get(depsgraph).matrix_world)
        scale = max(1.0, float(np.abs(xpos[body]).max()))
        worst = max(worst, np.abs(world[:3, 3] - xpos[body]).max() / scale,
                    np.abs(world[:3, :3] - xmat[body].reshape(3, 3)).max())
    return worst


def scene_state(scene):
    """Everything a bake may touch, as plain values: objects with their transforms and
    animation, every action, every mesh's vertices and shape keys."""
    objects = {}
    for obj in scene.objects:
        animation = obj.animation_data
        objects[obj.name] = (transform(obj), animation is not None,
                             animation.action.name if animation is not None and animation.action else None)
    meshes = {}
    for mesh in bpy.data.meshes:
        coords = np.empty(len(mesh.vertices) * 3)
        mesh.vertices.foreach_get("co", coords)
        meshes[mesh.name] = (coords.tobytes(), mesh.shape_keys is not None)
    return objects, sorted(a.name for a in bpy.data.actions), meshes, scene.frame_current


# ------------------------------------------------------------------ bake

@pytest.mark.parametrize("path", corpus_params())
def test_corpus_bake_replays_mujoco_frame_by_frame(clean_scene, path):
    """1 s baked: at every frame, every body object's evaluated world matrix is MuJoCo's
    pose at that frame's time (float32), the recorded qpos MuJoCo's bit for bit."""
    full = os.path.join(CORPUS, path)
    scene = clean_scene
    build.import_file(full, scene)
    live = scene_session.start_simulation(scene)  # (bound by id: bodies need no name)
    objects = [(obj, body) for (kind, body), obj in live.binding.by_id.items() if kind == "body" and body > 0]
    assert bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=1.0) == {"FINISHED"}
    fps = fps_of(scene)
    frames = 1 + math.ceil(fps)
    model, expected = mujoco_frames(full, frames, fps)
    recording = timeline.recorded(scene)
    assert len(recording) == frames and scene.mujoco_bake.frame_end == frames
    worst = 0.0
    for k, (qpos, xpos, xmat, _flex) in enumerate(expected):
        assert np.array_equal(recording.qpos[k], qpos, equal_nan=True), f"frame {1 + k}"
        scene.frame_set(1 + k)
        worst = max(worst, worst_pose_error(scene, objects, xpos, xmat))
    # float32: the keys are MuJoCo's poses rounded to float32 exactly; Blender composes them
    # down the body chain in float32 (a few ulps per level: ~1.4e-6 on the Cassie legs)
    assert worst < FLOAT32_CHAIN, f"largest difference {worst:.2e}"
    assert scene_session.simulation(scene) is None  # the bake ended its simulation: the timeline shows it


@pytest.mark.parametrize("fps, fps_base", [(24, 1.0), (30, 1.0), (60, 1.0), (30, 1.001), (25, 1.5)])
def test_one_simulated_second_is_one_second_of_frames(desk, fps, fps_base):
    scene = desk
    scene.render.fps, scene.render.fps_base = fps, fps_base
    rate = fps / fps_base
    bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=10, duration=1.0)
    recording = timeline.recorded(scene)
    frames = np.arange(len(recording))
    timestep = mujoco.MjModel.from_xml_path(DESK).opt.timestep
    # frame k is the state nearest k / fps, whatever the rate: no drift over the second
    assert np.abs(recording.time - frames / rate).max() <= timestep / 2 + 1e-12
    assert scene.mujoco_bake.frame_start == 10 and scene.mujoco_bake.frame_end == 10 + math.ceil(rate - 1e-9)
    played = (scene.mujoco_bake.frame_end - scene.mujoco_bake.frame_start) / rate  # Blender's seconds
    assert 1.0 <= played < 1.0 + 1.0 / rate
    assert recording.fps == pytest.approx(rate)


def test_bake_range_from_the_scene_and_refusals(desk):
    scene = desk
    scene.frame_start, scene.frame_end = 5, 17
    assert bpy.ops.mujoco.bake() == {"FINISHED"}
    assert (scene.mujoco_bake.frame_start, scene.mujoco_bake.frame_end) == (5, 17)
    with pytest.raises(RuntimeError, match="before it starts"):
        bpy.ops.mujoco.bake(frame_start=20, frame_end=10)
    bpy.context.preferences.addons["mjblend"].preferences.step_limit = 100
    try:
        with pytest.raises(RuntimeError, match="step limit"):
            bpy.ops.mujoco.bake(duration=10.0)
    finally:
        bpy.context.preferences.addons["mjblend"].preferences.step_limit = 10_000_000
    assert (scene.mujoco_bake.frame_start, scene.mujoco_bake.frame_end) == (5, 17)  # the bake kept


def test_the_authored_model_is_untouched_by_a_bake(desk, tmp_path):
    """Export and the scan read the authored poses, never a baked frame's."""
    scene = desk
    before = tmp_path / "before.xml"
    bpy.ops.export_scene.mjcf(filepath=str(before))
    bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=1.0)
    scene.frame_set(20)
    after = tmp_path / "after.xml"
    assert bpy.ops.export_scene.mjcf(filepath=str(after)) == {"FINISHED"}
    assert after.read_text() == before.read_text()


def test_rebake_replaces_and_clear_bake_restores_everything(desk):
    scene = desk
    box = next(o for o in scene.objects if o.mujoco.kind == "BODY" and o.mujoco.name == "box")
    # a body with an animation of its own and Euler rotation: the bake replaces, clear puts back
    box.rotation_mode = "XYZ"
    box.keyframe_insert("location", frame=1)
    own_action = box.animation_data.action
    before = scene_state(scene)
    bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=0.5)
    first = len(bpy.data.actions)
    assert box.animation_data.action != own_action and box.rotation_mode == "QUATERNION"
    bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=0.5)
    assert len(bpy.data.actions) == first  # replaced, not added to
    scene.frame_set(7)
    assert bpy.ops.mujoco.clear_bake() == {"FINISHED"}
    scene.frame_set(before[3])
    assert scene_state(scene) == before
    assert box.animation_data.action == own_action
    assert not timeline.is_baked(scene)


def test_undo_of_a_bake_is_one_step(desk):
    scene = desk
    bpy.ops.ed.undo_push(message="before the bake")
    before = scene_state(bpy.context.scene)
    # (undo=True: the undo push a call from the user interface makes)
    bpy.ops.mujoco.bake("EXEC_DEFAULT", True, start="KEYFRAME", keyframe=-1, frame_start=1, duration=0.5)
    assert timeline.is_baked(bpy.context.scene)
    bpy.ops.ed.undo()
    scene = bpy.context.scene
    assert not timeline.is_baked(scene)
    assert scene_state(scene) == before


def test_a_live_simulation_starts_from_the_current_frames_baked_state(desk):
    scene = desk
    bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=1.0)
    recording = timeline.recorded(scene)
    scene.frame_set(13)
    assert bpy.ops.mujoco.step(count=25) == {"FINISHED"}  # (starts the simulation, then steps)
    live = scene_session.simulation(scene)
    assert live.started_from_frame == 13
    model = live.model
    data = mujoco.MjData(model)
    mujoco.mj_setState(model, data, recording.state[12], STATE)
    mujoco.mj_step(model, data, nstep=25)
    assert np.array_equal(live.latest.qpos, data.qpos)  # on from frame 13 exactly as MuJoCo
    bpy.ops.mujoco.stop()
    assert not live.held  # the baked objects' authored poses were put back (and the bake shows)


def test_record_while_simulating_keeps_what_ran(desk):
    scene = desk
    scene.frame_set(4)
    assert bpy.ops.mujoco.record_start() == {"FINISHED"}
    live = scene_session.simulation(scene)
    live.simulate(0.5)
    qpos = live.latest.qpos.copy()
    assert bpy.ops.mujoco.record_keep() == {"FINISHED"}
    recording = timeline.recorded(scene)
    fps = fps_of(scene)
    assert scene.mujoco_bake.frame_start == 4 and len(recording) == 1 + round(0.5 * fps)
    model, expected = mujoco_frames(DESK, len(recording), fps)
    for k, (q, *_rest) in enumerate(expected):
        assert np.array_equal(recording.qpos[k], q)
    assert np.array_equal(recording.qpos[-1], qpos)
    assert scene_session.simulation(scene) is None


def test_stop_keeps_a_recording(desk):
    scene = desk
    bpy.ops.mujoco.record_start()
    scene_session.simulation(scene).simulate(0.25)
    bpy.ops.mujoco.stop()
    assert timeline.is_baked(scene) and scene.mujoco_bake.source == "recorded while simulating"


def test_save_recording_reads_back_bit_for_bit(desk, tmp_path):
    scene = desk
    bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=0.5)
    recording = timeline.recorded(scene)
    model = mujoco.MjModel.from_xml_path(DESK)
    for name in ("run.npz", "run.csv"):
        path = str(tmp_path / name)
        assert bpy.ops.mujoco.save_recording(filepath=path) == {"FINISHED"}
        back = trajectory.read(path, model)
        assert np.array_equal(back.qpos, recording.qpos) and np.array_equal(back.time, recording.time)
    with np.load(str(tmp_path / "run.npz")) as saved:
        assert np.array_equal(saved["sensordata"], recording.sensordata)
        assert np.array_equal(saved["ctrl"], recording.part("ctrl"))


# ------------------------------------------------------------- trajectories

def rollout_file(path, tmp_path, seconds=1.0):
    """mujoco.rollout of the file from qpos0 with zero controls, saved as an .npz of states."""
    from mujoco import rollout

    model = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(model)
    initial = np.empty(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS))
    mujoco.mj_getState(model, data, initial, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    steps = int(round(seconds / model.opt.timestep))
    state, _sensors = rollout.rollout(model, data, initial[None], np.zeros((1, steps, model.nu)))
    out = str(tmp_path / "rollout.npz")
    np.savez(out, state=state)
    return model, state[0], out


@needs_corpus
def test_a_rollout_imports_as_mujocos_forward_kinematics(clean_scene, tmp_path):
    scene = clean_scene
    build.import_file(HUMANOID, scene)
    model, states, path = rollout_file(HUMANOID, tmp_path)
    scene.render.fps = 40  # (a frame every 5 steps of 5 ms: each frame is one of the rollout's states)
    assert bpy.ops.mujoco.import_trajectory(filepath=path, frame_start=1) == {"FINISHED"}
    slices = state_slices(model, int(mujoco.mjtState.mjSTATE_FULLPHYSICS))
    times, qpos = states[:, slices["time"]].ravel(), states[:, slices["qpos"]]
    recording = timeline.recorded(scene)
    data = mujoco.MjData(model)
    objects = body_objects(scene, model)
    worst = 0.0
    for k in range(0, len(recording), 3):
        sample = int(np.argmin(np.abs(times - recording.time[k])))
        assert abs(times[sample] - recording.time[k]) < 1e-9
        assert np.array_equal(recording.qpos[k], qpos[sample])
        data.qpos[:] = qpos[sample]
        mujoco.mj_kinematics(model, data)
        scene.frame_set(1 + k)
        worst = max(worst, worst_pose_error(scene, objects, data.xpos, data.xmat))
    assert worst < FLOAT32_CHAIN


def test_a_trajectory_of_the_wrong_width_or_with_nans_is_refused_and_nothing_changes(desk, tmp_path):
    scene = desk
    model = mujoco.MjModel.from_xml_path(DESK)
    before = scene_state(scene)
    wide = tmp_path / "wide.csv"
    wide.write_text("\n".join(",".join(["0.1"] * (model.nq + 2)) for _ in range(3)))
    with pytest.raises(RuntimeError, match=r"wide\.csv.*nq = %d" % model.nq):
        bpy.ops.mujoco.import_trajectory(filepath=str(wide))
    nans = tmp_path / "nans.npz"
    qpos = np.tile(model.qpos0, (4, 1))
    qpos[2, 1] = np.nan
    np.savez(nans, time=np.arange(4) * 0.1, qpos=qpos)
    with pytest.raises(RuntimeError, match=r"nans\.npz.*(NaN|not a number)"):
        bpy.ops.mujoco.import_trajectory(filepath=str(nans))
    assert scene_state(scene) == before and scene_session.simulation(scene) is None


# ------------------------------------------------------- deformables, render

def deformed_vertices(obj):
    """An object's evaluated vertices in Blender's world."""
    mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    coords = np.empty(len(mesh.vertices) * 3)
    mesh.vertices.foreach_get("co", coords)
    world = np.array(obj.matrix_world)
    return coords.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3]


@needs_corpus
@pytest.mark.parametrize("relative, kind", [("mujoco_model/model/flex/flag.xml", "FLEX"),
                                            ("pip/dm_control/locomotion/walkers/assets/rodent.xml", "SKIN")])
def test_flex_and_skin_replay_mujocos_vertices(clean_scene, relative, kind):
    from mjblend.engine import skin

    path = os.path.join(CORPUS, relative)
    scene = clean_scene
    build.import_file(path, scene)
    bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=0.5)
    deformed = [o for o in scene.objects if o.mujoco.kind == kind]
    assert deformed and all(o.data.shape_keys is not None for o in deformed)
    fps = fps_of(scene)
    model = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(model)
    obj = deformed[0]
    index = mujoco.mj_name2id(model, getattr(mujoco.mjtObj, f"mjOBJ_{kind}"), obj.mujoco.name)
    for frame in (1, 6, 13):
        mujoco.mj_resetData(model, data)
        mujoco.mj_step(model, data, nstep=steps_at(frame - 1, fps, model.opt.timestep))
        mujoco.mj_kinematics(model, data)
        mujoco.mj_flex(model, data)
        if kind == "FLEX":
            adr, num = model.flex_vertadr[index], model.flex_vertnum[index]
            expected = data.flexvert_xpos[adr:adr + num]
        else:
            expected = skin.skin_vertices(model, data, index)
        scene.frame_set(frame)
        scale = max(1.0, float(np.abs(expected).max()))
        assert np.abs(deformed_vertices(obj) - expected).max() < 1e-6 * scale, frame
    bpy.ops.mujoco.clear_bake()
    assert all(o.data.shape_keys is None for o in deformed)


def test_render_animation_writes_the_baked_frames(desk, tmp_path):
    """Render Animation in the bpy module: one picture per frame, and they differ (the
    bodies move), with motion blur on."""
    render_docs = load_tool("render_docs")
    scene = desk
    bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=0.5)
    root = next(o for o in scene.objects if o.mujoco.kind == "MODEL")
    render_docs.use_workbench(scene)
    render_docs.prepare_scene(scene, root.users_collection[0], 64, 48, {"azimuth": -50, "elevation": 20})
    scene.frame_start, scene.frame_end, scene.frame_step = 1, 13, 6
    scene.render.use_motion_blur = True
    scene.render.image_settings.file_format = "PNG"
    scene.render.filepath = str(tmp_path / "frame_")
    assert bpy.ops.render.render(animation=True) == {"FINISHED"}
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["frame_0001.png", "frame_0007.png", "frame_0013.png"]
    pictures = [render_docs.load_pixels(str(tmp_path / name)) for name in written]
    assert not np.array_equal(pictures[0], pictures[2])


def test_a_rebake_after_an_edit_starts_where_the_first_did(desk):
    """Not from the baked frame shown: a simulation started by the bake itself resets."""
    scene = desk
    bpy.ops.mujoco.bake(frame_start=1, duration=0.5)
    first = timeline.recorded(scene).qpos[0].copy()
    scene.frame_set(10)
    bpy.ops.mujoco.bake(frame_start=1, duration=0.5)
    assert np.array_equal(timeline.recorded(scene).qpos[0], first)
    # a running simulation's state is the current state
    scene.frame_set(1)
    live = scene_session.start_simulation(scene)
    live.simulate(0.1)
    now = live.latest.qpos.copy()
    bpy.ops.mujoco.bake(frame_start=1, duration=0.5)
    assert np.array_equal(timeline.recorded(scene).qpos[0], now)

"""The randomization preview (live/randomization_preview.py): K environments of the
scene's model, each with its own drawn values, stepped together with the same
controls and drawn side by side by one instancer; what it draws is what MuJoCo
computes for each environment's own model; stopping it leaves nothing behind.

The bpy module has no window timer: the tests step the preview with `tick`, as
the Start operator's timer does in a window."""

import os

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import disable_addon, enable_addon
from helpers import CORPUS, needs_corpus
from mathutils import Matrix, Quaternion, Vector

from mjblend.app import handlers
from mjblend.batch import BatchPool, Entry, Randomization
from mjblend.live import randomization_preview as preview_module, scene_session
from mjblend.live.randomization_preview import PreviewError
from mjblend.importer import build
from mjblend.scene.transforms import transform
from mjblend.sync import instancer as fast

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
MASS_AND_GRAVITY = Randomization([Entry("body", "mass", 0.5, 2.0, name="torso"),
                                  Entry("option", "gravity", 0.3, 1.5)], seed=5)

pytestmark = needs_corpus


@pytest.fixture
def humanoid(clean_scene):
    build.import_file(HUMANOID, clean_scene)
    yield clean_scene
    preview_module.stop_all()
    scene_session.end_all()


def counts():
    data = bpy.data
    return {"objects": len(data.objects), "meshes": len(data.meshes), "node_groups": len(data.node_groups),
            "collections": len(data.collections)}


def looks():
    """Every object's transform and how it is shown."""
    return {o.name: (transform(o), o.hide_viewport, o.hide_render, o.hide_get(), tuple(o.keys()))
            for o in bpy.context.scene.objects}


def geom_sources(preview):
    """(point index of copy 0, geom object) of every primitive geom the instancer draws."""
    found = []
    for index, obj in enumerate(preview.instancer.sources):
        if obj.mujoco.kind == "GEOM" and obj.mujoco.name:
            found.append((index, obj))
    return found


def mujoco_geoms(preview, env):
    """MuJoCo's geom poses of environment `env` now: its own model, its state."""
    pool = preview.pool
    model = pool.parameters.model_of(env) if pool.parameters is not None else preview.model
    data = mujoco.MjData(model)
    mujoco.mj_setState(model, data, preview.state[env], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    mujoco.mj_kinematics(model, data)
    return model, data


def written(preview):
    """The instancer's points: (positions, quaternions), float32 as Blender keeps them."""
    mesh = preview.instancer.mesh
    co = np.empty(3 * len(mesh.vertices), dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    turn = np.empty(4 * len(mesh.vertices), dtype=np.float32)
    mesh.attributes[fast.ROTATION].data.foreach_get("value", turn)
    return co.reshape(-1, 3), turn.reshape(-1, 4)


def test_drawn_poses_are_each_environments_own_plus_its_offset(humanoid):
    preview = preview_module.start(humanoid, MASS_AND_GRAVITY, count=4, seed=3)
    assert preview.count == 4 and preview.instancer.copies == 4
    for _ in range(5):
        preview.tick()
    assert preview.steps == 5 * preview.steps_per_tick()
    assert preview.time == pytest.approx(preview.steps * preview.model.opt.timestep)
    count = len(preview.instancer.sources)
    positions, rotations = written(preview)
    assert len(positions) == 4 * count
    offsets = preview.offsets
    spacing = preview.spacing
    assert spacing == pytest.approx(1.5 * preview.model.stat.extent)
    assert np.allclose(offsets, [(0, 0, 0), (spacing, 0, 0), (0, spacing, 0), (spacing, spacing, 0)])
    # each body's displacement moves its authored pose to the pool's pose of it, plus the offset
    shift, turn = preview.instancer._last
    xpos, xquat = preview.pool.body_poses(preview.state)
    for env in range(4):
        for row, body in enumerate(preview.body_ids):
            k = env * len(preview.body_ids) + row
            moved_p = shift[k] + _rotate(turn[k], preview.authored_pos[row])
            moved_q = _multiply(turn[k], _conjugate(preview.authored_conj[row]))
            assert np.allclose(moved_p, xpos[env, body] + offsets[env], atol=1e-9)
            assert np.allclose(moved_q * np.sign(moved_q[0]), xquat[env, body] * np.sign(xquat[env, body, 0]),
                               atol=1e-9)
    # each geom's point: where MuJoCo puts that geom in that environment, plus the offset
    checked = 0
    for env in range(4):
        model, data = mujoco_geoms(preview, env)
        for index, obj in geom_sources(preview):
            geom = model.geom(obj.mujoco.name).id
            point = env * count + index
            assert np.allclose(positions[point], data.geom_xpos[geom] + offsets[env], atol=2e-6), obj.name
            drawn = np.array(Quaternion(rotations[point].tolist()).to_matrix())
            assert np.allclose(drawn, data.geom_xmat[geom].reshape(3, 3), atol=2e-6), obj.name
            checked += 1
    assert checked >= 4 * 15
    # and Blender draws them there: four instances of each geom
    bpy.context.view_layer.update()
    instances = instances_of(preview.instancer)
    torso = next(obj for _i, obj in geom_sources(preview) if obj.mujoco.name == "torso")
    model = preview.model
    expected = []
    for env in range(4):
        _model, data = mujoco_geoms(preview, env)
        expected.append(data.geom_xpos[model.geom("torso").id] + offsets[env])
    found = sorted((tuple(m.translation) for m in instances[torso.name]))
    assert np.allclose(found, sorted(map(tuple, expected)), atol=2e-6)


def _rotate(quat, vector):
    return np.array(Quaternion(quat).to_matrix()) @ vector


def _multiply(a, b):
    return np.array(Quaternion(a) @ Quaternion(b))


def _conjugate(q):
    return np.array([q[0], -q[1], -q[2], -q[3]])


def instances_of(inst):
    """{source object name: [world matrices]} of the instancer's instances."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    found = {}
    for instance in depsgraph.object_instances:
        if instance.is_instance and instance.parent and instance.parent.original == inst.object:
            found.setdefault(instance.instance_object.original.name, []).append(instance.matrix_world.copy())
    return found


def torso_positions(preview):
    xpos, _xquat = preview.pool.body_poses(preview.state)
    return xpos[:, preview.model.body("torso").id]


def test_environments_differ_when_randomized_and_are_alike_when_not(humanoid):
    randomized = preview_module.start(humanoid, MASS_AND_GRAVITY, count=4, seed=3)
    draws = randomized.pool.parameters.draws.copy()
    assert len(np.unique(draws[:, 0])) == 4 and len(np.unique(draws[:, 1])) == 4
    for _ in range(8):
        randomized.tick()
    heights = torso_positions(randomized)[:, 2]
    assert len(np.unique(np.round(heights, 6))) == 4  # each falls under its own gravity
    # the same seed draws the same environments; Redraw draws new ones from the start
    again = preview_module.start(humanoid, MASS_AND_GRAVITY, count=4, seed=3)
    assert np.array_equal(again.pool.parameters.draws, draws)
    again.tick()
    again.redraw()
    assert again.steps == 0 and again.time == 0.0
    assert not np.array_equal(again.pool.parameters.draws, draws)
    assert np.array_equal(again.state, again.pool.initial_states())
    # no randomization: four identical environments
    plain = preview_module.start(humanoid, Randomization([]), count=4)
    assert plain.pool.parameters is None
    for _ in range(8):
        plain.tick()
    assert all(np.array_equal(plain.state[0], row) for row in plain.state)
    # and each the model's own, stepped alone (unrandomized: the file's model)
    model = mujoco.MjModel.from_xml_path(HUMANOID)
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, plain.steps)
    assert np.allclose(plain.state[0, 1:1 + model.nq], data.qpos, atol=1e-9)


def test_controls_are_the_sliders_for_every_environment(humanoid):
    preview = preview_module.start(humanoid, Randomization([]), count=2)
    knee = next(o for o in humanoid.objects if o.mujoco.kind == "ACTUATOR" and o.mujoco.name == "knee_right")
    index = preview.model.actuator("knee_right").id
    knee.mujoco_ctrl = 0.7
    assert knee.mujoco_ctrl == pytest.approx(0.7) and preview.ctrl[index] == pytest.approx(0.7)
    knee.mujoco_ctrl = 5.0  # clamped to its ctrlrange, as the simulation's slider is
    low, high = preview.model.actuator_ctrlrange[index]
    assert preview.ctrl[index] == high
    start = preview.state.copy()
    preview.tick(nstep=3)
    expected = preview.pool.step(start, preview.ctrl, 3)
    assert np.array_equal(preview.state, expected)
    assert preview.state[0, 1 + preview.model.nq:][0] == preview.state[1, 1 + preview.model.nq:][0]


def test_stop_leaves_the_scene_as_it_was(humanoid):
    before, looked = counts(), looks()
    preview = preview_module.start(humanoid, MASS_AND_GRAVITY, count=4)
    preview.tick()
    assert counts() != before
    drawn = [obj for group in preview.drawn for obj in group]
    assert drawn and all(obj.hide_get() for obj in drawn)  # hidden (per view layer) behind their instances
    floor = humanoid.objects["floor"]
    assert not floor.hide_get()  # the world's geometry is drawn once, shared
    assert bpy.ops.mujoco.randomization_preview_stop() == {"FINISHED"}
    assert preview_module.get(humanoid) is None
    assert counts() == before and looks() == looked
    data = bpy.data
    assert not any(block.get(fast.MADE) for blocks in (data.objects, data.meshes, data.node_groups,
                                                       data.collections) for block in blocks)


def test_it_ends_on_file_load_undo_and_disable(humanoid):
    before, looked = counts(), looks()
    preview_module.start(humanoid, MASS_AND_GRAVITY, count=3)
    handlers.end_sessions()  # what load_pre / undo_pre / redo_pre run
    assert preview_module.all_previews() == [] and counts() == before and looks() == looked
    for hook in (bpy.app.handlers.load_pre, bpy.app.handlers.undo_pre, bpy.app.handlers.redo_pre):
        assert handlers.end_sessions in hook
    preview_module.start(humanoid, MASS_AND_GRAVITY, count=3)
    disable_addon()
    try:
        assert preview_module.all_previews() == []
        assert counts() == before
    finally:
        enable_addon()
    preview_module.start(bpy.context.scene, MASS_AND_GRAVITY, count=3)
    bpy.ops.wm.read_homefile(use_empty=True)  # a real file load
    assert preview_module.all_previews() == []


def test_a_save_holds_the_authored_scene(humanoid, tmp_path):
    before, looked = counts(), looks()
    preview = preview_module.start(humanoid, MASS_AND_GRAVITY, count=2)
    preview.tick()
    path = str(tmp_path / "saved.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    assert preview_module.get(humanoid) is preview and preview.instancer is not None  # drawn again
    preview.tick()
    bpy.ops.wm.open_mainfile(filepath=path)
    assert preview_module.all_previews() == []
    assert counts() == before and looks() == looked


def test_the_preview_and_the_simulation_exclude_each_other(humanoid):
    bpy.ops.mujoco.play()
    with pytest.raises(PreviewError, match="simulation is playing"):
        preview_module.start(humanoid, MASS_AND_GRAVITY, count=2)
    bpy.ops.mujoco.pause()
    with pytest.raises(PreviewError, match="simulation is paused"):
        preview_module.start(humanoid, MASS_AND_GRAVITY, count=2)
    bpy.ops.mujoco.stop()
    before = counts()
    preview_module.start(humanoid, MASS_AND_GRAVITY, count=2)
    with pytest.raises(RuntimeError, match="randomization preview is running"):
        bpy.ops.mujoco.play()
    assert scene_session.simulation(humanoid) is None
    preview_module.stop(humanoid)
    assert counts() == before
    assert bpy.ops.mujoco.play() == {"FINISHED"}


def test_refusals_are_clear(clean_scene):
    with pytest.raises(PreviewError, match="no MuJoCo model"):
        preview_module.start(clean_scene, MASS_AND_GRAVITY, count=4)
    with pytest.raises(RuntimeError, match="no MuJoCo model"):
        bpy.ops.mujoco.randomization_preview_start()
    build.import_file(HUMANOID, clean_scene)
    before = counts()
    for count in (0, 65):
        with pytest.raises(PreviewError, match="1 to 64 environments"):
            preview_module.start(clean_scene, MASS_AND_GRAVITY, count=count)
    with pytest.raises(PreviewError, match="spacing"):
        preview_module.start(clean_scene, MASS_AND_GRAVITY, spacing=-1.0)
    unknown = Randomization([Entry("body", "mass", 0.5, 2.0, name="tail")])
    with pytest.raises(PreviewError, match="tail"):
        preview_module.start(clean_scene, unknown, count=2)
    assert counts() == before and preview_module.all_previews() == []


def test_the_operators_start_redraw_and_stop(humanoid):
    settings = humanoid.mujoco_preview
    settings.count, settings.spacing = 3, 4.0
    assert bpy.ops.mujoco.randomization_preview_start() == {"FINISHED"}
    preview = preview_module.get(humanoid)
    assert preview.count == 3 and preview.spacing == 4.0
    assert np.allclose(preview.offsets[:, 0], [0, 4, 0]) and np.allclose(preview.offsets[:, 1], [0, 0, 4])
    preview.tick()
    assert bpy.ops.mujoco.randomization_preview_reset() == {"FINISHED"} and preview.steps == 0
    assert bpy.ops.mujoco.randomization_preview_stop() == {"FINISHED"}
    assert preview_module.get(humanoid) is None


def test_the_instancer_draws_copies(clean_scene):
    """Instancer(copies=K): each source K times, copy c moved by rows c * bodies + i."""
    objects = []
    for i, name in enumerate(["b", "a"]):
        mesh = bpy.data.meshes.new(name)
        mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
        obj = bpy.data.objects.new(name, mesh)
        clean_scene.collection.objects.link(obj)
        obj.location = (i, 2 * i, 0)
        objects.append(obj)
    clean_scene.view_layers[0].update()
    authored = {obj.name: obj.matrix_world.copy() for obj in objects}
    inst = fast.Instancer("copies", [[objects[0]], [objects[1]]], clean_scene.collection,
                          bpy.context.view_layer, copies=3)
    inst.hide_sources(True)
    rng = np.random.default_rng(2)
    pos = rng.uniform(-3, 3, (6, 3))
    quat = rng.normal(size=(6, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    inst.write(pos, quat)
    with pytest.raises(ValueError):
        inst.write(pos[:2], quat[:2])
    bpy.context.view_layer.update()
    found = instances_of(inst)
    for row, obj in enumerate(objects):
        moves = [Matrix.Translation(Vector(pos[k])) @ Quaternion(quat[k]).to_matrix().to_4x4()
                 for k in (c * 2 + row for c in range(3))]
        expected = [move @ authored[obj.name] for move in moves]
        got = sorted(found[obj.name], key=lambda m: tuple(m.translation))
        expected = sorted(expected, key=lambda m: tuple(m.translation))
        assert len(got) == 3
        for a, b in zip(got, expected, strict=True):
            assert np.abs(np.array(a) - np.array(b)).max() < 1e-5
    inst.remove()
    assert not any(obj.hide_get() for obj in objects)


def test_the_operator_previews_the_authored_randomization(humanoid):
    """Entries authored on the objects (scan.randomization), drawn with the model's own
    seed: the preview's environments are the first K a training run draws."""
    torso = next(o for o in humanoid.objects if o.mujoco.kind == "BODY" and o.mujoco.name == "torso")
    root = next(o for o in humanoid.objects if o.mujoco.kind == "MODEL")
    for obj, attribute, low, high in ((torso, "mass", 0.5, 2.0), (root, "gravity", 0.3, 1.5)):
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.mujoco.randomization_add() == {"FINISHED"}
        item = obj.mujoco.randomize[obj.mujoco.randomize_active]
        item.attribute = attribute
        item.low, item.high = low, high
    root.mujoco.model.randomize_seed = 11
    humanoid.mujoco_preview.count = 4
    assert bpy.ops.mujoco.randomization_preview_start() == {"FINISHED"}
    preview = preview_module.get(humanoid)
    entries = {(e.element, e.attribute, e.name) for e in preview.randomization.entries}
    assert entries == {("body", "mass", "torso"), ("option", "gravity", "")}
    assert preview.randomization.seed == 11
    training = BatchPool(mujoco.MjModel.from_xml_path(HUMANOID), 4, randomization=preview.randomization)
    assert np.array_equal(preview.pool.parameters.draws, training.parameters.draws)
    training.close()
    preview.tick()
    heights = torso_positions(preview)[:, 2]
    assert len(np.unique(np.round(heights, 9))) == 4

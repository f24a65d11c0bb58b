"""Domain randomization authored in Blender: entries on element objects, kept in the
.blend, exported next to the MJCF, and the same environments in Blender and in
plain Python (batch.open_pool on the exported files, without bpy)."""

import json
import os
import subprocess
import sys
import textwrap
import zipfile

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import LINK_DIR
from helpers import CORPUS, needs_corpus
from test_scan import model_differences

from mjblend.app import batch_export
from mjblend.batch import Entry, Randomization, open_pool
from mjblend.importer import build
from mjblend.live import batch_scene
from mjblend.operators import randomization as randomization_operators
from mjblend.scan import randomization as scene_randomization
from mjblend.scan.compile_spec import CompileError

pytestmark = needs_corpus

HUMANOID = os.path.join(CORPUS, "mujoco_model/model/humanoid/humanoid.xml")
ARM = os.path.join(CORPUS, "menagerie/trossen_wx250s/scene.xml")  # position actuators: kp and kv
CARTPOLE = os.path.join(CORPUS, "pip/dm_control/suite/cartpole.xml")


def element(kind, name):
    (found,) = [o for o in bpy.context.scene.objects if o.mujoco.kind == kind and o.mujoco.name == name]
    return found


def add(obj, attribute, low, high, **options):
    """An entry added as the panel's + button adds it, then set as a user sets it."""
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.mujoco.randomization_add() == {"FINISHED"}
    item = obj.mujoco.randomize[obj.mujoco.randomize_active]
    item.attribute = attribute
    for key, value in options.items():
        setattr(item, key, value)
    item.low, item.high = low, high
    return item


def author_humanoid():
    """The humanoid with an entry on each kind of element, and gravity on its root."""
    root = build.import_file(HUMANOID, bpy.context.scene).root
    add(element("BODY", "torso"), "mass", 0.8, 1.2)
    add(element("GEOM", "foot1_right"), "friction", 0.5, 1.5, distribution="loguniform", index="0")
    add(element("JOINT", "knee_left"), "damping", 0.5, 2.0, distribution="normal", use_std=True, std=0.3)
    add(element("ACTUATOR", "hip_y_right"), "gear", -10, 10, mode="offset")
    add(root, "gravity", -10.5, -9.0, mode="absolute", index="2")
    root.mujoco.model.randomize_seed = 7
    return root


EXPECTED = Randomization([
    Entry("option", "gravity", -10.5, -9.0, mode="absolute", index=2),
    Entry("body", "mass", 0.8, 1.2, name="torso"),
    Entry("joint", "damping", 0.5, 2.0, name="knee_left", distribution="normal", std=0.3),
    Entry("geom", "friction", 0.5, 1.5, name="foot1_right", distribution="loguniform", index=0),
    Entry("actuator", "gear", -10.0, 10.0, name="hip_y_right", mode="offset"),
], seed=7)


def by_key(randomization):
    return sorted(randomization.entries, key=lambda e: (e.element, e.name, e.attribute))


def test_entries_are_the_batch_entries_and_survive_save_and_reload(clean_scene, tmp_path):
    root = author_humanoid()
    found = scene_randomization.scene_randomization([root])
    assert found.seed == 7 and by_key(found) == by_key(EXPECTED)  # typed values, not float32 readbacks
    assert found.entries[0].element == "option"  # the root first, then the elements in MJCF order
    path = str(tmp_path / "randomized.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    (root,) = [o for o in bpy.context.scene.objects if o.mujoco.kind == "MODEL"]
    again = scene_randomization.scene_randomization([root])
    assert again == found
    item = element("GEOM", "foot1_right").mujoco.randomize[0]
    assert (item.attribute, item.distribution, item.mode, item.index) == \
        ("friction", "loguniform", "scale", "0")


def test_the_enums_offer_what_the_element_allows(clean_scene):
    root = build.import_file(HUMANOID, bpy.context.scene).root
    body = element("BODY", "torso")
    item = add(body, "pos", -0.01, 0.01)
    assert item.mode == "offset"  # the only mode of a body position
    with pytest.raises(TypeError):
        item.mode = "scale"
    with pytest.raises(TypeError):
        item.attribute = "friction"  # a geom's
    item.attribute = "inertia"
    assert item.mode == "scale" and item.index == "ALL"
    gravity = add(root, "gravity", 0.9, 1.1)
    assert gravity.attribute == "gravity" and gravity.index == "ALL"


def test_add_and_remove_are_undo_steps(clean_scene):
    """The operators are undoable; the bpy module pushes no undo step after an operator
    (a window's Blender does, for a bl_options UNDO one): the test pushes them itself."""
    build.import_file(HUMANOID, bpy.context.scene)
    assert all("UNDO" in cls.bl_options for cls in randomization_operators.CLASSES)
    bpy.ops.ed.undo_push(message="imported")
    add(element("BODY", "torso"), "mass", 0.8, 1.2)
    bpy.ops.ed.undo_push(message="Add Randomization")
    element("BODY", "torso").mujoco.randomize_active = 0
    assert bpy.ops.mujoco.randomization_remove() == {"FINISHED"}
    bpy.ops.ed.undo_push(message="Remove Randomization")
    assert len(element("BODY", "torso").mujoco.randomize) == 0
    bpy.ops.ed.undo()
    assert [(i.attribute, i.low) for i in element("BODY", "torso").mujoco.randomize] == \
        [("mass", pytest.approx(0.8))]
    bpy.ops.ed.undo()
    assert len(element("BODY", "torso").mujoco.randomize) == 0
    bpy.ops.ed.redo()
    assert len(element("BODY", "torso").mujoco.randomize) == 1
    bpy.ops.ed.redo()
    assert len(element("BODY", "torso").mujoco.randomize) == 0


def test_position_gains_vary_in_the_pool(clean_scene):
    build.import_file(ARM, bpy.context.scene)
    waist = element("ACTUATOR", "waist")
    add(waist, "kp", 0.5, 2.0)
    add(waist, "kv", 1.0, 3.0, mode="absolute")
    pool = batch_scene.scene_pool(bpy.context.scene, 5, nthread=1, seed=1)
    nominal = pool.model
    a = nominal.actuator("waist").id
    for env in range(5):
        model = pool.parameters.model_of(env)
        factor, kv = pool.parameters.draws[env]
        assert 0.5 <= factor <= 2.0 and 1.0 <= kv <= 3.0
        assert model.actuator_gainprm[a, 0] == nominal.actuator_gainprm[a, 0] * factor
        assert model.actuator_biasprm[a, 1] == -model.actuator_gainprm[a, 0]
        assert model.actuator_biasprm[a, 2] == -kv
    pool.close()


def test_several_roots_name_their_elements_as_the_attached_scene_does(clean_scene):
    build.import_file(CARTPOLE, bpy.context.scene)
    second = build.import_file(CARTPOLE, bpy.context.scene).root
    second.location.y = 3
    (cart,) = [o for o in second.children_recursive if o.mujoco.kind == "BODY" and o.mujoco.name == "cart"]
    add(cart, "mass", 2.0, 2.0, mode="absolute")
    pool = batch_scene.scene_pool(bpy.context.scene, 2, nthread=1)
    (entry,) = pool.parameters.bound.entries
    assert entry.name.endswith("/cart") and entry.name != "cart"
    assert pool.parameters.model_of(1).body(entry.name).mass[0] == 2.0
    pool.close()


# --------------------------------------------------------------- export


def export(path, **options):
    assert bpy.ops.export_scene.mjcf(filepath=str(path), **options) == {"FINISHED"}
    return str(path)


def test_export_writes_the_randomization_next_to_the_mjcf(clean_scene, tmp_path):
    root = author_humanoid()
    written = export(tmp_path / "humanoid.xml")
    path = tmp_path / "humanoid.randomization.json"
    assert Randomization.load(str(path)) == scene_randomization.scene_randomization([root])
    assert json.loads(path.read_text())["format"] == "mjblend-randomization"
    with open_pool(written, 3, nthread=1) as pool:  # found next to the file
        assert pool.parameters is not None and pool.parameters.bound.ncolumns == 5
    export(tmp_path / "humanoid.zip", file_format="ZIP")
    with zipfile.ZipFile(tmp_path / "humanoid.zip") as archive:
        names = archive.namelist()
        assert "humanoid.randomization.json" in names and "humanoid.xml" in names
        assert Randomization.from_dict(json.loads(archive.read("humanoid.randomization.json"))) == \
            Randomization.load(str(path))


def test_no_entries_no_file_and_a_stale_one_goes(clean_scene, tmp_path):
    build.import_file(HUMANOID, bpy.context.scene)
    stale = tmp_path / "plain.randomization.json"
    stale.write_text(json.dumps(EXPECTED.to_dict()))
    export(tmp_path / "plain.xml")
    assert sorted(os.listdir(tmp_path)) == ["plain.xml"]


# Plain Python, no bpy: the training script's side (as tools/run_tests.sh's WITHOUT_BLENDER).
PLAIN = textwrap.dedent("""
    import sys
    for name in ("bpy", "mathutils", "gpu", "bpy_extras", "addon_utils", "bmesh"):
        sys.modules[name] = None
    link_dir, xml, out = sys.argv[1:4]
    sys.path.insert(0, link_dir)
    import mujoco
    import numpy as np
    from mjblend.batch import open_pool
    import run
    with open_pool(xml, run.NBATCH, nthread=1, seed=run.SEED) as pool:
        results = run.run(pool)
        for env in run.ENVS:
            mujoco.mj_saveModel(pool.parameters.model_of(env), f"{out}/env{env}.mjb")
    np.savez(f"{out}/plain.npz", **results)
""")
RUN = textwrap.dedent("""
    import numpy as np
    NBATCH, SEED, ENVS = 6, 3, (0, 1, 4)

    def run(pool):
        draws0 = pool.parameters.draws.copy()
        state = pool.reset(ids=[1, 4])  # new draws for two of them
        draws1 = pool.parameters.draws.copy()
        ctrl = 0.4 * np.sin(np.arange(pool.nbatch * pool.nu)).reshape(pool.nbatch, pool.nu)
        final = pool.step(state, ctrl, nstep=50)
        models = [pool.parameters.model_of(e) for e in ENVS]
        stats = np.array([[m.stat.meanmass, m.stat.meaninertia, *m.opt.gravity] for m in models])
        return {"draws0": draws0, "draws1": draws1, "final": final, "stats": stats}
""")


def test_an_exported_randomization_gives_the_same_environments_in_plain_python(clean_scene, tmp_path):
    author_humanoid()
    xml = export(tmp_path / "humanoid.xml")
    (tmp_path / "run.py").write_text(RUN)
    (tmp_path / "plain.py").write_text(PLAIN)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path)  # run.py
    done = subprocess.run([sys.executable, str(tmp_path / "plain.py"), LINK_DIR, xml, str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    plain = np.load(tmp_path / "plain.npz")

    sys.path.insert(0, str(tmp_path))
    try:
        import run
    finally:
        sys.path.remove(str(tmp_path))
    with batch_scene.scene_pool(bpy.context.scene, run.NBATCH, nthread=1, seed=run.SEED) as pool:
        ours = run.run(pool)
        for key in ("draws0", "draws1", "final", "stats"):
            assert np.array_equal(ours[key], plain[key]), key  # bit for bit
        assert not np.array_equal(ours["draws0"], ours["draws1"])
        for env_id in run.ENVS:
            theirs = mujoco.MjModel.from_binary_path(str(tmp_path / f"env{env_id}.mjb"))
            differences = model_differences(pool.parameters.model_of(env_id), theirs)
            assert not differences, f"environment {env_id}: {differences[:8]}"
    sys.modules.pop("run", None)


def test_export_for_training_writes_a_folder_open_pool_reads(clean_scene, tmp_path):
    author_humanoid()
    blend = str(tmp_path / "walker.blend")
    bpy.ops.wm.save_as_mainfile(filepath=blend)
    out = tmp_path / "out"
    assert batch_export.main([blend, str(out)]) == 0  # what blender --command mjblend_export_batch runs
    assert sorted(os.listdir(out)) == ["walker.randomization.json", "walker.xml"]
    with batch_scene.pool_from_blend(blend, 4, nthread=1) as ours, \
            open_pool(str(out / "walker.xml"), 4, nthread=1) as theirs:
        assert np.array_equal(ours.parameters.draws, theirs.parameters.draws)  # the root's seed, 7
    assert batch_export.main([str(tmp_path / "missing.blend"), str(out)]) == 1


# --------------------------------------------------------------- errors


def test_an_unnamed_element_is_named_in_the_error(clean_scene, tmp_path):
    root = build.import_file(HUMANOID, bpy.context.scene).root
    head = element("GEOM", "head")
    add(head, "friction", 0.8, 1.2)
    head.mujoco.name = ""
    with pytest.raises(scene_randomization.RandomizationInvalid, match="MJCF name") as error:
        scene_randomization.scene_randomization([root])
    assert str(error.value).startswith(head.name + ":") and error.value.objects == [head]
    item = head.mujoco.randomize[0]
    assert "MJCF name" in scene_randomization.entry_problem(item, head)  # what the panel shows
    with pytest.raises(RuntimeError, match="MJCF name"):  # the export reports it
        bpy.ops.export_scene.mjcf(filepath=str(tmp_path / "unnamed.xml"))
    assert not os.listdir(tmp_path)


def test_kp_on_a_motor_is_refused_with_the_reason(clean_scene, tmp_path):
    build.import_file(HUMANOID, bpy.context.scene)
    motor = element("ACTUATOR", "knee_right")
    add(motor, "kp", 0.5, 2.0)
    with pytest.raises(scene_randomization.RandomizationInvalid, match="position-type actuator") as error:
        batch_scene.scene_pool(bpy.context.scene, 2, nthread=1)
    assert error.value.objects == [motor] and motor.name in str(error.value)
    with pytest.raises(RuntimeError, match="position-type actuator"):
        bpy.ops.export_scene.mjcf(filepath=str(tmp_path / "motor.xml"))
    assert not os.listdir(tmp_path)


def test_bad_ranges_and_repeats_are_refused(clean_scene):
    root = build.import_file(HUMANOID, bpy.context.scene).root
    torso = element("BODY", "torso")
    item = add(torso, "mass", 1.2, 0.8)
    assert "low <= high" in scene_randomization.entry_problem(item, torso)
    with pytest.raises(scene_randomization.RandomizationInvalid, match="low <= high"):
        scene_randomization.scene_randomization([root])
    item.low, item.high, item.distribution = 0.0, 1.0, "loguniform"
    assert "loguniform range must be positive" in scene_randomization.entry_problem(item, torso)
    item.distribution = "uniform"
    assert scene_randomization.entry_problem(item, torso) == ""
    item.mode_name = "offset"  # (a script, or a file of another MJBlend) on an attribute without it
    item.attribute = "inertia"
    assert item.mode == "scale"  # the attribute's choice put right what it cannot have
    item.attribute_name, item.mode_name = "inertia", "offset"
    assert "not offered" in scene_randomization.entry_problem(item, torso)
    item.attribute = "mass"
    add(torso, "mass", 0.9, 1.1)
    with pytest.raises(scene_randomization.RandomizationInvalid, match="randomized twice"):
        scene_randomization.scene_randomization([root])
    with pytest.raises(CompileError):
        batch_scene.scene_pool(bpy.data.scenes.new("empty"), 2)

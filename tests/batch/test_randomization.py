"""Domain randomization: the file, the draws (ranges, seeds, sparse resets), and
that each randomized environment is the model MuJoCo compiles with those values."""

import copy
import json
import os

import mujoco
import numpy as np
import pytest
from batch_models import CARTPOLE, FRANKA, HUMANOID, SPEC, model_at, moving_states, serial

from mjblend.batch import BatchPool, Entry, Randomization, RandomizationError
from mjblend.batch.parameters import DERIVED_FIELDS, SIZE_DERIVED_FIELDS
from mjblend.batch.randomization import ATTRIBUTES

pytestmark = pytest.mark.corpus
DATA = os.path.join(os.path.dirname(__file__), "data")

HUMANOID_ENTRIES = [
    Entry("body", "mass", 0.5, 2.0, name="torso"),
    Entry("body", "inertia", 0.8, 1.2, name="thigh_left", distribution="loguniform"),
    Entry("body", "pos", -0.02, 0.02, name="shin_right", mode="offset", independent=True),
    Entry("geom", "friction", 0.4, 1.2, name="floor", index=0, mode="absolute"),
    Entry("geom", "size", 0.9, 1.1, name="head"),
    Entry("joint", "damping", 0.5, 1.5, name="knee_left", distribution="normal", std=0.3),
    Entry("joint", "armature", 0.0, 0.05, name="hip_y_right", mode="offset"),
    Entry("joint", "stiffness", 0.0, 5.0, name="abdomen_z", mode="absolute"),
    Entry("actuator", "gear", 0.9, 1.1, name="hip_y_left"),
    Entry("option", "gravity", -10.5, -9.0, index=2, mode="absolute"),
]


def numeric_fields(model):
    return {name: getattr(model, name) for name in dir(model)
            if not name.startswith("_") and isinstance(getattr(model, name), np.ndarray)
            and getattr(model, name).dtype.kind in "fiub"}


def assert_models_equal(a, b):
    fields_a, fields_b = numeric_fields(a), numeric_fields(b)
    differ = [n for n in fields_a if not np.array_equal(fields_a[n], fields_b[n], equal_nan=True)]
    assert not differ, f"fields differ: {differ}"
    assert np.array_equal(a.opt.gravity, b.opt.gravity)
    assert (a.stat.meaninertia, a.stat.meanmass) == (b.stat.meaninertia, b.stat.meanmass)


def test_file_round_trip(tmp_path):
    randomization = Randomization(HUMANOID_ENTRIES, seed=7)
    path = tmp_path / "humanoid.randomization.json"
    randomization.save(str(path))
    data = json.loads(path.read_text())
    assert data["format"] == "mjblend-randomization" and data["version"] == 1 and data["seed"] == 7
    assert Randomization.load(str(path)) == randomization


@pytest.mark.parametrize("data, message", [
    ({"entries": []}, "not an MJBlend randomization"),
    ({"format": "mjblend-randomization", "version": 2, "entries": []}, "version 2 is not 1"),
    ({"format": "mjblend-randomization", "version": 1, "entries": {}}, "\"entries\" must be a list"),
    ({"format": "mjblend-randomization", "version": 1, "seed": -1, "entries": []}, "seed must be"),
    ({"format": "mjblend-randomization", "version": 1, "entries": [{"element": "body"}]}, "needs element"),
    ({"format": "mjblend-randomization", "version": 1, "entries": [
        {"element": "body", "name": "a", "attribute": "mass", "low": 1, "high": 2, "colour": 3}]},
     "unknown keys"),
    ({"format": "mjblend-randomization", "version": 1, "entries": [
        {"element": "body", "name": "a", "attribute": "mass", "low": 2, "high": 1}]}, "low <= high"),
    ({"format": "mjblend-randomization", "version": 1, "entries": [
        {"element": "body", "name": "a", "attribute": "colour", "low": 1, "high": 2}]},
     "body has no randomizable attribute 'colour'"),
    ({"format": "mjblend-randomization", "version": 1, "entries": [
        {"element": "body", "name": "a", "attribute": "mass", "low": 0, "high": 2,
         "distribution": "loguniform"}]}, "loguniform range must be positive"),
    ({"format": "mjblend-randomization", "version": 1, "entries": [
        {"element": "body", "name": "a", "attribute": "pos", "low": 0, "high": 2, "mode": "scale"}]},
     "mode 'scale' is not offered for pos"),
    ({"format": "mjblend-randomization", "version": 1, "entries": [
        {"element": "geom", "name": "a", "attribute": "friction", "low": 0, "high": 2, "index": 3}]},
     "index 3 is out of 0..2"),
    ({"format": "mjblend-randomization", "version": 1, "entries": [
        {"element": "geom", "attribute": "friction", "low": 0, "high": 2}]}, "has no MJCF name"),
])
def test_malformed_files_are_clear_errors(tmp_path, data, message):
    path = tmp_path / "bad.randomization.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RandomizationError) as raised:
        Randomization.load(str(path))
    assert message in str(raised.value) and str(path) in str(raised.value)


@pytest.mark.parametrize("entry, message", [
    (Entry("body", "mass", 1, 2, name="nobody"), "no body named 'nobody'"),
    (Entry("geom", "size", 1, 2, name="floor"), "only sphere, capsule"),
    (Entry("geom", "size", 1, 2, name="head", index=1), "uses 1 size component"),
    (Entry("actuator", "kp", 1, 2, name="hip_y_left"), "kp needs a position-type actuator"),
    (Entry("actuator", "kv", 1, 2, name="hip_y_left"), "kv needs an actuator with velocity feedback"),
])
def test_entries_the_model_cannot_take_are_clear_errors(entry, message):
    with pytest.raises(RandomizationError, match=message):
        Randomization([entry]).bind(model_at(HUMANOID))


def test_draws_stay_in_range_and_follow_the_seed():
    model = model_at(HUMANOID)
    randomization = Randomization(HUMANOID_ENTRIES, seed=3)
    pools = [BatchPool(model, 200, nthread=1, randomization=randomization) for _ in range(2)]
    other = BatchPool(model, 200, nthread=1, randomization=randomization, seed=4)
    draws = pools[0].parameters.draws
    assert np.array_equal(draws, pools[1].parameters.draws)
    assert not np.array_equal(draws, other.parameters.draws)
    bound = pools[0].parameters.bound
    for entry, where in zip(bound.entries, bound.slices, strict=True):
        values = draws[:, where]
        assert values.min() >= entry.low and values.max() <= entry.high, entry.label
        assert values.std() > 0, entry.label
    # resets draw from the same generator: same resets, same environments
    for pool in pools:
        pool.reset(ids=[3, 100])
    assert np.array_equal(pools[0].parameters.draws, pools[1].parameters.draws)
    for pool in [*pools, other]:
        pool.close()


def test_a_sparse_reset_redraws_only_the_named_environments():
    model = model_at(HUMANOID)
    with BatchPool(model, 8, nthread=2, randomization=Randomization(HUMANOID_ENTRIES, seed=1)) as pool:
        states = moving_states(model, 8)
        before_states, before_draws = states.copy(), pool.parameters.draws.copy()
        before_models = [pool.parameters.model_of(env) for env in range(8)]
        pool.reset(states, [2, 5])
        kept = [0, 1, 3, 4, 6, 7]
        assert np.array_equal(pool.parameters.draws[kept], before_draws[kept])
        assert np.array_equal(states[kept], before_states[kept])
        assert not np.array_equal(pool.parameters.draws[[2, 5]], before_draws[[2, 5]])
        for env in kept:
            assert_models_equal(pool.parameters.model_of(env), before_models[env])
        pool.reset(states, [6], randomize=False)
        assert np.array_equal(pool.parameters.draws[6], before_draws[6])


def test_each_environment_is_its_drawn_model_and_steps_like_it():
    """The model a worker swaps in equals a copy given the same values by the
    reference (Bound.apply, then MuJoCo's mj_setConst); stepping equals serial
    mj_step on those models."""
    model = model_at(HUMANOID)
    randomization = Randomization(HUMANOID_ENTRIES, seed=5)
    count, nstep = 6, 20
    with BatchPool(model, count, nthread=3, randomization=randomization) as pool:
        references = []
        for env in range(count):
            reference = copy.copy(model)
            pool.parameters.bound.apply(reference, pool.parameters.draws[env], mujoco.MjData(model))
            assert_models_equal(pool.parameters.model_of(env), reference)
            references.append(reference)
        # a worker's model after another environment ran on it is still exact
        worker = copy.copy(model)
        for env in (4, 1):
            pool.parameters.swap_in(worker, env)
        assert_models_equal(worker, references[1])
        states = moving_states(model, count)
        controls = np.random.default_rng(2).uniform(-1, 1, (count, nstep, model.nu))
        final, sensed = pool.step(states, controls, nstep=nstep, sensors=True)
        want, want_sensed = serial(references, states, controls, nstep)
        assert np.array_equal(final, want) and np.array_equal(sensed, want_sensed)
        held = controls[:, 0]
        want = serial(references, states, held, nstep)[0]
        assert np.array_equal(pool.step(states, held, nstep=nstep), want)

        def policy(step, rows):
            return np.tanh(rows[:, 1:1 + model.nu])
        want = serial(references, states, None, 8, policy)[0]
        assert np.array_equal(pool.step(states, policy, nstep=8), want)


def test_derived_fields_cover_what_mj_setconst_writes():
    model = model_at(FRANKA)
    changed = copy.copy(model)
    changed.body_mass[1:] *= 1.3
    changed.body_inertia[1:] *= 1.2
    changed.body_pos[2:] += 0.01
    changed.dof_armature[:] += 0.1
    changed.actuator_gear[:, 0] *= 1.1
    sized = np.isin(changed.geom_type, [mujoco.mjtGeom.mjGEOM_SPHERE, mujoco.mjtGeom.mjGEOM_CAPSULE,
                                        mujoco.mjtGeom.mjGEOM_BOX, mujoco.mjtGeom.mjGEOM_CYLINDER])
    assert sized.any()
    changed.geom_size[sized] *= 1.2
    changed.geom_aabb[sized, 3:] *= 1.2
    before = {name: value.copy() for name, value in numeric_fields(changed).items()}
    mujoco.mj_setConst(changed, mujoco.MjData(changed))
    after = numeric_fields(changed)
    written = {n for n, v in after.items() if not np.array_equal(v, before[n], equal_nan=True)}
    assert written <= set(DERIVED_FIELDS) | set(SIZE_DERIVED_FIELDS)


def heavier_torso(factor):
    """The humanoid compiled by MuJoCo with its torso `factor` times heavier (inertia as compiled)."""
    spec = mujoco.MjSpec.from_file(HUMANOID)
    model = spec.compile()
    torso = spec.body("torso")
    index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso")
    torso.explicitinertial = True
    torso.mass = model.body_mass[index] * factor
    torso.ipos, torso.iquat = model.body_ipos[index], model.body_iquat[index]
    torso.inertia = model.body_inertia[index]
    return spec.compile()


def test_a_heavier_body_moves_as_mujoco_says():
    model = model_at(HUMANOID)
    compiled = heavier_torso(1.5)
    randomization = Randomization([Entry("body", "mass", 1.5, 1.5, name="torso")])
    with BatchPool(model, 2, nthread=1, randomization=randomization) as pool:
        assert_models_equal(pool.parameters.model_of(0), compiled)
        states = moving_states(model, 2)
        controls = np.random.default_rng(3).uniform(-1, 1, (2, 30, model.nu))
        final = pool.step(states, controls, nstep=30)
        assert np.array_equal(final, serial(compiled, states, controls, 30)[0])
        assert not np.array_equal(final, serial(model, states, controls, 30)[0])


def test_the_statistics_do_not_enter_mj_step():
    """A pool's batch (mujoco.batch.Batch, which has no per-simulation stat) steps
    with the nominal stat.meaninertia/meanmass while `model_of` gives the compiler's:
    exact only because MuJoCo 4's mj_step does not read them. Should a MuJoCo
    release start to, this fails and the pool must carry them per environment."""
    model = model_at(HUMANOID)
    states = moving_states(model, 2)
    controls = np.random.default_rng(4).uniform(-1, 1, (2, 200, model.nu))
    reference = serial(model, states, controls, 200)[0]
    for factor in (1e-3, 1.7, 1e3):
        scaled = copy.copy(model)
        scaled.stat.meaninertia *= factor
        scaled.stat.meanmass *= factor
        assert np.array_equal(serial(scaled, states, controls, 200)[0], reference), factor


@pytest.mark.parametrize("geom_type, size", [("sphere", [0.1]), ("capsule", [0.05, 0.2]),
                                              ("cylinder", [0.05, 0.2]), ("box", [0.1, 0.2, 0.3]),
                                              ("ellipsoid", [0.1, 0.2, 0.3])])
def test_a_resized_geom_has_the_bounds_mujoco_compiles(geom_type, size):
    def compiled(scale):
        spec = mujoco.MjSpec()
        body = spec.worldbody.add_body(name="b", pos=[0, 0, 1])
        body.add_freejoint()
        body.add_geom(name="g", type=getattr(mujoco.mjtGeom, f"mjGEOM_{geom_type.upper()}"),
                      size=list(np.array(size) * scale) + [0] * (3 - len(size)), mass=1)
        return spec.compile()
    randomization = Randomization([Entry("geom", "size", 1.25, 1.25, name="g")])
    with BatchPool(compiled(1.0), 1, nthread=1, randomization=randomization) as pool:
        grown, want = pool.parameters.model_of(0), compiled(1.25)
        assert np.array_equal(grown.geom_size, want.geom_size)
        assert np.allclose(grown.geom_rbound, want.geom_rbound, rtol=1e-15, atol=0)
        assert np.allclose(grown.geom_aabb, want.geom_aabb, rtol=1e-15, atol=0)


def test_position_actuator_gains():
    model = model_at(FRANKA)
    name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, 0)
    kp = model.actuator_gainprm[0, 0]
    randomization = Randomization([Entry("actuator", "kp", 2.0, 2.0, name=name),
                                   Entry("actuator", "kv", 7.0, 7.0, name=name, mode="absolute")])
    with BatchPool(model, 1, nthread=1, randomization=randomization) as pool:
        changed = pool.parameters.model_of(0)
        assert changed.actuator_gainprm[0, 0] == 2 * kp and changed.actuator_biasprm[0, 1] == -2 * kp
        assert changed.actuator_biasprm[0, 2] == -7.0


def test_every_attribute_is_offered_with_a_description():
    assert {element for element, _ in ATTRIBUTES} == {"body", "geom", "joint", "actuator", "option"}
    assert all(a.description and a.label and a.modes for a in ATTRIBUTES.values())


def test_unrandomized_pools_have_no_parameters():
    with BatchPool(model_at(CARTPOLE), 2, nthread=1, randomization=Randomization([])) as pool:
        assert pool.parameters is None
        states = pool.reset()
        assert np.array_equal(states, np.tile(pool.initial_state, (2, 1)))
        row = np.empty(pool.nstate)
        data = mujoco.MjData(pool.model)
        mujoco.mj_getState(pool.model, data, row, SPEC)
        assert np.array_equal(row, pool.initial_state)


def test_a_randomization_made_before_mujoco_batch_gives_the_same_environments():
    """data/humanoid_before_batch.npz was written by the pool before it ran on
    mujoco.batch (its own threads, mj_setConst per environment from Python), from
    data/humanoid.randomization.json: a pool made, then environments 1 and 4 reset.
    Today's pool draws the same values and makes the same models, bit for bit."""
    before = np.load(os.path.join(DATA, "humanoid_before_batch.npz"))
    randomization = Randomization.load(os.path.join(DATA, "humanoid.randomization.json"))
    with BatchPool(model_at(HUMANOID), 6, nthread=2, randomization=randomization) as pool:
        pool.reset(pool.reset(), [1, 4])
        assert np.array_equal(pool.parameters.draws, before["draws"])
        for env in range(6):
            model = pool.parameters.model_of(env)
            for key in before.files:
                prefix, _, field = key.partition("/")
                if prefix != str(env):
                    continue
                now = {"stat": np.array([model.stat.meaninertia, model.stat.meanmass]),
                       "gravity": model.opt.gravity}.get(field)
                now = getattr(model, field) if now is None else now
                assert np.array_equal(now, before[key]), (env, field)


def test_the_stateful_style_steps_each_environment_on_its_own_model():
    """`pool.batch` is the pool's mujoco.batch.Batch: live arrays and step(), as RL
    loops use it. A randomized environment there steps as serial mj_step of its
    model (model_of), also after a sparse redraw and reset."""
    model = model_at(HUMANOID)
    with BatchPool(model, 4, nthread=2, randomization=Randomization(HUMANOID_ENTRIES, seed=5)) as pool:
        batch = pool.batch
        ctrl, qpos = batch.bind("ctrl"), batch.bind("qpos")
        pool.parameters.redraw(np.array([2]))
        batch.reset()
        controls = np.random.default_rng(6).uniform(-1, 1, (4, 25, model.nu))
        for k in range(25):
            ctrl[:] = controls[:, k]
            batch.step()
        for env in range(4):
            own = pool.parameters.model_of(env)
            data = mujoco.MjData(own)
            for k in range(25):
                data.ctrl[:] = controls[env, k]
                mujoco.mj_step(own, data)
            assert np.array_equal(qpos[env], data.qpos), env

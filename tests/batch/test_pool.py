"""BatchPool against serial mj_step, bit for bit: open-loop controls (per step and
held), policies called every step, any number of threads; resets; errors."""

import gc
import os

import mujoco
import numpy as np
import pytest
from batch_models import BARKOUR, CARTPOLE, CASSIE, FRANKA, HUMANOID, SPEC, model_at, moving_states, serial

from mjblend.batch import BatchError, BatchPool

pytestmark = pytest.mark.corpus
MODELS = {"humanoid": HUMANOID, "cartpole": CARTPOLE, "barkour": BARKOUR, "franka": FRANKA, "cassie": CASSIE}


def policy_for(model):
    """A policy that works row by row (so its batch answer equals its per-row answers)."""
    columns = 1 + np.arange(model.nu) % model.nq  # qpos follows time in the state

    def policy(step, states):
        return np.tanh(states[:, columns] * 3.0) * (0.5 + 0.01 * step)
    return policy


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("nthread", [1, 3])
def test_final_states_equal_serial_mj_step(name, nthread):
    model = model_at(MODELS[name])
    count, nstep = 7, 25
    states = moving_states(model, count)
    rng = np.random.default_rng(1)
    per_step = rng.uniform(-1, 1, (count, nstep, model.nu))
    held = rng.uniform(-1, 1, (count, model.nu))
    with BatchPool(model, count, nthread=nthread) as pool:
        final, sensed = pool.step(states, per_step, nstep=nstep, sensors=True)
        want, want_sensed = serial(model, states, per_step, nstep)
        assert np.array_equal(final, want)
        assert np.array_equal(sensed, want_sensed)
        assert np.array_equal(pool.step(states, held, nstep=nstep), serial(model, states, held, nstep)[0])
        policy = policy_for(model)
        assert np.array_equal(pool.step(states, policy, nstep=10), serial(model, states, None, 10, policy)[0])
        # the caller's states are never written
        assert np.array_equal(states, moving_states(model, count))


def test_one_control_row_serves_every_environment_and_none_is_zero():
    model = model_at(HUMANOID)
    states = moving_states(model, 3)
    row = np.linspace(-1, 1, model.nu)
    with BatchPool(model, 3, nthread=1) as pool:
        want = serial(model, states, np.tile(row, (3, 1)), 5)[0]
        assert np.array_equal(pool.step(states, row, nstep=5), want)
        assert np.array_equal(pool.step(states, None, nstep=5), serial(model, states, None, 5)[0])


def test_workers_are_persistent_and_closed():
    """The pool's workers are its mujoco.batch.Batch's C++ threads (the calling thread
    is one of them): made once, kept across calls, gone on close."""
    def threads():
        return set(os.listdir("/proc/self/task"))
    model = model_at(CARTPOLE)
    before = threads()
    pool = BatchPool(model, 16, nthread=3)
    states = pool.reset()
    pool.forward(states)
    pool.step(states, policy_for(model), nstep=3)
    workers = threads() - before
    pool.step(states, policy_for(model), nstep=3)
    assert threads() - before == workers
    assert 1 <= len(workers) <= 2
    pool.close()
    gc.collect()
    assert not threads() - before


def test_reset_sets_only_the_named_environments():
    model = model_at(HUMANOID)
    with BatchPool(model, 6, nthread=1, keyframe=0) as pool:
        data = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(model, data, 0)
        key = np.empty(pool.nstate)
        mujoco.mj_getState(model, data, key, SPEC)
        assert np.array_equal(pool.initial_state, key)
        states = moving_states(model, 6)
        before = states.copy()
        out = pool.reset(states, [1, 4])
        assert out is states
        assert np.array_equal(states[[1, 4]], np.tile(key, (2, 1)))
        assert np.array_equal(states[[0, 2, 3, 5]], before[[0, 2, 3, 5]])
        mask = np.zeros(6, bool)
        mask[2] = True
        given = moving_states(model, 1, seed=9)[0]
        pool.reset(states, mask, to=given)
        assert np.array_equal(states[2], given)
        mujoco.mj_resetData(model, data)
        zero = np.empty(pool.nstate)
        mujoco.mj_getState(model, data, zero, SPEC)
        pool.reset(states, [0], keyframe=None)
        assert np.array_equal(states[0], key)  # the pool's keyframe
        assert np.array_equal(BatchPool(model, 2, nthread=1).reset(), np.tile(zero, (2, 1)))


@pytest.mark.parametrize("call, message", [
    (lambda p, s, m: p.step(s[:, :-1]), "expected a float64 array of shape (4, "),
    (lambda p, s, m: p.step(s.astype(np.float32)), "expected dtype float64"),
    (lambda p, s, m: p.step(s.tolist()), "got list"),
    (lambda p, s, m: p.step(s, np.zeros((4, m.nu + 1))), "ctrl: expected shape"),
    (lambda p, s, m: p.step(s, np.zeros((4, 3, m.nu)), nstep=2), "ctrl: expected shape"),
    (lambda p, s, m: p.step(s, np.full(m.nu, np.nan)), "NaN"),
    (lambda p, s, m: p.step(s, None, nstep=0), "nstep must be a positive integer"),
    (lambda p, s, m: p.step(s, lambda k, x: np.zeros(3)), "the policy's controls: expected shape"),
    (lambda p, s, m: p.reset(s, [4]), "indices must be in 0..3"),
    (lambda p, s, m: p.reset(s, [1, 1]), "named twice"),
    (lambda p, s, m: p.reset(s, np.ones(3, bool)), "a mask must have shape (4,)"),
    (lambda p, s, m: p.reset(s, [0], to=np.zeros(5)), "to: expected shape"),
    (lambda p, s, m: p.reset(s, [0], keyframe="nope"), "no keyframe named 'nope'"),
    (lambda p, s, m: p.site_jacobians(s, ["nope"]), "no site named 'nope'"),
    (lambda p, s, m: p.site_jacobians(s, [10 ** 6]), "site id 1000000 is out of range"),
    (lambda p, s, m: p.heightfield(s, "torso", np.zeros((2, 3))), "height-field geoms; name one"),
    (lambda p, s, m: p.body_poses(s[:2]), "expected a float64 array of shape (4, "),
])
def test_wrong_calls_are_clear_errors(call, message):
    model = model_at(HUMANOID)
    with BatchPool(model, 4, nthread=2) as pool:
        states = pool.reset()
        with pytest.raises(BatchError) as raised:
            call(pool, states, model)
        assert message in str(raised.value)


@pytest.mark.parametrize("args, message", [
    (dict(nbatch=0), "nbatch must be a positive integer"),
    (dict(nbatch=2, nthread=-1), "nthread must be a non-negative integer"),
    (dict(nbatch=2, keyframe=7), "keyframe 7 is out of range"),
])
def test_wrong_pools_are_clear_errors(args, message):
    with pytest.raises(BatchError, match=message):
        BatchPool(model_at(CARTPOLE), **args)


@pytest.mark.parametrize("nstep", [5, 30])
def test_one_environment_equals_serial_on_either_path(nstep):
    """One environment steps on the calling thread (held controls, few steps) or
    through mujoco.rollout (per-step controls over many steps): both are serial mj_step."""
    model = model_at(HUMANOID)
    states = moving_states(model, 1, seed=3)
    controls = np.random.default_rng(5).uniform(-1, 1, (1, nstep, model.nu))
    with BatchPool(model, 1) as pool:
        final, sensed = pool.step(states, controls, nstep=nstep, sensors=True)
        want, want_sensed = serial(model, states, controls, nstep)
        assert np.array_equal(final, want) and np.array_equal(sensed, want_sensed)
        assert np.array_equal(pool.step(states, controls[:, 0], nstep=nstep),
                              serial(model, states, controls[:, 0], nstep)[0])


def test_a_warning_stops_an_environment_only_under_per_step_controls():
    """As documented: per-step controls run as Batch.rollout / mujoco.rollout, where
    an environment whose MuJoCo warns stops stepping; held controls and policies
    step on as serial mj_step does (MuJoCo resets the diverged state itself). The
    healthy environments are exact either way."""
    model = model_at(CARTPOLE)
    with BatchPool(model, 3, nthread=2) as pool:
        states = pool.initial_states()
        states[1, 1 + model.nq] = 1e300  # a velocity MuJoCo calls diverged
        controls = np.zeros((3, 5, model.nu))
        reference = serial(model, states, controls, 5)[0]
        per_step = pool.step(states, controls, nstep=5)
        held = pool.step(states, controls[:, 0], nstep=5)
        policy = pool.step(states, lambda k, s: controls[:, 0], nstep=5)
    assert np.array_equal(held, reference) and np.array_equal(policy, reference)
    assert np.array_equal(per_step[[0, 2]], reference[[0, 2]])
    assert per_step[1, 0] == model.opt.timestep  # stopped after its first step
    assert reference[1, 0] == 5 * model.opt.timestep

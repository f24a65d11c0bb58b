"""RayPool (batch/ray_pool.py) on a local Ray with two actors: every result equals
BatchPool's and serial mj_step's bit for bit, the driver's draws are BatchPool's,
bad calls are BatchPool's BatchErrors, and close() leaves no actor."""

import os
import subprocess
import sys
import textwrap
import time

import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

ray = pytest.importorskip("ray")

from mjblend.batch import BatchError, BatchPool, Entry, Randomization, open_pool  # noqa: E402
from mjblend.batch.pool import STATE_SPEC  # noqa: E402
from mjblend.batch.ray_pool import RayPool  # noqa: E402

pytestmark = needs_corpus

HUMANOID = os.path.join(CORPUS, "mujoco_model/model/humanoid/humanoid.xml")
CARTPOLE = os.path.join(CORPUS, "pip/dm_control/suite/cartpole.xml")
BARKOUR = os.path.join(CORPUS, "menagerie/google_barkour_vb/scene_hfield_mjx.xml")
NBATCH = 5  # split 2 + 3 over the two actors
NSTEP = 6


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def load(path):
    return mujoco.MjModel.from_xml_path(path)


def moving_states(pool, seed=1):
    """Initial states with random velocities: something happens in a few steps."""
    state = pool.initial_states()
    nq = pool.model.nq
    state[:, 1 + nq:1 + nq + pool.nv] = np.random.default_rng(seed).normal(0, 0.5, (pool.nbatch, pool.nv))
    return state


def policy_of(model):
    """Controls from the states (the first nu coordinates of each), so a wrong
    state fed back to the policy shows in the result."""
    def policy(step, states):
        return np.tanh(states[:, 1:1 + model.nu] * (step + 1))
    return policy


def serial(model, state, controls=None, nstep=NSTEP, policy=None):
    """Each environment stepped alone with mj_step (one MjData each, kept between
    steps); a policy sees every environment's state before each step."""
    datas = []
    for row in state:
        data = mujoco.MjData(model)
        mujoco.mj_setState(model, data, row, STATE_SPEC)
        datas.append(data)
    current = state.copy()
    for k in range(nstep):
        step_controls = policy(k, current.copy()) if policy else controls[:, k]
        for env, data in enumerate(datas):
            data.ctrl[:] = step_controls[env]
            mujoco.mj_step(model, data)
            mujoco.mj_getState(model, data, current[env], STATE_SPEC)
    return current


@pytest.mark.parametrize("path", [HUMANOID, CARTPOLE], ids=["humanoid", "cartpole"])
def test_steps_equal_serial_mj_step_and_batch_pool(path):
    model = load(path)
    policy = policy_of(model)
    rng = np.random.default_rng(2)
    per_step = rng.uniform(-1, 1, (NBATCH, NSTEP, model.nu))
    held = rng.uniform(-1, 1, (NBATCH, model.nu))
    with RayPool(model, NBATCH, nworkers=2) as pool, BatchPool(model, NBATCH, nthread=2) as local:
        assert (pool.nbatch, pool.nstate, pool.nu, pool.nv, pool.nsensordata) == (
            local.nbatch, local.nstate, local.nu, local.nv, local.nsensordata)
        np.testing.assert_array_equal(pool.initial_state, local.initial_state)
        state = moving_states(pool)
        before = state.copy()
        cases = [(per_step, serial(model, state, per_step)),
                 (held, serial(model, state, np.repeat(held[:, None], NSTEP, axis=1))),
                 (policy, serial(model, state, policy=policy))]
        for ctrl, expected in cases:
            got = pool.step(state, ctrl, NSTEP)
            assert got.tobytes() == expected.tobytes()
            assert got.tobytes() == local.step(state, ctrl, NSTEP).tobytes()
        # shared controls, none, and the sensors of the last step
        for ctrl in (held[0], None):
            got, sensed = pool.step(state, ctrl, NSTEP, sensors=True)
            want, want_sensed = local.step(state, ctrl, NSTEP, sensors=True)
            assert got.tobytes() == want.tobytes() and sensed.tobytes() == want_sensed.tobytes()
        assert state.tobytes() == before.tobytes()  # the caller's states are left alone


def randomization():
    return Randomization([
        Entry("body", "mass", 0.7, 1.3, name="torso"),
        Entry("geom", "friction", 0.5, 1.5, name="floor", independent=True),
        Entry("option", "gravity", -0.5, 0.5, mode="offset", distribution="normal"),
    ], seed=11)


def test_randomized_resets_match_batch_pool_with_the_same_seed():
    model = load(HUMANOID)
    policy = policy_of(model)
    spec = randomization()
    with RayPool(model, NBATCH, nworkers=2, randomization=spec, seed=5) as pool, \
            BatchPool(model, NBATCH, nthread=2, randomization=spec, seed=5) as local:
        np.testing.assert_array_equal(pool.parameters.draws, local.parameters.draws)
        state = moving_states(pool)
        assert pool.step(state, policy, NSTEP).tobytes() == local.step(state, policy, NSTEP).tobytes()
        # sparse resets: rows in both actors' slices, given as indices and as a mask
        for ids in ([4, 1], np.array([False, False, True, False, False])):
            state = pool.reset(state, ids=ids)
            local_state = local.reset(state.copy(), ids=ids)
            assert state.tobytes() == local_state.tobytes()
            np.testing.assert_array_equal(pool.parameters.draws, local.parameters.draws)
            state = moving_states(pool, seed=3)
            controls = np.random.default_rng(4).uniform(-1, 1, (NBATCH, NSTEP, model.nu))
            got = pool.step(state, controls, NSTEP)
            assert got.tobytes() == local.step(state, controls, NSTEP).tobytes()
        # the environments differ, each as its own model stepped serially
        for env in range(NBATCH):
            alone = pool.parameters.model_of(env)
            want = serial(alone, state[env:env + 1], controls[env:env + 1])
            assert got[env].tobytes() == want[0].tobytes()
        # a reset that keeps the draws
        kept = pool.parameters.draws.copy()
        pool.reset(state, ids=[0], randomize=False)
        np.testing.assert_array_equal(pool.parameters.draws, kept)


def test_queries_match_batch_pool_on_a_height_field():
    model = load(BARKOUR)
    points = np.array([[0.2, 0.1, -0.3], [-0.2, -0.1, -0.3], [0.0, 0.0, 0.0]])
    with RayPool(model, NBATCH, nworkers=2, keyframe=0) as pool, \
            BatchPool(model, NBATCH, nthread=2, keyframe=0) as local:
        state = moving_states(pool)
        state[:, 1:3] += np.random.default_rng(5).uniform(-3, 3, (NBATCH, 2))  # over different terrain
        ctrl = np.random.default_rng(6).uniform(-0.5, 0.5, (NBATCH, model.nu))
        pairs = [
            (pool.forward(state, ctrl), local.forward(state, ctrl)),
            (pool.site_jacobians(state, ["imu_frame", 1], rotation=True),
             local.site_jacobians(state, ["imu_frame", 1], rotation=True)),
            (*pool.heightfield(state, "torso", points), *local.heightfield(state, "torso", points)),
            (*pool.body_poses(state), *local.body_poses(state)),
        ]
        for pair in pairs:
            half = len(pair) // 2
            for got, want in zip(pair[:half], pair[half:], strict=True):
                assert got.shape == want.shape and got.tobytes() == want.tobytes()
        assert np.isfinite(pairs[2][0]).all()


def test_images_are_each_actors_mujoco_renderer_images():
    from batch_models import BOXES, KINDS, reference_images
    model = mujoco.MjModel.from_xml_string(BOXES)
    with RayPool(model, NBATCH, nworkers=2) as pool:
        state = moving_states(pool)
        state = pool.step(state, nstep=NSTEP)
        got = pool.render(state, ["front"], kinds=KINDS)["front"]
    assert got["rgb"].shape == (NBATCH, 64, 96, 3)
    for part in (slice(0, 2), slice(2, NBATCH)):  # each actor draws its own environments
        want = reference_images(model, state[part], "front", 96, 64)
        for kind in KINDS:
            assert np.array_equal(got[kind][part], want[kind]), kind


def error_of(call):
    with pytest.raises(BatchError) as caught:
        call()
    return str(caught.value)


def test_bad_calls_are_batch_pools_errors_and_the_pool_stays_usable():
    model = load(CARTPOLE)
    policy = policy_of(model)
    with RayPool(model, NBATCH, nworkers=2) as pool, BatchPool(model, NBATCH, nthread=0) as local:
        state = pool.initial_states()
        calls = [
            lambda p: p.step(state[:3]),
            lambda p: p.step(state.astype(np.float32)),
            lambda p: p.step(state, np.zeros((NBATCH, 2, 7)), 2),
            lambda p: p.step(state, np.full(model.nu, np.nan)),
            lambda p: p.step(state, nstep=0),
            lambda p: p.step(state, lambda k, s: np.zeros((NBATCH, 3)), 3),
            lambda p: p.reset(state, ids=[NBATCH]),
            lambda p: p.reset(state, ids=[1, 1]),
            lambda p: p.reset(state, to=np.zeros(3)),
            lambda p: p.reset(state, keyframe="nope"),
            lambda p: p.forward(state, np.zeros(4)),
            lambda p: p.site_jacobians(state, ["nope"]),
            lambda p: p.heightfield(state, "pole_1", [[0, 0, 0]]),
            lambda p: p.body_poses(np.zeros((NBATCH, 2))),
        ]
        for call in calls:
            assert error_of(lambda call=call: call(pool)) == error_of(lambda call=call: call(local))
        # a policy that fails midway leaves no actor waiting for it
        def failing(step, states):
            if step == 2:
                raise RuntimeError("policy failed")
            return np.zeros((NBATCH, model.nu))
        with pytest.raises(RuntimeError, match="policy failed"):
            pool.step(state, failing, 4)
        assert pool.step(state, policy, 3).tobytes() == local.step(state, policy, 3).tobytes()
    with pytest.raises(BatchError, match="nworkers must be a positive integer"):
        RayPool(model, NBATCH, nworkers=0)
    with pytest.raises(BatchError, match="the Ray cluster has 2"):
        RayPool(model, NBATCH, nworkers=3)


def test_close_leaves_no_actor():
    model = load(CARTPOLE)
    pool = RayPool(model, 4, nworkers=2)
    workers = list(pool._workers)
    assert ray.available_resources().get("CPU", 0) == 0  # the two actors hold the two CPUs
    pool.close()
    deadline = time.monotonic() + 30
    for worker in workers:  # ray.kill is asynchronous: a call right after it may still be answered
        with pytest.raises(ray.exceptions.RayActorError):
            while time.monotonic() < deadline:
                ray.get(worker.ready.remote(), timeout=30)
                time.sleep(0.05)
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ray.available_resources().get("CPU", 0) == 2
    assert ray.is_initialized()  # the pool did not start Ray: it leaves it running
    with pytest.raises(BatchError, match="the pool is closed"):
        pool.step(pool.initial_states())


def test_open_pool_with_the_ray_backend():
    with open_pool(CARTPOLE, 4, backend="ray", nworkers=2) as pool, \
            BatchPool(load(CARTPOLE), 4, nthread=0) as local:
        assert isinstance(pool, RayPool)
        state = moving_states(pool)
        assert pool.step(state, nstep=3).tobytes() == local.step(state, nstep=3).tobytes()


def test_without_ray_the_package_imports_and_ray_pool_says_how_to_get_it():
    script = textwrap.dedent(f"""
        import sys
        sys.modules["ray"] = None  # not installed
        sys.path.insert(0, {os.path.dirname(os.path.dirname(__file__))!r})
        import addon_loader, mujoco
        from mjblend.batch import open_pool
        from mjblend.batch.ray_pool import RayPool
        try:
            RayPool(mujoco.MjModel.from_xml_path({CARTPOLE!r}), 2)
        except ImportError as error:
            print(error)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "Ray is not installed: pip install ray", out.stderr

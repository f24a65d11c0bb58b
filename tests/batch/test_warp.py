"""WarpPool (BatchPool(..., backend="warp")) on real MuJoCo Warp: Warp's CPU device
here, the GPU where Warp sees one. Results are float32: they agree with serial
float64 mj_step within warp_pool.TOLERANCE (measured here). Kernel builds are
cached by Warp under build/warp-cache (WARP_CACHE_PATH, unless already set): the
first run of this file builds them (minutes on one core), later runs load them."""

import os
import subprocess
import sys

import mujoco
import numpy as np
import pytest
from batch_models import CARTPOLE, HUMANOID, SPEC, model_at, moving_states, serial

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("WARP_CACHE_PATH", os.path.join(ROOT, "build", "warp-cache"))

import warp  # noqa: E402  (installed in every test environment: requirements-warp.txt)

warp.config.quiet = True

from mjblend.batch import BatchError, BatchPool, Entry, Randomization, open_pool  # noqa: E402
from mjblend.batch.warp_pool import TOLERANCE, WarpPool  # noqa: E402

pytestmark = pytest.mark.corpus
COUNT = 4

# a small model with what the corpus models lack: sites, sensors, a height field
PROBE = """
<mujoco>
  <asset><hfield name="terrain" nrow="3" ncol="4" size="1 1 0.2 0.1"
                 elevation="0 0.5 1 0.5  0.2 0.4 0.6 0.8  1 0 1 0"/></asset>
  <worldbody>
    <geom name="ground" type="hfield" hfield="terrain" contype="0" conaffinity="0"/>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" contype="0" conaffinity="0"/>
      <body name="forearm" pos="0.5 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" contype="0" conaffinity="0"/>
        <site name="tip" pos="0.4 0 0"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="shoulder"/><motor joint="elbow"/></actuator>
  <sensor><jointpos joint="elbow"/><framepos objtype="site" objname="tip"/>
          <jointvel joint="shoulder"/></sensor>
</mujoco>
"""


@pytest.fixture(scope="module")
def humanoid():
    model = model_at(HUMANOID)
    with BatchPool(model, COUNT, backend="warp") as pool:
        yield model, pool


@pytest.fixture(scope="module")
def probe():
    model = mujoco.MjModel.from_xml_string(PROBE)
    with BatchPool(model, COUNT, backend="warp") as pool:
        yield model, pool


def error(got, want):
    """Max abs difference of qpos and qvel (the time column is exact)."""
    assert np.array_equal(got[:, 0], want[:, 0])
    return np.abs(got[:, 1:] - want[:, 1:]).max()


def test_a_warp_pool_is_batch_pools_api():
    pool = BatchPool(model_at(CARTPOLE), 2, backend="warp")
    assert isinstance(pool, WarpPool)
    for name in ("nbatch", "nstate", "nu", "nv", "nsensordata", "model", "initial_state", "parameters"):
        assert hasattr(pool, name)
    for name in ("reset", "initial_states", "step", "forward", "site_jacobians", "heightfield",
                 "body_poses", "close", "__enter__", "__exit__"):
        assert callable(getattr(pool, name))
    assert pool.device.is_cuda == (warp.get_cuda_device_count() > 0)
    pool.close()
    with pytest.raises(BatchError, match="closed"):
        pool.step(pool.initial_states())
    with pytest.raises(BatchError, match="backend must be 'cpu' or 'warp'"):
        BatchPool(model_at(CARTPOLE), 2, backend="tpu")
    with open_pool(CARTPOLE, 2, backend="warp", device="cpu") as pool:
        assert isinstance(pool, WarpPool) and pool.device.is_cpu


@pytest.mark.parametrize("name, nstep", [("cartpole", 100), ("humanoid", 20)])
def test_steps_agree_with_serial_mj_step(name, nstep, humanoid):
    model, pool = humanoid if name == "humanoid" else (model_at(CARTPOLE), None)
    pool = pool or BatchPool(model, COUNT, backend="warp")
    states = moving_states(model, COUNT)
    controls = np.random.default_rng(1).uniform(-1, 1, (COUNT, nstep, model.nu))
    want = serial(model, states, controls, nstep)[0]
    assert error(pool.step(states, controls, nstep=nstep), want) < TOLERANCE[name]
    held = serial(model, states, controls[:, 0], nstep)[0]
    assert error(pool.step(states, controls[:, 0], nstep=nstep), held) < TOLERANCE[name]

    def policy(step, rows):
        return np.tanh(rows[:, 1:1 + model.nu])
    want = serial(model, states, None, 5, policy)[0]
    assert error(pool.step(states, policy, nstep=5), want) < TOLERANCE[name]
    assert np.array_equal(states, moving_states(model, COUNT))  # the caller's states are not written


def test_forward_jacobians_poses_and_terrain_agree_with_the_cpu_pool(probe):
    model, pool = probe
    states = moving_states(model, COUNT)
    ctrl = np.random.default_rng(2).uniform(-1, 1, (COUNT, model.nu))
    with BatchPool(model, COUNT, nthread=1) as cpu:
        final, sensed = pool.step(states, ctrl, nstep=10, sensors=True)
        want, want_sensed = cpu.step(states, ctrl, nstep=10, sensors=True)
        assert error(final, want) < 1e-4 and np.abs(sensed - want_sensed).max() < 1e-4
        assert np.abs(pool.forward(states, ctrl) - cpu.forward(states, ctrl)).max() < 1e-5
        assert np.abs(pool.site_jacobians(states, ["tip"], rotation=True)
                      - cpu.site_jacobians(states, ["tip"], rotation=True)).max() < 1e-5
        for got, want in zip(pool.body_poses(states), cpu.body_poses(states), strict=True):
            assert got.dtype == np.float64 and np.abs(got - want).max() < 1e-5
        points = [[0.1, 0, -0.3], [0.4, 0, -0.5], [9, 9, 9]]
        for got, want in zip(pool.heightfield(states, "forearm", points),
                             cpu.heightfield(states, "forearm", points), strict=True):
            assert np.array_equal(np.isnan(got), np.isnan(want))
            assert np.nanmax(np.abs(got - want)) < 1e-5


def test_reset_is_batch_pools(humanoid):
    model, pool = humanoid
    states = moving_states(model, COUNT)
    pool.reset(states, [1, 3])
    assert np.array_equal(states[[1, 3]], np.tile(pool.initial_state, (2, 1)))
    assert np.array_equal(pool.reset(), pool.initial_states())


def test_a_randomized_pool_runs_each_environments_values(humanoid):
    """Friction and mass draws land in each world's model fields (mass with the
    subtree masses and inverse weights mujoco_warp's set_const derives), and each
    world steps like serial mj_step on its own drawn model."""
    model = humanoid[0]
    randomization = Randomization([Entry("body", "mass", 0.5, 2.0, name="torso"),
                                   Entry("geom", "friction", 0.4, 1.2, name="floor", index=0,
                                         mode="absolute")], seed=3)
    torso = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso")
    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    with BatchPool(model, COUNT, backend="warp", randomization=randomization) as pool:
        with BatchPool(model, COUNT, nthread=1, randomization=randomization) as cpu:
            assert np.array_equal(pool.parameters.draws, cpu.parameters.draws)  # the same draws
        references = [pool.parameters.model_of(env) for env in range(COUNT)]
        device = pool._model
        for field, index in (("body_mass", torso), ("body_subtreemass", 0), ("body_invweight0", torso)):
            want = np.array([getattr(r, field)[index] for r in references])
            assert np.allclose(getattr(device, field).numpy()[:, index], want, rtol=1e-5)
        friction = device.geom_friction.numpy()[:, floor, 0]
        assert np.allclose(friction, [r.geom_friction[floor, 0] for r in references])
        assert len(np.unique(friction)) == COUNT
        states = moving_states(model, COUNT)
        controls = np.random.default_rng(4).uniform(-1, 1, (COUNT, model.nu))
        want = serial(references, states, controls, 20)[0]
        assert error(pool.step(states, controls, nstep=20), want) < TOLERANCE["humanoid"]
        before = pool.parameters.draws.copy()
        pool.reset(states, [2])
        changed = np.flatnonzero((pool.parameters.draws != before).any(axis=1))
        assert changed.tolist() == [2]
        assert device.body_mass.numpy()[2, torso] == np.float32(pool.parameters.model_of(2).body_mass[torso])


@pytest.mark.parametrize("call", [
    lambda p, s, m: p.step(s[:, :-1]),
    lambda p, s, m: p.step(s.astype(np.float32)),
    lambda p, s, m: p.step(s, np.zeros((4, m.nu + 1))),
    lambda p, s, m: p.step(s, np.zeros((4, 3, m.nu)), nstep=2),
    lambda p, s, m: p.step(s, np.full(m.nu, np.nan)),
    lambda p, s, m: p.step(s, None, nstep=0),
    lambda p, s, m: p.step(s, lambda k, x: np.zeros(3)),
    lambda p, s, m: p.forward(s, np.zeros(m.nu + 2)),
    lambda p, s, m: p.reset(s, [4]),
    lambda p, s, m: p.reset(s, [0], to=np.zeros(5)),
    lambda p, s, m: p.reset(s, [0], keyframe="nope"),
    lambda p, s, m: p.site_jacobians(s, ["nope"]),
    lambda p, s, m: p.heightfield(s, "torso", np.zeros((2, 3))),
    lambda p, s, m: p.body_poses(s[:2]),
])
def test_wrong_calls_are_the_cpu_pools_errors(call, humanoid):
    model, pool = humanoid
    states = pool.reset()
    with BatchPool(model, COUNT, nthread=1) as cpu, pytest.raises(BatchError) as want:
        call(cpu, states, model)
    with pytest.raises(BatchError) as got:
        call(pool, states, model)
    assert str(got.value) == str(want.value)


def test_what_mujoco_warp_cannot_run_is_refused_by_name():
    spec = mujoco.MjSpec.from_file(CARTPOLE)
    spec.option.solver = mujoco.mjtSolver.mjSOL_PGS
    with pytest.raises(BatchError, match="MuJoCo Warp cannot run this model: mjSOL_PGS is unsupported"):
        BatchPool(spec.compile(), 2, backend="warp")
    with pytest.raises(BatchError, match="nbatch must be a positive integer"):
        BatchPool(model_at(CARTPOLE), 0, backend="warp")
    with pytest.raises(BatchError, match="device 'cuda:7'"):
        BatchPool(model_at(CARTPOLE), 2, backend="warp", device="cuda:7")


def test_without_mujoco_warp_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco_warp", None)  # import fails as if not installed
    with pytest.raises(BatchError) as raised:
        BatchPool(model_at(CARTPOLE), 2, backend="warp")
    assert "optional" in str(raised.value) and "pip install mujoco-warp" in str(raised.value)


def test_importing_the_batch_package_does_not_import_warp():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import addon_loader, importlib; "
            "importlib.import_module(addon_loader.ADDON + '.batch'); "
            "assert not {'warp', 'mujoco_warp'} & set(sys.modules), 'warp imported'")
    subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "tests")], check=True)


def test_state_layout_is_mujocos():
    """mjSTATE_FULLPHYSICS (time, qpos, qvel, act, history, plugin, plastic) goes to
    and from the worlds unchanged, apart from float32 rounding."""
    model = model_at(CARTPOLE)
    with BatchPool(model, 3, backend="warp") as pool:
        states = moving_states(model, 3)
        pool._load(states)
        back = pool._read(states[:, 0])
        assert np.array_equal(back[:, 0], states[:, 0])  # the host's float64 time
        assert np.array_equal(back[:, 1:], states[:, 1:].astype(np.float32).astype(np.float64))
        assert pool.nstate == mujoco.mj_stateSize(model, SPEC)


def test_warp_is_never_bundled_in_the_extension():
    """The zips bundle only tools/build_extension.py's BUNDLED wheels (check_zip
    refuses any other); MuJoCo Warp is an optional install (requirements-warp.txt)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("build_extension",
                                                  os.path.join(ROOT, "tools", "build_extension.py"))
    build_extension = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_extension)
    assert {"mujoco-warp", "warp-lang"} <= set(build_extension.NEVER_BUNDLED)
    assert not {"mujoco-warp", "warp-lang"} & set(build_extension.BUNDLED)
    pins = open(os.path.join(ROOT, "requirements-warp.txt")).read()
    assert "mujoco-warp==4.0.0" in pins and "warp-lang==1.19.0" in pins
    assert "mujoco-warp" not in open(os.path.join(ROOT, "requirements-dev.txt")).read()


def test_dropped_contacts_warn_and_an_iteration_limit_does_not():
    """A world that overflows its contact buffer lost contacts: the call says so
    once (mujoco_warp's own per-kernel prints are off). A solver stopping at its
    iteration limit dropped nothing, as CPU MuJoCo, which says nothing either."""
    import warnings

    model = model_at(HUMANOID)
    states = moving_states(model, 2)
    with BatchPool(model, 2, backend="warp", nconmax=1) as pool:
        with pytest.warns(RuntimeWarning, match="overflowed.*nconmax"):
            pool.step(states, nstep=5)
    limited = model_at(HUMANOID)
    limited.opt.iterations = 1
    with BatchPool(limited, 2, backend="warp") as pool, warnings.catch_warnings():
        warnings.simplefilter("error")
        pool.step(states, nstep=5)

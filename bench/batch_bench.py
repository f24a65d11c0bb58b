"""MJBlend's BatchPool side by side with MuJoCo's and MuJoCoUni's batched runtimes, in one run.

    .venv/bin/python bench/batch_bench.py [--quick] [--nbatch 32 256 1024 4096] [--nstep 10]
        [--repeat 5] [--nthread N] [--backends cpu warp] [--only step reset ...]
    make mujoco-uni-env      # once: MuJoCoUni's environment (else its columns are skipped)

Engines, each on the MuJoCo it runs on (printed first):

- pool: `mjblend.batch.BatchPool` (MuJoCo 4's `mujoco.batch.Batch` threads),
  and `BatchPool(..., backend="warp")` (MuJoCo Warp on Warp's CPU device:
  a test bed here; bench/warp_bench.py measures it on a GPU) where that
  works, else a line says why not (`--backends cpu` leaves it out);
- Batch: `mujoco.batch.Batch` used directly, as a user would (rows written,
  one call, rows read);
- rollout: `mujoco.rollout.Rollout(nthread).rollout(...)` (full trajectories);
- uni: MuJoCoUni's `BatchEnvPool` (mujoco-uni-runtime 0.5.0) on MuJoCo 3.11,
  in .venv-mujoco-uni through bench/mujoco_uni_worker.py, which times its
  calls itself; `rollout 3.11` is mujoco.rollout in that process, to tell
  MuJoCo's own version change apart from the runtimes'.

Measurements (MuJoCoUni's benchmark's five, then two of MJBlend's targets),
one function each:

1. step throughput (steps/s = nbatch x nstep / s), random per-step controls,
   humanoid, Barkour (quadruped on a plane), Franka, Allegro, nbatch 32-4096
   (targets: pool >= 1.0x rollout and >= 1.0x Batch);
2. one model for all environments against a model per environment: a pool
   with a mass and a damping randomized (per-simulation fields) and MuJoCoUni
   given nbatch model copies (Barkour, Allegro);
3. full and partial reset of 1024 humanoids, plain and with the torso mass
   randomized: the pool against Batch directly (expand('body_mass'), write,
   set_const(ids), reset(ids), with and without reset's mj_forward) and
   MuJoCoUni's reset(ids, states, randomization={'body_mass': ...}) (target:
   pool <= 1.1x Batch, faster than MuJoCoUni);
4. site Jacobians (Franka's end_effector): Jacobians per second;
5. height-field sampling (Barkour on its height field, a 4x4 grid of points
   in the torso's frame): samples per environment per second;
6. a per-step policy (ctrl = tanh(state @ W), called before every step with
   every state) at 1024 humanoids against a bare Batch loop (target: <= 10%
   overhead) and MuJoCoUni's control_callback; and held controls (one row per
   environment for all steps) against Batch.step.

Every figure is the median of --repeat runs, the engines interleaved (a noisy
second hits them all alike); ratios are medians of the per-repeat ratios
against a baseline measured in the same run. This machine has about one core
of real throughput: the thread counts are what it measures, not what 16
cores give (docs/developing.md argues that).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# One BLAS thread here and in the MuJoCoUni worker (before numpy loads): a policy's small
# matrix product gains nothing from more, and idle OpenBLAS threads spin for a while
# after each product, taking the cores the next engine is being timed on.
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
import mujoco  # noqa: E402
import mujoco.batch  # noqa: E402
import mujoco.rollout  # noqa: E402
import numpy as np  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(BENCH), "tests"))
sys.path.insert(0, BENCH)
import addon_loader  # noqa: E402,F401  (the add-on as `mjblend`)
from mujoco_uni_worker import load_model, policy_weights  # noqa: E402

from mjblend.batch import BatchPool, Entry, Randomization  # noqa: E402
from mjblend.batch.pool import state_columns  # noqa: E402

SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS
UNI_PYTHON = os.path.join(os.path.dirname(BENCH), ".venv-mujoco-uni", "bin", "python")
STEP_MODELS = ("humanoid", "barkour", "franka", "allegro")
MEASUREMENTS = ("step", "many", "reset", "jacobian", "hfield", "policy")


# -- timing ---------------------------------------------------------------------------------------
def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def interleaved(ways: dict, repeat: int, work: int = 1 << 20) -> dict[str, list[float]]:
    """Seconds per call of each way, `repeat` times, interleaved, after one warm-up call
    each; calls of little `work` (environments x steps) are repeated more, up to 10x. A
    way is a function returning its own seconds (MuJoCoUni's are measured in its process).
    A pool of another backend ("pool warp") whose warm-up call fails is left out, saying why."""
    for key, way in list(ways.items()):
        try:
            way()
        except Exception as error:
            if not key.startswith("pool "):  # only another backend's pool may lack a call
                raise
            print(f"  {key} skipped here: {type(error).__name__}: {error}")
            del ways[key]
    times = {key: [] for key in ways}
    for _ in range(repeat * max(1, min(10, 2048 // max(1, work)))):
        for key, way in ways.items():
            times[key].append(way())
    return times


def local(run):
    return lambda: timed(run)


def paired(times, a, b) -> float:
    """How many times faster a is than b: the median of the per-repeat ratios."""
    return statistics.median(tb / ta for ta, tb in zip(times[a], times[b], strict=True))


def median(times, key) -> float:
    return statistics.median(times[key])


def named(model, kind, index) -> str | None:
    return mujoco.mj_id2name(model, getattr(mujoco.mjtObj, f"mjOBJ_{kind}"), index)


# -- states, arrays for the worker ----------------------------------------------------------------
def states_of(model, count, seed=0):
    """Distinct moving states: the first keyframe (or qpos0), random velocities."""
    rng = np.random.default_rng(seed)
    data = mujoco.MjData(model)
    out = np.empty((count, mujoco.mj_stateSize(model, SPEC)))
    for row in range(count):
        mujoco.mj_resetData(model, data)
        if model.nkey:
            mujoco.mj_resetDataKeyframe(model, data, 0)
        data.qvel[:] = rng.normal(0, 0.2, model.nv)
        mujoco.mj_getState(model, data, out[row], SPEC)
    return out


class Arrays:
    """Arrays saved once as .npy files for the MuJoCoUni worker, by name."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="batch_bench_")
        self.count = 0

    def path(self, array) -> str:
        self.count += 1
        path = os.path.join(self.folder, f"{self.count}.npy")
        np.save(path, np.ascontiguousarray(array))
        return path

    def close(self):
        shutil.rmtree(self.folder, ignore_errors=True)


# -- MuJoCoUni in its own process -----------------------------------------------------------------
class Uni:
    """The MuJoCoUni worker (bench/mujoco_uni_worker.py under .venv-mujoco-uni), or the
    reason it is not there (`skipped`)."""

    def __init__(self, python: str, enabled: bool):
        self.process, self.skipped, self.versions, self.pools = None, None, {}, 0
        if not enabled:
            self.skipped = "not asked for (--no-mujoco-uni)"
        elif not os.path.exists(python):
            self.skipped = f"{os.path.relpath(python)} not found: run make mujoco-uni-env"
        else:
            self.process = subprocess.Popen([python, os.path.join(BENCH, "mujoco_uni_worker.py")],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                self.versions = self.ask(op="hello")
            except RuntimeError as error:
                self.close()
                self.skipped = f"its worker failed: {error}"

    def ask(self, **request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the MuJoCoUni worker exited")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["ok"]

    def pool(self, model, nbatch, nthread, per_env_models=False) -> str | None:
        """A BatchEnvPool in the worker: its key (None when MuJoCoUni is skipped)."""
        if self.process is None:
            return None
        self.pools += 1
        key = f"pool{self.pools}"
        self.ask(op="pool", key=key, model=model, nbatch=nbatch, nthread=nthread,
                 per_env_models=per_env_models)
        return key

    def way(self, key, call, **request):
        """A timed call of pool `key` (seconds measured in the worker)."""
        return lambda: self.ask(op="time", key=key, call=call, **request)["seconds"]

    def close_pool(self, key):
        if key is not None:
            self.ask(op="close", key=key)

    def close(self):
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait(timeout=30)
            self.process = None


# -- MJBlend's pools: threads, and Warp when asked and available ---------------------------------
class Backends:
    """The MJBlend pools to measure: 'cpu' (threads) always works; 'warp' is measured
    where BatchPool(model, n, backend="warp") can be made, and said skipped otherwise."""

    def __init__(self, names, nthread):
        self.names, self.nthread, self.skipped = list(names), nthread, {}

    def pools(self, model, nbatch, **options) -> dict[str, BatchPool]:
        pools = {}
        for name in self.names:
            if name in self.skipped:
                continue
            try:
                if name == "cpu":
                    pools["pool"] = BatchPool(model, nbatch, nthread=self.nthread, **options)
                else:
                    pools[f"pool {name}"] = BatchPool(model, nbatch, backend=name, **options)
            except Exception as error:  # a backend this checkout or machine lacks: said once, skipped
                self.skipped[name] = f"{type(error).__name__}: {error}"
                print(f"  pool backend {name!r} skipped: {self.skipped[name]}")
        return pools


def close_all(*pools):
    for pool in pools:
        pool.close()


def table(header: list[str], widths: list[int]):
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True)))

    def row(cells):
        print(" ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))
    return row


def rate(value) -> str:
    return f"{value:,.0f}"


def ratio(value) -> str:
    return f"{value:.2f}x"


# -- 1. step throughput ----------------------------------------------------------------------------
def step_times(name, model, nbatch, nstep, backends, uni, arrays, repeat) -> dict[str, list[float]]:
    """Seconds per call of each engine at one nbatch (the results checked equal first:
    pool, Batch and rollout bit for bit)."""
    states = states_of(model, nbatch)
    controls = np.random.default_rng(1).uniform(-1, 1, (nbatch, nstep, model.nu))
    physics = state_columns(model, SPEC)
    fresh = np.empty(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION))
    mujoco.mj_getState(model, mujoco.MjData(model), fresh, mujoco.mjtState.mjSTATE_INTEGRATION)
    pools = backends.pools(model, nbatch)
    batch = mujoco.batch.Batch(model, nbatch, nthread=backends.nthread)
    rows = batch.state
    rollout = mujoco.rollout.Rollout(nthread=backends.nthread if backends.nthread > 1 else 0)
    datas = [mujoco.MjData(model) for _ in range(max(1, backends.nthread))]

    def direct():  # mujoco.batch as a user calls it: rows in, one rollout, final rows out
        rows[:] = fresh
        rows[:, physics] = states
        batch.rollout(nstep, controls, record=())
        return rows[:, physics].copy()
    first = pools["pool"].step(states, controls, nstep=nstep)
    assert np.array_equal(first, direct())
    assert np.array_equal(first[0], rollout.rollout(model, datas, states, controls)[0][0, -1])
    ways = {key: local(lambda pool=pool: pool.step(states, controls, nstep=nstep))
            for key, pool in pools.items()}
    ways["Batch"] = local(direct)
    ways["rollout"] = local(lambda: rollout.rollout(model, datas, states, controls))
    key = uni.pool(name, nbatch, backends.nthread)
    if key:
        state_path, control_path = arrays.path(states), arrays.path(controls)
        ways["uni"] = uni.way(key, "step", states=state_path, nstep=nstep, control=control_path)
        ways["rollout 3.11"] = uni.way(key, "rollout", states=state_path, control=control_path)
    try:
        return interleaved(ways, repeat, nbatch * nstep)
    finally:
        close_all(*pools.values())
        rollout.close()
        uni.close_pool(key)


def step_throughput(name, model, nbatches, nstep, backends, uni, arrays, repeat) -> list[tuple]:
    """Steps per second with random per-step controls: MJBlend's pool(s), Batch.rollout
    directly, mujoco.rollout, MuJoCoUni's step (and mujoco.rollout on its MuJoCo)."""
    print(f"\n-- {name}: nq {model.nq}, nv {model.nv}, nu {model.nu}, nstep {nstep}")
    row, targets = None, []
    for nbatch in nbatches:
        times = step_times(name, model, nbatch, nstep, backends, uni, arrays, repeat)
        has_uni = "uni" in times
        if row is None:
            columns = ["nbatch", *times, "pool/Batch", "pool/rollout"]
            columns += ["pool/uni", "uni/r3.11"] if has_uni else []
            row = table(columns, [7] + [12] * (len(columns) - 1))
        cells = [nbatch] + [rate(nbatch * nstep / median(times, k)) for k in times]
        ratios = [paired(times, "pool", "Batch"), paired(times, "pool", "rollout")]
        targets.append((name, nbatch, *ratios))
        if has_uni:
            ratios += [paired(times, "pool", "uni"), paired(times, "uni", "rollout 3.11")]
        row(cells + [ratio(r) for r in ratios])
    return targets


# -- 2. one model against a model per environment --------------------------------------------------
def one_vs_many_models(name, model, nbatch, nstep, backends, uni, arrays, repeat):
    """A pool of one model against one with every environment its own (a body's mass
    and a joint's damping randomized: per-simulation fields); MuJoCoUni given one model
    against nbatch copies."""
    states = states_of(model, nbatch)
    controls = np.random.default_rng(1).uniform(-1, 1, (nbatch, nstep, model.nu))
    body = next(b for b in range(1, model.nbody) if model.body_mass[b] > 0 and named(model, "BODY", b))
    joint = next(j for j in range(model.njnt) if named(model, "JOINT", j))
    randomization = Randomization([Entry("body", "mass", 0.8, 1.2, name=named(model, "BODY", body)),
                                   Entry("joint", "damping", 0.5, 1.5, name=named(model, "JOINT", joint))],
                                  seed=0)
    one = BatchPool(model, nbatch, nthread=backends.nthread)
    many = BatchPool(model, nbatch, nthread=backends.nthread, randomization=randomization)
    ways = {"pool one": local(lambda: one.step(states, controls, nstep=nstep)),
            "pool per-env": local(lambda: many.step(states, controls, nstep=nstep))}
    keys = [uni.pool(name, nbatch, backends.nthread), uni.pool(name, nbatch, backends.nthread, True)]
    if keys[0]:
        request = {"states": arrays.path(states), "nstep": nstep, "control": arrays.path(controls)}
        ways["uni one"] = uni.way(keys[0], "step", **request)
        ways["uni per-env"] = uni.way(keys[1], "step", **request)
    times = interleaved(ways, repeat)
    cells = [name, nbatch] + [rate(nbatch * nstep / median(times, k)) for k in ways]
    cells.append(ratio(paired(times, "pool per-env", "pool one")))
    if keys[0]:
        cells += [ratio(paired(times, "uni per-env", "uni one")),
                  ratio(paired(times, "pool per-env", "uni per-env"))]
    close_all(one, many)
    for key in keys:
        uni.close_pool(key)
    return cells, list(ways)


# -- 3. resets -------------------------------------------------------------------------------------
def resets(model, nbatch, fractions, backends, uni, arrays, repeat) -> list[tuple]:
    """Full and partial resets, plain and with the torso's mass drawn per environment."""
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso")
    nominal = model.body_mass[body]
    mass = Randomization([Entry("body", "mass", 0.8, 1.2, name="torso")], seed=0)
    plain_pool = BatchPool(model, nbatch, nthread=backends.nthread)
    mass_pool = BatchPool(model, nbatch, nthread=backends.nthread, randomization=mass)
    batch = mujoco.batch.Batch(model, nbatch, nthread=backends.nthread)
    masses = batch.expand("body_mass")
    rng = np.random.default_rng(0)
    state = states_of(model, nbatch)
    initial = plain_pool.initial_states()
    key = uni.pool("humanoid", nbatch, backends.nthread)
    targets, row = [], None
    for randomized in (False, True):
        pool = mass_pool if randomized else plain_pool
        for fraction in fractions:
            ids = np.sort(np.random.default_rng(3).choice(nbatch, max(1, round(nbatch * fraction)),
                                                          replace=False))

            def direct(stage, ids=ids, randomized=randomized):
                if randomized:
                    masses[ids, body] = nominal * rng.uniform(0.8, 1.2, len(ids))
                    batch.set_const(ids)
                batch.reset(ids, stage=stage)
            ways = {"pool": local(lambda pool=pool, ids=ids: pool.reset(state, ids)),
                    "Batch": local(lambda direct=direct: direct(mujoco.mjtStage.mjSTAGE_ACC)),
                    "Batch no fwd": local(lambda direct=direct: direct(mujoco.mjtStage.mjSTAGE_NONE))}
            if key:
                ways["uni"] = uni.way(key, "reset", ids=arrays.path(ids),
                                      rows=arrays.path(initial[:len(ids)]),
                                      mass_body=int(body) if randomized else None)
            if row is None:
                columns = ["reset", "ids", *(f"{k} ms" for k in ways), "pool/Batch", "pool/no fwd"]
                columns += ["pool/uni"] if key else []
                row = table(columns, [6, 6] + [13] * len(ways) + [12] * (len(columns) - 2 - len(ways)))
            times = interleaved(ways, repeat)
            cells = ["mass" if randomized else "plain", len(ids)]
            cells += [f"{median(times, k) * 1e3:.2f}" for k in ways]
            # "how many times the time of": pool / baseline (lower is better)
            over = [1 / paired(times, "pool", "Batch"), 1 / paired(times, "pool", "Batch no fwd")]
            if key:
                over.append(1 / paired(times, "pool", "uni"))
            row(cells + [ratio(o) for o in over])
            targets.append(("mass" if randomized else "plain", len(ids), *over))
    close_all(plain_pool, mass_pool)
    uni.close_pool(key)
    return targets


# -- 4. site Jacobians ------------------------------------------------------------------------------
def site_jacobians(model, nbatches, backends, uni, arrays, repeat):
    """Translational Jacobians of Franka's end_effector site at nbatch states."""
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "end_effector")
    body = int(model.site_bodyid[site])
    physics = state_columns(model, SPEC)
    row = None
    for nbatch in nbatches:
        states = states_of(model, nbatch)
        pool = BatchPool(model, nbatch, nthread=backends.nthread)
        batch = mujoco.batch.Batch(model, nbatch, nthread=backends.nthread)
        site_xpos = batch.bind("site_xpos")

        def direct(batch=batch, site_xpos=site_xpos, states=states):
            batch.state[:, physics] = states
            batch.forward(stage=mujoco.mjtStage.mjSTAGE_POS)
            return batch.jac(body, site_xpos[:, site])[0]
        assert np.array_equal(pool.site_jacobians(states, [site])[:, 0], direct())
        ways = {"pool": local(lambda pool=pool, states=states: pool.site_jacobians(states, [site])),
                "Batch": local(direct)}
        key = uni.pool("franka", nbatch, backends.nthread)
        if key:
            ways["uni"] = uni.way(key, "jacobian", states=arrays.path(states), sites=[site])
        if row is None:
            columns = ["nbatch", *(f"{k} jac/s" for k in ways), "pool/Batch"] + (["pool/uni"] if key else [])
            row = table(columns, [7] + [13] * len(ways) + [11] * (len(columns) - 1 - len(ways)))
        times = interleaved(ways, repeat, nbatch)
        cells = [nbatch] + [rate(nbatch / median(times, k)) for k in ways]
        cells.append(ratio(paired(times, "pool", "Batch")))
        row(cells + ([ratio(paired(times, "pool", "uni"))] if key else []))
        pool.close()
        uni.close_pool(key)


# -- 5. height-field sampling -----------------------------------------------------------------------
def heightfield_sampling(model, nbatches, backends, uni, arrays, repeat):
    """Terrain heights under a 4x4 grid (-1..1 m) of points in the torso's frame (MuJoCoUni:
    alignment 'body', the points rotated with the body as MJBlend's are)."""
    geom = int(np.flatnonzero(model.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD)[0])
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso")
    grid = np.linspace(-1, 1, 4)
    offsets = np.array([[x, y] for x in grid for y in grid])
    row = None
    for nbatch in nbatches:
        states = states_of(model, nbatch)
        pool = BatchPool(model, nbatch, nthread=backends.nthread)
        ways = {"pool": local(lambda pool=pool, states=states: pool.heightfield(states, body, offsets))}
        key = uni.pool("barkour_hfield", nbatch, backends.nthread)
        if key:
            ways["uni"] = uni.way(key, "heightfield", states=arrays.path(states),
                                  offsets=arrays.path(offsets), geom=geom, body=int(body))
        if row is None:
            columns = ["nbatch", *(f"{k} env/s" for k in ways)] + (["pool/uni"] if key else [])
            row = table(columns, [7] + [13] * len(ways) + ([11] if key else []))
        times = interleaved(ways, repeat, nbatch)
        cells = [nbatch] + [rate(nbatch / median(times, k)) for k in ways]
        row(cells + ([ratio(paired(times, "pool", "uni"))] if key else []))
        pool.close()
        uni.close_pool(key)


# -- 6. per-step policy and held controls ------------------------------------------------------------
def policy_and_held(model, nbatch, nstep, backends, uni, arrays, repeat) -> dict:
    """A policy called before every step with every state, and held controls, at nbatch
    humanoids: the pool against a bare Batch loop / Batch.step, and MuJoCoUni."""
    weights = policy_weights(model)
    states = states_of(model, nbatch)
    held = np.random.default_rng(1).uniform(-1, 1, (nbatch, model.nu))
    physics, ctrl = state_columns(model, SPEC), state_columns(model, mujoco.mjtState.mjSTATE_CTRL)
    fresh = np.empty(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION))
    mujoco.mj_getState(model, mujoco.MjData(model), fresh, mujoco.mjtState.mjSTATE_INTEGRATION)
    pools = backends.pools(model, nbatch)
    batch = mujoco.batch.Batch(model, nbatch, nthread=backends.nthread)
    rows = batch.state

    def policy(step, state):
        return np.tanh(state @ weights)

    def bare_policy():  # the loop a user writes around mujoco.batch
        rows[:] = fresh
        rows[:, physics] = states
        for k in range(nstep):
            rows[:, ctrl] = policy(k, rows[:, physics])
            batch.step()
        return rows[:, physics].copy()

    def bare_held():
        rows[:] = fresh
        rows[:, physics] = states
        rows[:, ctrl] = held
        batch.step(nstep=nstep)
        return rows[:, physics].copy()
    assert np.array_equal(pools["pool"].step(states, policy, nstep=nstep), bare_policy())
    assert np.array_equal(pools["pool"].step(states, held, nstep=nstep), bare_held())
    key = uni.pool("humanoid", nbatch, backends.nthread)
    results = {}
    row = None
    for label, bare, control in (("policy", bare_policy, policy), ("held", bare_held, held)):
        ways = {k: local(lambda pool=pool, control=control: pool.step(states, control, nstep=nstep))
                for k, pool in pools.items()}
        ways["Batch"] = local(bare)
        if key:
            request = {"states": arrays.path(states), "nstep": nstep}
            ways["uni"] = (uni.way(key, "policy", **request) if label == "policy" else
                           uni.way(key, "step", control=arrays.path(held), **request))
        times = interleaved(ways, repeat)
        if row is None:
            columns = ["ctrl", *(f"{k} steps/s" for k in ways), "pool/Batch"] + (["pool/uni"] if key else [])
            row = table(columns, [7] + [15] * len(ways) + [11] * (len(columns) - 1 - len(ways)))
        results[label] = paired(times, "pool", "Batch")
        cells = [label] + [rate(nbatch * nstep / median(times, k)) for k in ways]
        row(cells + [ratio(results[label])] + ([ratio(paired(times, "pool", "uni"))] if key else []))
    close_all(*pools.values())
    uni.close_pool(key)
    return results


# -- the run ------------------------------------------------------------------------------------------
def versions(backends, uni):
    print(f"MJBlend BatchPool, mujoco.batch.Batch, mujoco.rollout: mujoco {mujoco.__version__}")
    if "warp" in backends.names:
        try:
            import mujoco_warp
            import warp

            warp.config.quiet = True  # no banner, no line per kernel loaded
            print(f"pool backend 'warp': mujoco_warp {getattr(mujoco_warp, '__version__', '?')}, "
                  f"warp {warp.__version__} (CPU device), on mujoco {mujoco.__version__}")
        except ImportError as error:
            backends.skipped["warp"] = f"mujoco_warp / warp not installed ({error})"
            print(f"pool backend 'warp' skipped: {backends.skipped['warp']}")
    if uni.skipped:
        print(f"MuJoCoUni skipped: {uni.skipped}")
    else:
        v = uni.versions
        print(f"MuJoCoUni BatchEnvPool: mujoco-uni-runtime {v['mujoco_uni']} on mujoco {v['mujoco']} "
              f"(Python {v['python']}, numpy {v['numpy']}; its own process); "
              f"'rollout 3.11': mujoco.rollout there")
    print(f"{os.cpu_count()} CPUs reported; {backends.nthread} thread(s) per engine")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and 2 repeats (about 2 minutes): a smoke run, noisy figures")
    parser.add_argument("--nbatch", type=int, nargs="+", help="step, Jacobian and height-field sizes "
                        "(default 32 256 1024 4096; --quick 32 256)")
    parser.add_argument("--nstep", type=int, help="steps per call (default 10; --quick 5)")
    parser.add_argument("--repeat", type=int, help="timed runs per figure (default 5; --quick 2)")
    parser.add_argument("--many-nbatch", type=int, help="measurement 2's size (default 1024; --quick 256)")
    parser.add_argument("--reset-nbatch", type=int, help="measurement 3's size (default 1024; --quick 256)")
    parser.add_argument("--reset-fractions", type=float, nargs="+", default=[0.1, 0.5, 1.0])
    parser.add_argument("--policy-nbatch", type=int, help="measurement 6's size (default 1024; --quick 256)")
    parser.add_argument("--nthread", type=int, default=os.cpu_count() or 1,
                        help="threads of every engine (default: the CPUs reported)")
    parser.add_argument("--backends", nargs="+", default=["cpu", "warp"], choices=["cpu", "warp"],
                        help="MJBlend pool backends (cpu: threads; warp: MuJoCo Warp on Warp's CPU)")
    parser.add_argument("--only", nargs="+", choices=MEASUREMENTS,
                        help="run only these measurements")
    parser.add_argument("--models", nargs="+", choices=STEP_MODELS, default=list(STEP_MODELS),
                        help="measurement 1's models")
    parser.add_argument("--mujoco-uni-python", default=UNI_PYTHON,
                        help="the Python of MuJoCoUni's environment (default: make mujoco-uni-env's)")
    parser.add_argument("--no-mujoco-uni", action="store_true", help="leave MuJoCoUni out")
    args = parser.parse_args(argv)
    quick = args.quick
    nbatches = args.nbatch or ([32, 256] if quick else [32, 256, 1024, 4096])
    nstep = args.nstep or (5 if quick else 10)
    repeat = args.repeat or (2 if quick else 5)
    small = 256 if quick else 1024
    only = set(args.only or MEASUREMENTS)
    if "cpu" not in args.backends:
        args.backends.insert(0, "cpu")  # the baseline every ratio uses

    started = time.perf_counter()
    backends = Backends(args.backends, args.nthread)
    uni = Uni(args.mujoco_uni_python, not args.no_mujoco_uni)
    arrays = Arrays()
    try:
        versions(backends, uni)
        models = {}

        def model(name):
            if name not in models:
                models[name] = load_model(name)
            return models[name]
        if "step" in only:
            print(f"\n== 1. step throughput (steps/s), random per-step controls, nstep {nstep}")
            targets = [t for name in args.models for t in step_throughput(
                name, model(name), nbatches, nstep, backends, uni, arrays, repeat)]
            for column, label in ((2, "pool/Batch"), (3, "pool/rollout")):
                worst = min(targets, key=lambda t, column=column: t[column])
                print(f"{label}: median {statistics.median(t[column] for t in targets):.2f}x, worst "
                      f"{worst[column]:.2f}x ({worst[0]}, nbatch {worst[1]}) (target >= 1.0x)")
        if "many" in only:
            nbatch = args.many_nbatch or small
            print(f"\n== 2. one model vs a model per environment (steps/s), nbatch {nbatch}, nstep {nstep}")
            row = None
            for name in ("barkour", "allegro"):
                cells, ways = one_vs_many_models(name, model(name), nbatch, nstep, backends, uni, arrays,
                                                 repeat)
                if row is None:
                    columns = ["model", "nbatch", *ways, "pool per/one"]
                    columns += ["uni per/one", "pool/uni per"] if len(ways) > 2 else []
                    row = table(columns, [8, 7] + [12] * len(ways) + [13] * (len(columns) - 2 - len(ways)))
                row(cells)
        if "reset" in only:
            nbatch = args.reset_nbatch or small
            print(f"\n== 3. resets of {nbatch} humanoids (ms per call; ratios: the pool's time over the "
                  "other's, lower is better)")
            targets = resets(model("humanoid"), nbatch, args.reset_fractions, backends, uni, arrays,
                             repeat * 3)
            full = [t for t in targets if t[0] == "mass" and t[1] == nbatch]
            if full:
                _, _, over_batch, over_no_fwd, *over_uni = full[0]
                print(f"mass reset of all {nbatch}: pool {over_batch:.2f}x Batch's time "
                      f"({over_no_fwd:.2f}x without reset's mj_forward; target <= 1.1x)"
                      + (f", {over_uni[0]:.2f}x MuJoCoUni's (target < 1.0x)" if over_uni else ""))
        if "jacobian" in only:
            print("\n== 4. site Jacobians (Franka end_effector, translational)")
            site_jacobians(model("franka"), nbatches, backends, uni, arrays, repeat)
        if "hfield" in only:
            print("\n== 5. height-field sampling (Barkour on its height field, 16 points per environment)")
            heightfield_sampling(model("barkour_hfield"), nbatches, backends, uni, arrays, repeat)
        if "policy" in only:
            nbatch = args.policy_nbatch or small
            print(f"\n== 6. per-step policy and held controls, {nbatch} humanoids, nstep {nstep}")
            result = policy_and_held(model("humanoid"), nbatch, nstep, backends, uni, arrays, repeat * 2)
            print(f"policy overhead over a bare Batch loop: {(1 / result['policy'] - 1) * 100:+.1f}% "
                  f"(target <= +10%); held controls: pool {result['held']:.2f}x Batch.step")
    finally:
        uni.close()
        arrays.close()
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()

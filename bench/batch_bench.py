"""The batched runtime against MuJoCo's own ways of stepping many states, in one run.

    .venv/bin/python bench/batch_bench.py [--nbatch 1 16 128 1024] [--nstep 50] [--repeat 5] [--threads 1 2]

For the corpus humanoid, Barkour (a quadruped, on its height field) and
cartpole, from distinct moving states, with random per-step controls
(nbatch, nstep, nu):

1. steps per second (nbatch x nstep / seconds) of
   - `BatchPool.step` (final states only),
   - `mujoco.rollout.Rollout(nthread).rollout(...)` as a user calls it (a
     persistent thread pool, the same number of threads, full trajectories),
   - a plain Python loop: per environment mj_setState, then per step ctrl and
     mj_step, then mj_getState (one thread),
   - `BatchPool.step` on a randomized pool (friction randomized: the worker
     threads' path, values swapped in per environment),
   with the ratios pool / rollout (target >= 1.0) and pool / loop;
2. thread scaling at the largest nbatch (each --threads value);
3. reset of 1024 environments to the initial state against a Python loop
   (mj_resetData + mj_getState each; target >= 10x), and a randomized reset
   (friction, damping and gravity: vectorized draws; mass too: one mj_setConst
   per environment, as MuJoCo's compiler would) against a Python loop that
   draws and writes the same values and calls mj_setConst;
4. per-call overhead at nbatch 1: `BatchPool.step` (nstep 50, held controls)
   against a bare `mj_step(m, d, nstep=50)` after `mj_setState` (target: within
   2x), and at nstep 1 against one bare mj_step; each bare call both warm
   (MuJoCo's warm start from the previous step) and cold (none, as every pool
   and rollout call starts).

Medians of --repeat runs, interleaved. This machine has about one core of real
throughput: the thread figures are what it measures, not what 16 cores give
(docs/developing.md argues that).
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time

import mujoco
import mujoco.batch
import mujoco.rollout
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import addon_loader  # noqa: E402,F401  (the add-on as `mjblend`)

from mjblend.batch import BatchPool, Entry, Randomization  # noqa: E402

CORPUS = os.path.join(addon_loader.ROOT, "..", "shared", "corpus")
MODELS = {
    "humanoid": os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml"),
    "barkour": os.path.join(CORPUS, "menagerie", "google_barkour_vb", "scene_hfield_mjx.xml"),
    "cartpole": os.path.join(CORPUS, "pip", "dm_control", "suite", "cartpole.xml"),
}
SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS


def states_of(model, count, seed=0):
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


def median_time(run, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def python_loop(model, states, controls):
    data = mujoco.MjData(model)
    final = np.empty_like(states)
    for env in range(len(states)):
        mujoco.mj_resetData(model, data)
        mujoco.mj_setState(model, data, states[env], SPEC)
        for k in range(controls.shape[1]):
            data.ctrl[:] = controls[env, k]
            mujoco.mj_step(model, data)
        mujoco.mj_getState(model, data, final[env], SPEC)
    return final


def first_named(model, kind, count, start=0) -> tuple[int, str]:
    index = next(i for i in range(start, count) if mujoco.mj_id2name(model, kind, i))
    return index, mujoco.mj_id2name(model, kind, index)


def friction_randomization(model):
    _, name = first_named(model, mujoco.mjtObj.mjOBJ_GEOM, model.ngeom)
    return Randomization([Entry("geom", "friction", 0.8, 1.2, name=name)], seed=0)


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def step_times(model, nbatch, nstep, nthread, repeat) -> dict[str, list[float]]:
    """Seconds per call of each way of stepping, `repeat` times, interleaved (a noisy
    second hits them all alike)."""
    states = states_of(model, nbatch)
    controls = np.random.default_rng(1).uniform(-1, 1, (nbatch, nstep, model.nu))
    pool = BatchPool(model, nbatch, nthread=nthread)
    randomized = BatchPool(model, nbatch, nthread=nthread, randomization=friction_randomization(model))
    rollout = mujoco.rollout.Rollout(nthread=nthread if nthread > 1 else 0)
    datas = [mujoco.MjData(model) for _ in range(max(1, nthread))]
    first = pool.step(states, controls, nstep=nstep)[0]
    assert np.array_equal(first, rollout.rollout(model, datas, states, controls)[0][0, -1])
    assert np.array_equal(first, python_loop(model, states[:1], controls[:1])[0])
    ways = {"pool": lambda: pool.step(states, controls, nstep=nstep),
            "rollout": lambda: rollout.rollout(model, datas, states, controls),
            "loop": lambda: python_loop(model, states, controls),
            "randomized": lambda: randomized.step(states, controls, nstep=nstep)}
    times = {key: [] for key in ways}
    for run in ways.values():
        run()  # warm: thread pools started, buffers made
    for _ in range(repeat * max(1, min(10, 128 // nbatch))):  # short calls: more repeats
        for key, run in ways.items():
            times[key].append(timed(run))
    pool.close()
    randomized.close()
    rollout.close()
    return times


def paired(times, a, b) -> float:
    """How many times faster a is than b: the median of the per-repeat ratios."""
    return statistics.median(tb / ta for ta, tb in zip(times[a], times[b], strict=True))


def stepping(name, model, nbatches, nstep, threads, repeat):
    nthread = max(threads)
    print(f"\n== {name}: nq {model.nq}, nv {model.nv}, nu {model.nu}, nstep {nstep}, {nthread} thread(s)")
    print(f"{'nbatch':>7} {'pool':>11} {'rollout':>11} {'loop':>11} {'randomized':>11}"
          f" {'pool/rollout':>13} {'pool/loop':>10} {'rand/loop':>10}")
    ratios = []
    for nbatch in nbatches:
        times = step_times(model, nbatch, nstep, nthread, repeat)
        rate = {key: nbatch * nstep / statistics.median(value) for key, value in times.items()}
        ratios.append(paired(times, "pool", "rollout"))
        print(f"{nbatch:>7} {rate['pool']:>11,.0f} {rate['rollout']:>11,.0f} {rate['loop']:>11,.0f}"
              f" {rate['randomized']:>11,.0f} {ratios[-1]:>12.2f}x"
              f" {paired(times, 'pool', 'loop'):>9.2f}x {paired(times, 'randomized', 'loop'):>9.2f}x")
    return ratios


def scaling(name, model, nbatch, nstep, threads, repeat):
    states = states_of(model, nbatch)
    controls = np.random.default_rng(1).uniform(-1, 1, (nbatch, nstep, model.nu))
    line = []
    base = None
    for nthread in threads:
        with BatchPool(model, nbatch, nthread=nthread) as pool:
            seconds = median_time(lambda pool=pool: pool.step(states, controls, nstep=nstep), repeat)
        rate = nbatch * nstep / seconds
        base = base or rate
        line.append(f"{nthread} thread(s) {rate:,.0f}/s ({rate / base:.2f}x)")
    print(f"  thread scaling, {name}, nbatch {nbatch}: " + ", ".join(line))


def resets(name, model, repeat, count=1024):
    rng = np.random.default_rng(0)
    data = mujoco.MjData(model)
    states = states_of(model, count)

    def loop_reset():
        out = np.empty_like(states)
        for env in range(count):
            mujoco.mj_resetData(model, data)
            mujoco.mj_getState(model, data, out[env], SPEC)
        return out

    pool = BatchPool(model, count, nthread=1)
    assert np.array_equal(pool.reset(states.copy()), loop_reset())
    pool_time = median_time(lambda: pool.reset(states), repeat)
    loop_time = median_time(loop_reset, repeat)
    print(f"  reset {count}, {name}: pool {pool_time * 1e3:.2f} ms, Python loop {loop_time * 1e3:.2f} ms:"
          f" {loop_time / pool_time:.1f}x")

    geom, geom_name = first_named(model, mujoco.mjtObj.mjOBJ_GEOM, model.ngeom)
    joint, joint_name = first_named(model, mujoco.mjtObj.mjOBJ_JOINT, model.njnt)
    body, body_name = first_named(model, mujoco.mjtObj.mjOBJ_BODY, model.nbody, start=1)
    light = [Entry("geom", "friction", 0.5, 1.5, name=geom_name),
             Entry("joint", "damping", 0.5, 1.5, name=joint_name),
             Entry("option", "gravity", -10, -9, index=2, mode="absolute")]
    mass = Entry("body", "mass", 0.8, 1.2, name=body_name)
    copies = [copy.copy(model) for _ in range(8)]  # what a loop would write into (one per environment)
    dof = model.jnt_dofadr[joint]

    def loop_randomized(with_mass):
        out = np.empty_like(states)
        for env in range(count):
            target = copies[env % len(copies)]
            target.geom_friction[geom, 0] = model.geom_friction[geom, 0] * rng.uniform(0.5, 1.5)
            target.dof_damping[dof] = model.dof_damping[dof] * rng.uniform(0.5, 1.5)
            target.opt.gravity[2] = rng.uniform(-10, -9)
            if with_mass:
                target.body_mass[body] = model.body_mass[body] * rng.uniform(0.8, 1.2)
                mujoco.mj_setConst(target, data)
            mujoco.mj_resetData(target, data)
            mujoco.mj_getState(target, data, out[env], SPEC)
        return out

    for label, entries, with_mass in (("friction, damping, gravity", light, False),
                                      ("+ mass (mj_setConst each)", [*light, mass], True)):
        pool = BatchPool(model, count, nthread=1, randomization=Randomization(entries, seed=0))
        pool_time = median_time(lambda pool=pool: pool.reset(states), repeat)
        loop_time = median_time(lambda with_mass=with_mass: loop_randomized(with_mass), repeat)
        print(f"  randomized reset {count}, {name} ({label}): pool {pool_time * 1e3:.2f} ms, "
              f"Python loop {loop_time * 1e3:.2f} ms: {loop_time / pool_time:.1f}x")
        pool.close()
    # the mass reset as mujoco.batch does it directly: expand the field, set_const, reset
    pool = BatchPool(model, count, nthread=1, randomization=Randomization([mass], seed=0))
    direct = mujoco.batch.Batch(model, count, nthread=1)
    masses = direct.expand("body_mass")

    def direct_reset(stage):
        masses[:, body] = model.body_mass[body] * rng.uniform(0.8, 1.2, count)
        direct.set_const()
        direct.reset(stage=stage)
    times = {"pool": [], "acc": [], "none": []}
    for _ in range(repeat):
        times["pool"].append(timed(lambda: pool.reset(states)))
        times["acc"].append(timed(lambda: direct_reset(mujoco.mjtStage.mjSTAGE_ACC)))
        times["none"].append(timed(lambda: direct_reset(mujoco.mjtStage.mjSTAGE_NONE)))
    ms = {key: statistics.median(value) * 1e3 for key, value in times.items()}
    print(f"  mass reset {count}, {name}: pool {ms['pool']:.2f} ms; mujoco.batch directly (expand, "
          f"set_const, reset) {ms['acc']:.2f} ms ({ms['pool'] / ms['acc']:.2f}x), reset without its "
          f"mj_forward {ms['none']:.2f} ms ({ms['pool'] / ms['none']:.2f}x; target <= 1.1x)")
    pool.close()


def overhead(name, model, nstep, repeat):
    """pool.step for one environment against bare mj_step calls: `warm`, stepping on
    from the state with the warm start the last step left (what a plain loop does),
    and `cold`, from the same state with no warm start (what every pool call does, as
    mujoco.rollout: the solver then takes more iterations, so cold costs more)."""
    data = mujoco.MjData(model)
    states = states_of(model, 1)
    held = np.zeros((1, model.nu))
    calls = 200
    with BatchPool(model, 1) as pool:
        for steps in (nstep, 1):
            def pool_calls(steps=steps):
                for _ in range(calls):
                    pool.step(states, held, nstep=steps)

            def bare_calls(steps=steps, cold=False):
                for _ in range(calls):
                    mujoco.mj_setState(model, data, states[0], SPEC)
                    if cold:
                        data.qacc_warmstart[:] = 0
                    mujoco.mj_step(model, data, steps)
            pool_time = median_time(pool_calls, repeat) / calls
            warm = median_time(bare_calls, repeat) / calls
            cold = median_time(lambda steps=steps: bare_calls(steps, cold=True), repeat) / calls
            print(f"  nbatch 1, nstep {steps}, {name}: pool.step {pool_time * 1e6:.1f} us; bare mj_step warm "
                  f"{warm * 1e6:.1f} us ({pool_time / warm:.2f}x), cold {cold * 1e6:.1f} us "
                  f"({pool_time / cold:.2f}x)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nbatch", type=int, nargs="+", default=[1, 16, 128, 1024])
    parser.add_argument("--nstep", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    print(f"mujoco {mujoco.__version__}, {os.cpu_count()} CPUs reported")
    models = {name: mujoco.MjSpec.from_file(path).compile() for name, path in MODELS.items()
              if os.path.exists(path)}
    if not models:
        sys.exit("no corpus models (../shared/corpus)")
    worst = []
    for name, model in models.items():
        worst.append(min(stepping(name, model, args.nbatch, args.nstep, args.threads, args.repeat)))
    print(f"\n== thread scaling ({os.cpu_count()} CPUs reported)")
    for name, model in models.items():
        scaling(name, model, max(args.nbatch), args.nstep, args.threads, args.repeat)
    print("\n== resets")
    for name, model in models.items():
        resets(name, model, args.repeat)
    print("\n== per-call overhead")
    for name, model in models.items():
        overhead(name, model, args.nstep, args.repeat)
    print(f"\nworst pool / rollout ratio over all models and nbatch: {min(worst):.2f}x (target >= 1.0)")


if __name__ == "__main__":
    main()

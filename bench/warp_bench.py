"""The Warp backend against the CPU pool, in one run, on whatever device Warp finds.

    python bench/warp_bench.py [--model humanoid.xml] [--nbatch 1024 4096] [--nstep 100] [--repeat 3]

For each nbatch, steps per second (nbatch x nstep / seconds, medians of
--repeat runs) of
  - `BatchPool` (mujoco.batch, all the machine's CPU threads), held controls;
  - `BatchPool(backend="warp")`, held controls: a call loads the states onto the
    device, steps (a CUDA graph per step on a GPU) and reads them back;
  - bare MuJoCo Warp: the same graph launched nstep times, no state copies (the
    ceiling of the pool's call);
with the ratios warp / cpu and pool / bare. Then agreement: the max abs qpos /
qvel difference of the Warp pool from the CPU pool (float64, = serial mj_step)
after 20 steps from 64 moving states with random per-step controls, against
`warp_pool.TOLERANCE`.

Made for the GPU machine: it needs mujoco, numpy, mujoco_warp and warp, and the
add-on folder importable as `mjblend` (tests/addon_loader.py does that here).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import mujoco
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import addon_loader  # noqa: E402,F401  (the add-on as `mjblend`)

from batch_bench import timed  # noqa: E402  (bench/, beside this file)
from mjblend.batch import BatchPool  # noqa: E402
from mjblend.batch.warp_pool import TOLERANCE  # noqa: E402

HUMANOID = os.path.join(addon_loader.ROOT, "..", "shared", "corpus", "mujoco_model", "model", "humanoid",
                        "humanoid.xml")


def median_time(call, repeat):
    return statistics.median(timed(call) for _ in range(repeat))


def moving_states(model, count, seed=0):
    """(count, nstate): the initial state pushed by random velocities, a few steps on."""
    rng = np.random.default_rng(seed)
    data = mujoco.MjData(model)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    states = np.empty((count, mujoco.mj_stateSize(model, spec)))
    for row in range(count):
        mujoco.mj_resetData(model, data)
        data.qvel[:] = rng.normal(0, 0.3, model.nv)
        mujoco.mj_step(model, data, int(rng.integers(1, 10)))
        mujoco.mj_getState(model, data, states[row], spec)
    return states


def throughput(model, nbatch, nstep, repeat):
    import warp as wp

    cpu = BatchPool(model, nbatch, nthread=os.cpu_count())
    gpu = BatchPool(model, nbatch, backend="warp")
    states = np.tile(moving_states(model, 1)[0], (nbatch, 1))
    held = np.random.default_rng(1).uniform(-1, 1, (nbatch, model.nu))
    gpu.step(states, held, nstep=2)  # kernels loaded, the graph captured
    cpu.step(states, held, nstep=2)

    def bare():
        for _ in range(nstep):
            gpu._step_once()
        wp.synchronize_device(gpu.device)

    t_cpu = median_time(lambda: cpu.step(states, held, nstep=nstep), repeat)
    t_gpu = median_time(lambda: gpu.step(states, held, nstep=nstep), repeat)
    t_bare = median_time(bare, repeat)
    rate = nbatch * nstep
    print(f"{nbatch:7d} {rate / t_cpu:14.0f} {rate / t_gpu:14.0f} {rate / t_bare:14.0f} "
          f"{t_cpu / t_gpu:9.2f}x {t_bare / t_gpu:10.2f}")
    cpu.close()
    gpu.close()


def agreement(model, name):
    count, nstep = 64, 20
    states = moving_states(model, count)
    controls = np.random.default_rng(2).uniform(-1, 1, (count, nstep, model.nu))
    with BatchPool(model, count, nthread=os.cpu_count()) as cpu, \
            BatchPool(model, count, backend="warp") as gpu:
        exact = cpu.step(states, controls, nstep=nstep)
        approx = gpu.step(states, controls, nstep=nstep)
    error = np.abs(approx[:, 1:1 + model.nq + model.nv] - exact[:, 1:1 + model.nq + model.nv])
    bound = TOLERANCE.get(name)
    print(f"agreement after {nstep} steps, {count} states: max |qpos, qvel| error {error.max():.2e} "
          f"(median {np.median(error):.1e}); TOLERANCE[{name!r}] = {bound}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=HUMANOID)
    parser.add_argument("--nbatch", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--nstep", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import mujoco_warp
    import warp as wp

    model = mujoco.MjModel.from_xml_path(args.model)
    name = os.path.splitext(os.path.basename(args.model))[0]
    device = wp.get_device("cuda:0" if wp.get_cuda_device_count() else "cpu")
    version = getattr(mujoco_warp, "__version__", "?")
    print(f"model {name}; mujoco {mujoco.__version__}, mujoco_warp {version}, "
          f"warp {wp.__version__}; Warp device {device} ({device.name}); {os.cpu_count()} CPU threads")
    print(f"{'nbatch':>7} {'cpu pool st/s':>14} {'warp pool st/s':>14} {'bare warp st/s':>14} "
          f"{'warp/cpu':>10} {'pool/bare':>10}")
    for nbatch in args.nbatch:
        throughput(model, nbatch, args.nstep, args.repeat)
    agreement(model, name)


if __name__ == "__main__":
    main()

"""Images per environment (batch/images.py, `pool.render`) against mujoco.Renderer
in a plain loop over the same states, in one run.

    MUJOCO_GL=egl .venv/bin/python bench/batch_images_bench.py [--model PATH] [--camera NAME]
        [--nbatch 64 256] [--sizes 84x84 320x240] [--repeat R]

For each batch size and image size: milliseconds per environment image through the
pool (each environment's state put into the renderer's MjData, its model's values
swapped in when randomized, update_scene, render into the batch's array) and through
the bare loop (mj_setState + mj_forward + update_scene + render, one renderer), RGB
and RGB + depth + segmentation; the ratio bare / pool (1.0: the pool adds nothing).
Medians of R repeats, interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("MUJOCO_GL", "egl")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import addon_loader  # noqa: E402,F401  (links the add-on as `mjblend`, as the tests do)
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from camera_bench import draw  # noqa: E402  (bench/, this script's folder)
from mjblend.batch import BatchPool  # noqa: E402

HUMANOID = os.path.join(ROOT, "..", "shared", "corpus", "mujoco_model", "model", "humanoid", "humanoid.xml")
KINDS = {"rgb": ("rgb",), "rgb+depth+segmentation": ("rgb", "depth", "segmentation")}


def bare(model, states, camera, kinds, width, height, renderer) -> float:
    data = mujoco.MjData(model)
    start = time.perf_counter()
    for state in states:
        mujoco.mj_setState(model, data, state, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        mujoco.mj_forward(model, data)
        renderer.update_scene(data, camera)
        draw(renderer, kinds)
    return time.perf_counter() - start


def pooled(pool, states, camera, kinds, width, height) -> float:
    start = time.perf_counter()
    pool.render(states, camera, kinds, width, height)
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=HUMANOID)
    parser.add_argument("--camera", default="side")
    parser.add_argument("--nbatch", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--sizes", nargs="+", default=["84x84", "320x240"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    model = mujoco.MjModel.from_xml_path(args.model)
    print(f"model {os.path.basename(args.model)}, camera '{args.camera}', "
          f"MUJOCO_GL={os.environ['MUJOCO_GL']}, mujoco {mujoco.__version__}; medians of {args.repeat}; "
          "ms per environment image")
    results = []
    for nbatch in args.nbatch:
        with BatchPool(model, nbatch) as pool:
            rng = np.random.default_rng(0)
            states = pool.initial_states()
            states[:, 1 + model.nq:1 + model.nq + model.nv] = rng.normal(0, 0.5, (nbatch, model.nv))
            states = pool.step(states, rng.uniform(-1, 1, (nbatch, model.nu)), nstep=20)
            for size in args.sizes:
                width, height = map(int, size.split("x"))
                with mujoco.Renderer(model, height, width) as renderer:
                    for label, kinds in KINDS.items():
                        pooled(pool, states, args.camera, kinds, width, height)  # warm both
                        bare(model, states[:2], args.camera, kinds, width, height, renderer)
                        mine, ref = [], []
                        for _ in range(args.repeat):
                            mine.append(pooled(pool, states, args.camera, kinds, width, height))
                            ref.append(bare(model, states, args.camera, kinds, width, height, renderer))
                        ms_pool = statistics.median(mine) / nbatch * 1e3
                        ms_bare = statistics.median(ref) / nbatch * 1e3
                        row = {"nbatch": nbatch, "size": size, "kinds": label, "pool_ms": ms_pool,
                               "bare_ms": ms_bare, "ratio": ms_bare / ms_pool}
                        results.append(row)
                        print(f"nbatch {nbatch:5d} {size:>8} {label:>24}: pool.render {ms_pool:8.3f} ms, "
                              f"bare loop {ms_bare:8.3f} ms, ratio {row['ratio']:.3f}")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

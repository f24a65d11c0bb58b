"""What the import's guard (importer/mujoco_load.py) costs on top of MuJoCo's own load.

    .venv/bin/python bench/guard_bench.py [--rounds N] [model ...]

In the bpy module with MJBlend enabled, per model and round (interleaved, so a
noisy machine hits both alike): the guarded load an import runs (`Load`: the
probe, then the load in this process, to its outcome) and the unguarded load
alone (`mujoco_load.load`). Prints the medians (ms) and the guard's cost, their
difference. Default model: the corpus humanoid.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))
sys.path.insert(0, os.path.join(ROOT, "tests"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("models", nargs="*", default=["mujoco_model/model/humanoid/humanoid.xml"])
    args = parser.parse_args()
    import bpy  # noqa: F401  (before addon_utils)
    import addon_loader  # the add-on enabled as in the tests
    addon_loader.enable_addon()
    from mjblend.importer import build, mujoco_load

    limits = build.limits()
    for model in args.models:
        path = model if os.path.isabs(model) else os.path.join(CORPUS, model)
        source = mujoco_load.read_source(path)
        mujoco_load.load(source)  # MuJoCo's asset cache warm for both sides
        guarded, plain = [], []
        for _ in range(args.rounds):
            t = time.perf_counter()
            job = mujoco_load.Load(source, limits, threaded=False)
            job.run()
            job.outcome()
            guarded.append(time.perf_counter() - t)
            t = time.perf_counter()
            mujoco_load.load(source)
            plain.append(time.perf_counter() - t)
        g, p = statistics.median(guarded) * 1e3, statistics.median(plain) * 1e3
        print(f"{os.path.basename(path)}: guarded load {g:.1f} ms, load alone {p:.1f} ms, "
              f"guard {g - p:.1f} ms ({g / p:.2f}x), median of {args.rounds}")


if __name__ == "__main__":
    main()

"""Import time of every corpus model next to MuJoCo's own load of the same file.

    .venv/bin/python bench/import_bench.py [--repeat N] [model ...]

MuJoCo 4 caches assets within a process, so first and repeat loads are
timed separately, each side in its own fresh process: a "first" time is a
cold process's first load, a "repeat" time the median of N more loads in that
process. Prints one row per model and the median ratios (import / MuJoCo).
Target (issue 3): median ratio <= 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))

# Runs in a fresh interpreter; prints {"first": s, "repeat": [s, ...]} as JSON.
MUJOCO_SIDE = """
import json, sys, time, mujoco
path, n = sys.argv[1], int(sys.argv[2])
t = time.perf_counter(); mujoco.MjModel.from_xml_path(path); first = time.perf_counter() - t
repeat = []
for _ in range(n):
    t = time.perf_counter(); mujoco.MjModel.from_xml_path(path); repeat.append(time.perf_counter() - t)
print(json.dumps({"first": first, "repeat": repeat}))
"""

MJBLEND_SIDE = """
import json, os, sys, time
sys.path.insert(0, sys.argv[3])
import bpy, addon_utils
addon_utils.enable("mjblend", default_set=True)
path, n = sys.argv[1], int(sys.argv[2])
def once():
    bpy.ops.wm.read_homefile(use_empty=True)
    t = time.perf_counter()
    assert bpy.ops.import_scene.mjcf(filepath=path) == {"FINISHED"}
    return time.perf_counter() - t
first = once()
repeat = [once() for _ in range(n)]
print(json.dumps({"first": first, "repeat": repeat}))
"""


def run(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def corpus_models():
    with open(os.path.join(CORPUS, "models.tsv"), encoding="utf-8") as fh:
        return [row["path"] for row in csv.DictReader(fh, delimiter="\t")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()
    models = args.models or corpus_models()
    addons = tempfile.mkdtemp(prefix="mjblend-bench-")
    os.symlink(ROOT, os.path.join(addons, "mjblend"))
    first_ratios, repeat_ratios = [], []
    print(f"{'model':58s} {'mujoco first':>12s} {'import first':>12s} {'ratio':>6s}"
          f" {'mujoco rep':>10s} {'import rep':>10s} {'ratio':>6s}")
    for model in models:
        path = os.path.join(CORPUS, model)
        mj = run(MUJOCO_SIDE, path, args.repeat)
        ours = run(MJBLEND_SIDE, path, args.repeat, addons)
        mj_rep, our_rep = statistics.median(mj["repeat"]), statistics.median(ours["repeat"])
        first_ratios.append(ours["first"] / mj["first"])
        repeat_ratios.append(our_rep / mj_rep)
        print(f"{model:58s} {mj['first'] * 1e3:10.1f}ms {ours['first'] * 1e3:10.1f}ms"
              f" {first_ratios[-1]:6.2f} {mj_rep * 1e3:8.1f}ms {our_rep * 1e3:8.1f}ms"
              f" {repeat_ratios[-1]:6.2f}")
    print(f"median ratio import/MuJoCo: first load {statistics.median(first_ratios):.2f}, "
          f"repeat load {statistics.median(repeat_ratios):.2f}  (target <= 2)")


if __name__ == "__main__":
    main()

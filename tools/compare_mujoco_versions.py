#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which corpus models simulate differently on two mujoco-core releases?

Each release is installed (once, cached) into .venv/mujoco-core-<version>; a
child interpreter per release steps every corpus model for 1 s of simulated
time from its reference state (MuJoCo's own MjModel.from_xml_path, mj_step),
once with the file's options and once with a sparse constraint Jacobian forced
(4.0.1's fix concerns the sparse factorization), and saves qpos; the parent
compares them bit for bit.

    .venv/bin/python tools/compare_mujoco_versions.py [--old 4.0.0] [--new 4.0.1] [--seconds 1]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from helpers import CORPUS, corpus_models  # noqa: E402  (the corpus index the tests use)

CHILD = """
import sys, numpy as np, mujoco
out, seconds, paths = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
result = {"__version__": np.array(mujoco.__version__)}
for i, path in enumerate(paths):
    model = mujoco.MjModel.from_xml_path(path)
    result[f"solver{i}"] = np.array([model.opt.solver, model.opt.jacobian, model.nv])
    for run, jacobian in (("file", model.opt.jacobian), ("sparse", mujoco.mjtJacobian.mjJAC_SPARSE)):
        model.opt.jacobian = jacobian
        data = mujoco.MjData(model)
        mujoco.mj_step(model, data, nstep=int(round(seconds / model.opt.timestep)))
        result[f"{run}{i}"] = data.qpos.copy()
np.savez(out, **result)
"""


def install(version):
    target = os.path.join(ROOT, ".venv", f"mujoco-core-{version}")
    if not os.path.isdir(os.path.join(target, "mujoco")):
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", target,
                        f"mujoco-core=={version}"], check=True)
    return target


def run(version, paths, seconds, tmp):
    out = os.path.join(tmp, f"{version}.npz")
    env = dict(os.environ, PYTHONPATH=install(version), PYTHONNOUSERSITE="1")
    subprocess.run([sys.executable, "-c", CHILD, out, str(seconds), *paths], check=True, env=env)
    return np.load(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", default="4.0.0")
    parser.add_argument("--new", default="4.0.1")
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    models = corpus_models()
    paths = [os.path.join(CORPUS, m) for m in models]
    with tempfile.TemporaryDirectory() as tmp:
        old, new = run(args.old, paths, args.seconds, tmp), run(args.new, paths, args.seconds, tmp)
    print(f"mujoco-core {old['__version__']} vs {new['__version__']}, {args.seconds:g} s of simulation")
    differ = {"file": 0, "sparse": 0}
    for i, name in enumerate(models):
        solver, jacobian, nv = new[f"solver{i}"]
        gaps = []
        for case in ("file", "sparse"):
            a, b = old[f"{case}{i}"], new[f"{case}{i}"]
            same = np.array_equal(a, b, equal_nan=True)
            differ[case] += not same
            gaps.append("identical" if same else f"max |dqpos| {np.nanmax(np.abs(a - b)):.3g}")
        solver_name = mujoco.mjtSolver(solver).name.removeprefix("mjSOL_")
        jacobian_name = mujoco.mjtJacobian(jacobian).name.removeprefix("mjJAC_")
        print(f"  {name:64s} {solver_name:6s} {jacobian_name:6s} nv={nv:<4d} "
              f"as written: {gaps[0]:24s} sparse Jacobian forced: {gaps[1]}")
    print(f"{differ['file']} of {len(models)} models end in a different state as written, "
          f"{differ['sparse']} with a sparse Jacobian forced")


if __name__ == "__main__":
    main()

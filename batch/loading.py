"""From files to a pool, without Blender: an MJCF / URDF / .mjb and the
randomization file saved next to it (`robot.randomization.json`, written by
MJBlend's MJCF export when the scene has randomized attributes)."""

from __future__ import annotations

import os

import mujoco

from .pool import BatchPool
from .randomization import Randomization, randomization_path


def load_model(path: str) -> mujoco.MjModel:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such model file")
    if path.lower().endswith(".mjb"):
        return mujoco.MjModel.from_binary_path(path)
    return mujoco.MjSpec.from_file(path).compile()


def open_pool(path: str, nbatch: int, nthread: int | None = None, randomization: str | bool | None = True,
              seed: int | None = None, keyframe: str | int | None = None, backend: str = "threads",
              **ray_options) -> BatchPool:
    """A pool of `nbatch` environments of the model at `path`.

    randomization: True (default) loads `<model>.randomization.json` when it
    exists; a path loads that file (it must exist); False or None randomizes
    nothing. backend: "threads" (this machine's CPUs), "warp" (MuJoCo Warp, on a
    GPU when there is one; `ray_options` go to WarpPool: device, nconmax, njmax)
    or "ray" (workers as Ray actors; `ray_options` go to RayPool: nworkers, address)."""
    model = load_model(path)
    spec = None
    if randomization is True:
        candidate = randomization_path(path)
        spec = Randomization.load(candidate) if os.path.isfile(candidate) else None
    elif randomization:
        spec = Randomization.load(randomization)
    if backend == "ray":
        from .ray_pool import RayPool
        return RayPool(model, nbatch, randomization=spec, seed=seed, keyframe=keyframe, **ray_options)
    if backend == "warp":
        return BatchPool(model, nbatch, randomization=spec, seed=seed, keyframe=keyframe, backend="warp",
                         **ray_options)
    if backend != "threads":
        raise ValueError(f"backend must be 'threads', 'warp' or 'ray', not {backend!r}")
    return BatchPool(model, nbatch, nthread=nthread, randomization=spec, seed=seed, keyframe=keyframe)

"""The scene as many environments: a `batch.BatchPool` of the authored models with
their authored domain randomization, in Blender or from a .blend.

    pool = scene_pool(bpy.context.scene, nbatch=64)          # in Blender
    pool = pool_from_blend("robot.blend", nbatch=64)          # the bpy module
    path = export_for_training(scene, "out/")                 # out/robot.xml + assets +
                                                              # robot.randomization.json
    pool = batch.open_pool(path, nbatch=64)                   # then, in plain Python

The scene compiles as File > Export compiles it (every model root, attached with
its prefix when there are several), so the pool made here and the pool
`open_pool` makes from the exported files are the same environments: same
model, same entries, same seed. The Simulation panel's option overrides are a
setting of the viewport's simulation and reach neither.
"""

from __future__ import annotations

import os

import bpy

from ..batch import BatchPool
from ..exporter import mjcf_writer
from ..scan import compile_spec, randomization, scene_scan
from ..scene.errors import MJBlendError
from . import scene_session


class BatchSceneError(MJBlendError):
    """The scene cannot become a pool or a training export."""


def scene_pool(scene, nbatch: int, nthread: int | None = None, seed: int | None = None,
               keyframe: str | int | None = None, warnings: list[str] | None = None) -> BatchPool:
    """A pool of `nbatch` environments of the scene's models, randomized as authored
    (`seed` replaces the model root's). The scan's and compile's errors name the
    objects at fault (CompileError, RandomizationInvalid); `warnings` collects the scan's."""
    roots = scene_scan.model_roots(scene)
    model = _compiled(scene, roots, [] if warnings is None else warnings)
    found = randomization.checked(roots, model)
    return BatchPool(model, nbatch, nthread=nthread, randomization=found or None, seed=seed,
                     keyframe=keyframe)


def _compiled(scene, roots, warnings):
    owner = scene_session.existing(scene)  # a running simulation's authored poses, not its simulated ones
    built = compile_spec.build_spec(roots, warnings, held=owner.held if owner is not None else None)
    return compile_spec.check(built.spec, scene.objects, built.scanners, warnings)


def export_for_training(scene, folder: str, name: str | None = None,
                        warnings: list[str] | None = None) -> str:
    """Write the scene for a training script: `folder/<name>.xml`, its asset files
    copied beside it (the folder stands on its own), and `<name>.randomization.json`
    when the scene randomizes anything. `name`: the .blend's name, else the first
    model root's. The written MJCF's path."""
    roots = scene_scan.model_roots(scene)
    if not roots:
        raise BatchSceneError("nothing to export: the scene has no MuJoCo model root")
    name = name or os.path.splitext(os.path.basename(bpy.data.filepath))[0] or roots[0].name
    folder = os.path.abspath(folder)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ".xml")
    warnings = [] if warnings is None else warnings
    owner = scene_session.existing(scene)
    built = compile_spec.build_spec(roots, warnings, find_painted_textures=True,
                                    held=owner.held if owner is not None else None)
    mjcf_writer.write(built, path, copy_assets=True, scene_objects=scene.objects, randomize=True)
    return path


def pool_from_blend(path: str, nbatch: int, **options) -> BatchPool:
    """Open the .blend at `path` (it replaces the open file) and make `scene_pool` of
    its active scene; `options` as scene_pool takes them. For scripts with the bpy
    module; a script without it exports once (blender --command mjblend_export_batch)
    and uses batch.open_pool."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such .blend file")
    bpy.ops.wm.open_mainfile(filepath=os.path.abspath(path))
    return scene_pool(bpy.context.scene, nbatch, **options)

"""Each environment's randomized model values, as per-simulation model fields of
the pool's `mujoco.batch.Batch`.

An entry's values go into the batch's expanded field (`Batch.expand`: one row
per environment, the other fields shared, so a mesh or a height field is held
once, not once per environment). Where an attribute feeds constants MuJoCo's
compiler derives at qpos0 (masses, inertias, positions, armature, gear, geom
bounds), the batch's `set_const` recomputes them for the redrawn environments
on its threads, so an environment's model is the model mj_setConst gives for
those values. The draws themselves (the generator, their order) are Bound's.
"""

from __future__ import annotations

import copy

import mujoco
import numpy as np

from .randomization import Bound, Randomization, compiled_statistics, fit_bounds

# What mj_setConst writes (mujoco 4.0): the qpos0 constants a changed mass,
# inertia, body position, armature or gear moves, and, for a resized geom, its
# bounding sphere and its body's bounding-volume hierarchy (a test checks the list).
DERIVED_FIELDS = ("body_subtreemass", "body_invweight0", "dof_invweight0", "dof_M0", "dof_length",
                  "tendon_invweight0", "tendon_length0", "actuator_acc0", "actuator_length0",
                  "cam_pos0", "cam_poscom0", "cam_mat0", "light_pos0", "light_poscom0", "light_dir0",
                  "flexedge_length0", "flexedge_invweight0")
SIZE_DERIVED_FIELDS = ("geom_rbound", "bvh_aabb")
# attributes whose change reaches the derived constants
_STRUCTURAL = {("body", "mass"), ("body", "inertia"), ("body", "pos"), ("joint", "armature"),
               ("actuator", "gear"), ("geom", "size")}


class Draws:
    """A randomization's draws for `nbatch` environments: the entries bound to the
    model, the one generator, each environment's row of draws. (A RayPool's driver
    keeps only this; its actors keep Parameters.)"""

    def __init__(self, model: mujoco.MjModel, randomization: Randomization, nbatch: int, seed: int | None):
        self.bound = Bound(randomization, model)
        self.nominal = model
        self.nbatch = nbatch
        self.rng = np.random.default_rng(randomization.seed if seed is None else seed)
        self.draws = np.empty((nbatch, self.bound.ncolumns))

    def redraw(self, ids: np.ndarray) -> np.ndarray:
        """New draws for environments `ids` (in that order, from the generator); the rows."""
        rows = self.bound.draw(self.rng, len(ids))
        self.set_draws(ids, rows)
        return rows

    def set_draws(self, ids: np.ndarray, draws: np.ndarray) -> None:
        self.draws[ids] = draws

    def model_of(self, env: int) -> mujoco.MjModel:
        """A stand-alone copy of environment `env`'s model."""
        model = copy.copy(self.nominal)
        self.bound.apply(model, self.draws[env], mujoco.MjData(model))
        return model


class Parameters(Draws):
    """The draws of `nbatch` environments written into `batch`'s per-simulation fields."""

    def __init__(self, model: mujoco.MjModel, randomization: Randomization, nbatch: int, seed: int | None,
                 batch):
        super().__init__(model, randomization, nbatch, seed)
        self.batch = batch
        self._writes = [(entry.mode, where, write, batch.expand(write.field).reshape(nbatch, -1))
                        for entry, where, writes in
                        zip(self.bound.entries, self.bound.slices, self.bound.writes, strict=True)
                        for write in writes]
        self.structural = any((e.element, e.attribute) in _STRUCTURAL for e in self.bound.entries)
        sized = self.bound.sized_geoms
        self._size, self._rbound, self._aabb = ((batch.expand("geom_size"), batch.expand("geom_rbound"),
                                                 batch.expand("geom_aabb")) if sized else (None,) * 3)
        self._scratch = copy.copy(model) if sized else None  # fit_bounds' scratch model

    def set_draws(self, ids: np.ndarray, draws: np.ndarray) -> None:
        """Environments `ids` take these draws (rows made by `bound.draw`; a Ray worker
        gets them from the driver, which owns the generator): their values, and the
        constants MuJoCo derives from them."""
        super().set_draws(ids, draws)
        ids = np.asarray(ids)
        for mode, where, write, values in self._writes:
            values[np.ix_(ids, write.flat)] = write.values(mode, draws[:, where])
        if self.bound.sized_geoms:
            self._fit_bounds(ids)
        if self.structural and len(ids):
            self.batch.set_const(np.sort(ids))

    def _fit_bounds(self, ids) -> None:
        """The compiler's bounds of each resized geom (fit_bounds on a scratch model)."""
        scratch = self._scratch
        for env in ids.tolist():
            for geom in self.bound.sized_geoms:
                scratch.geom_size[geom] = self._size[env, geom]
                fit_bounds(scratch, geom)
                self._rbound[env, geom] = scratch.geom_rbound[geom]
                self._aabb[env, geom] = scratch.geom_aabb[geom]

    def swap_in(self, model: mujoco.MjModel, env: int) -> None:
        """Makes `model` (a copy of the nominal model) environment `env`'s model: the
        batch's per-simulation fields, and after a structural change the statistics
        the compiler would give (Batch holds no per-simulation stat; mj_step does
        not read it)."""
        self.batch.get_model(env, model)
        if self.structural:
            compiled_statistics(model)

    def model_of(self, env: int) -> mujoco.MjModel:
        """A stand-alone copy of environment `env`'s model, the one the batch runs."""
        model = copy.copy(self.nominal)
        self.swap_in(model, env)
        return model

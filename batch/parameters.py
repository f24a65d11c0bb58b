"""Each environment's randomized model values, kept as numpy rows, and swapped
into a worker's model just before that environment runs.

One MjModel copy per environment would hold every mesh and height field once
per environment (19 MB for Barkour on its height field: 19 GB for 1024
environments). Instead a worker thread owns one model copy and, before it
steps environment i, writes i's values into it (a few numpy stores). A reset
draws new rows for all the named environments at once. Where an attribute
feeds constants MuJoCo's compiler derives at qpos0 (masses, inertias,
positions, armature, gear), those are computed once per reset with
`mj_setConst` and kept as rows too, so the swapped-in model is exactly the
model MuJoCo would compile with those values.
"""

from __future__ import annotations

import copy

import mujoco
import numpy as np

from .randomization import Bound, Randomization, fit_bounds, model_field

# What mj_setConst writes (mujoco 4.0): the qpos0 constants a changed mass,
# inertia, body position, armature or gear moves, and, for a resized geom, its
# bounding sphere and its body's bounding-volume hierarchy. Checked by a test
# that a swapped-in model equals a copy given the same values and mj_setConst.
DERIVED_FIELDS = ("body_subtreemass", "body_invweight0", "dof_invweight0", "dof_M0", "dof_length",
                  "tendon_invweight0", "tendon_length0", "actuator_acc0", "actuator_length0",
                  "cam_pos0", "cam_poscom0", "cam_mat0", "light_pos0", "light_poscom0", "light_dir0",
                  "flexedge_length0", "flexedge_invweight0")
SIZE_DERIVED_FIELDS = ("geom_rbound", "bvh_aabb")
# attributes whose change reaches the derived constants
_STRUCTURAL = {("body", "mass"), ("body", "inertia"), ("body", "pos"), ("joint", "armature"),
               ("actuator", "gear"), ("geom", "size")}


def _derived_parts(model, bound) -> list[tuple[str, np.ndarray]]:
    """(field, flat indices) of the derived constants this randomization moves:
    mj_setConst's fields, and for resized geoms only their rows (a mesh-heavy
    model's bounding-volume hierarchy is large: Barkour's is 100k values)."""
    parts = [(name, np.arange(getattr(model, name).size)) for name in DERIVED_FIELDS
             if getattr(model, name).size]
    if bound.sized_geoms:
        parts.append(("geom_rbound", np.array(sorted(set(bound.sized_geoms)))))
        nodes = [np.arange(model.body_bvhadr[b], model.body_bvhadr[b] + model.body_bvhnum[b])
                 for b in sorted({int(model.geom_bodyid[g]) for g in bound.sized_geoms})
                 if model.body_bvhadr[b] >= 0]
        if nodes:
            node = np.concatenate(nodes)
            parts.append(("bvh_aabb", (node[:, None] * 6 + np.arange(6)).reshape(-1)))
    return parts


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
    """Rows of randomized values for `nbatch` environments of one model, ready to be
    swapped into a worker's model."""

    def __init__(self, model: mujoco.MjModel, randomization: Randomization, nbatch: int, seed: int | None):
        super().__init__(model, randomization, nbatch, seed)
        self._writes = [(entry.mode, where, write) for entry, where, writes in
                        zip(self.bound.entries, self.bound.slices, self.bound.writes, strict=True)
                        for write in writes]
        self.values = [np.empty((nbatch, len(w.flat))) for _, _, w in self._writes]
        self.structural = any((e.element, e.attribute) in _STRUCTURAL for e in self.bound.entries)
        self.derived = _derived_parts(model, self.bound) if self.structural else []
        self.derived_values = [np.empty((nbatch, len(flat))) for _, flat in self.derived]
        self.stat_values = np.empty((nbatch, 2))  # meaninertia, meanmass
        self._scratch = self._scratch_data = None  # made on the first draw that needs them

    def set_draws(self, ids: np.ndarray, draws: np.ndarray) -> None:
        """Environments `ids` take these draws (rows made by `bound.draw`; a Ray worker
        gets them from the driver, which owns the generator): their values, and the
        constants MuJoCo derives from them."""
        super().set_draws(ids, draws)
        for (mode, where, write), values in zip(self._writes, self.values, strict=True):
            values[ids] = write.values(mode, draws[:, where])
        if self.structural:
            self._derive(ids)

    def _derive(self, ids) -> None:
        """The derived constants of environments `ids`, one mj_setConst each on a
        scratch copy (it holds the GIL: worker threads would not share the work)."""
        if self._scratch is None:
            self._scratch, self._scratch_data = copy.copy(self.nominal), mujoco.MjData(self.nominal)
            # flat views of the scratch model's derived fields, made once (a view per read costs ~1 us)
            self._scratch_views = [getattr(self._scratch, name).reshape(-1) for name, _ in self.derived]
        model, data = self._scratch, self._scratch_data
        for env in ids:
            self._write_values(model, env)
            self.bound.derive(model, data)
            for view, (_, flat), values in zip(self._scratch_views, self.derived, self.derived_values,
                                               strict=True):
                values[env] = view[flat]
            self.stat_values[env] = model.stat.meaninertia, model.stat.meanmass

    def _write_values(self, model, env) -> None:
        for (_, _, write), values in zip(self._writes, self.values, strict=True):
            model_field(model, write.field)[write.flat] = values[env]

    def swap_in(self, model: mujoco.MjModel, env: int) -> None:
        """Makes `model` (a copy of the nominal model) environment `env`'s model."""
        self._write_values(model, env)
        for geom in self.bound.sized_geoms:
            fit_bounds(model, geom)
        if self.structural:
            for (name, flat), values in zip(self.derived, self.derived_values, strict=True):
                getattr(model, name).reshape(-1)[flat] = values[env]
            model.stat.meaninertia, model.stat.meanmass = self.stat_values[env]

    def model_of(self, env: int) -> mujoco.MjModel:
        """A stand-alone copy of environment `env`'s model, as a worker swaps it in."""
        model = copy.copy(self.nominal)
        self.swap_in(model, env)
        return model


"""MuJoCo's equivalent inertia box of a body (what its viewer draws), bpy-free."""

from __future__ import annotations

import numpy as np


def equivalent_boxes(model) -> np.ndarray:
    """(nbody, 3): `equivalent_box` of every body, zeros for one without mass."""
    mass = np.maximum(model.body_mass, 1e-300)[:, None]
    ix, iy, iz = model.body_inertia.T
    half = np.sqrt(np.maximum(0.0, 1.5 / mass * np.stack([iy + iz - ix, ix + iz - iy, ix + iy - iz], axis=1)))
    return np.where(model.body_mass[:, None] > 0, half, 0.0)


def equivalent_box(model, body: int) -> np.ndarray | None:
    """Half sizes of the uniform box with the body's mass and principal inertia, in
    its inertial frame (body_ipos, body_iquat); None for a body without mass."""
    mass = float(model.body_mass[body])
    if mass <= 0:
        return None
    ix, iy, iz = model.body_inertia[body]
    return np.sqrt(np.maximum(0.0, 1.5 / mass * np.array([iy + iz - ix, ix + iz - iy, ix + iy - iz])))

"""Height-field terrain under sample points, for many environments at once.

MuJoCo's height field `h` spans [-size[0], size[0]] x [-size[1], size[1]] of
its geom's frame; row r of `hfield_data` (nrow x ncol, values 0..1) lies at
y = (2 r / (nrow - 1) - 1) size[1], column c at x = (2 c / (ncol - 1) - 1)
size[0], and a value v stands v size[2] above the geom's origin. Each cell is
two triangles split along its (r, c)-(r+1, c+1) diagonal, as MuJoCo's
collision and ray casting see it; the height at a point is that triangle's
plane there (checked against `mj_ray` by the tests).
"""

from __future__ import annotations

import mujoco
import numpy as np

from ..engine.errors import MJBlendError


class HeightFieldError(MJBlendError, ValueError):
    pass


def terrain_geom(model: mujoco.MjModel, name: str | None) -> int:
    """The geom whose height field to sample: a geom by name, a height-field asset
    by name (used by exactly one geom), or the model's only height-field geom."""
    hfield_geoms = np.flatnonzero(model.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD)
    if name is None:
        if len(hfield_geoms) != 1:
            raise HeightFieldError(f"the model has {len(hfield_geoms)} height-field geoms; name one")
        return int(hfield_geoms[0])
    geom = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)
    if geom >= 0:
        if geom not in hfield_geoms:
            raise HeightFieldError(f"geom '{name}' is not a height field")
        return geom
    asset = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_HFIELD, name)
    if asset < 0:
        raise HeightFieldError(f"the model has no height-field geom or asset named '{name}'")
    users = [g for g in hfield_geoms if model.geom_dataid[g] == asset]
    if len(users) != 1:
        raise HeightFieldError(f"height field '{name}' is used by {len(users)} geoms; name the geom")
    return int(users[0])


def surface_height(model: mujoco.MjModel, hfield: int, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Terrain height (in the geom's frame, along its z) at points (x, y) of the geom's
    frame, any shape; NaN outside the field."""
    nrow, ncol = int(model.hfield_nrow[hfield]), int(model.hfield_ncol[hfield])
    sx, sy, sz = model.hfield_size[hfield][:3]
    adr = int(model.hfield_adr[hfield])
    data = model.hfield_data[adr:adr + nrow * ncol].reshape(nrow, ncol)
    # continuous grid coordinates: column along x, row along y
    u = (x / sx + 1) * 0.5 * (ncol - 1)
    v = (y / sy + 1) * 0.5 * (nrow - 1)
    inside = (u >= 0) & (u <= ncol - 1) & (v >= 0) & (v <= nrow - 1)
    c = np.clip(np.floor(u).astype(int), 0, ncol - 2)
    r = np.clip(np.floor(v).astype(int), 0, nrow - 2)
    fu, fv = np.clip(u - c, 0, 1), np.clip(v - r, 0, 1)
    h00, h11 = data[r, c], data[r + 1, c + 1]
    h01, h10 = data[r, c + 1], data[r + 1, c]   # (row, column)
    # below the diagonal (fu >= fv): triangle (r,c) (r,c+1) (r+1,c+1); above it: (r,c) (r+1,c) (r+1,c+1)
    lower = fu >= fv
    height = np.where(lower, h00 + fu * (h01 - h00) + fv * (h11 - h01),
                      h00 + fv * (h10 - h00) + fu * (h11 - h10))
    return np.where(inside, height * sz, np.nan)


def sample(model, hfield_geom: int, body_pos, body_mat, geom_pos, geom_mat, points):
    """Heights and clearances of `points` (P, 3) given in a body's frame, for n
    environments: body_pos (n, 3), body_mat (n, 3, 3), the terrain geom's geom_pos /
    geom_mat likewise. Returns (heights (n, P): the terrain's world z under each
    point, clearances (n, P): the point's height above the terrain along the
    terrain's z axis); NaN where a point is outside the field."""
    world = body_pos[:, None, :] + np.einsum("nij,pj->npi", body_mat, points)
    local = np.einsum("nji,npj->npi", geom_mat, world - geom_pos[:, None, :])
    height = surface_height(model, int(model.geom_dataid[hfield_geom]), local[..., 0], local[..., 1])
    surface = local.copy()
    surface[..., 2] = height
    world_surface = geom_pos[:, None, :] + np.einsum("nij,npj->npi", geom_mat, surface)
    return world_surface[..., 2], local[..., 2] - height

"""MuJoCo's own fit of a primitive to a triangle mesh, and which primitive fits best (bpy-free)."""

from __future__ import annotations

import math

import mujoco
import numpy as np

PRIMITIVES = ("SPHERE", "BOX", "CYLINDER", "CAPSULE", "ELLIPSOID")  # ties go to the first
TIE = 2e-3  # relative volume difference under which two fits count as equally good


def fit_primitive(verts, tris, geom_type: str, aabb: bool = True):
    """MuJoCo's compiler fits `geom_type` to the mesh (its bounding box, or with
    `aabb` False the equivalent inertia box): (size, pos, quat) in the mesh's
    frame, and the mesh's volume. ValueError: MuJoCo cannot use the mesh."""
    spec = mujoco.MjSpec()
    spec.compiler.fitaabb = aabb
    spec.add_mesh(name="fitted", uservert=verts.ravel().tolist(), userface=tris.ravel().tolist())
    body = spec.worldbody.add_body()
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname="fitted", density=1.0)
    primitive = spec.worldbody.add_body()
    primitive.add_geom(type=getattr(mujoco.mjtGeom, "mjGEOM_" + geom_type), meshname="fitted")
    model = spec.compile()
    return (np.array(model.geom_size[1]), np.array(model.geom_pos[1]), np.array(model.geom_quat[1]),
            float(model.body_mass[1]))  # density 1: the mass is the volume


def primitive_volume(geom_type: str, size) -> float:
    r, a, b = size[0], size[1], size[2]
    return {"SPHERE": 4 / 3 * math.pi * r ** 3,
            "CAPSULE": math.pi * r * r * 2 * a + 4 / 3 * math.pi * r ** 3,
            "CYLINDER": math.pi * r * r * 2 * a,
            "BOX": 8 * r * a * b,
            "ELLIPSOID": 4 / 3 * math.pi * r * a * b}[geom_type]


def best_primitive(verts, tris, aabb: bool = True):
    """(type, size, pos, quat): the primitive whose fitted volume is closest to the
    mesh's. ValueError if MuJoCo can fit none."""
    best = None
    for geom_type in PRIMITIVES:
        try:
            size, pos, quat, volume = fit_primitive(verts, tris, geom_type, aabb)
        except ValueError:
            continue  # a shape the mesh gives no size (a flat capsule): not a candidate
        error = abs(primitive_volume(geom_type, size) - volume) / volume
        if best is None or error < best[0] - TIE:
            best = (error, geom_type, size, pos, quat)
    if best is None:
        raise ValueError("no primitive fits this mesh")
    return best[1:]

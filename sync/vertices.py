"""Flex and skin vertices -> a Blender mesh."""

from __future__ import annotations

import numpy as np


def write_vertices(mesh, verts, world=None) -> bool:
    """Write world-space vertices (N, 3) to `mesh`, mapped by `world` (a 4x4 matrix:
    MuJoCo's world in the mesh object's frame, None for the identity). False, and
    nothing written, when the mesh was edited into another vertex count."""
    if len(verts) != len(mesh.vertices):
        return False
    if world is not None:
        matrix = np.array(world)
        verts = verts @ matrix[:3, :3].T + matrix[:3, 3]
    mesh.vertices.foreach_set("co", np.asarray(verts, dtype=np.float32).ravel())
    mesh.update()
    return True

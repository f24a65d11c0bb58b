"""Where a new import is looked at: the 3D views of the window frame the model's bodies.

MuJoCo's own statistics (stat.center / extent) count the floor: an infinite plane
adds a box of 2 m, a 40 m floor 8 m, a height field all of its size. Viewed from
there a robot is a speck, so the framing box is the model's bodies' geoms instead:
what a user means by "the model".
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

PLANE, HFIELD, MESH = (int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_HFIELD),
                       int(mujoco.mjtGeom.mjGEOM_MESH))
SENSOR_WIDTH = 36.0  # mm: the sensor a 3D view's lens is measured against (Blender's own)
MARGIN = 1.1  # of the bounding sphere: a little air around the model


def model_bounds(model: mujoco.MjModel, data: mujoco.MjData,
                 hidden_groups: range) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) world corners of the box around the model's bodies at `data`'s pose:
    the geoms of every body but the world body (mesh vertices, the others' boxes), planes
    and height fields left out (floors, terrain), of those shown (not in `hidden_groups`)
    when there are any; flex vertices too. A model with nothing else frames its world geoms but
    planes, then MuJoCo's own centre and extent."""
    points = [np.asarray(data.flexvert_xpos).reshape(-1, 3)]
    types, groups = np.asarray(model.geom_type), np.asarray(model.geom_group)
    shape = (types != PLANE) & (types != HFIELD)
    on_body = np.asarray(model.geom_bodyid) > 0
    shown = ~np.isin(groups, list(hidden_groups))
    for chosen in (on_body & shape & shown, on_body & shape, types != PLANE):
        if chosen.any():
            points.append(_geom_corners(model, data, np.flatnonzero(chosen)))
            break
    points = np.concatenate(points)
    if not len(points):
        center, half = np.asarray(model.stat.center, dtype=float), 0.5 * float(model.stat.extent)
        return center - half, center + half
    return points.min(axis=0), points.max(axis=0)


def _geom_corners(model, data, ids) -> np.ndarray:
    """World points around the geoms `ids`: a mesh's vertices (a mesh's box, turned
    with its geom, can reach well beyond the mesh: a robot's base under the floor),
    the 8 corners of the others' boxes (geom_aabb: centre and half sizes in the geom's
    frame; exact for boxes)."""
    meshes = [g for g in ids if model.geom_type[g] == MESH and model.geom_dataid[g] >= 0]
    others = np.setdiff1d(ids, meshes)
    aabb = np.asarray(model.geom_aabb)[others]
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    points = [_to_world(data, others, aabb[:, None, :3] + signs[None] * aabb[:, None, 3:])]
    mesh_vert, rotations = np.asarray(model.mesh_vert), np.asarray(data.geom_xmat).reshape(-1, 3, 3)
    for g in meshes:  # in the geom's frame (MuJoCo moves a mesh to its inertial frame)
        start = int(model.mesh_vertadr[model.geom_dataid[g]])
        vertices = mesh_vert[start:start + int(model.mesh_vertnum[model.geom_dataid[g]])]
        # (one matrix product, and only the box kept: the Panda's 397,000 vertices
        # took 54 ms through einsum, a list of every point and a column-wise min)
        world = rotations[g] @ vertices.T  # (3, n): rows reduce fast, columns do not
        points.append(np.stack((world.min(axis=1), world.max(axis=1))) + data.geom_xpos[g])
    return np.concatenate(points)


def _to_world(data, ids, local) -> np.ndarray:
    """Points (n, k, 3) in the frames of geoms `ids`, in world coordinates (n * k, 3)."""
    rotation = np.asarray(data.geom_xmat)[ids].reshape(-1, 3, 3)
    world = np.einsum("nij,nkj->nki", rotation, local) + np.asarray(data.geom_xpos)[ids][:, None]
    return world.reshape(-1, 3)


def fit_distance(radius: float, lens: float, width: int, height: int, perspective: bool) -> float:
    """The 3D view's distance (RegionView3D.view_distance) at which a sphere of `radius`
    fills the narrower side of a `width` x `height` region, as Blender draws a view that
    is not a camera's: the view's `lens` against a 36 mm sensor, zoomed by 2, along the
    wider side (`ED_view3d_radius_to_dist` in Blender's source). Orthographic views
    show 2 * distance * 36 / lens along the wider side."""
    aspect = max(width, height) / max(min(width, height), 1)
    tangent = SENSOR_WIDTH / lens / aspect  # of the half-angle along the narrower side
    if perspective:
        return radius / math.sin(math.atan(tangent))  # the sphere touches the view's edges
    return radius / tangent


def frame_views(window, low, high) -> int:
    """Point every 3D view of `window` (each region of a quad view) at the box
    (low, high), keeping its angle, and return how many were moved. Views that look
    through a camera or are locked to an object are left as the user set them."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    center = tuple(float(c) for c in (low + high) / 2)
    radius = max(float(np.linalg.norm(high - low)) / 2, 1e-3) * MARGIN
    moved = 0
    for area in window.screen.areas:
        if area.type != "VIEW_3D":
            continue
        space = area.spaces.active
        if space.lock_object is not None:
            continue
        for region in area.regions:
            view = region.data if region.type == "WINDOW" else None
            if view is None or view.view_perspective == "CAMERA":
                continue
            distance = fit_distance(radius, space.lens, region.width, region.height,
                                    view.view_perspective == "PERSP")
            view.view_location = center
            # not closer than the near clip plane lets one see (Blender's view_selected)
            view.view_distance = max(distance, 1.5 * space.clip_start)
            moved += 1
        area.tag_redraw()
    return moved

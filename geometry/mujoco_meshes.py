"""Blender meshes for MuJoCo geometry, built from a compiled `mujoco.MjModel`.

Every function returns a NEW mesh datablock (the caller names objects and links
them). Arrays go in with `foreach_set`, never vertex by vertex: an import has to
stay within twice MuJoCo's own load time.

Frames, in one place:
- primitives (`PrimitiveCache`): the geom's local frame, MuJoCo's size convention;
- `mesh_asset`, `hfield_mesh`: the frame of the geom's AUTHORED pos/quat (see
  `mesh_asset` for how the compiler's mesh offset is undone);
- `flex_mesh`, `skin_mesh`: world frame at the pose held by `data`.

Texture coordinates: MuJoCo keeps them with v running down the image (its OBJ
loader stores 1 - v, and OpenGL reads texture rows top first); Blender's v runs
up. Every UV layer here is therefore (u, 1 - v_mujoco).
"""

import bpy
import mujoco
import math

import numpy as np

from .. import blender_compat as compat
from ..engine import frames, skin


GEOM = mujoco.mjtGeom
# MuJoCo's renderer uses a smooth vertex normal only within this cosine of the face normal.
_SMOOTH_COS = 0.8


# --------------------------------------------------------------------------- building blocks

def _new_mesh(name, verts, corners=None, loop_start=None, edges=None, smooth=False):
    """A mesh from arrays.

    verts: (N, 3). corners: vertex index of every face corner, either (F, k) for
    faces of k corners each or flat together with `loop_start` (F,) for mixed
    sizes. edges: (E, 2) loose edges. smooth: bool or (F,) bools.
    """
    mesh = bpy.data.meshes.new(name)
    verts = np.ascontiguousarray(verts, dtype=np.float32).reshape(-1, 3)
    mesh.vertices.add(len(verts))
    mesh.attributes["position"].data.foreach_set("vector", verts.ravel())
    if edges is not None and len(edges):
        edges = np.ascontiguousarray(edges, dtype=np.int32).reshape(-1, 2)
        mesh.edges.add(len(edges))
        mesh.edges.foreach_set("vertices", edges.ravel())
    if corners is not None and len(corners):
        corners = np.asarray(corners, dtype=np.int32)
        if loop_start is None:
            loop_start = np.arange(0, corners.size, corners.shape[1], dtype=np.int32)
        corners = corners.ravel()
        loop_start = np.asarray(loop_start, dtype=np.int32)
        mesh.loops.add(len(corners))
        mesh.attributes[".corner_vert"].data.foreach_set("value", corners)
        mesh.polygons.add(len(loop_start))
        mesh.polygons.foreach_set("loop_start", loop_start)  # each face's corner count follows
        _set_smooth(mesh, np.broadcast_to(np.asarray(smooth, dtype=bool), (len(loop_start),)))
    mesh.update(calc_edges=True)
    return mesh


def _set_smooth(mesh, smooth):
    """Per-face smooth (True) or flat (False) shading."""
    sharp = mesh.attributes.get("sharp_face")
    if smooth.all():  # no "sharp_face" attribute = all smooth
        if sharp is not None:
            mesh.attributes.remove(sharp)
        return
    if sharp is None:
        sharp = mesh.attributes.new("sharp_face", "BOOLEAN", "FACE")
    sharp.data.foreach_set("value", np.ascontiguousarray(~smooth))


def _set_uvs(mesh, uv_per_corner, from_mujoco=True, name="UVMap"):
    """One UV layer, one (u, v) per face corner; MuJoCo texcoords get Blender's v up."""
    uv = np.array(uv_per_corner, dtype=np.float32).reshape(-1, 2)
    if from_mujoco:
        uv[:, 1] = 1.0 - uv[:, 1]
    layer = mesh.uv_layers.new(name=name)
    layer.uv.foreach_set("vector", uv.ravel())


def _set_corner_normals(mesh, normals):
    """Custom normals, one per face corner (the faces must be smooth for Blender < 4.5)."""
    normals = np.ascontiguousarray(normals, dtype=np.float32).reshape(-1, 3)
    if compat.FREE_NORMALS:
        attribute = mesh.attributes.new("custom_normal", "FLOAT_VECTOR", "CORNER")
        attribute.data.foreach_set("vector", normals.ravel())
        return
    _split_fans_where_normals_differ(mesh, normals)
    mesh.normals_split_custom_set(normals)


def _split_fans_where_normals_differ(mesh, normals):
    """Mark sharp every edge across which a vertex's corner normals differ.

    Before 4.5 Blender keeps one custom normal per smooth fan (the corners around
    a vertex joined by smooth edges) and averages what `normals_split_custom_set`
    gives a fan: a corner MuJoCo flattens to its face normal would be blended back
    with its neighbours (measured on Blender 4.2: up to 0.009 off on the robotiq
    gripper; a box-like mesh would shade as a blob). Sharp edges end the fans
    exactly where MuJoCo's normals part, so every corner keeps its own.
    """
    count = len(mesh.loops)
    verts = _corner_ints(mesh, ".corner_vert")
    edges = _corner_ints(mesh, ".corner_edge")
    starts = np.empty(len(mesh.polygons), np.int32)
    mesh.polygons.foreach_get("loop_start", starts)
    # The corner after each corner in its face: corner i's edge runs from verts[i] to verts[after[i]].
    after = np.arange(1, count + 1)
    after[np.append(starts[1:], count) - 1] = starts
    first_is_low = verts <= verts[after]
    # Each corner's edge, described by the normals at its lower and higher vertex.
    low = np.where(first_is_low[:, None], normals, normals[after])
    high = np.where(first_is_low[:, None], normals[after], normals)
    order = np.argsort(edges, kind="stable")
    edges, low, high = edges[order], low[order], high[order]
    first = np.searchsorted(edges, edges)  # the first corner that describes the same edge
    parted = (np.abs(low - low[first]).max(axis=1) > 1e-6) | (np.abs(high - high[first]).max(axis=1) > 1e-6)
    sharp = np.zeros(len(mesh.edges), bool)
    sharp[edges[parted]] = True
    mesh.attributes.new("sharp_edge", "BOOLEAN", "EDGE").data.foreach_set("value", sharp)


def _valid_faces(*corner_arrays):
    """Drop triangles Blender's Mesh.validate() would reject, from all arrays alike.

    The first array holds the (F, 3) vertex indices; the others (per-corner UV or
    normal indices, or None) follow it. Rejected: a repeated vertex, and a later
    face over the same three vertices, whatever its winding. The corpus has such
    repeats, all with opposite winding (double-sided sheets): 745 in 4 Barkour
    meshes, 4 in a soft-foot mesh, 2 in the rodent's skin. Blender shows the face
    it keeps from both sides anyway.
    """
    faces = corner_arrays[0]
    keep = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    ordered = np.sort(faces, axis=1).astype(np.int64)
    n = int(ordered.max(initial=0)) + 1
    key = (ordered[:, 0] * n + ordered[:, 1]) * n + ordered[:, 2]  # exact while n < 2 million
    first = np.zeros(len(faces), dtype=bool)
    first[np.unique(key, return_index=True)[1]] = True
    keep &= first
    if keep.all():
        return corner_arrays
    return tuple(a[keep] if a is not None else None for a in corner_arrays)


def _fmt(x):
    return f"{float(x):.6g}"


# --------------------------------------------------------------------------- primitives

def _lathe(profile, segments):
    """Surface of revolution about Z of a (radius, z) profile listed from top to bottom.

    A profile point of radius 0 becomes one pole vertex. `segments` should be a
    multiple of 4 so that the +-X and +-Y extremes are vertices (exact bounds).
    Returns (verts, flat corners, loop_start), faces facing outward.
    """
    profile = np.asarray(profile, dtype=float)
    radius, z = profile[:, 0], profile[:, 1]
    pole = radius == 0
    phi = 2 * np.pi * np.arange(segments) / segments
    rings = np.empty((len(profile), segments, 3))
    rings[..., 0] = radius[:, None] * np.cos(phi)
    rings[..., 1] = radius[:, None] * np.sin(phi)
    rings[..., 2] = z[:, None]
    kept = np.ones((len(profile), segments), dtype=bool)
    kept[pole, 1:] = False  # a pole is its ring's first vertex, (0, 0, z)
    index = np.cumsum(kept, axis=None).reshape(kept.shape) - 1
    index[pole] = index[pole, :1]  # every corner at a pole is the pole vertex
    # corners upper[i] -> lower[i] -> lower[i+1] -> upper[i+1] run counter-clockwise seen from
    # outside; next to a pole the quad is a triangle, without its second corner at the pole
    i = np.arange(segments)
    j = (i + 1) % segments
    quads = np.stack([index[:-1][:, i], index[1:][:, i], index[1:][:, j], index[:-1][:, j]], axis=-1)
    used = np.ones(quads.shape, dtype=bool)
    used[pole[:-1], :, 3] = False
    used[pole[1:], :, 2] = False
    sizes = used.sum(axis=-1).ravel()
    loop_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return rings[kept], quads[used], loop_start


def _sphere_profile(radius, rings, z_offset=0.0, part="all"):
    """(radius, z) profile of a sphere from the north pole down; part 'top'/'bottom' = hemisphere."""
    theta = np.pi * np.arange(rings + 1) / rings
    r = radius * np.sin(theta)
    r[[0, -1]] = 0.0  # exact poles
    profile = np.column_stack([r, z_offset + radius * np.cos(theta)])
    if part == "top":
        return profile[: rings // 2 + 1]
    if part == "bottom":
        return profile[rings // 2:]
    return profile


def _box(hx, hy, hz):
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    verts = signs * [hx, hy, hz]
    # vertex index = 4*(x>0) + 2*(y>0) + (z>0); each quad counter-clockwise seen from outside
    quads = np.array([[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]])
    return verts, quads


def _cylinder(radius, half, segments):
    """Smooth side and two flat n-gon caps sharing the rim vertices (a closed manifold)."""
    verts, side_corners, side_start = _lathe([(radius, half), (radius, -half)], segments)
    top_cap = np.arange(segments)                       # counter-clockwise seen from +Z
    bottom_cap = segments + np.arange(segments)[::-1]   # counter-clockwise seen from -Z
    corners = np.concatenate([side_corners, top_cap, bottom_cap])
    loop_start = np.concatenate([side_start, [len(side_corners), len(side_corners) + segments]])
    smooth = np.r_[np.ones(len(side_start), bool), False, False]
    return verts, corners, loop_start, smooth


class PrimitiveCache:
    """One shared Blender mesh per distinct primitive shape (geom type + the sizes it uses).

    Shapes follow MuJoCo's size convention in the geom's local frame:
    sphere radius; capsule radius + half-length of the cylinder part along Z
    (caps add a radius); ellipsoid radii; cylinder radius + half-height; box
    half-sizes; plane half-sizes in X, Y at z=0, facing +Z.

    A plane half-size of 0 (MuJoCo's infinite plane) is shown as
    `infinite_extent` (default 10 m, a half-size: a 20 m floor); pass
    another value to the constructor or to `get`, e.g. a multiple of
    `model.stat.extent`. Round shapes are smooth shaded with `segments`
    around (a multiple of 4) and `segments // 2` rings from pole to pole.
    """

    _USED = {GEOM.mjGEOM_PLANE: 2, GEOM.mjGEOM_SPHERE: 1, GEOM.mjGEOM_CAPSULE: 2,
             GEOM.mjGEOM_ELLIPSOID: 3, GEOM.mjGEOM_CYLINDER: 2, GEOM.mjGEOM_BOX: 3}

    def __init__(self, segments: int = 32, infinite_extent: float = 10.0):
        if segments < 4 or segments % 4:
            raise ValueError(f"segments must be a positive multiple of 4, not {segments}")
        self.segments = segments
        self.infinite_extent = float(infinite_extent)
        self._meshes = {}

    def get(self, geom_type: int, size, infinite_extent: float = None) -> bpy.types.Mesh:
        geom_type = GEOM(int(geom_type))
        if geom_type not in self._USED:
            raise ValueError(f"{geom_type.name} is not a primitive geom type")
        shape = tuple(round(float(s), 9) for s in list(size)[: self._USED[geom_type]])
        if geom_type == GEOM.mjGEOM_PLANE:
            extent = self.infinite_extent if infinite_extent is None else float(infinite_extent)
            # negative marks "infinite": MuJoCo draws a zero (and an infinite) half-size so
            shape = tuple(s if 0 < s < math.inf else -extent for s in shape)
        key = (int(geom_type), shape)
        mesh = self._meshes.get(key)
        if mesh is not None:
            try:
                mesh.name  # noqa: B018  (raises once the user has deleted the datablock)
                return mesh
            except ReferenceError:
                pass
        mesh = self._build(geom_type, shape)
        self._meshes[key] = mesh
        return mesh

    def _build(self, geom_type, s):
        seg, rings = self.segments, self.segments // 2
        if geom_type == GEOM.mjGEOM_BOX:
            verts, quads = _box(*s)
            return _new_mesh(f"box {_fmt(s[0])} {_fmt(s[1])} {_fmt(s[2])}", verts, quads)
        if geom_type == GEOM.mjGEOM_PLANE:
            return _plane(s)
        if geom_type == GEOM.mjGEOM_CYLINDER:
            verts, corners, start, smooth = _cylinder(s[0], s[1], seg)
            # (smooth sides, flat caps: Blender splits the normals between them by itself)
            return _new_mesh(f"cylinder r{_fmt(s[0])} h{_fmt(s[1])}", verts, corners, start, smooth=smooth)
        if geom_type == GEOM.mjGEOM_CAPSULE:
            profile = _sphere_profile(s[0], rings)  # half-length 0: a sphere, no doubled equator
            if s[1] > 0:
                profile = np.concatenate([_sphere_profile(s[0], rings, s[1], "top"),
                                          _sphere_profile(s[0], rings, -s[1], "bottom")])
            name = f"capsule r{_fmt(s[0])} h{_fmt(s[1])}"
        elif geom_type == GEOM.mjGEOM_SPHERE:
            profile = _sphere_profile(s[0], rings)
            name = f"sphere r{_fmt(s[0])}"
        else:  # ellipsoid: a unit sphere scaled per axis
            profile = _sphere_profile(1.0, rings)
            name = f"ellipsoid {_fmt(s[0])} {_fmt(s[1])} {_fmt(s[2])}"
        verts, corners, start = _lathe(profile, seg)
        if geom_type == GEOM.mjGEOM_ELLIPSOID:
            verts = verts * s
        return _new_mesh(name, verts, corners, start, smooth=True)


def _plane(s):
    """A quad; negative half-sizes stand for MuJoCo's infinite axes, shown at their magnitude.

    UVs follow MuJoCo's renderer before texrepeat: 0..1 across a finite axis,
    0.5 per metre along an infinite one.
    """
    hx, hy = abs(s[0]), abs(s[1])
    verts = np.array([[-hx, -hy, 0], [hx, -hy, 0], [hx, hy, 0], [-hx, hy, 0]], dtype=float)
    label = " ".join("inf" if v < 0 else _fmt(v) for v in s)
    mesh = _new_mesh(f"plane {label}", verts, np.array([[0, 1, 2, 3]]))
    uv = np.column_stack([
        (verts[:, 0] + hx) / (2 * hx) if s[0] > 0 else 0.5 * verts[:, 0],
        (verts[:, 1] + hy) / (2 * hy) if s[1] > 0 else 0.5 * verts[:, 1],
    ])
    _set_uvs(mesh, uv, from_mujoco=False)
    return mesh


# --------------------------------------------------------------------------- mesh assets

def mesh_vertices_authored(model, mesh_id: int) -> np.ndarray:
    """Vertices of mesh `mesh_id` in the frame of a geom's authored pos/quat (float64, (N, 3)).

    The compiler moves mesh vertices into the mesh's inertial frame and folds
    the move into the geom: compiled geom pose = authored pose * (mesh_pos,
    mesh_quat). Undoing it: v_authored = mesh_pos + R(mesh_quat) @ mesh_vert.
    Checked on every mesh geom of the corpus (worst 4e-8 m: float32 vertices). With
    refpos/refquat identity this is the file's vertices times `scale`; otherwise
    it is MuJoCo's reference frame: scale * R(refquat)^T (v_file - refpos).
    """
    adr, num = model.mesh_vertadr[mesh_id], model.mesh_vertnum[mesh_id]
    rot = frames.quat_matrices(model.mesh_quat[mesh_id])
    return model.mesh_pos[mesh_id] + model.mesh_vert[adr:adr + num].astype(np.float64) @ rot.T


def mesh_asset(model, mesh_id: int, name: str) -> bpy.types.Mesh:
    """Blender mesh of MJCF <mesh> `mesh_id`, to be placed at the geom's authored pos/quat.

    Vertices: `mesh_vertices_authored` (count = mesh_vertnum). Faces: mesh_face
    (count = mesh_facenum less the faces Blender cannot hold, see `_valid_faces`).
    UVs: mesh_texcoord per face corner when the mesh has texcoords. Normals:
    custom per-corner normals chosen as MuJoCo's renderer does (mesh_normal, but
    the face normal where they differ by more than acos(0.8) on meshes without
    texcoords), so Blender shades like MuJoCo.
    """
    rot = frames.quat_matrices(model.mesh_quat[mesh_id])
    verts = mesh_vertices_authored(model, mesh_id)
    fadr, fnum = model.mesh_faceadr[mesh_id], model.mesh_facenum[mesh_id]
    faces = model.mesh_face[fadr:fadr + fnum]
    normal_idx = model.mesh_facenormal[fadr:fadr + fnum] if model.mesh_normalnum[mesh_id] else None
    has_uv = model.mesh_texcoordadr[mesh_id] >= 0 and model.mesh_texcoordnum[mesh_id] > 0
    uv_idx = model.mesh_facetexcoord[fadr:fadr + fnum] if has_uv else None
    faces, normal_idx, uv_idx = _valid_faces(faces, normal_idx, uv_idx)

    mesh = _new_mesh(name, verts, faces, smooth=normal_idx is not None)
    if uv_idx is not None:
        tadr = model.mesh_texcoordadr[mesh_id]
        _set_uvs(mesh, model.mesh_texcoord[tadr + uv_idx.ravel()])
    if normal_idx is not None:
        nadr = model.mesh_normaladr[mesh_id]
        normals = model.mesh_normal[nadr + normal_idx].astype(np.float64)  # (F, 3, 3)
        if uv_idx is None:
            compiled = model.mesh_vert[model.mesh_vertadr[mesh_id] + faces].astype(np.float64)
            normals = _flatten_sharp_corners(compiled, normals)
        _set_corner_normals(mesh, (normals @ rot.T).reshape(-1, 3))
    return mesh


def _flatten_sharp_corners(triangles, corner_normals):
    """MuJoCo's rule: a corner normal more than acos(0.8) off its face normal is replaced by it.

    Slivers (|cross| < 1e-10, MuJoCo's own cut-off) keep their vertex normals:
    MuJoCo would give them +Z, which is arbitrary and invisible on a zero-area face.
    """
    face_normal = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    length = np.linalg.norm(face_normal, axis=1, keepdims=True)
    sliver = length < 1e-10
    face_normal = np.divide(face_normal, length, out=np.zeros_like(face_normal), where=~sliver)
    sharp = (np.einsum("fkj,fj->fk", corner_normals, face_normal) < _SMOOTH_COS) & ~sliver
    return np.where(sharp[..., None], face_normal[:, None, :], corner_normals)


# --------------------------------------------------------------------------- height fields

HFIELD_MAX_SIDE = 1024  # samples per side Blender is given; above, every k-th (see hfield_rows)


def hfield_rows(count: int, max_side: int = HFIELD_MAX_SIDE) -> np.ndarray:
    """The sample indices shown along one side: all of them, or every k-th and the last
    (a 20000 x 20000 height field is 400 million samples: MuJoCo holds them in 1.6 GB,
    a Blender mesh of them would need tens of GB)."""
    stride = -(-count // max_side) if count > max_side else 1
    rows = np.arange(0, count, stride)
    return rows if rows[-1] == count - 1 else np.append(rows, count - 1)


def hfield_grid(model, hfield_id: int, max_side: int | None = None) -> np.ndarray:
    """(nrow, ncol, 3) surface points of a height field in its geom's frame, MuJoCo's layout
    (with `max_side`: only the samples of `hfield_rows`).

    Row r is y = size[1] * (2r/(nrow-1) - 1) (row 0 at -y: mjModel's rows are
    the XML/PNG rows bottom-to-top), column c is x = size[0] * (2c/(ncol-1) - 1),
    height = hfield_data[r*ncol + c] * size[2]. Same as MuJoCo's renderer and mj_ray.
    """
    nrow, ncol = model.hfield_nrow[hfield_id], model.hfield_ncol[hfield_id]
    sx, sy, sz, _ = model.hfield_size[hfield_id]
    adr = model.hfield_adr[hfield_id]
    rows, cols = (hfield_rows(nrow, max_side), hfield_rows(ncol, max_side)) if max_side \
        else (np.arange(nrow), np.arange(ncol))
    heights = model.hfield_data[adr:adr + nrow * ncol].reshape(nrow, ncol)[np.ix_(rows, cols)]
    heights = heights.astype(np.float64) * sz
    x = sx * (2 * cols / (ncol - 1) - 1)
    y = sy * (2 * rows / (nrow - 1) - 1)
    grid = np.empty((len(rows), len(cols), 3))
    grid[..., 0] = x[None, :]
    grid[..., 1] = y[:, None]
    grid[..., 2] = heights
    return grid


def hfield_mesh(model, hfield_id: int, name: str) -> bpy.types.Mesh:
    """Closed solid of height field `hfield_id`, in the frame of the geom that uses it.

    Top: the nrow x ncol samples (vertex r*ncol + c = sample (r, c), see
    `hfield_grid`), two triangles per cell split along (r, c)-(r+1, c+1) as
    MuJoCo does. Base: the box MuJoCo adds below, bottom face at z = -size[3],
    side walls following the terrain's border; one bottom n-gon. Flat shaded.
    Works for zero-filled (runtime) height fields too: a flat top at z = 0.
    Above HFIELD_MAX_SIDE samples a side, every k-th sample (see hfield_rows).
    """
    grid = hfield_grid(model, hfield_id, HFIELD_MAX_SIDE)
    nrow, ncol = grid.shape[:2]
    top = grid.reshape(-1, 3)
    idx = np.arange(nrow * ncol).reshape(nrow, ncol)
    a, b = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel()    # (r, c), (r, c+1)
    c, d = idx[1:, :-1].ravel(), idx[1:, 1:].ravel()      # (r+1, c), (r+1, c+1)
    tris = np.concatenate([np.column_stack([a, d, c]), np.column_stack([a, b, d])])

    # border of the grid, counter-clockwise seen from +Z: bottom row, right column, top row, left column
    ring = np.concatenate([idx[0, :-1], idx[:-1, -1], idx[-1, :0:-1], idx[:0:-1, 0]])
    base = top[ring].copy()
    base[:, 2] = -model.hfield_size[hfield_id][3]
    nb = len(ring)
    below = len(top) + np.arange(nb)
    nxt = np.roll(np.arange(nb), -1)
    walls = np.column_stack([ring, below, below[nxt], ring[nxt]])  # outward facing
    bottom = below[::-1]

    corners = np.concatenate([tris.ravel(), walls.ravel(), bottom])
    loop_start = np.concatenate([np.arange(len(tris)) * 3,
                                 3 * len(tris) + 4 * np.arange(len(walls)),
                                 [3 * len(tris) + 4 * len(walls)]])
    return _new_mesh(name, np.concatenate([top, base]), corners, loop_start)


# --------------------------------------------------------------------------- flexes and skins

def flex_mesh(model, data, flex_id: int, name: str) -> bpy.types.Mesh:
    """Flex `flex_id` in world coordinates at `data`'s pose (place the object at identity).

    Vertices: data.flexvert_xpos of the flex, which mj_forward fills (mj_kinematics
    alone does not: call mj_flex after it). dim 1: the flex edges as loose edges;
    dim 2: the triangles flex_elem (one side; MuJoCo draws both, offset by
    flex_radius, not reproduced); dim 3: the boundary triangles flex_shell.
    UVs from flex_texcoord when present. Smooth unless flex_flatskin.
    """
    vadr, vnum = model.flex_vertadr[flex_id], model.flex_vertnum[flex_id]
    verts = np.asarray(data.flexvert_xpos[vadr:vadr + vnum], dtype=np.float64)
    dim = int(model.flex_dim[flex_id])
    if dim == 1:
        eadr, enum = model.flex_edgeadr[flex_id], model.flex_edgenum[flex_id]
        return _new_mesh(name, verts, edges=model.flex_edge[eadr:eadr + enum])

    if dim == 2:
        adr, num = model.flex_elemdataadr[flex_id], model.flex_elemnum[flex_id]
        faces = model.flex_elem[adr:adr + 3 * num].reshape(-1, 3)
        uv_idx = model.flex_elemtexcoord[adr:adr + 3 * num].reshape(-1, 3)
    else:
        adr, num = model.flex_shelldataadr[flex_id], model.flex_shellnum[flex_id]
        faces = model.flex_shell[adr:adr + 3 * num].reshape(-1, 3)
        uv_idx = faces  # MuJoCo's renderer indexes shell texcoords by vertex
    faces, uv_idx = _valid_faces(faces, uv_idx)
    mesh = _new_mesh(name, verts, faces, smooth=not model.flex_flatskin[flex_id])
    tadr = model.flex_texcoordadr[flex_id]
    if tadr >= 0:
        _set_uvs(mesh, model.flex_texcoord[tadr + uv_idx.ravel()])
    return mesh


def skin_mesh(model, data, skin_id: int, name: str) -> bpy.types.Mesh:
    """Skin `skin_id` in world coordinates (place the object at identity).

    Vertices: `engine.skin.skin_vertices` (posed at `data`, e.g. after mj_kinematics at
    qpos0; the raw bind pose when data is None). Faces skin_face less exact
    repeats (the rodent's skin repeats 2), smooth shaded; UVs from
    skin_texcoord (per vertex) when the skin has them.
    """
    faces, = _valid_faces(skin.skin_faces(model, skin_id))
    mesh = _new_mesh(name, skin.skin_vertices(model, data, skin_id), faces, smooth=True)
    tadr = model.skin_texcoordadr[skin_id]
    if tadr >= 0:
        _set_uvs(mesh, model.skin_texcoord[tadr + faces.ravel()])
    return mesh


# --------------------------------------------------------------------------- sdf / plugin geoms

def sdf_or_plugin_mesh(model, geom_id: int, name: str):
    """The mesh asset an SDF (or other plugin) geom refers to, or None when it has none.

    Such geoms are shown through their mesh (geom_dataid); the returned mesh is
    in the same authored frame as `mesh_asset`'s.
    """
    mesh_id = int(model.geom_dataid[geom_id])
    if int(model.geom_type[geom_id]) not in (GEOM.mjGEOM_SDF, GEOM.mjGEOM_MESH) or mesh_id < 0:
        return None
    return mesh_asset(model, mesh_id, name)


__all__ = ["PrimitiveCache", "mesh_asset", "mesh_vertices_authored", "hfield_mesh", "hfield_grid",
           "flex_mesh", "skin_mesh", "sdf_or_plugin_mesh"]


def _coords_and_corners(mesh) -> tuple[np.ndarray, np.ndarray]:
    """Vertex positions (float32, flat) and the vertex of every face corner, read
    as attributes (as `_new_mesh` writes them; ~100x faster than MeshVertex.co)."""
    coords = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.attributes["position"].data.foreach_get("vector", coords)
    return coords, _corner_ints(mesh, ".corner_vert")


def _corner_ints(mesh, attribute: str) -> np.ndarray:
    """One int per face corner, read from a corner attribute (".corner_vert",
    ".corner_edge"; ~100x faster than the MeshLoop properties)."""
    out = np.empty(len(mesh.loops), np.int32)
    mesh.attributes[attribute].data.foreach_get("value", out)
    return out


SIGNATURE_FORM = "sha256:"  # marks a signature of today's form (see mesh_signature)


def mesh_signature(mesh, form: str = SIGNATURE_FORM) -> str:
    """A fingerprint of a mesh's vertices and faces: equal while nobody edits it.
    SHA-256 (a CPU instruction on current machines: about twice as fast as blake2b,
    and the scan hashes every imported mesh); `form` "" gives the unmarked blake2b
    signature of files saved before, to compare with."""
    import hashlib

    coords, corners = _coords_and_corners(mesh)
    digest = hashlib.sha256() if form else hashlib.blake2b(digest_size=16)
    digest.update(coords)  # two updates: the digest of the joined bytes, without joining them
    digest.update(corners)
    return form + digest.hexdigest()


def same_mesh(mesh, signature: str) -> bool:
    """True while `mesh` has the vertices and faces whose `mesh_signature` is `signature`."""
    form = SIGNATURE_FORM if signature.startswith(SIGNATURE_FORM) else ""
    return mesh_signature(mesh, form) == signature


def triangles(mesh) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (V, 3), triangles (T, 3)) of a Blender mesh, as MuJoCo takes them."""
    mesh.calc_loop_triangles()
    coords, _corners = _coords_and_corners(mesh)
    tris = np.empty(len(mesh.loop_triangles) * 3, np.int32)
    mesh.loop_triangles.foreach_get("vertices", tris)
    return coords.reshape(-1, 3).astype(float), tris.reshape(-1, 3)


def textured_triangles(mesh):
    """(vertices, triangles, texcoords) of a mesh with a UV map, for MuJoCo's per-vertex
    texcoords: a vertex is split where its corners carry different UVs. Texcoords
    are MuJoCo's (v = 1 - Blender's v; the import flipped them the other way)."""
    verts, tris = triangles(mesh)
    loops = np.empty(len(mesh.loop_triangles) * 3, np.int32)
    mesh.loop_triangles.foreach_get("loops", loops)
    uv = np.empty(len(mesh.loops) * 2, np.float32)
    mesh.uv_layers.active.data.foreach_get("uv", uv)
    corner_uv = uv.reshape(-1, 2)[loops]
    keys = np.column_stack([tris.ravel(), corner_uv.view(np.int32)])  # exact float bits
    unique, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    new_verts = verts[unique[:, 0]]
    texcoords = corner_uv[first].astype(float)
    texcoords[:, 1] = 1.0 - texcoords[:, 1]
    return new_verts, inverse.reshape(-1, 3), texcoords

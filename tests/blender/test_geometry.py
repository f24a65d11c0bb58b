"""importer/mujoco_meshes.py: Blender meshes for MuJoCo geometry, checked against MuJoCo itself.

Real bpy, real mujoco, real corpus models. Each corpus test runs on the models
of models.tsv that have the feature (meshes, hfields, flexes, skins).
"""

import os
import subprocess
import sys
import time

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, corpus_with, load_corpus_spec, mujoco_skin_vertices, skinned_model
from mathutils.bvhtree import BVHTree

from mjblend import blender_compat as compat
from mjblend.geometry import mujoco_meshes

GEOM = mujoco.mjtGeom
PRIMITIVES = [GEOM.mjGEOM_PLANE, GEOM.mjGEOM_SPHERE, GEOM.mjGEOM_CAPSULE, GEOM.mjGEOM_ELLIPSOID,
              GEOM.mjGEOM_CYLINDER, GEOM.mjGEOM_BOX]
# Blender 4.5+ stores a custom normal per corner as three floats. Before, it
# encodes one as two angles in the normal space of its smooth fan, clamped to the
# fan's span: measured on 4.2 over the corpus, up to 0.0065 off (0.37 degrees),
# and a face of zero area (which has no normal space) keeps none.
NORMAL_TOLERANCE = 2e-3 if compat.FREE_NORMALS else 1e-2
PANDA = "menagerie/franka_emika_panda/scene.xml"
BARKOUR_HFIELD = "menagerie/google_barkour_vb/scene_hfield_mjx.xml"


def verts_of(mesh):
    co = np.empty(3 * len(mesh.vertices), dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3).astype(np.float64)


def corners_of(mesh):
    idx = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("vertex_index", idx)
    return idx


def polygon_sizes(mesh):
    sizes = np.empty(len(mesh.polygons), dtype=np.int32)
    mesh.polygons.foreach_get("loop_total", sizes)
    return sizes


def assert_valid(mesh):
    """Blender's own check finds nothing to fix (it returns True when it had to change the mesh)."""
    assert not mesh.validate(verbose=False), f"{mesh.name}: Mesh.validate() had to fix it"


def unique_faces(faces):
    """Indices of the faces that are no exact repeat (same three vertices) of an earlier one."""
    _, first = np.unique(np.sort(faces, axis=1), axis=0, return_index=True)
    return np.sort(first)


def edge_face_counts(mesh):
    """How many faces use each edge (2 everywhere for a closed manifold surface)."""
    count = np.zeros(len(mesh.edges), dtype=int)
    keys = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("edge_index", keys)
    np.add.at(count, keys, 1)
    return count


def signed_volume(mesh):
    """Volume enclosed by the mesh (positive when faces point outward)."""
    mesh.calc_loop_triangles()
    tri = np.empty(3 * len(mesh.loop_triangles), dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", tri)
    v = verts_of(mesh)[tri.reshape(-1, 3)]
    return np.einsum("ij,ij->i", v[:, 0], np.cross(v[:, 1], v[:, 2])).sum() / 6


def world(points, pos, mat):
    return np.asarray(pos) + np.asarray(points) @ np.asarray(mat).reshape(3, 3).T


def quat_mat(quat):
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.asarray(quat, dtype=np.float64))
    return mat.reshape(3, 3)


# --------------------------------------------------------------------------- mesh assets

def add_authored_sites(spec):
    """For every mesh geom, a site with the geom's authored pos/quat/orientation/frame.

    Sites get no mesh offset, so after compile + kinematics the site's world
    pose is where MuJoCo puts the geom's AUTHORED frame. Returns [(geom, site)].
    """
    pairs = []
    for geom in spec.geoms:
        if geom.type != GEOM.mjGEOM_MESH:
            continue
        assert np.isnan(geom.fromto[0]), "mesh geom with fromto: not covered"
        site = geom.parent.add_site(pos=geom.pos, quat=geom.quat)
        for attr in ("type", "axisangle", "euler", "xyaxes", "zaxis"):
            setattr(site.alt, attr, getattr(geom.alt, attr))
        if geom.frame is not None:
            site.set_frame(geom.frame)
        pairs.append((geom, site))
    return pairs


def check_mesh_asset(model, mesh_id, mesh):
    """Counts, faces, UVs and normals of one Blender mesh against the compiled mesh."""
    vnum, fadr, fnum = model.mesh_vertnum[mesh_id], model.mesh_faceadr[mesh_id], model.mesh_facenum[mesh_id]
    assert len(mesh.vertices) == vnum
    # Blender holds no repeated face (same 3 vertices, e.g. a double-sided sheet): those go
    kept = fadr + unique_faces(model.mesh_face[fadr:fadr + fnum])
    assert len(mesh.polygons) == len(kept)
    faces = model.mesh_face[kept]
    assert np.array_equal(corners_of(mesh), faces.ravel())
    assert_valid(mesh)

    rot = quat_mat(model.mesh_quat[mesh_id])
    tadr = model.mesh_texcoordadr[mesh_id]
    if tadr >= 0:
        uv = np.empty(2 * len(mesh.loops), dtype=np.float32)
        mesh.uv_layers[0].data.foreach_get("uv", uv)
        expect = model.mesh_texcoord[tadr + model.mesh_facetexcoord[kept].ravel()]
        assert np.allclose(uv.reshape(-1, 2), np.column_stack([expect[:, 0], 1 - expect[:, 1]]), atol=1e-6)
    else:
        assert len(mesh.uv_layers) == 0

    # Normals as MuJoCo's renderer draws them: mesh_normal, or the face normal at sharp corners.
    normals = np.empty(3 * len(mesh.loops), dtype=np.float32)
    mesh.corner_normals.foreach_get("vector", normals)
    normals = normals.reshape(-1, 3, 3)
    nadr = model.mesh_normaladr[mesh_id]
    mj = model.mesh_normal[nadr + model.mesh_facenormal[kept]] @ rot.T
    if tadr < 0:
        # face normals as MuJoCo's renderer makes them, from the compiled vertices
        tri = model.mesh_vert[model.mesh_vertadr[mesh_id] + faces].astype(np.float64) @ rot.T
        face_n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        area = np.linalg.norm(face_n, axis=1, keepdims=True)
        face_n = np.divide(face_n, area, out=np.zeros_like(face_n), where=area >= 1e-10)
        cos = np.einsum("fkj,fj->fk", mj, face_n)
        sharp = (cos < 0.8) & (area >= 1e-10)  # slivers keep MuJoCo's vertex normals
        clear = np.abs(cos - 0.8) > 1e-3  # away from the threshold, where rounding could flip it
        if not compat.FREE_NORMALS:
            clear &= area > 0
        mj = np.where(sharp[..., None], face_n[:, None], mj)
        assert np.allclose(normals[clear], mj[clear], atol=NORMAL_TOLERANCE)
    else:
        assert np.allclose(normals, mj, atol=NORMAL_TOLERANCE)


@pytest.mark.parametrize("path", corpus_with("nmesh"))
def test_mesh_assets_sit_where_mujoco_has_them(clean_scene, path):
    spec = load_corpus_spec(path)
    pairs = add_authored_sites(spec)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)

    meshes = [mujoco_meshes.mesh_asset(model, i, model.mesh(i).name or f"mesh{i}")
              for i in range(model.nmesh)]
    for i, mesh in enumerate(meshes):
        check_mesh_asset(model, i, mesh)

    worst = 0.0
    for geom, site in pairs:
        g, s = geom.id, site.id
        mesh_id = model.geom_dataid[g]
        adr, num = model.mesh_vertadr[mesh_id], model.mesh_vertnum[mesh_id]
        mujoco_world = world(model.mesh_vert[adr:adr + num], data.geom_xpos[g], data.geom_xmat[g])
        ours = world(verts_of(meshes[mesh_id]), data.site_xpos[s], data.site_xmat[s])
        worst = max(worst, np.abs(ours - mujoco_world).max())
    assert worst < 1e-5, f"worst vertex error {worst:.3g} m over {len(pairs)} mesh geoms"


def test_mesh_asset_frame_with_refpos_refquat_and_mirror(clean_scene):
    """Vertices are the authored ones times scale; refpos/refquat give MuJoCo's reference frame."""
    raw = np.array([[0, 0, 0], [1, 0, 0], [0, 2, 0], [0, 0, 3], [1, 1, 1]], dtype=float) + [5, 6, 7]
    spec = mujoco.MjSpec()
    scale = np.array([2.0, -1.0, 0.5])  # negative: mirrored, MuJoCo flips face winding
    refpos, refquat = np.array([1.0, 2.0, 3.0]), np.array([0.9, 0.1, 0.3, 0.2])
    spec.add_mesh(name="plain", uservert=raw.ravel().tolist(), scale=scale.tolist())
    spec.add_mesh(name="ref", uservert=raw.ravel().tolist(), scale=scale.tolist(),
                  refpos=refpos.tolist(), refquat=refquat.tolist())
    body = spec.worldbody.add_body(pos=[0.1, 0.2, 0.3], quat=[0.8, 0, 0.6, 0])
    for name in ("plain", "ref"):
        body.add_geom(type=GEOM.mjGEOM_MESH, meshname=name, pos=[0.3, -0.2, 0.1], quat=[1, 0.2, 0, 0.1])
    pairs = add_authored_sites(spec)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)

    plain = mujoco_meshes.mesh_asset(model, 0, "plain")
    ref = mujoco_meshes.mesh_asset(model, 1, "ref")
    # No hull reordering of the 5 points: compare as sets, sorted.
    assert np.allclose(np.sort(verts_of(plain), axis=0), np.sort(raw * scale, axis=0), atol=1e-5)
    rot = quat_mat(refquat / np.linalg.norm(refquat))
    expect = scale * ((raw - refpos) @ rot)  # MuJoCo: scale * R(refquat)^T (v - refpos)
    assert np.allclose(np.sort(verts_of(ref), axis=0), np.sort(expect, axis=0), atol=1e-5)
    for (geom, site), mesh in zip(pairs, (plain, ref), strict=True):
        g, s = geom.id, site.id
        mesh_id = model.geom_dataid[g]
        mujoco_world = world(model.mesh_vert[model.mesh_vertadr[mesh_id]:][:5], data.geom_xpos[g],
                             data.geom_xmat[g])
        assert np.allclose(world(verts_of(mesh), data.site_xpos[s], data.site_xmat[s]), mujoco_world,
                           atol=1e-5)
        assert signed_volume(mesh) > 0, "faces must point outward after a mirroring scale"


def test_sdf_geom_shown_by_its_mesh(clean_scene):
    xml = """
    <mujoco>
      <extension><plugin plugin="mujoco.sdf.torus">
        <instance name="torus">
          <config key="radius1" value="0.35"/><config key="radius2" value="0.15"/>
        </instance>
      </plugin></extension>
      <asset><mesh name="torus"><plugin instance="torus"/></mesh></asset>
      <worldbody><body pos="0.1 0.2 0.3" euler="10 20 30">
        <geom type="sdf" mesh="torus" pos="0.05 0 0" euler="0 30 0"><plugin instance="torus"/></geom>
        <geom type="box" size="0.1 0.1 0.1"/>
      </body></worldbody>
    </mujoco>"""
    spec = mujoco.MjSpec.from_string(xml)
    sdf_geom = spec.geoms[0]
    site = sdf_geom.parent.add_site(pos=sdf_geom.pos, quat=sdf_geom.quat)
    site.alt.type, site.alt.euler = sdf_geom.alt.type, sdf_geom.alt.euler
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    assert mujoco_meshes.sdf_or_plugin_mesh(model, 1, "box") is None
    mesh = mujoco_meshes.sdf_or_plugin_mesh(model, 0, "torus")
    mesh_id = model.geom_dataid[0]
    adr, num = model.mesh_vertadr[mesh_id], model.mesh_vertnum[mesh_id]
    mujoco_world = world(model.mesh_vert[adr:adr + num], data.geom_xpos[0], data.geom_xmat[0])
    ours = world(verts_of(mesh), data.site_xpos[site.id], data.site_xmat[site.id])
    assert np.abs(ours - mujoco_world).max() < 1e-5


# --------------------------------------------------------------------------- primitives

def analytic_extent(geom_type, size):
    """Half-extents of the primitive's bounding box, centred at the origin."""
    s = list(size)
    return {
        GEOM.mjGEOM_SPHERE: [s[0]] * 3,
        GEOM.mjGEOM_CAPSULE: [s[0], s[0], s[1] + s[0]],
        GEOM.mjGEOM_ELLIPSOID: s[:3],
        GEOM.mjGEOM_CYLINDER: [s[0], s[0], s[1]],
        GEOM.mjGEOM_BOX: s[:3],
        GEOM.mjGEOM_PLANE: [s[0], s[1], 0.0],
    }[geom_type]


def analytic_volume(geom_type, s):
    return {
        GEOM.mjGEOM_SPHERE: 4 / 3 * np.pi * s[0] ** 3,
        GEOM.mjGEOM_CAPSULE: 4 / 3 * np.pi * s[0] ** 3 + np.pi * s[0] ** 2 * 2 * s[1],
        GEOM.mjGEOM_ELLIPSOID: 4 / 3 * np.pi * s[0] * s[1] * s[2],
        GEOM.mjGEOM_CYLINDER: np.pi * s[0] ** 2 * 2 * s[1],
        GEOM.mjGEOM_BOX: 8 * s[0] * s[1] * s[2],
    }[geom_type]


def check_bounds(mesh, half):
    v = verts_of(mesh)
    half = np.asarray(half, dtype=float)
    tol = 1e-6 * max(half.max(), 1e-12)
    assert np.allclose(v.max(axis=0), half, rtol=1e-6, atol=tol), (mesh.name, v.max(axis=0), half)
    assert np.allclose(v.min(axis=0), -half, rtol=1e-6, atol=tol), (mesh.name, v.min(axis=0), -half)


SIZES = [(0.05, 0.2, 0.3), (1.0, 1.0, 1.0), (0.003, 0.0125, 0.7), (2.5, 0.01, 0.4)]


@pytest.mark.parametrize("geom_type", PRIMITIVES, ids=lambda t: t.name[7:].lower())
def test_primitive_bounds_volume_and_shading(clean_scene, geom_type):
    cache = mujoco_meshes.PrimitiveCache()
    for size in SIZES:
        mesh = cache.get(geom_type, size)
        check_bounds(mesh, analytic_extent(geom_type, size))
        smooth = np.empty(len(mesh.polygons), dtype=bool)
        mesh.polygons.foreach_get("use_smooth", smooth)
        if geom_type == GEOM.mjGEOM_PLANE:
            assert len(mesh.polygons) == 1 and mesh.polygons[0].normal.z > 0.999
            continue
        # closed, outward, close to the true volume at 32 segments
        assert (edge_face_counts(mesh) == 2).all(), mesh.name
        assert_valid(mesh)
        volume, exact = signed_volume(mesh), analytic_volume(geom_type, size)
        assert 0.95 * exact < volume <= exact * (1 + 1e-6), (mesh.name, volume, exact)
        if geom_type == GEOM.mjGEOM_BOX:
            assert not smooth.any()
        elif geom_type == GEOM.mjGEOM_CYLINDER:
            assert smooth.sum() == len(smooth) - 2  # two flat caps
            normals = np.empty(3 * len(mesh.loops), dtype=np.float32)
            mesh.corner_normals.foreach_get("vector", normals)
            normals = normals.reshape(-1, 3)
            side = np.repeat(smooth, polygon_sizes(mesh))
            assert np.allclose(normals[side][:, 2], 0, atol=1e-6)  # side stays round up to the rim
            assert np.allclose(np.abs(normals[~side][:, 2]), 1, atol=1e-6)
        else:
            assert smooth.all()


def test_capsule_of_zero_length_is_a_clean_sphere(clean_scene):
    mesh = mujoco_meshes.PrimitiveCache().get(GEOM.mjGEOM_CAPSULE, [0.1, 0.0, 0.0])
    check_bounds(mesh, [0.1, 0.1, 0.1])
    assert len(mesh.vertices) == len(mujoco_meshes.PrimitiveCache().get(GEOM.mjGEOM_SPHERE, [0.1]).vertices)
    assert (edge_face_counts(mesh) == 2).all()
    assert_valid(mesh)


def test_primitive_cache_shares_by_shape(clean_scene):
    cache = mujoco_meshes.PrimitiveCache()
    sphere = cache.get(GEOM.mjGEOM_SPHERE, [0.05, 0, 0])
    assert cache.get(GEOM.mjGEOM_SPHERE, np.array([0.05, 0.7, 0.1])) is sphere  # unused sizes ignored
    assert cache.get(GEOM.mjGEOM_SPHERE, [0.05 + 1e-12, 0, 0]) is sphere
    assert cache.get(GEOM.mjGEOM_SPHERE, [0.06, 0, 0]) is not sphere
    assert cache.get(GEOM.mjGEOM_ELLIPSOID, [0.05, 0.05, 0.05]) is not sphere
    capsule = cache.get(GEOM.mjGEOM_CAPSULE, [0.05, 0.2, 0])
    assert capsule.name == "capsule r0.05 h0.2"
    assert cache.get(GEOM.mjGEOM_CAPSULE, [0.05, 0.2, 9]) is capsule
    assert cache.get(GEOM.mjGEOM_CAPSULE, [0.05, 0.3, 0]) is not capsule
    assert cache.get(GEOM.mjGEOM_CYLINDER, [0.05, 0.2, 0]) is not capsule
    box = cache.get(GEOM.mjGEOM_BOX, [0.1, 0.2, 0.3])
    assert box.name == "box 0.1 0.2 0.3" and cache.get(GEOM.mjGEOM_BOX, (0.1, 0.2, 0.3)) is box
    assert cache.get(GEOM.mjGEOM_BOX, [0.1, 0.3, 0.2]) is not box
    # a deleted datablock is rebuilt, not returned dead
    bpy.data.meshes.remove(box)
    again = cache.get(GEOM.mjGEOM_BOX, [0.1, 0.2, 0.3])
    assert again.name.startswith("box 0.1 0.2 0.3") and len(again.vertices) == 8
    with pytest.raises(ValueError):
        cache.get(GEOM.mjGEOM_MESH, [0, 0, 0])


def test_infinite_plane_display_extent(clean_scene):
    cache = mujoco_meshes.PrimitiveCache()
    infinite = cache.get(GEOM.mjGEOM_PLANE, [0, 0, 0.05])
    check_bounds(infinite, [10, 10, 0])
    assert infinite.name == "plane inf inf"
    half = cache.get(GEOM.mjGEOM_PLANE, [0, 3, 0.05])
    check_bounds(half, [10, 3, 0])
    check_bounds(cache.get(GEOM.mjGEOM_PLANE, [0, 0, 1], infinite_extent=50), [50, 50, 0])
    assert cache.get(GEOM.mjGEOM_PLANE, [0, 0, 0.5]) is infinite
    check_bounds(mujoco_meshes.PrimitiveCache(infinite_extent=4).get(GEOM.mjGEOM_PLANE, [0, 0, 1]), [4, 4, 0])
    uv = np.empty(8, dtype=np.float32)
    cache.get(GEOM.mjGEOM_PLANE, [2, 1, 0]).uv_layers[0].data.foreach_get("uv", uv)
    assert sorted(map(tuple, uv.reshape(-1, 2))) == [(0, 0), (0, 1), (1, 0), (1, 1)]


@pytest.mark.parametrize("path", corpus_with("ngeom"))
def test_corpus_primitives_have_analytic_bounds(clean_scene, path):
    model = load_corpus_spec(path).compile()
    cache = mujoco_meshes.PrimitiveCache()
    shapes = set()
    for g in range(model.ngeom):
        geom_type = GEOM(model.geom_type[g])
        if geom_type not in PRIMITIVES:
            continue
        size = model.geom_size[g]
        mesh = cache.get(geom_type, size)
        half = analytic_extent(geom_type, size)
        if geom_type == GEOM.mjGEOM_PLANE:
            half = [s if s > 0 else 10.0 for s in half[:2]] + [0.0]
        check_bounds(mesh, half)
        shapes.add(mesh.name)
    assert len(shapes) == len(cache._meshes)


# --------------------------------------------------------------------------- height fields

def mujoco_height(model, data, geom_id, x, y, z_top):
    """Terrain height under (x, y) in the hfield geom's frame, by MuJoCo's own ray cast."""
    mat = data.geom_xmat[geom_id].reshape(3, 3)
    top = data.geom_xpos[geom_id] + mat @ [x, y, z_top]
    dist = mujoco.mj_rayHfield(model, data, geom_id, top, -mat[:, 2])
    assert dist >= 0
    return z_top - dist


def check_hfield(model, hfield_id, mesh):
    nrow, ncol = model.hfield_nrow[hfield_id], model.hfield_ncol[hfield_id]
    sx, sy, sz, base = model.hfield_size[hfield_id]
    border = 2 * (nrow + ncol) - 4
    assert len(mesh.vertices) == nrow * ncol + border
    assert len(mesh.polygons) == 2 * (nrow - 1) * (ncol - 1) + border + 1
    assert (edge_face_counts(mesh) == 2).all(), "a closed solid"
    assert_valid(mesh)
    assert signed_volume(mesh) > 0
    v = verts_of(mesh)
    assert np.isclose(v[:, 2].min(), -base)
    assert np.allclose(v[:, :2].min(axis=0), [-sx, -sy]) and np.allclose(v[:, :2].max(axis=0), [sx, sy])
    # sample (r, c) is vertex r*ncol + c, with MuJoCo's definition of x, y and height
    heights = model.hfield_data[model.hfield_adr[hfield_id]:][:nrow * ncol].reshape(nrow, ncol)
    rows, cols = np.meshgrid([0, 1, nrow // 2, nrow - 1], [0, 2, ncol // 3, ncol - 1], indexing="ij")
    for r, c in zip(rows.ravel(), cols.ravel(), strict=True):
        expect = [sx * (2 * c / (ncol - 1) - 1), sy * (2 * r / (nrow - 1) - 1), heights[r, c] * sz]
        assert np.allclose(v[r * ncol + c], expect, atol=1e-6), (r, c)


@pytest.mark.parametrize("path", corpus_with("nhfield"))
def test_hfield_surface_is_mujocos(clean_scene, path):
    model = load_corpus_spec(path).compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    rng = np.random.default_rng(0)
    for h in range(model.nhfield):
        mesh = mujoco_meshes.hfield_mesh(model, h, model.hfield(h).name or f"hfield{h}")
        check_hfield(model, h, mesh)
        geom_id = int(np.flatnonzero((model.geom_type == GEOM.mjGEOM_HFIELD) & (model.geom_dataid == h))[0])
        # between samples too: our triangles are MuJoCo's (same diagonal), seen by both ray casts
        verts = verts_of(mesh)
        polys = np.split(corners_of(mesh), np.cumsum(polygon_sizes(mesh))[:-1])
        bvh = BVHTree.FromPolygons(verts.tolist(), [p.tolist() for p in polys])
        sx, sy, sz = model.hfield_size[h][:3]
        z_top = sz + 0.01  # rays start just above the terrain: Blender's ray cast is float32
        for x, y in rng.uniform(-0.98, 0.98, size=(40, 2)) * [sx, sy]:
            hit = bvh.ray_cast((x, y, z_top), (0, 0, -1))[0]
            assert abs(hit.z - mujoco_height(model, data, geom_id, x, y, z_top)) < 2e-6, (x, y)


@pytest.mark.parametrize("source", ["spec", "xml"])
def test_runtime_zero_hfield(clean_scene, source):
    """nrow/ncol and no file: MuJoCo allocates zeros, to be filled at run time."""
    if source == "xml":
        spec = mujoco.MjSpec.from_string(
            '<mujoco><asset><hfield name="terrain" nrow="5" ncol="7" size="2 1 0.5 0.25"/></asset>'
            '<worldbody><geom type="hfield" hfield="terrain"/></worldbody></mujoco>')
    else:
        spec = mujoco.MjSpec()
        hfield = spec.add_hfield(name="terrain", nrow=5, ncol=7, size=[2.0, 1.0, 0.5, 0.25])
        # MjSpec (unlike the XML parser) refuses an hfield without data: "hfield not specified"
        hfield.userdata = [0.0] * (5 * 7)
        spec.worldbody.add_geom(type=GEOM.mjGEOM_HFIELD, hfieldname="terrain")
    model = spec.compile()
    assert not model.hfield_data.any()
    mesh = mujoco_meshes.hfield_mesh(model, 0, "terrain")
    check_hfield(model, 0, mesh)
    z = verts_of(mesh)[:, 2]
    assert (z[:35] == 0).all() and np.allclose(z[35:], -0.25)


# --------------------------------------------------------------------------- flexes and skins

def check_flex(model, data, flex_id, mesh):
    vadr, vnum = model.flex_vertadr[flex_id], model.flex_vertnum[flex_id]
    assert len(mesh.vertices) == vnum
    assert np.allclose(verts_of(mesh), data.flexvert_xpos[vadr:vadr + vnum], atol=1e-6)
    assert_valid(mesh)
    dim = model.flex_dim[flex_id]
    if dim == 1:
        assert len(mesh.polygons) == 0 and len(mesh.edges) == model.flex_edgenum[flex_id]
    elif dim == 2:
        adr, num = model.flex_elemdataadr[flex_id], model.flex_elemnum[flex_id]
        assert len(mesh.polygons) == num
        assert np.array_equal(corners_of(mesh), model.flex_elem[adr:adr + 3 * num])
    else:
        adr, num = model.flex_shelldataadr[flex_id], model.flex_shellnum[flex_id]
        assert len(mesh.polygons) == num
        assert np.array_equal(corners_of(mesh), model.flex_shell[adr:adr + 3 * num])
        assert (edge_face_counts(mesh) == 2).all()


@pytest.mark.parametrize("path", corpus_with("nflex"))
def test_corpus_flex(clean_scene, path):
    model = load_corpus_spec(path).compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    assert model.nflex
    for f in range(model.nflex):
        check_flex(model, data, f, mujoco_meshes.flex_mesh(model, data, f, f"flex{f}"))


def test_flex_dims_1_and_3(clean_scene):
    xml = """
    <mujoco><worldbody>
      <flexcomp name="cube" type="grid" count="3 4 3" spacing=".1 .1 .1" dim="3" pos="0 0 1"/>
      <flexcomp name="rope" type="grid" count="6 1 1" spacing=".1 .1 .1" dim="1" pos="1 0 1"/>
    </worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_flex(model, data)  # what mj_forward would add for flexes
    assert sorted(model.flex_dim) == [1, 3]
    for f in range(model.nflex):
        check_flex(model, data, f, mujoco_meshes.flex_mesh(model, data, f, f"flex{f}"))


def test_flex_grid_uvs(clean_scene):
    """2D grid flexcomps get texture coordinates: one UV per triangle corner, v flipped."""
    xml = """<mujoco>
      <asset>
        <texture name="t" type="2d" builtin="checker" width="64" height="64"/>
        <material name="m" texture="t"/>
      </asset>
      <worldbody>
        <flexcomp name="sheet" type="grid" count="4 3 1" spacing=".1 .1 .1" dim="2" pos="0 0 1" material="m"/>
      </worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    assert model.flex_texcoordadr[0] >= 0
    mesh = mujoco_meshes.flex_mesh(model, data, 0, "sheet")
    check_flex(model, data, 0, mesh)
    adr, num = model.flex_elemdataadr[0], model.flex_elemnum[0]
    expect = model.flex_texcoord[model.flex_texcoordadr[0] + model.flex_elemtexcoord[adr:adr + 3 * num]]
    uv = np.empty(2 * len(mesh.loops), dtype=np.float32)
    mesh.uv_layers[0].data.foreach_get("uv", uv)
    assert np.allclose(uv.reshape(-1, 2), np.column_stack([expect[:, 0], 1 - expect[:, 1]]))


@pytest.mark.parametrize("path", corpus_with("nskin"))
@pytest.mark.parametrize("inflate", [None, 0.002])
def test_corpus_skin(clean_scene, path, inflate):
    model, data = skinned_model(path, inflate)
    expect = mujoco_skin_vertices(model, data)
    for s in range(model.nskin):
        mesh = mujoco_meshes.skin_mesh(model, data, s, f"skin{s}")
        vadr, vnum = model.skin_vertadr[s], model.skin_vertnum[s]
        fadr, fnum = model.skin_faceadr[s], model.skin_facenum[s]
        faces = model.skin_face[fadr + unique_faces(model.skin_face[fadr:fadr + fnum])]  # no repeats
        assert len(mesh.vertices) == vnum and len(mesh.polygons) == len(faces)
        assert np.array_equal(corners_of(mesh), faces.ravel())
        assert_valid(mesh)
        assert np.abs(verts_of(mesh) - expect[vadr:vadr + vnum]).max() < 1e-5
        assert (len(mesh.uv_layers) == 1) == (model.skin_texcoordadr[s] >= 0)
        bind = mujoco_meshes.skin_mesh(model, None, s, f"skin{s} bind")
        assert np.allclose(verts_of(bind), model.skin_vert[vadr:vadr + vnum], atol=1e-7)


def test_skin_posed_by_turned_bones_with_uvs(clean_scene):
    """Bind poses that are not the bodies' poses, moved joints, inflate and texcoords."""
    xml = """
    <mujoco><worldbody>
      <body name="a" pos="0 0 1" euler="0 20 0"><freejoint/><geom size=".1"/></body>
      <body name="b" pos="0.5 0 1" euler="0 0 30"><joint type="hinge" axis="1 0 0"/><geom size=".1"/></body>
    </worldbody>
    <deformable>
      <skin name="s" vertex="0 0 1  .5 0 1  0 .5 1  .5 .5 1" texcoord="0 0  1 0  0 1  1 1"
            face="0 1 2  1 3 2" inflate="0.01">
        <bone body="a" bindpos="0 0 1" bindquat="1 0 0 0" vertid="0 2 3" vertweight="1 1 0.25"/>
        <bone body="b" bindpos="0.5 0 1" bindquat="0.9 0.1 0 0.2" vertid="1 3" vertweight="1 0.75"/>
      </skin>
    </deformable></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[:] = [0.1, -0.2, 1.3, 0.9, 0.1, 0.3, -0.1, 0.7]
    mujoco.mj_kinematics(model, data)
    mesh = mujoco_meshes.skin_mesh(model, data, 0, "s")
    assert np.abs(verts_of(mesh) - mujoco_skin_vertices(model, data)).max() < 1e-6
    uv = np.empty(2 * len(mesh.loops), dtype=np.float32)
    mesh.uv_layers[0].data.foreach_get("uv", uv)
    expect = model.skin_texcoord[model.skin_face.ravel()]
    assert np.allclose(uv.reshape(-1, 2), np.column_stack([expect[:, 0], 1 - expect[:, 1]]))


# --------------------------------------------------------------------------- speed

@pytest.mark.corpus
@pytest.mark.skipif(not os.path.exists(os.path.join(CORPUS, PANDA)), reason="no Panda in the corpus")
def test_panda_speed_printout(clean_scene, capsys):
    """Not an assertion: prints the mesh build time of the Panda next to MuJoCo's load time."""
    path = os.path.join(CORPUS, PANDA)
    # MuJoCo caches decoded mesh files per process: a first load costs far more than a repeat
    cold = subprocess.run(
        [sys.executable, "-c", "import sys, time, mujoco; t = time.perf_counter(); "
         "mujoco.MjModel.from_xml_path(sys.argv[1]); print(time.perf_counter() - t)", path],
        capture_output=True, text=True, check=True)
    mujoco.MjModel.from_xml_path(path)  # warm the caches
    loads = []
    for _ in range(3):
        start = time.perf_counter()
        model = mujoco.MjModel.from_xml_path(path)
        loads.append(time.perf_counter() - start)
    start = time.perf_counter()
    meshes = [mujoco_meshes.mesh_asset(model, i, model.mesh(i).name) for i in range(model.nmesh)]
    cache = mujoco_meshes.PrimitiveCache()
    for g in range(model.ngeom):
        if model.geom_type[g] in PRIMITIVES:
            cache.get(model.geom_type[g], model.geom_size[g])
    build = time.perf_counter() - start
    with capsys.disabled():
        print(f"\n[geometry speed] Panda: {len(meshes)} meshes, {model.nmeshvert} vertices, "
              f"{model.nmeshface} faces built in {build:.3f} s; "
              f"MjModel.from_xml_path {min(loads):.3f} s warm (best of 3), "
              f"{float(cold.stdout):.3f} s in a fresh process; ratio to warm {build / min(loads):.2f}")

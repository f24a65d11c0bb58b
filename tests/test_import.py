"""File > Import > MuJoCo: every corpus model arrives as MuJoCo sees it."""

import csv
import os

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, corpus_params

from mjblend.importer import build

# models.tsv column -> MJBlend kind (objects or datablocks of that kind)
COUNT_COLUMNS = {"njnt": "joint", "ngeom": "geom", "nmesh": "mesh", "nactuator": "actuator",
                 "nsensor": "sensor", "ntendon": "tendon", "neq": "equality", "nsite": "site",
                 "ncam": "camera", "nlight": "light", "nhfield": "hfield", "ntex": "texture",
                 "nmat": "material", "nflex": "flex", "nskin": "skin", "nplugin": "plugin",
                 "nkey": "key"}
ID_KINDS = {"mesh": "meshes", "hfield": "meshes", "texture": "images", "material": "materials"}


def expected_counts(path):
    with open(os.path.join(CORPUS, "models.tsv"), encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["path"] == path:
                return row
    raise KeyError(path)


def import_model(path):
    result = bpy.ops.import_scene.mjcf(filepath=os.path.join(CORPUS, path))
    assert result == {"FINISHED"}
    return bpy.context.view_layer.objects.active


def objects_of(kind):
    return [o for o in bpy.data.objects if o.mujoco.kind == kind.upper()]


def by_mjcf_name(kind):
    return {o.mujoco.name: o for o in objects_of(kind) if o.mujoco.name}


def matrix(obj):
    return np.array(obj.matrix_world, dtype=float)


@pytest.mark.parametrize("model", corpus_params())
def test_import_counts_match_mujoco(model, clean_scene):
    root = import_model(model)
    assert root.mujoco.kind == "MODEL"
    expected = expected_counts(model)
    got = {}
    for column, kind in COUNT_COLUMNS.items():
        if kind in ID_KINDS:
            blocks = getattr(bpy.data, ID_KINDS[kind])
            got[column] = sum(1 for b in blocks if b.mujoco.kind == kind.upper())
        else:
            got[column] = len(objects_of(kind))
    got["nbody"] = len(objects_of("body")) + 1  # MuJoCo counts the world body
    want = {c: int(expected[c]) for c in got}
    assert got == want


def compiled(path):
    model = mujoco.MjModel.from_xml_path(os.path.join(CORPUS, path))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)  # kinematics, and cameras and lights (mj_camlight)
    return model, data


def world_vertices(obj):
    mesh = obj.data
    local = np.empty(len(mesh.vertices) * 3)
    mesh.vertices.foreach_get("co", local)
    local = local.reshape(-1, 3)
    world = matrix(obj)
    return local @ world[:3, :3].T + world[:3, 3]


@pytest.mark.parametrize("model", corpus_params())
def test_imported_poses_match_mujoco_at_qpos0(model, clean_scene):
    result = build.import_file(os.path.join(CORPUS, model), bpy.context.scene)
    mj, data = compiled(model)
    worst = {}

    def check(what, value, reference):
        worst[what] = max(worst.get(what, 0.0), float(np.abs(np.asarray(value) - reference).max()))

    for b in range(1, mj.nbody):
        world = matrix(result.by_id[("body", b)])
        check("body pos", world[:3, 3], data.xpos[b])
        check("body rot", world[:3, :3], data.xmat[b].reshape(3, 3))
    for g in range(mj.ngeom):
        obj = result.by_id[("geom", g)]
        if int(mj.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_MESH):
            mesh = int(mj.geom_dataid[g])
            adr, num = int(mj.mesh_vertadr[mesh]), int(mj.mesh_vertnum[mesh])
            verts = mj.mesh_vert[adr:adr + num].astype(float)
            expected = verts @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g]
            got = world_vertices(obj)
            assert got.shape == expected.shape
            scale = max(1.0, float(np.abs(expected).max()))
            check("mesh vertices", got / scale, expected / scale)
            continue
        world = matrix(obj)
        check("geom pos", world[:3, 3], data.geom_xpos[g])
        check("geom rot", world[:3, :3], data.geom_xmat[g].reshape(3, 3))
    for s in range(mj.nsite):
        world = matrix(result.by_id[("site", s)])
        check("site pos", world[:3, 3], data.site_xpos[s])
        check("site rot", world[:3, :3], data.site_xmat[s].reshape(3, 3))
    fixed = (int(mujoco.mjtCamLight.mjCAMLIGHT_FIXED), int(mujoco.mjtCamLight.mjCAMLIGHT_TRACK),
             int(mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM))
    # Cameras and lights that turn toward a target body are aimed by MuJoCo at run
    # time; the import shows their authored pose, so only their position is compared.
    for c in range(mj.ncam):
        world = matrix(result.by_id[("camera", c)])
        if int(mj.cam_mode[c]) not in fixed:
            check("camera pos", world[:3, 3], data.cam_xpos[c])
            continue
        check("camera pos", world[:3, 3], data.cam_xpos[c])
        check("camera rot", world[:3, :3], data.cam_xmat[c].reshape(3, 3))
    for j in range(mj.njnt):
        world = matrix(result.by_id[("joint", j)])
        check("joint anchor", world[:3, 3], data.xanchor[j])
        if int(mj.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            check("joint axis", world[:3, 2], data.xaxis[j])  # a joint object's +Z is its axis
    for lid in range(mj.nlight):
        world = matrix(result.by_id[("light", lid)])
        if int(mj.light_mode[lid]) not in fixed:
            check("light pos", world[:3, 3], data.light_xpos[lid])
            continue
        check("light pos", world[:3, 3], data.light_xpos[lid])
        check("light dir", -world[:3, 2], data.light_xdir[lid])  # lights shine along -Z
    tolerance = {"mesh vertices": 1e-5}
    bad = {k: v for k, v in worst.items() if v > tolerance.get(k, 1e-6)}
    assert not bad, f"{model}: worst errors {worst}"

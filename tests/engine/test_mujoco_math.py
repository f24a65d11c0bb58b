"""MuJoCo math the viewport and authoring use, bpy-free (engine/inertia.py, engine/primitive_fit.py)."""

import mujoco
import numpy as np
import pytest

from mjblend.engine import frames, inertia, primitive_fit


def test_the_equivalent_box_of_a_box_body_is_the_box():
    model = mujoco.MjModel.from_xml_string("""
        <mujoco><worldbody>
          <body name="b"><freejoint/><geom type="box" size="0.3 0.2 0.1" mass="2"/></body>
        </worldbody></mujoco>""")
    assert np.allclose(inertia.equivalent_box(model, 1), [0.3, 0.2, 0.1])
    assert inertia.equivalent_box(model, 0) is None  # the world has no mass


def unit_cube():
    verts = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * [0.5, 0.25, 0.1]
    hull = mujoco.MjSpec()
    hull.add_mesh(name="m", uservert=verts.ravel().tolist())
    hull.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname="m")
    model = hull.compile()
    tris = model.mesh_face[:model.mesh_facenum[0]]
    return model.mesh_vert[:model.mesh_vertnum[0]].astype(float), tris


def test_a_box_mesh_is_best_fitted_by_a_box_of_its_size():
    verts, tris = unit_cube()
    shape, size, pos, quat = primitive_fit.best_primitive(verts, tris)
    assert shape == "BOX"  # in the mesh's principal frame (MuJoCo orders the axes)
    assert np.allclose(sorted(size), [0.1, 0.25, 0.5]) and np.allclose(pos, 0, atol=1e-9)
    assert np.isclose(np.linalg.norm(quat), 1)


def test_fit_volumes_match_the_shapes():
    verts, tris = unit_cube()
    size, _pos, _quat, volume = primitive_fit.fit_primitive(verts, tris, "BOX")
    assert volume == pytest.approx(1.0 * 0.5 * 0.2)
    assert primitive_fit.primitive_volume("BOX", size) == pytest.approx(volume)
    assert primitive_fit.primitive_volume("SPHERE", [1, 0, 0]) == pytest.approx(4 / 3 * np.pi)


def test_a_mesh_mujoco_cannot_use_is_a_value_error():
    flat = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    with pytest.raises(ValueError):
        primitive_fit.fit_primitive(flat, np.array([[0, 1, 2]]), "BOX")


def test_quaternion_matrices_match_mujoco():
    quats = np.array([[1, 0, 0, 0], [0.5, 0.5, -0.5, 0.5], [0.9, 0.1, 0.3, 0.2]], float)
    for quat, mat in zip(quats, frames.quat_matrices(quats), strict=True):
        expected = np.empty(9)
        mujoco.mju_quat2Mat(expected, quat / np.linalg.norm(quat))
        assert np.allclose(mat.ravel(), expected)

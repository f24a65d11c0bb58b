"""Queries without stepping, against MuJoCo: forward's sensors equal mj_forward's,
site Jacobians equal mj_jacSite, height-field samples equal a direct
interpolation of the height-field data (and MuJoCo's own ray cast)."""

import mujoco
import numpy as np
import pytest
from batch_models import BARKOUR, HUMANOID, SPEC, model_at, moving_states

from mjblend.batch import BatchError, BatchPool, Entry, Randomization

pytestmark = pytest.mark.corpus


def forwarded(model, state, ctrl=None):
    data = mujoco.MjData(model)
    mujoco.mj_setState(model, data, state, SPEC)
    if ctrl is not None:
        data.ctrl[:] = ctrl
    mujoco.mj_forward(model, data)
    return data


@pytest.mark.parametrize("nthread", [1, 2])
def test_forward_sensors_equal_mj_forward(nthread):
    model = model_at(BARKOUR)
    assert model.nsensordata > 30
    states = moving_states(model, 5, keyframe=0)
    ctrl = np.random.default_rng(0).uniform(-1, 1, (5, model.nu))
    with BatchPool(model, 5, nthread=nthread) as pool:
        sensed = pool.forward(states, ctrl)
        plain = pool.forward(states)
    for env in range(5):
        assert np.array_equal(sensed[env], forwarded(model, states[env], ctrl[env]).sensordata)
        assert np.array_equal(plain[env], forwarded(model, states[env]).sensordata)


def test_site_jacobians_equal_mj_jacsite():
    model = model_at(BARKOUR)
    sites = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SITE, i) for i in range(model.nsite)]
    states = moving_states(model, 4, keyframe=0)
    with BatchPool(model, 4, nthread=2) as pool:
        jac = pool.site_jacobians(states, sites)
        both = pool.site_jacobians(states, [3, sites[0]], rotation=True)
    assert jac.shape == (4, model.nsite, 3, model.nv)
    assert both.shape == (4, 2, 6, model.nv)
    for env in range(4):
        data = forwarded(model, states[env])
        for k in range(model.nsite):
            jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
            mujoco.mj_jacSite(model, data, jacp, jacr, k)
            assert np.array_equal(jac[env, k], jacp)
            if k in (3, 0):
                row = 0 if k == 3 else 1
                assert np.array_equal(both[env, row], np.vstack([jacp, jacr]))


def direct_height(model, hfield, x, y):
    """The height field's surface at (x, y) of its geom's frame, one point at a time:
    the cell's two triangles split along the (r, c)-(r+1, c+1) diagonal."""
    nrow, ncol = model.hfield_nrow[hfield], model.hfield_ncol[hfield]
    sx, sy, sz = model.hfield_size[hfield][:3]
    data = model.hfield_data[model.hfield_adr[hfield]:][:nrow * ncol].reshape(nrow, ncol)
    u, v = (x / sx + 1) / 2 * (ncol - 1), (y / sy + 1) / 2 * (nrow - 1)
    if not (0 <= u <= ncol - 1 and 0 <= v <= nrow - 1):
        return float("nan")
    c, r = min(int(u), ncol - 2), min(int(v), nrow - 2)
    a, b = u - c, v - r
    p00, p01, p10, p11 = data[r, c], data[r, c + 1], data[r + 1, c], data[r + 1, c + 1]
    if a >= b:  # triangle (0,0) (0,1) (1,1) in (row, column)
        h = p00 + a * (p01 - p00) + b * (p11 - p01)
    else:       # triangle (0,0) (1,0) (1,1)
        h = p00 + b * (p10 - p00) + a * (p11 - p10)
    return h * sz


def test_heightfield_samples_equal_direct_interpolation_and_mj_ray():
    model = model_at(BARKOUR)
    geom = int(np.flatnonzero(model.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD)[0])
    hfield = model.geom_dataid[geom]
    states = moving_states(model, 3, keyframe=0)
    rng = np.random.default_rng(4)
    points = np.c_[rng.uniform(-1, 1, (40, 2)), rng.uniform(-0.3, 0.1, 40)]
    points[0] = (50.0, 0.0, 0.0)  # far outside the 20 m field
    with BatchPool(model, 3, nthread=2) as pool:
        heights, clearances = pool.heightfield(states, "torso", points)
        named, _ = pool.heightfield(states, "torso", points[:, :2], hfield=mujoco.mj_id2name(
            model, mujoco.mjtObj.mjOBJ_HFIELD, hfield))
    assert heights.shape == clearances.shape == (3, 40)
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso")
    for env in range(3):
        data = forwarded(model, states[env])
        for p, point in enumerate(points):
            world = data.xpos[body] + data.xmat[body].reshape(3, 3) @ point
            local = data.geom_xmat[geom].reshape(3, 3).T @ (world - data.geom_xpos[geom])
            want = direct_height(model, hfield, local[0], local[1])
            if p == 0:
                assert np.isnan(want) and np.isnan(heights[env, p]) and np.isnan(clearances[env, p])
                continue
            surface = data.geom_xpos[geom][2] + want
            assert heights[env, p] == pytest.approx(surface, abs=1e-12)
            assert clearances[env, p] == pytest.approx(local[2] - want, abs=1e-12)
            # MuJoCo's ray cast down onto the height field alone finds the same surface
            start = np.array([world[0], world[1], surface + 1.0])
            down = np.array([0.0, 0.0, -1.0])
            hit = mujoco.mj_ray(model, data, start, down, None, 1, body, np.zeros(1, np.int32))
            assert hit == pytest.approx(1.0, abs=1e-6)
        flat = points[:, :2]
        world_flat = data.xpos[body] + flat @ data.xmat[body].reshape(3, 3)[:, :2].T
        assert np.allclose(named[env, 1:], [data.geom_xpos[geom][2] + direct_height(
            model, hfield, *(data.geom_xmat[geom].reshape(3, 3).T @ (w - data.geom_xpos[geom]))[:2])
            for w in world_flat[1:]], atol=1e-12)


def test_queries_use_each_environments_model():
    """A randomized body position moves its sites: Jacobians follow each environment."""
    model = model_at(BARKOUR)
    site = next(s for s in range(model.nsite) if model.body_parentid[model.site_bodyid[s]] not in (0, 1))
    body = model.site_bodyid[site]
    name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body)
    randomization = Randomization([Entry("body", "pos", -0.05, 0.05, name=name, mode="offset",
                                         independent=True)])
    with BatchPool(model, 3, nthread=1, randomization=randomization, seed=2) as pool:
        states = pool.reset()
        jac = pool.site_jacobians(states, [site])
        for env in range(3):
            own = pool.parameters.model_of(env)
            data = forwarded(own, states[env])
            jacp = np.zeros((3, model.nv))
            mujoco.mj_jacSite(own, data, jacp, None, site)
            assert np.array_equal(jac[env, 0], jacp)
        assert not np.array_equal(jac[0], jac[1])


def test_heightfield_errors():
    with BatchPool(model_at(BARKOUR), 2, nthread=1) as pool:
        states = pool.reset()
        with pytest.raises(BatchError, match="points: expected shape"):
            pool.heightfield(states, "torso", np.zeros((4, 4)))
        with pytest.raises(BatchError, match="no body named 'nose'"):
            pool.heightfield(states, "nose", np.zeros((4, 3)))
        with pytest.raises(BatchError, match="no height-field geom or asset named 'hill'"):
            pool.heightfield(states, "torso", np.zeros((4, 3)), hfield="hill")
    with BatchPool(model_at(HUMANOID), 1, nthread=1) as pool:
        with pytest.raises(BatchError, match="0 height-field geoms"):
            pool.heightfield(pool.reset(), "torso", np.zeros((1, 3)))

"""What the batch tests share: corpus models and the serial reference every pool
result is checked against (a fresh MjData per environment, mj_step one step at a
time). A module of its own, not conftest: several test folders have one."""

import os

import mujoco
import numpy as np
import pytest
from helpers import CORPUS

SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS
HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
CARTPOLE = os.path.join(CORPUS, "pip", "dm_control", "suite", "cartpole.xml")
BARKOUR = os.path.join(CORPUS, "menagerie", "google_barkour_vb", "scene_hfield_mjx.xml")
FRANKA = os.path.join(CORPUS, "menagerie", "franka_emika_panda", "scene.xml")
CASSIE = os.path.join(CORPUS, "menagerie", "agility_cassie", "scene.xml")
ANT = os.path.join(CORPUS, "pip", "gymnasium", "envs", "mujoco", "assets", "ant.xml")


def model_at(path) -> mujoco.MjModel:
    if not os.path.exists(path):
        pytest.skip("no corpus (../shared/corpus)")
    return mujoco.MjSpec.from_file(path).compile()


def moving_states(model, count, seed=0, keyframe=None):
    """(count, nstate) distinct states: the initial state pushed by random
    velocities and a few random steps (so contacts and limits are active)."""
    rng = np.random.default_rng(seed)
    data = mujoco.MjData(model)
    states = np.empty((count, mujoco.mj_stateSize(model, SPEC)))
    for row in range(count):
        if keyframe is None:
            mujoco.mj_resetData(model, data)
        else:
            mujoco.mj_resetDataKeyframe(model, data, keyframe)
        data.qvel[:] = rng.normal(0, 0.3, model.nv)
        data.ctrl[:] = rng.uniform(-1, 1, model.nu)
        mujoco.mj_step(model, data, int(rng.integers(1, 10)))
        mujoco.mj_getState(model, data, states[row], SPEC)
    return states


def serial(models, states, controls, nstep, policy=None):
    """Final states and sensordata of serial mj_step: models (one per environment
    or one for all), controls (n, nstep, nu) or (n, nu) held, or a policy row by row."""
    count = len(states)
    models = models if isinstance(models, list) else [models] * count
    final = np.empty_like(states)
    sensed = np.empty((count, models[0].nsensordata))
    for env in range(count):
        model = models[env]
        data = mujoco.MjData(model)
        mujoco.mj_setState(model, data, states[env], SPEC)
        for k in range(nstep):
            if policy is not None:
                row = np.empty(len(states[env]))
                mujoco.mj_getState(model, data, row, SPEC)
                data.ctrl[:] = policy(k, row[None, :])[0]
            elif controls is not None:
                data.ctrl[:] = controls[env] if controls.ndim == 2 else controls[env, k]
            mujoco.mj_step(model, data)
        mujoco.mj_getState(model, data, final[env], SPEC)
        sensed[env] = data.sensordata
    return final, sensed

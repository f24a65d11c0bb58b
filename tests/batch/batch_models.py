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


KINDS = ("rgb", "depth", "segmentation")

# a scene without reflections (each environment is drawn by a fresh reference renderer)
BOXES = """
<mujoco>
  <visual><global offwidth="320" offheight="240"/></visual>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1"/>
    <geom name="ground" type="plane" size="2 2 .1" rgba=".4 .5 .6 1"/>
    <camera name="front" pos="0 -2 1" xyaxes="1 0 0 0 .45 .9" resolution="96 64"/>
    <body name="box" pos="0 0 .3">
      <freejoint/>
      <geom name="box" type="box" size=".1 .15 .2" rgba=".9 .2 .2 1"/>
    </body>
    <body name="ball" pos=".4 .2 .3">
      <freejoint/>
      <geom name="ball" type="sphere" size=".12" rgba=".2 .8 .3 1"/>
    </body>
  </worldbody>
</mujoco>
"""


def reference_images(model, states, camera, width, height, renderer=None):
    """mujoco.Renderer, environment after environment: RGB, depth, segmentation."""
    own = renderer is None
    renderer = renderer or mujoco.Renderer(model, height, width)
    data = mujoco.MjData(model)
    out = {kind: [] for kind in KINDS}
    for state in states:
        mujoco.mj_setState(model, data, state, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        mujoco.mj_forward(model, data)
        renderer.update_scene(data, camera)
        out["rgb"].append(renderer.render())
        renderer.enable_depth_rendering()
        out["depth"].append(renderer.render()[..., None])
        renderer.disable_depth_rendering()
        renderer.enable_segmentation_rendering()
        out["segmentation"].append(renderer.render())
        renderer.disable_segmentation_rendering()
    if own:
        renderer.close()
    return {kind: np.stack(images) for kind, images in out.items()}

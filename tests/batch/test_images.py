"""Images per environment from named cameras (batch/images.py): every environment's
RGB, depth and segmentation equal mujoco.Renderer's for its own model and state,
bit for bit, on MuJoCo's CPU batch, with a randomization, and on the Warp pool.

Mesa's llvmpipe draws a scene with reflections (the corpus humanoid's floor) a
little differently depending on what the context drew before, so each reference
renderer draws the same sequence as the pool's (per environment: RGB, depth,
segmentation), as tests/engine/test_cameras.py explains."""

import mujoco
import numpy as np
import pytest
from batch_models import BOXES, CARTPOLE, HUMANOID, KINDS, model_at, moving_states, reference_images
from mjblend.batch import BatchPool
from mjblend.batch.randomization import Randomization
from mjblend.engine.cameras import CameraError


@pytest.mark.parametrize("path, camera", [(CARTPOLE, "fixed"), (HUMANOID, "side")])
def test_each_environment_is_mujoco_renderers_image(path, camera):
    model = model_at(path)
    states = moving_states(model, 4, seed=3)
    with BatchPool(model, 4, nthread=2) as pool:
        states = pool.step(states, np.random.default_rng(1).uniform(-1, 1, (4, model.nu)), nstep=5)
        images = pool.render(states, [camera], kinds=KINDS, width=160, height=120)
        assert list(images) == [camera]
        got = images[camera]
        assert got["rgb"].shape == (4, 120, 160, 3) and got["rgb"].dtype == np.uint8
        assert got["depth"].shape == (4, 120, 160, 1) and got["depth"].dtype == np.float32
        assert got["segmentation"].shape == (4, 120, 160, 2) and got["segmentation"].dtype == np.int32
        want = reference_images(model, states, camera, 160, 120)
        for kind in KINDS:
            assert np.array_equal(got[kind], want[kind]), kind
        # the environments differ (the images are not one image repeated)
        assert not np.array_equal(got["depth"][0], got["depth"][1])
        # a second call reuses the pool's renderer: the reference's second pass
        again = pool.render(states, camera, kinds=KINDS, width=160, height=120)[camera]
        reference = mujoco.Renderer(model, 120, 160)
        reference_images(model, states, camera, 160, 120, reference)
        want = reference_images(model, states, camera, 160, 120, reference)
        reference.close()
        for kind in KINDS:
            assert np.array_equal(again[kind], want[kind]), kind


def test_each_camera_at_its_own_resolution_by_default():
    model = mujoco.MjModel.from_xml_string(BOXES)
    with BatchPool(model, 2, nthread=0) as pool:
        states = pool.initial_states()
        images = pool.render(states, ["front", 0], kinds=("rgb",))
    assert images["front"]["rgb"].shape == (2, 64, 96, 3)  # the MJCF's resolution="96 64"


def test_randomized_environments_are_drawn_with_their_own_models():
    model = mujoco.MjModel.from_xml_string(BOXES)
    randomization = Randomization.from_dict({
        "format": "mjblend-randomization", "version": 1, "seed": 5, "entries": [
            {"element": "geom", "name": "box", "attribute": "size", "low": 0.5, "high": 1.8, "mode": "scale"},
            {"element": "body", "name": "ball", "attribute": "pos", "low": -0.3, "high": 0.3,
             "mode": "offset", "independent": True}]})
    with BatchPool(model, 3, nthread=0, randomization=randomization) as pool:
        states = pool.initial_states()
        got = pool.render(states, "front", kinds=KINDS)["front"]
        for env in range(3):
            want = reference_images(pool.parameters.model_of(env), states[env:env + 1], "front", 96, 64)
            for kind in KINDS:
                assert np.array_equal(got[kind][env], want[kind][0]), (env, kind)
        assert not np.array_equal(got["segmentation"][0], got["segmentation"][1])
        # the pool's nominal model is untouched by the renderer's swaps
        assert np.array_equal(pool.model.geom_size, model.geom_size)


def test_errors_name_the_fix_and_change_nothing():
    model = mujoco.MjModel.from_xml_string(BOXES)
    with BatchPool(model, 2, nthread=0) as pool:
        states = pool.initial_states()
        with pytest.raises(CameraError, match="front"):  # the message lists the cameras
            pool.render(states, ["nope"])
        with pytest.raises(CameraError, match="offwidth"):
            pool.render(states, ["front"], width=640, height=480)
        with pytest.raises(CameraError, match="kind"):
            pool.render(states, ["front"], kinds=("normals",))
        with pytest.raises(Exception, match="shape"):
            pool.render(states[:1], ["front"])
        assert pool.render(states, ["front"])["front"]["rgb"].shape == (2, 64, 96, 3)


def test_the_warp_pool_renders_its_states():
    pytest.importorskip("mujoco_warp")
    model = mujoco.MjModel.from_xml_string(BOXES)
    with BatchPool(model, 2, backend="warp", device="cpu") as pool:
        states = pool.step(pool.initial_states(), nstep=3)
        got = pool.render(states, "front", kinds=KINDS)["front"]
    want = reference_images(model, states, "front", 96, 64)
    for kind in KINDS:
        assert np.array_equal(got[kind], want[kind]), kind

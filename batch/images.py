"""What each environment's cameras see: images of a batch of states from MuJoCo's
renderer, for vision policies.

`BatchImages(pool).render(state, cameras, kinds)` gives, for every camera named,
one array per kind over the whole batch:

- "rgb": (nbatch, H, W, 3) uint8;
- "depth": (nbatch, H, W, 1) float32, metres along the view axis;
- "segmentation": (nbatch, H, W, 2) int32, (object id, mjtObj type) per pixel,
  (-1, -1) where nothing is drawn (mujoco.Renderer's segmentation);

each environment's image that of `mujoco.Renderer` for its own model (a
randomization's values: colours, sizes, positions) at its state, bit for bit
(engine/cameras.py's CameraRenderer draws it: one private MjData, mj_setState +
mj_forward, then update_scene and render). The environments are drawn one after
the other on the calling thread, whose GL context the renderers keep: OpenGL
draws one image at a time per context, and on a GPU that is well under a
millisecond for small images (on Mesa's llvmpipe, a few). Use a BatchImages from
one thread.
"""

from __future__ import annotations

import copy

import numpy as np

from ..engine import cameras as engine_cameras
from ..engine.cameras import KINDS, CameraError

# per kind: (channels, dtype) of a batch's array
LAYOUT = {"rgb": (3, np.uint8), "depth": (1, np.float32), "segmentation": (2, np.int32)}


class BatchImages:
    """Renders a pool's environments. `pool`: a BatchPool or WarpPool (its model,
    nbatch, state checks and randomized environments)."""

    def __init__(self, pool, max_geom: int = 10000):
        self.pool = pool
        # the renderers' own model: each environment's values are swapped into it
        # before its images (mujoco.Renderer reads the model it was made with)
        self.model = copy.copy(pool.model) if pool.parameters is not None else pool.model
        self.renderer = engine_cameras.CameraRenderer(self.model, max_geom=max_geom)

    def render(self, state: np.ndarray, cameras, kinds=("rgb",), width: int | None = None,
               height: int | None = None) -> dict:
        """{camera name: {kind: array}} for the cameras named (names or ids) at each
        row of `state` ((nbatch, nstate) full physics states, as the pool's calls
        take). width, height: None for each camera's own resolution."""
        state = self.pool._states(state, "state")
        if isinstance(cameras, (str, int, np.integer)):
            cameras = [cameras]
        kinds = tuple(kinds)
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds:
            raise CameraError(f"Unknown image kind {unknown or kinds!r} (kinds: {', '.join(KINDS)})")
        requests = []
        for which in cameras:
            cam = self.renderer.camera(which)
            size = (width or cam.width, height or cam.height)
            requests.append((cam, size, self.renderer._renderer(cam, *size)))  # sizes checked first
        out = {cam.name: {kind: np.empty((self.pool.nbatch, h, w, LAYOUT[kind][0]), LAYOUT[kind][1])
                          for kind in kinds} for cam, (w, h), _ in requests}
        parameters = self.pool.parameters
        for env in range(self.pool.nbatch):
            if parameters is not None:
                parameters.swap_in(self.model, env)
            engine_cameras.load_state(self.model, self.renderer.data, state[env])
            for cam, (w, h), renderer in requests:
                frame = self.renderer.render_loaded(renderer, cam, kinds, w, h)
                images = out[cam.name]
                for kind in kinds:
                    images[kind][env] = getattr(frame, kind).reshape(h, w, -1)
        return out

    def close(self) -> None:
        """Frees the GL contexts (call from the thread that rendered)."""
        self.renderer.close()


def render(pool, state: np.ndarray, cameras, kinds=("rgb",), width=None, height=None) -> dict:
    """The pool's images (BatchPool.render): one BatchImages per pool, made on first use."""
    images = pool.__dict__.get("_images")
    if images is None:
        images = pool._images = BatchImages(pool)
    return images.render(state, cameras, kinds, width, height)


def close(pool) -> None:
    images = pool.__dict__.pop("_images", None)
    if images is not None:
        images.close()


"""Many environments of one model (bpy-free: mujoco and numpy; Ray optional).

    from mjblend.batch import open_pool
    pool = open_pool("robot.xml", nbatch=1024)      # + robot.randomization.json if present
    state = pool.reset()                             # (nbatch, nstate) full physics states
    state = pool.step(state, ctrl, nstep=50)         # final states only

docs/index.md "Many environments" has the API; RayPool is the same on Ray actors,
WarpPool (`BatchPool(..., backend="warp")`) on MuJoCo Warp (a GPU; float32).
"""

from .loading import open_pool
from .pool import STATE_SPEC, BatchError, BatchPool
from .randomization import Entry, Randomization, RandomizationError, randomization_path
from .ray_pool import RayPool  # (imports Ray only when a RayPool is made)
from .warp_pool import WarpPool  # (imports warp and mujoco_warp only when a WarpPool is made)

__all__ = ["open_pool", "BatchPool", "BatchError", "STATE_SPEC", "Entry", "Randomization",
           "RandomizationError", "randomization_path", "RayPool", "WarpPool"]

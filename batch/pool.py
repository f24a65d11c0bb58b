"""BatchPool: many environments of one model, on MuJoCo's own `mujoco.batch.Batch`.

The pool is stateless about physics, as MuJoCoUni's BatchEnvPool and
`mujoco.rollout`: callers hold the states, an (nbatch, nstate) float64 array
of MuJoCo's full physics state (mjSTATE_FULLPHYSICS: time, qpos, qvel, act,
history, plugin state, plastic), and every call takes and gives such arrays.
A call starts each environment as `mujoco.rollout` does: a fresh MjData given
the state (warm start and applied forces zero, controls as passed), so each
result equals serial `mj_step` from that state bit for bit.

Everything runs in one `mujoco.batch.Batch` of nbatch simulations (C++
threads, the GIL released): a call writes the states into the batch's rows,
runs, and reads them back. What the pool adds is each environment's model: a
randomization's values go into the batch's per-simulation model fields
(`expand`), and the constants MuJoCo derives from them are its `set_const`
(see parameters.py). `pool.batch` is that Batch, for its stateful style (live
`bind()` arrays, `step()`); a stateless call overwrites its rows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from ..engine.errors import MJBlendError
from . import heightfield, images
from .parameters import Parameters
from .randomization import Randomization

STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS
_POS = mujoco.mjtStage.mjSTAGE_POS
_POSES_ONLY = int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)


def state_columns(model: mujoco.MjModel, spec: int) -> np.ndarray:
    """The columns of a `spec` state inside a batch row (mjSTATE_INTEGRATION, in bit order)."""
    columns, start = [], 0
    for bit in range(mujoco.mjtState.mjNSTATE.value):
        size = mujoco.mj_stateSize(model, 1 << bit)
        if spec & (1 << bit):
            columns.append(np.arange(start, start + size))
        start += size
    return np.concatenate(columns) if columns else np.zeros(0, int)


class BatchError(MJBlendError, ValueError):
    """A call the pool cannot make: wrong shape or dtype, unknown name, index out of
    range. The message says what was expected."""


class BatchPool:
    """`nbatch` environments of `model`.

    nthread: the batch's threads, the calling one included (default: the
    machine's CPUs, at most nbatch; 0 or 1 runs everything on the calling
    thread). randomization: a Randomization (or None); seed: its generator's
    seed (default: the randomization's own seed). keyframe: name or index of the
    keyframe environments reset to (default: the model's qpos0). backend: "cpu"
    (this class) or "warp": a WarpPool on MuJoCo Warp (warp_pool.py: the same calls
    in float32, on a GPU; extra arguments device, nconmax, njmax)."""

    def __new__(cls, *args, backend: str = "cpu", **kwargs):
        if backend == "warp":
            from .warp_pool import WarpPool
            return WarpPool(*args, **kwargs)
        if backend != "cpu":
            raise BatchError(f"backend must be 'cpu' or 'warp', not {backend!r}")
        return super().__new__(cls)

    def __init__(self, model: mujoco.MjModel, nbatch: int, nthread: int | None = None,
                 randomization: Randomization | None = None, seed: int | None = None,
                 keyframe: str | int | None = None, *, backend: str = "cpu"):
        if not isinstance(nbatch, (int, np.integer)) or nbatch < 1:
            raise BatchError(f"nbatch must be a positive integer, not {nbatch!r}")
        if nthread is None:
            nthread = min(int(nbatch), os.cpu_count() or 1)
        if not isinstance(nthread, (int, np.integer)) or nthread < 0:
            raise BatchError(f"nthread must be a non-negative integer, not {nthread!r}")
        self.model = model
        self.nbatch = int(nbatch)
        self.nthread = max(1, min(int(nthread), self.nbatch))
        self.nstate = mujoco.mj_stateSize(model, STATE_SPEC)
        self.nu, self.nv = model.nu, model.nv
        self.nsensordata = model.nsensordata
        self.initial_state = self._initial_state(keyframe)
        self.batch = mujoco.batch.Batch(model, self.nbatch, nthread=self.nthread)
        self._rows = self.batch.state
        self._physics = state_columns(model, STATE_SPEC)
        self._ctrl = state_columns(model, mujoco.mjtState.mjSTATE_CTRL)
        self._sensordata = self.batch.bind("sensordata")
        self._flags = None  # opt.disableflags, expanded at the first pose query
        fresh = mujoco.MjData(model)  # a fresh MjData's row: mocap poses, eq_active, as compiled
        self._fresh = np.empty(self.batch.nstate)
        mujoco.mj_getState(model, fresh, self._fresh, mujoco.mjtState.mjSTATE_INTEGRATION)
        self.parameters = (Parameters(model, randomization, self.nbatch, seed, self.batch)
                           if randomization else None)
        if self.parameters:
            self.parameters.redraw(np.arange(self.nbatch))

    # -- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        """Lets the batch and its threads go (also on `with BatchPool(...) as pool:`),
        and the renderers' GL contexts (call it from the thread that rendered)."""
        images.close(self)
        self.batch = self._rows = self._sensordata = None
        if self.parameters is not None:
            self.parameters.batch = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- states ----------------------------------------------------------------------------------
    def _initial_state(self, keyframe) -> np.ndarray:
        data = mujoco.MjData(self.model)
        if keyframe is None:
            mujoco.mj_resetData(self.model, data)
        else:
            mujoco.mj_resetDataKeyframe(self.model, data, self._keyframe(keyframe))
        state = np.empty(self.nstate)
        mujoco.mj_getState(self.model, data, state, STATE_SPEC)
        return state

    def _keyframe(self, keyframe) -> int:
        if isinstance(keyframe, str):
            index = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_KEY, keyframe)
            if index < 0:
                raise BatchError(f"the model has no keyframe named '{keyframe}'")
            return index
        if not isinstance(keyframe, (int, np.integer)) or not 0 <= keyframe < self.model.nkey:
            raise BatchError(f"keyframe {keyframe!r} is out of range (the model has {self.model.nkey})")
        return int(keyframe)

    def initial_states(self) -> np.ndarray:
        """(nbatch, nstate): every environment at the initial state (nothing drawn)."""
        return np.tile(self.initial_state, (self.nbatch, 1))

    def reset(self, state: np.ndarray | None = None, ids=None, to=None, keyframe=None,
              randomize: bool = True) -> np.ndarray:
        """Resets environments `ids` (indices or a boolean mask; all when None) of
        `state` in place and returns it (a new array of initial states when state is
        None). Their rows become `to` ((len(ids), nstate) or (nstate,)), or the
        keyframe named, or the initial state; with a randomization and `randomize`,
        they draw new model values (the others keep theirs)."""
        if state is None:
            state = self.initial_states()
        else:
            state = self._states(state, "state")
        ids = self._ids(ids)
        if to is not None and keyframe is not None:
            raise BatchError("give `to` or `keyframe`, not both")
        if keyframe is not None:
            rows = self._initial_state(keyframe)
        elif to is not None:
            rows = np.asarray(to, dtype=np.float64)
            if rows.shape not in ((self.nstate,), (len(ids), self.nstate)):
                raise BatchError(f"to: expected shape ({len(ids)}, {self.nstate}) or ({self.nstate},), "
                                 f"got {rows.shape}")
        else:
            rows = self.initial_state
        state[ids] = rows
        if self.parameters is not None and randomize:
            self.parameters.redraw(ids)
        return state

    # -- stepping ------------------------------------------------------------------------------
    def step(self, state: np.ndarray, ctrl=None, nstep: int = 1, sensors: bool = False):
        """Steps every environment `nstep` times from `state` and returns the final
        states (nbatch, nstate), and with `sensors` also (nbatch, nsensordata): the
        sensor values the last mj_step computed (those of the state before it, as
        `data.sensordata` after mj_step; `forward` gives the final state's).

        ctrl: None (zero), (nu,) for all, (nbatch, nu) held for all steps,
        (nbatch, nstep, nu) per step, or a policy `policy(step, states) ->
        (nbatch, nu)` called before each step with the current states."""
        state = self._states(state, "state")
        nstep = self._nstep(nstep)
        if callable(ctrl):
            return self._step_policy(state, ctrl, nstep, sensors)
        controls = self._controls(ctrl, nstep)
        batch = self._load(state, controls if controls.ndim == 2 else None)
        if controls.ndim == 2:
            batch.step(nstep=nstep)
        else:  # per-step controls: one call, the batch sets them before each substep
            batch.rollout(nstep, controls, record=())
        return self._result(sensors)

    def _step_policy(self, state, policy, nstep, sensors):
        """Lockstep: the policy sees every environment's state before each step. Each
        environment keeps its own warm start between steps (it is in the batch's row),
        so the result is serial mj_step's."""
        current = state.copy()
        batch = self._load(state)
        for k in range(nstep):
            controls = self._controls(policy(k, current.copy()), 1, policy=True)
            self._rows[:, self._ctrl] = controls
            batch.step()
            current = self._rows[:, self._physics]
        return self._result(sensors, current)

    def _load(self, state, controls=None) -> mujoco.batch.Batch:
        """The batch's rows become `state`, as mujoco.rollout starts an environment: a
        fresh MjData given the state (no applied forces, no warm start), controls as given."""
        if self.batch is None:
            raise BatchError("the pool is closed")
        self._rows[:] = self._fresh
        self._rows[:, self._physics] = state
        if controls is not None:
            self._rows[:, self._ctrl] = controls
        self.batch.warning[:] = 0
        return self.batch

    def _result(self, sensors, final=None):
        final = self._rows[:, self._physics] if final is None else final
        return (final, self._sensordata.copy()) if sensors else final

    # -- queries without stepping ----------------------------------------------------------------
    def forward(self, state: np.ndarray, ctrl=None) -> np.ndarray:
        """(nbatch, nsensordata): the sensors of each state after mj_forward (controls
        as in `step`, held; zero when None)."""
        self._load(*self._forward_inputs(state, ctrl)).forward()
        return self._sensordata.copy()

    def _forward_inputs(self, state, ctrl) -> tuple[np.ndarray, np.ndarray]:
        """`forward`'s state and controls, checked (per-step controls: their first row)."""
        state = self._states(state, "state")
        controls = self._controls(ctrl, 1)
        return state, controls[:, 0] if controls.ndim == 3 else controls

    def site_jacobians(self, state: np.ndarray, sites: Sequence[str | int], rotation: bool = False):
        """(nbatch, K, 3, nv): mj_jacSite's translational Jacobian of each of the K
        sites (names or ids) at each state; with `rotation`, (nbatch, K, 6, nv), the
        rotational rows after the translational ones."""
        state = self._states(state, "state")
        ids = [self._named(mujoco.mjtObj.mjOBJ_SITE, "site", s, self.model.nsite) for s in sites]
        out = np.zeros((self.nbatch, len(ids), 6 if rotation else 3, self.nv))
        site_xpos = self._kinematics(state, "site_xpos")
        for k, site in enumerate(ids):  # mj_jacSite is mj_jac at the site's point on its body
            jacp, jacr = self.batch.jac(int(self.model.site_bodyid[site]), site_xpos[:, site])
            out[:, k, :3] = jacp
            if rotation:
                out[:, k, 3:] = jacr
        return out

    def heightfield(self, state: np.ndarray, body: str | int, points, hfield: str | None = None):
        """Terrain under `points` (P, 3), given in the frame of `body`, at each state:
        (heights (nbatch, P): world z of the height field under each point,
        clearances (nbatch, P): each point's height above it, along the field's z).
        `hfield`: a height-field geom or asset name (default: the model's only one).
        NaN where a point is outside the field."""
        state = self._states(state, "state")
        body_id, geom, points = self._terrain_query(body, points, hfield)
        xpos, xmat, geom_xpos, geom_xmat = self._kinematics(state, "xpos", "xmat", "geom_xpos", "geom_xmat")
        n = self.nbatch
        return heightfield.sample(self.model, geom, xpos[:, body_id], xmat[:, body_id].reshape(n, 3, 3),
                                  geom_xpos[:, geom], geom_xmat[:, geom].reshape(n, 3, 3), points)

    def body_poses(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every body's world pose at each state, after mj_kinematics with each
        environment's own model: (xpos (nbatch, nbody, 3), xquat (nbatch, nbody, 4))."""
        xpos, xquat = self._kinematics(self._states(state, "state"), "xpos", "xquat")
        return xpos.copy(), xquat.copy()

    def _kinematics(self, state, *fields):
        """The batch's outputs `fields` (live) after the position stage at each state,
        run with collision and constraints switched off: poses need neither, and they
        were most of its time (Franka, 1024 environments: 2.98 ms, 1.13 ms without)."""
        batch = self._load(state)
        # bound before the call, which fills them. A bound output stays registered and is
        # copied out after every later call, stepping too: all six pose fields add ~0.17 ms
        # to a 12 ms step of 1024 humanoids (1.4%); Batch has no unbind.
        out = tuple(batch.bind(name) for name in fields)
        if self._flags is None:  # per-simulation switches, so a query can set them for one call
            self._flags = batch.expand("opt.disableflags")
        nominal = self._flags.copy()
        self._flags |= _POSES_ONLY
        try:
            batch.forward(stage=_POS)
        finally:
            self._flags[:] = nominal
        return out[0] if len(out) == 1 else out

    def render(self, state: np.ndarray, cameras, kinds=("rgb",), width: int | None = None,
               height: int | None = None) -> dict:
        """Each environment's images from the cameras named, at each state: {camera:
        {kind: array}}, rgb (nbatch, H, W, 3) uint8, depth (nbatch, H, W, 1) float32
        metres, segmentation (nbatch, H, W, 2) int32 (object id, type); each that of
        mujoco.Renderer for the environment's own model (see images.py). width,
        height: None for each camera's MJCF resolution (640 x 480 where it sets none)."""
        return images.render(self, state, cameras, kinds, width, height)

    # -- checks ----------------------------------------------------------------------------------
    def _states(self, state, what) -> np.ndarray:
        if not isinstance(state, np.ndarray) or state.shape != (self.nbatch, self.nstate):
            shape = getattr(state, "shape", type(state).__name__)
            raise BatchError(f"{what}: expected a float64 array of shape ({self.nbatch}, {self.nstate}) "
                             f"(nbatch, nstate: mjSTATE_FULLPHYSICS), got {shape}")
        if state.dtype != np.float64:
            raise BatchError(f"{what}: expected dtype float64, got {state.dtype}")
        return np.ascontiguousarray(state)

    def _controls(self, ctrl, nstep: int, policy: bool = False) -> np.ndarray:
        if ctrl is None:
            return np.zeros((self.nbatch, self.nu))
        controls = np.asarray(ctrl, dtype=np.float64)
        shapes = [(self.nbatch, self.nu)] if policy else [(self.nu,), (self.nbatch, self.nu),
                                                           (self.nbatch, nstep, self.nu)]
        if controls.shape not in shapes:
            what = "the policy's controls" if policy else "ctrl"
            raise BatchError(f"{what}: expected shape {' or '.join(map(str, shapes))}, got {controls.shape}")
        if not np.isfinite(controls).all():
            raise BatchError("ctrl: NaN or infinite values")
        if controls.ndim == 1:
            controls = np.broadcast_to(controls, (self.nbatch, self.nu))
        return np.ascontiguousarray(controls)

    @staticmethod
    def _nstep(nstep) -> int:
        if not isinstance(nstep, (int, np.integer)) or nstep < 1:
            raise BatchError(f"nstep must be a positive integer, not {nstep!r}")
        return int(nstep)

    def _terrain_query(self, body, points, hfield) -> tuple[int, int, np.ndarray]:
        """(body id, terrain geom id, points (P, 3)) of a height-field query, checked."""
        body_id = self._named(mujoco.mjtObj.mjOBJ_BODY, "body", body, self.model.nbody)
        try:
            geom = heightfield.terrain_geom(self.model, hfield)
        except heightfield.HeightFieldError as error:
            raise BatchError(str(error)) from None
        points = np.asarray(points, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] not in (2, 3):
            raise BatchError(f"points: expected shape (P, 3) (or (P, 2), z = 0), got {points.shape}")
        if points.shape[1] == 2:
            points = np.c_[points, np.zeros(len(points))]
        return body_id, geom, points

    def _ids(self, ids) -> np.ndarray:
        if ids is None:
            return np.arange(self.nbatch)
        ids = np.asarray(ids)
        if ids.dtype == bool:
            if ids.shape != (self.nbatch,):
                raise BatchError(f"ids: a mask must have shape ({self.nbatch},), got {ids.shape}")
            return np.flatnonzero(ids)
        if ids.ndim == 0:
            ids = ids[None]
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise BatchError(f"ids: expected environment indices (1-D integers) or a mask, got {ids!r}")
        if len(ids) and (ids.min() < 0 or ids.max() >= self.nbatch):
            raise BatchError(f"ids: indices must be in 0..{self.nbatch - 1}")
        if len(np.unique(ids)) != len(ids):
            raise BatchError("ids: an environment is named twice")
        return ids

    def _named(self, kind, word, key, count) -> int:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < count:
                raise BatchError(f"{word} id {key} is out of range (the model has {count})")
            return int(key)
        index = mujoco.mj_name2id(self.model, kind, str(key))
        if index < 0:
            raise BatchError(f"the model has no {word} named '{key}'")
        return index

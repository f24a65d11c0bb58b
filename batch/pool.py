"""BatchPool: many environments of one model, stepped by persistent worker threads.

The pool is stateless about physics, as MuJoCoUni's BatchEnvPool and
`mujoco.rollout`: callers hold the states, an (nbatch, nstate) float64 array
of MuJoCo's full physics state (mjSTATE_FULLPHYSICS: time, qpos, qvel, act,
history, mocap, user data, plugin state, eq_active), and every call takes and
gives such arrays. A call starts each environment as `mujoco.rollout` does:
a fresh MjData given the state (warm start and applied forces zero, controls
as passed), so each result equals serial `mj_step` from that state bit for
bit. What the pool keeps is each environment's model: with a randomization,
each environment has its own drawn values (see parameters.py), drawn again
when it is reset.

Open-loop controls of an unrandomized model go to `mujoco.rollout` (C++
threads, no Python per step). Randomized models and policies called back every
step go through the pool's own workers: one thread per share of the
environments, each with its own model copy and MjData, releasing the GIL in
`mj_step`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import mujoco
import mujoco.rollout
import numpy as np

from ..engine.errors import MJBlendError
from . import heightfield
from .parameters import Parameters
from .randomization import Randomization

STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS


class BatchError(MJBlendError, ValueError):
    """A call the pool cannot make: wrong shape or dtype, unknown name, index out of
    range. The message says what was expected."""


class BatchPool:
    """`nbatch` environments of `model`.

    nthread: worker threads (default: the machine's CPUs, at most nbatch; 0 or 1
    runs everything on the calling thread). randomization: a Randomization
    (or None); seed: its generator's seed (default: the randomization's own
    seed). keyframe: name or index of the keyframe environments reset to
    (default: the model's qpos0)."""

    def __init__(self, model: mujoco.MjModel, nbatch: int, nthread: int | None = None,
                 randomization: Randomization | None = None, seed: int | None = None,
                 keyframe: str | int | None = None):
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
        self.parameters = (Parameters(model, randomization, self.nbatch, seed)
                           if randomization else None)
        # one (model, data) per worker share of the environments
        self._shares = np.array_split(np.arange(self.nbatch), self.nthread)
        self._models = [copy.copy(model) if self.parameters else model for _ in range(self.nthread)]
        self._datas = [mujoco.MjData(model) for _ in range(self.nthread)]
        self._executor = ThreadPoolExecutor(self.nthread, "mjblend-batch") if self.nthread > 1 else None
        self._rollout = mujoco.rollout.Rollout(nthread=self.nthread if self.nthread > 1 else 0)
        self._rollout_models = [model] * self.nbatch
        self._buffers: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if self.parameters:
            self.parameters.redraw(np.arange(self.nbatch))

    # -- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stops the worker threads (also on `with BatchPool(...) as pool:`)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        if self._rollout is not None:
            self._rollout.close()
            self._rollout = None

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
        # one environment, held controls or a few steps: on the calling thread (a
        # mujoco.rollout call costs ~25 us more; Python costs ~1 us a step more)
        alone = self.nbatch == 1 and (controls.ndim == 2 or nstep < 16)
        if self.parameters is None and not alone:
            return self._step_rollout(state, controls, nstep, sensors)
        return self._step_workers(state, controls, nstep, sensors)

    def _step_rollout(self, state, controls, nstep, sensors):
        if controls.ndim == 2:  # held: rollout takes one row per step
            controls = np.repeat(controls[:, None, :], nstep, axis=1)
        states, sensordata = self._buffers.get(nstep, (None, None))
        if states is None:
            states = np.empty((self.nbatch, nstep, self.nstate))
            sensordata = np.empty((self.nbatch, nstep, self.nsensordata))
            self._buffers = {nstep: (states, sensordata)}  # keep one size: memory stays bounded
        self._rollout.rollout(self._rollout_models, self._datas, state, controls, skip_checks=True,
                              nstep=nstep, state=states, sensordata=sensordata)
        final = states[:, -1].copy()
        return (final, sensordata[:, -1].copy()) if sensors else final

    def _step_workers(self, state, controls, nstep, sensors):
        out = np.empty_like(state)
        sensed = np.empty((self.nbatch, self.nsensordata)) if sensors else None

        def run(share, model, data):
            for env in share.tolist():
                self._start(model, data, env, state[env])
                if controls.ndim == 2:
                    data.ctrl[:] = controls[env]
                    mujoco.mj_step(model, data, nstep)
                else:
                    for k in range(nstep):
                        data.ctrl[:] = controls[env, k]
                        mujoco.mj_step(model, data)
                mujoco.mj_getState(model, data, out[env], STATE_SPEC)
                if sensed is not None:
                    sensed[env] = data.sensordata
        self._map(run)
        return (out, sensed) if sensors else out

    def _step_policy(self, state, policy, nstep, sensors):
        """Lockstep: the policy sees every environment's state before each step. Each
        environment keeps its own warm start between steps (one MjData each for the
        call), so the result is serial mj_step's."""
        current = state.copy()
        warm = np.zeros((self.nbatch, self.nv))
        sensed = np.empty((self.nbatch, self.nsensordata)) if sensors else None
        for k in range(nstep):
            controls = self._controls(policy(k, current.copy()), 1, policy=True)

            def run(share, model, data, first=(k == 0), controls=controls):
                for env in share.tolist():
                    if first:
                        self._start(model, data, env, current[env])
                    else:
                        if self.parameters is not None:
                            self.parameters.swap_in(model, env)
                        mujoco.mj_setState(model, data, current[env], STATE_SPEC)
                        data.qacc_warmstart[:] = warm[env]
                    data.ctrl[:] = controls[env]
                    mujoco.mj_step(model, data)
                    mujoco.mj_getState(model, data, current[env], STATE_SPEC)
                    warm[env] = data.qacc_warmstart
                    if sensed is not None:
                        sensed[env] = data.sensordata
            self._map(run)
        return (current, sensed) if sensors else current

    def _start(self, model, data, env, row) -> None:
        """Environment `env` as a fresh MjData given `row`, as mujoco.rollout starts one:
        the state, no applied forces, no warm start (mj_step recomputes the rest)."""
        if self.parameters is not None:
            self.parameters.swap_in(model, env)
        mujoco.mj_setState(model, data, row, STATE_SPEC)
        data.qfrc_applied[:] = 0
        data.xfrc_applied[:] = 0
        data.qacc_warmstart[:] = 0

    # -- queries without stepping ----------------------------------------------------------------
    def forward(self, state: np.ndarray, ctrl=None) -> np.ndarray:
        """(nbatch, nsensordata): the sensors of each state after mj_forward (controls
        as in `step`, held; zero when None)."""
        state = self._states(state, "state")
        controls = self._controls(ctrl, 1)
        if controls.ndim == 3:
            controls = controls[:, 0]
        out = np.empty((self.nbatch, self.nsensordata))

        def run(share, model, data):
            for env in share.tolist():
                self._start(model, data, env, state[env])
                data.ctrl[:] = controls[env]
                mujoco.mj_forward(model, data)
                out[env] = data.sensordata
        self._map(run)
        return out

    def site_jacobians(self, state: np.ndarray, sites: Sequence[str | int], rotation: bool = False):
        """(nbatch, K, 3, nv): mj_jacSite's translational Jacobian of each of the K
        sites (names or ids) at each state; with `rotation`, (nbatch, K, 6, nv), the
        rotational rows after the translational ones."""
        state = self._states(state, "state")
        ids = [self._named(mujoco.mjtObj.mjOBJ_SITE, "site", s, self.model.nsite) for s in sites]
        rows = 6 if rotation else 3
        out = np.zeros((self.nbatch, len(ids), rows, self.nv))

        def run(share, model, data):
            for env in share.tolist():
                self._kinematics(model, data, env, state[env])
                for k, site in enumerate(ids):
                    mujoco.mj_jacSite(model, data, out[env, k, :3], out[env, k, 3:] if rotation else None,
                                      site)
        self._map(run)
        return out

    def heightfield(self, state: np.ndarray, body: str | int, points, hfield: str | None = None):
        """Terrain under `points` (P, 3), given in the frame of `body`, at each state:
        (heights (nbatch, P): world z of the height field under each point,
        clearances (nbatch, P): each point's height above it, along the field's z).
        `hfield`: a height-field geom or asset name (default: the model's only one).
        NaN where a point is outside the field."""
        state = self._states(state, "state")
        body_id, geom, points = self._terrain_query(body, points, hfield)
        poses = np.empty((self.nbatch, 24))  # body xpos, xmat, geom xpos, xmat

        def run(share, model, data):
            for env in share.tolist():
                self._kinematics(model, data, env, state[env])
                poses[env] = np.concatenate((data.xpos[body_id], data.xmat[body_id],
                                             data.geom_xpos[geom], data.geom_xmat[geom]))
        self._map(run)
        n = self.nbatch
        return heightfield.sample(self.model, geom, poses[:, :3], poses[:, 3:12].reshape(n, 3, 3),
                                  poses[:, 12:15], poses[:, 15:].reshape(n, 3, 3), points)

    def body_poses(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every body's world pose at each state, after mj_kinematics with each
        environment's own model: (xpos (nbatch, nbody, 3), xquat (nbatch, nbody, 4))."""
        state = self._states(state, "state")
        xpos = np.empty((self.nbatch, self.model.nbody, 3))
        xquat = np.empty((self.nbatch, self.model.nbody, 4))

        def run(share, model, data):
            for env in share.tolist():
                self._kinematics(model, data, env, state[env])
                xpos[env], xquat[env] = data.xpos, data.xquat
        self._map(run)
        return xpos, xquat

    def _kinematics(self, model, data, env, row) -> None:
        self._start(model, data, env, row)
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)

    # -- workers and checks ----------------------------------------------------------------------
    def _map(self, run) -> None:
        """run(share, model, data) for every worker's share, in parallel; the first
        worker's error is raised here."""
        if self._executor is None:
            run(self._shares[0], self._models[0], self._datas[0])
            return
        futures = [self._executor.submit(run, share, model, data)
                   for share, model, data in zip(self._shares, self._models, self._datas, strict=True)]
        for future in futures:
            future.result()

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

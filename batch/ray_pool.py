"""RayPool: BatchPool's API with the environments spread over Ray actors, on
one machine or a cluster.

Each actor holds a BatchPool of a contiguous slice of the environments, built
from the model's .mjb bytes (sent once). A call sends each actor its rows of
the states and controls and gathers the rows back, so the results are
BatchPool's bit for bit. Randomization draws happen only here, in the driver,
from one numpy Generator in BatchPool's order, and go to the actors as rows
(`Parameters.set_draws`): a RayPool and a BatchPool with the same seed hold
the same environments. A policy is called here once per step; its controls go
to the actors, which step their slice once and send the states back.

The batch package's code travels to the actors with them (cloudpickle by
value), so a worker machine needs only Ray, mujoco and numpy, the driver's
versions. Ray is optional: it is imported when a RayPool is made.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Sequence

import mujoco
import numpy as np

from ..engine.errors import MJBlendError
from .pool import BatchError, BatchPool
from .parameters import Draws
from .randomization import Randomization


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError("Ray is not installed: pip install ray") from None
    return ray


class RayPool:
    """`nbatch` environments of `model` on `nworkers` Ray actors (default: one per
    `nthread_per_worker` CPUs of the Ray cluster, at most nbatch), each stepping
    its slice with `nthread_per_worker` threads. address: the cluster to join when
    Ray is not initialised yet (None starts a local Ray; "auto" joins the cluster
    `ray start` made on this machine; "ray://host:10001" a remote head). The other
    arguments and every method are BatchPool's."""

    def __init__(self, model: mujoco.MjModel, nbatch: int, nworkers: int | None = None,
                 randomization: Randomization | None = None, seed: int | None = None,
                 keyframe: str | int | None = None, address: str | None = None,
                 nthread_per_worker: int = 1):
        # a pool of the driver's own that runs nothing: argument checks with
        # BatchPool's messages, initial states, resets of the state rows
        self._local = BatchPool(model, nbatch, nthread=0, keyframe=keyframe)
        if not isinstance(nthread_per_worker, (int, np.integer)) or nthread_per_worker < 1:
            raise BatchError(f"nthread_per_worker must be a positive integer, not {nthread_per_worker!r}")
        if nworkers is not None and (not isinstance(nworkers, (int, np.integer)) or nworkers < 1):
            raise BatchError(f"nworkers must be a positive integer, not {nworkers!r}")
        ray = _import_ray()
        self.model = model
        self.nbatch, self.nstate = self._local.nbatch, self._local.nstate
        self.nu, self.nv, self.nsensordata = model.nu, model.nv, model.nsensordata
        self.initial_state = self._local.initial_state
        self.parameters = Draws(model, randomization, self.nbatch, seed) if randomization else None

        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            ray.init(address=address)
        self._workers: list = []
        self._pending: list = []  # replies not waited for yet (draws sent on reset)
        try:
            cpus = int(ray.cluster_resources().get("CPU", 0))
            if nworkers is None:
                nworkers = max(1, cpus // int(nthread_per_worker))
            nworkers = min(int(nworkers), self.nbatch)
            if nworkers * nthread_per_worker > cpus:
                raise BatchError(f"{nworkers} workers x {nthread_per_worker} threads need "
                                 f"{nworkers * nthread_per_worker} CPUs; the Ray cluster has {cpus}")
            bounds = np.linspace(0, self.nbatch, nworkers + 1).round().astype(int)
            self._slices = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
            _ship_by_value(ray)
            actor = ray.remote(num_cpus=int(nthread_per_worker))(_Worker)
            mjb = ray.put(_model_bytes(model))
            self._workers = [actor.remote(mjb, part.stop - part.start, int(nthread_per_worker),
                                          randomization or None, keyframe)
                             for part in self._slices]
            self._gather([w.ready.remote() for w in self._workers])
            if self.parameters is not None:
                self._send_draws(np.arange(self.nbatch), self.parameters.redraw(np.arange(self.nbatch)))
        except BaseException:
            self.close()
            raise

    # -- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        """Kills the actors, and shuts Ray down if this pool started it (also on
        `with RayPool(...) as pool:`)."""
        self._local.close()
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():
            return
        for worker in self._workers:
            ray.kill(worker)
        self._workers, self._pending = [], []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- states ----------------------------------------------------------------------------------
    def initial_states(self) -> np.ndarray:
        return self._local.initial_states()

    def reset(self, state: np.ndarray | None = None, ids=None, to=None, keyframe=None,
              randomize: bool = True) -> np.ndarray:
        """As BatchPool.reset: the rows are reset here; new draws are made here and
        sent to the actors holding environments `ids`."""
        state = self._local.reset(state, ids, to, keyframe)
        if self.parameters is not None and randomize:
            ids = self._local._ids(ids)
            self._send_draws(ids, self.parameters.redraw(ids))
        return state

    def _send_draws(self, ids: np.ndarray, draws: np.ndarray) -> None:
        for worker, part in self._actors():
            mine = (ids >= part.start) & (ids < part.stop)
            if mine.any():  # actors run one caller's calls in order: no need to wait
                self._pending.append(worker.set_draws.remote(ids[mine] - part.start, draws[mine]))

    # -- calls ---------------------------------------------------------------------------------
    def step(self, state: np.ndarray, ctrl=None, nstep: int = 1, sensors: bool = False):
        """As BatchPool.step. A policy is called here before each step; every step is
        then one round trip to the actors."""
        state = self._local._states(state, "state")
        nstep = self._local._nstep(nstep)
        if callable(ctrl):
            return self._step_policy(state, ctrl, nstep, sensors)
        controls = self._local._controls(ctrl, nstep)
        return self._call("step", state, nstep, sensors, rows=self._rows(ctrl, controls))

    def _step_policy(self, state, policy, nstep, sensors):
        actors = self._actors()
        self._gather([w.policy_start.remote(state[part], nstep, sensors) for w, part in actors])
        current = state.copy()
        try:
            for k in range(nstep):
                controls = self._local._controls(policy(k, current), 1, policy=True)
                replies = self._gather([w.policy_next.remote(controls[part]) for w, part in actors])
                if k < nstep - 1:
                    current = np.concatenate(replies)
        except BaseException:
            self._gather([w.policy_stop.remote() for w, _ in actors])
            raise
        return self._join(replies)

    def forward(self, state: np.ndarray, ctrl=None) -> np.ndarray:
        state = self._local._states(state, "state")
        controls = self._local._controls(ctrl, 1)
        if controls.ndim == 3:
            ctrl = controls = controls[:, 0]
        return self._call("forward", state, rows=self._rows(ctrl, controls))

    def site_jacobians(self, state: np.ndarray, sites: Sequence[str | int], rotation: bool = False):
        state = self._local._states(state, "state")
        ids = [self._local._named(mujoco.mjtObj.mjOBJ_SITE, "site", s, self.model.nsite) for s in sites]
        return self._call("site_jacobians", state, ids, rotation)

    def heightfield(self, state: np.ndarray, body: str | int, points, hfield: str | None = None):
        state = self._local._states(state, "state")
        body_id, _, points = self._local._terrain_query(body, points, hfield)
        return self._call("heightfield", state, body_id, points, hfield)

    def body_poses(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._call("body_poses", self._local._states(state, "state"))

    def render(self, state: np.ndarray, cameras, kinds=("rgb",), width: int | None = None,
               height: int | None = None) -> dict:
        """As BatchPool.render: each actor draws its environments with its own
        renderer (its process's GL context); the images come back through Ray."""
        return self._call("render", self._local._states(state, "state"), cameras, tuple(kinds), width, height)

    # -- to the actors and back ------------------------------------------------------------------
    def _rows(self, ctrl, controls):
        """Per actor: None (zero controls), the one (nu,) row all share, or its rows."""
        if ctrl is None or np.ndim(ctrl) == 1:
            return [controls[0] if ctrl is not None else None] * len(self._slices)
        return [controls[part] for part in self._slices]

    def _call(self, method: str, state, *args, rows: list | None = None):
        """`method` on every actor with its rows of `state` (then its entry of `rows`,
        when given, then `args`), the replies joined in environment order."""
        refs = []
        for n, (worker, part) in enumerate(self._actors()):
            mine = () if rows is None else (rows[n],)
            refs.append(getattr(worker, method).remote(state[part], *mine, *args))
        return self._join(self._gather(refs))

    def _actors(self) -> list:
        """(worker, its slice of the environments) for every actor."""
        if not self._workers:
            raise BatchError("the pool is closed")
        return list(zip(self._workers, self._slices, strict=True))

    def _gather(self, refs: list) -> list:
        ray = sys.modules["ray"]
        pending, self._pending = self._pending, []
        return ray.get(pending + refs)[len(pending):]

    @staticmethod
    def _join(replies: list):
        if isinstance(replies[0], dict):  # images: {camera: {kind: array}}
            return {camera: {kind: np.concatenate([reply[camera][kind] for reply in replies])
                             for kind in images} for camera, images in replies[0].items()}
        if isinstance(replies[0], tuple):
            return tuple(np.concatenate(parts) for parts in zip(*replies, strict=True))
        return np.concatenate(replies)


def _model_bytes(model: mujoco.MjModel) -> bytes:
    buffer = np.empty(mujoco.mj_sizeModel(model), dtype=np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return buffer.tobytes()


def _ship_by_value(ray) -> None:
    """Actors get this package's code inside their pickles instead of importing it,
    so a worker needs no copy of MJBlend (whose package name differs between a test
    and a Blender extension); with it the engine package, whose modules this package
    uses (the errors, the base of its errors; the cameras, its images; and theirs)."""
    engine = sys.modules[MJBlendError.__module__.rpartition(".")[0]]
    for module in (sys.modules[__package__], engine):
        ray.cloudpickle.register_pickle_by_value(module)


class _Stopped(Exception):
    """The driver gave up a policy call (its policy raised)."""


class _Worker:
    """One Ray actor: a BatchPool of a slice of the environments."""

    def __init__(self, mjb: bytes, nbatch: int, nthread: int, randomization, keyframe):
        model = mujoco.MjModel.from_binary_path("model.mjb", {"model.mjb": mjb})
        # its own draws are replaced by the driver's before any call
        self.pool = BatchPool(model, nbatch, nthread=nthread, randomization=randomization, seed=0,
                              keyframe=keyframe)
        self._lockstep: _Lockstep | None = None

    def ready(self) -> bool:
        return True

    def set_draws(self, ids, draws) -> None:
        self.pool.parameters.set_draws(ids, draws)

    def step(self, state, ctrl, nstep, sensors):
        return self.pool.step(state, ctrl, nstep, sensors)

    def forward(self, state, ctrl):
        return self.pool.forward(state, ctrl)

    def site_jacobians(self, state, sites, rotation):
        return self.pool.site_jacobians(state, sites, rotation)

    def heightfield(self, state, body, points, hfield):
        return self.pool.heightfield(state, body, points, hfield)

    def body_poses(self, state):
        return self.pool.body_poses(state)

    def render(self, state, cameras, kinds, width, height):
        return self.pool.render(state, cameras, kinds, width, height)

    # a policy step by step: the local pool's own policy loop runs in a thread whose
    # policy hands each step's states to the driver and waits for its controls
    def policy_start(self, state, nstep, sensors) -> None:
        self.policy_stop()
        self._lockstep = _Lockstep(self.pool, state, nstep, sensors)

    def policy_next(self, controls):
        """This step's controls; returns the next states, or after the last step the
        result of BatchPool.step."""
        kind, value = self._lockstep.send(controls)
        if kind == "done":
            self._lockstep = None
        return value

    def policy_stop(self) -> None:
        if self._lockstep is not None:
            self._lockstep.stop()
            self._lockstep = None


class _Lockstep:
    def __init__(self, pool: BatchPool, state, nstep, sensors):
        self._controls: queue.Queue = queue.Queue()
        self._out: queue.Queue = queue.Queue()
        self._first = True
        self._thread = threading.Thread(target=self._run, args=(pool, state, nstep, sensors), daemon=True)
        self._thread.start()

    def _policy(self, step, states):
        if not self._first:  # the driver has the states it sent for the first step
            self._out.put(("states", states))
        self._first = False
        controls = self._controls.get()
        if controls is None:
            raise _Stopped
        return controls

    def _run(self, pool, state, nstep, sensors):
        try:
            self._out.put(("done", pool.step(state, self._policy, nstep, sensors)))
        except _Stopped:
            pass
        except BaseException as error:  # noqa: BLE001 - raised again in the actor's call
            self._out.put(("error", error))

    def send(self, controls):
        self._controls.put(controls)
        kind, value = self._out.get()
        if kind == "error":
            raise value
        return kind, value

    def stop(self) -> None:
        self._controls.put(None)
        self._thread.join()

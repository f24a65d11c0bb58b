"""WarpPool: BatchPool's API on MuJoCo Warp (an NVIDIA GPU, or Warp's CPU device).

`BatchPool(model, nbatch, backend="warp")` (or `WarpPool(...)`) gives this pool.
It is as stateless as BatchPool: callers hold (nbatch, nstate) float64 arrays of
mjSTATE_FULLPHYSICS, and every call starts each environment as
`mujoco.rollout` does (a reset Data given the state: no warm start, no applied
forces, controls as passed). The nbatch environments are the worlds of one
MuJoCo Warp Model/Data pair on one device.

Differences from the CPU pool:

- MuJoCo Warp computes in float32: states, controls and model values go to the
  device as float32 and come back as float64. The time column is kept in
  float64 on the host (t + timestep, step after step, as MuJoCo adds it). Against
  serial float64 mj_step from the same states the difference grows with the
  number of steps and with contacts: see TOLERANCE (measured by
  tests/batch/test_warp.py).
- mujoco_warp raises the model's tolerance to at least 1e-6 and sizes contact
  and constraint buffers per world (nconmax, njmax: mujoco_warp's defaults
  unless given); a world that overflows them drops contacts, and the call warns.
- Per-step controls keep stepping an environment after a MuJoCo warning (there
  are none on the device), as held controls do.
- Randomized values go into per-world model fields (`put_model`'s batch sizes);
  derived constants are mujoco_warp's `set_const` on the device (float32), for
  every world after a redraw.
- What MuJoCo Warp cannot run (its `put_model` refuses some integrators,
  solvers, sensors, plugins, flex features...) is a BatchError naming it.

mujoco_warp and warp are imported only when a WarpPool is made; neither is
needed otherwise (requirements-warp.txt; never bundled in the extension).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import mujoco
import numpy as np

from .parameters import _STRUCTURAL, Draws, Parameters
from . import images
from .pool import STATE_SPEC, BatchError, BatchPool
from .randomization import Randomization

INSTALL = ("the GPU backend needs MuJoCo Warp, an optional dependency that is not installed here: "
           "pip install mujoco-warp (to keep mujoco-core 4.0.1: pip install --no-deps mujoco-warp==4.0.0 "
           "warp-lang==1.19.0 absl-py etils, as requirements-warp.txt pins them)")

# Bounds on the max abs difference of qpos and qvel from serial float64 mj_step
# (tests/batch/test_warp.py checks them), about 5-10 times what was measured on
# Warp's CPU device with mujoco_warp 4.0.0, 16 moving states, random per-step
# controls: cartpole 2.1e-6 after 100 steps (6.6e-3 after 500); the corpus
# humanoid, falling and in contact, 4.9e-4 after 20 steps. Longer, in contact,
# the two diverge as any two float implementations of a chaotic system do
# (humanoid after 100 steps: median 0.03-0.2, max ~11 in a qvel).
TOLERANCE = {"cartpole": 1e-5, "humanoid": 5e-3}

# What mujoco_warp's set_const writes (per world when a randomization changes a
# value the constants derive from): these fields then get one row per world.
_SET_CONST_FIELDS = ("geom_size", "geom_aabb", "geom_rbound", "body_subtreemass", "tendon_length0",
                     "eq_data", "cam_pos0", "cam_poscom0", "cam_mat0", "light_pos0", "light_poscom0",
                     "light_dir0", "dof_invweight0", "body_invweight0", "tendon_invweight0", "actuator_acc0")


def _import_warp():
    try:
        import mujoco_warp
        import warp
    except ImportError as error:
        raise BatchError(f"{INSTALL} ({error})") from None
    return warp, mujoco_warp


class _WorldFields:
    """The per-world model fields of a randomization, as `Parameters` sees a
    `mujoco.batch.Batch`: `expand(field)` is a host float64 array with a row per
    world, `set_const(ids)` asks for the derived constants; `upload()` sends
    the fields to the device model (and runs mujoco_warp's set_const if asked)."""

    def __init__(self, pool: WarpPool):
        self.pool = pool
        self.host: dict[str, np.ndarray] = {}
        self.derive = False

    def expand(self, name: str) -> np.ndarray:
        if name not in self.host:
            nominal = np.asarray(self.pool.model.opt.gravity if name == "opt.gravity"
                                 else getattr(self.pool.model, name), dtype=np.float64)
            self.host[name] = np.array(np.broadcast_to(nominal, (self.pool.nbatch, *nominal.shape)))
        return self.host[name]

    def set_const(self, ids) -> None:
        self.derive = True

    def upload(self) -> None:
        pool = self.pool
        wp = pool._wp
        with wp.ScopedDevice(pool.device):
            for name, values in self.host.items():
                target = pool._model.opt.gravity if name == "opt.gravity" else getattr(pool._model, name)
                shape = (pool.nbatch, *target.shape[1:], *getattr(target.dtype, "_shape_", ()))
                target.assign(wp.array(values.reshape(shape).astype(np.float32), dtype=target.dtype))
            if self.derive:
                pool._mjw.set_const(pool._model, pool._data, restore=False)
                self.derive = False


class WarpParameters(Parameters):
    """A randomization's draws written into a WarpPool's per-world model fields."""

    _scratch_data = None  # swap_in's (model, scratch MjData) of the model it last wrote

    def set_draws(self, ids: np.ndarray, draws: np.ndarray) -> None:
        super().set_draws(ids, draws)
        if self.batch is not None:
            self.batch.upload()

    def model_of(self, env: int) -> mujoco.MjModel:
        """A stand-alone float64 MjModel of environment `env` (the values the device
        holds in float32; derived constants by mj_setConst)."""
        return Draws.model_of(self, env)

    def swap_in(self, model: mujoco.MjModel, env: int) -> None:
        """Makes `model` (a copy of the nominal model) environment `env`'s model, as
        model_of gives it (the renderers' model: batch/images.py)."""
        if self._scratch_data is None or self._scratch_data[0] is not model:
            self._scratch_data = (model, mujoco.MjData(model))
        self.bound.apply(model, self.draws[env], self._scratch_data[1])


class WarpPool:
    """`nbatch` environments of `model` on MuJoCo Warp: BatchPool's calls, states
    and errors (see BatchPool and the module's docstring for what differs).

    device: a Warp device ("cuda:0", "cpu"; default: the first CUDA device when
    Warp sees one, else Warp's CPU device). nconmax, njmax: contacts and
    constraint rows per world (mujoco_warp's `make_data`; default its guess).
    nthread is accepted for BatchPool's signature and unused. Results agree with
    serial float64 mj_step within `TOLERANCE` (float32 on the device)."""

    def __init__(self, model: mujoco.MjModel, nbatch: int, nthread: int | None = None,
                 randomization: Randomization | None = None, seed: int | None = None,
                 keyframe: str | int | None = None, device: str | None = None,
                 nconmax: int | None = None, njmax: int | None = None):
        if not isinstance(nbatch, (int, np.integer)) or nbatch < 1:
            raise BatchError(f"nbatch must be a positive integer, not {nbatch!r}")
        self._wp, self._mjw = wp, mjw = _import_warp()
        self.model = model
        self.nbatch = int(nbatch)
        self.nstate = mujoco.mj_stateSize(model, STATE_SPEC)
        self.nu, self.nv = model.nu, model.nv
        self.nsensordata = model.nsensordata
        self.initial_state = self._initial_state(keyframe)
        self.device = self._device(device)
        if mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_PLUGIN):
            raise BatchError("MuJoCo Warp cannot run this model: plugins with state are not supported")
        self.parameters = None
        batched = {}
        if randomization:
            fields = {write.field for writes in randomization.bind(model).writes for write in writes}
            if any((e.element, e.attribute) in _STRUCTURAL for e in randomization.entries):
                fields |= set(_SET_CONST_FIELDS)
            batched = {name: self.nbatch for name in fields if name != "opt.gravity"}
        with wp.ScopedDevice(self.device):
            try:
                self._model = mjw.put_model(model, batch_sizes=batched)
                self._data = mjw.make_data(model, nworld=self.nbatch, nconmax=nconmax, njmax=njmax)
            except (NotImplementedError, ValueError) as error:
                raise BatchError(f"MuJoCo Warp cannot run this model: {error}") from None
            if randomization and any(e.element == "option" for e in randomization.entries):
                self._model.opt.gravity = wp.array(np.tile(model.opt.gravity, (self.nbatch, 1)),
                                                   dtype=wp.vec3)
            self._rows = wp.zeros((self.nbatch, self.nstate), dtype=float)
            # the pool reports what was dropped once per call (_read), not a print per kernel
            self._model.opt.warn_overflow = 0
        self._graph = None
        if randomization:
            self.parameters = WarpParameters(model, randomization, self.nbatch, seed, _WorldFields(self))
            self.parameters.redraw(np.arange(self.nbatch))

    def _device(self, device):
        wp = self._wp
        if device is None:
            return wp.get_device("cuda:0" if wp.get_cuda_device_count() else "cpu")
        try:
            return wp.get_device(device)
        except (RuntimeError, ValueError, KeyError) as error:
            raise BatchError(f"device {device!r}: {error}") from None

    # -- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        """Lets the device arrays go (also on `with WarpPool(...) as pool:`), and the
        renderers' GL contexts (call it from the thread that rendered)."""
        images.close(self)
        self._model = self._data = self._rows = self._graph = None
        if self.parameters is not None:
            self.parameters.batch = None

    __enter__ = BatchPool.__enter__
    __exit__ = BatchPool.__exit__

    # -- states (BatchPool's, unchanged) ---------------------------------------------------------
    _initial_state = BatchPool._initial_state
    _keyframe = BatchPool._keyframe
    initial_states = BatchPool.initial_states
    reset = BatchPool.reset
    # argument checks: BatchPool's, so the messages are the same
    _states = BatchPool._states
    _controls = BatchPool._controls
    _nstep = staticmethod(BatchPool._nstep)
    _ids = BatchPool._ids
    _named = BatchPool._named
    _terrain_query = BatchPool._terrain_query
    _forward_inputs = BatchPool._forward_inputs

    # -- stepping ------------------------------------------------------------------------------
    def step(self, state: np.ndarray, ctrl=None, nstep: int = 1, sensors: bool = False):
        """As BatchPool.step: the final states (nbatch, nstate), and with `sensors`
        the sensordata of the last step; ctrl None, (nu,), (nbatch, nu) held,
        (nbatch, nstep, nu) per step, or a policy(step, states) -> (nbatch, nu)."""
        state = self._states(state, "state")
        nstep = self._nstep(nstep)
        time = state[:, 0].copy()
        wp = self._wp
        if callable(ctrl):
            self._capture()
            self._load(state)
            current = state.copy()
            with wp.ScopedDevice(self.device):
                for k in range(nstep):
                    controls = self._controls(ctrl(k, current.copy()), 1, policy=True)
                    self._data.ctrl.assign(controls.astype(np.float32))
                    self._step_once()
                    time += self.model.opt.timestep
                    current = self._read(time)
            return self._result(current, sensors)
        controls = self._controls(ctrl, nstep)
        self._capture()
        self._load(state, controls if controls.ndim == 2 else None)
        with wp.ScopedDevice(self.device):
            per_step = (wp.array(np.ascontiguousarray(controls.transpose(1, 0, 2)), dtype=float)
                        if controls.ndim == 3 else None)
            for k in range(nstep):
                if per_step is not None:
                    wp.copy(self._data.ctrl, per_step[k])
                self._step_once()
                time += self.model.opt.timestep
        return self._result(self._read(time), sensors)

    def _capture(self) -> None:
        """On a GPU, mjw.step captured once as a CUDA graph (before a call loads its states)."""
        if self._graph is not None or self._data is None or not self.device.is_cuda:
            return
        wp, mjw = self._wp, self._mjw
        with wp.ScopedDevice(self.device):
            mjw.reset_data(self._model, self._data)
            mjw.step(self._model, self._data)  # loads the kernels before the capture
            with wp.ScopedCapture(device=self.device) as capture:
                mjw.step(self._model, self._data)
        self._graph = capture.graph

    def _step_once(self) -> None:
        """One mjw.step of every world (the captured CUDA graph on a GPU)."""
        if self._graph is None:
            self._mjw.step(self._model, self._data)
        else:
            self._wp.capture_launch(self._graph)

    def _load(self, state, controls=None) -> None:
        """The worlds become `state`, as mujoco.rollout starts an environment (a reset
        Data given the state), controls as given (zero when None)."""
        if self._data is None:
            raise BatchError("the pool is closed")
        wp, mjw = self._wp, self._mjw
        with wp.ScopedDevice(self.device):
            mjw.reset_data(self._model, self._data)
            self._rows.assign(state.astype(np.float32))
            mjw.set_state(self._model, self._data, self._rows, int(STATE_SPEC))
            if controls is not None:
                self._data.ctrl.assign(np.ascontiguousarray(controls, dtype=np.float32))

    def _read(self, time) -> np.ndarray:
        """The worlds' states (float64, the time column the host's), overflows warned."""
        with self._wp.ScopedDevice(self.device):
            self._mjw.get_state(self._model, self._data, self._rows, int(STATE_SPEC))
            rows = self._rows.numpy().astype(np.float64)
            overflow = self._data.overflow.numpy()
        rows[:, 0] = time
        # a solver stopped at its iteration limit dropped nothing (CPU MuJoCo says nothing either)
        overflow = overflow & ~int(self._mjw.OverflowType.ITERATIONS | self._mjw.OverflowType.LS_ITERATIONS)
        if overflow.any():
            flags = int(np.bitwise_or.reduce(overflow))
            names = [f.name for f in self._mjw.OverflowType
                     if f.value and not f.value & (f.value - 1) and flags & f.value]
            warnings.warn(f"MuJoCo Warp: {np.count_nonzero(overflow)} of {self.nbatch} environments "
                          f"overflowed ({', '.join(names)}): contacts or constraints were dropped; "
                          "make the pool with larger nconmax= / njmax=", RuntimeWarning, stacklevel=3)
        return rows

    def _result(self, final, sensors):
        return (final, self._data.sensordata.numpy().astype(np.float64)) if sensors else final

    # -- queries without stepping ----------------------------------------------------------------
    def forward(self, state: np.ndarray, ctrl=None) -> np.ndarray:
        """(nbatch, nsensordata): the sensors of each state after forward (controls
        as in `step`, held; zero when None)."""
        self._load(*self._forward_inputs(state, ctrl))
        with self._wp.ScopedDevice(self.device):
            self._mjw.forward(self._model, self._data)
            return self._data.sensordata.numpy().astype(np.float64)

    def site_jacobians(self, state: np.ndarray, sites: Sequence[str | int], rotation: bool = False):
        """(nbatch, K, 3, nv) translational Jacobians of the K sites at each state;
        with `rotation` (nbatch, K, 6, nv), as BatchPool.site_jacobians."""
        state = self._states(state, "state")
        ids = [self._named(mujoco.mjtObj.mjOBJ_SITE, "site", s, self.model.nsite) for s in sites]
        out = np.zeros((self.nbatch, len(ids), 6 if rotation else 3, self.nv))
        wp, mjw = self._wp, self._mjw
        self._kinematics(state)
        with wp.ScopedDevice(self.device):
            jacp = wp.zeros((self.nbatch, 3, self.nv), dtype=float)
            jacr = wp.zeros((self.nbatch, 3, self.nv), dtype=float) if rotation else None
            for k, site in enumerate(ids):
                points = wp.array(self._data.site_xpos.numpy()[:, site], dtype=wp.vec3)
                bodies = wp.full(self.nbatch, int(self.model.site_bodyid[site]), dtype=int)
                mjw.jac(self._model, self._data, jacp, jacr, points, bodies)
                out[:, k, :3] = jacp.numpy()
                if rotation:
                    out[:, k, 3:] = jacr.numpy()
        return out

    heightfield = BatchPool.heightfield  # the same query on this pool's poses
    render = BatchPool.render  # MuJoCo's renderer on the host, from the states read back

    def body_poses(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every body's world pose at each state: (xpos (nbatch, nbody, 3), xquat
        (nbatch, nbody, 4))."""
        return self._kinematics(self._states(state, "state"), "xpos", "xquat")

    def _kinematics(self, state, *fields):
        """The worlds' `fields` (float64 host copies) after kinematics and com_pos at each state."""
        self._load(state)
        with self._wp.ScopedDevice(self.device):
            self._mjw.kinematics(self._model, self._data)
            self._mjw.com_pos(self._model, self._data)
            out = tuple(getattr(self._data, name).numpy().astype(np.float64) for name in fields)
        return out[0] if len(out) == 1 else out


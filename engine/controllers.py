"""Control laws the runner applies before every physics step.

A network client (URLab's `ue_controller` control mode) sends position targets,
not actuator commands; the law turns them into commands from the state of each
step, at physics rate, on the thread that steps (EngineSession runs the laws
before each `mj_step`, so live play, a client's steps and Blender's Step all
apply them). A law is an immutable value: a change (new targets, new gains) is a
new law sent with a command, so the stepping thread never sees one half-made.

`PDLaw` is URLab's PD controller (UMjPDController) computed as URLab computes
it, in float32: target clamped to the joint's range, torque = kp * (target -
qpos) - kv * qvel, clamped to +-torque_limit, written to the actuator's ctrl.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mujoco
import numpy as np

_JOINT_TRANSMISSIONS = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
_ONE_DOF = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


def bindable(model, actuators) -> tuple[np.ndarray, np.ndarray]:
    """(actuator ids, their joint ids) of `actuators` a PD law can drive: a joint
    transmission on a hinge or slide joint (URLab's binding rule), in id order."""
    found, joints = [], []
    for a in sorted(int(a) for a in actuators):
        if int(model.actuator_trntype[a]) not in _JOINT_TRANSMISSIONS:
            continue
        joint = int(model.actuator_trnid[a, 0])
        if 0 <= joint < model.njnt and int(model.jnt_type[joint]) in _ONE_DOF:
            found.append(a)
            joints.append(joint)
    return np.asarray(found, dtype=np.int64), np.asarray(joints, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class PDLaw:
    """ctrl[actuators] = clip(kp * (clip(targets, low, high) - qpos) - kv * qvel, +-limit),
    all in float32 (URLab's arithmetic), before each step."""

    actuators: np.ndarray
    qpos: np.ndarray  # qpos address of each actuator's joint
    qvel: np.ndarray  # dof address
    low: np.ndarray  # the joint's range (float32; -inf / inf when not limited)
    high: np.ndarray
    kp: np.ndarray
    kv: np.ndarray
    limit: np.ndarray
    targets: np.ndarray
    _target: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        # (the clamped targets do not change between steps: computed once)
        object.__setattr__(self, "_target", np.clip(self.targets, self.low, self.high))

    @classmethod
    def of(cls, model, actuators, joints, kp, kv, limit, targets) -> PDLaw:
        limited = model.jnt_limited[joints].astype(bool)
        ranges = model.jnt_range[joints].astype(np.float32)
        low = np.where(limited, ranges[:, 0], np.float32(-np.inf)).astype(np.float32)
        high = np.where(limited, ranges[:, 1], np.float32(np.inf)).astype(np.float32)
        f32 = lambda values: np.asarray(values, dtype=np.float32)  # noqa: E731
        return cls(np.asarray(actuators, dtype=np.int64), model.jnt_qposadr[joints].astype(np.int64),
                   model.jnt_dofadr[joints].astype(np.int64), low, high, f32(kp), f32(kv), f32(limit),
                   f32(targets))

    def with_targets(self, targets) -> PDLaw:
        """This law with new targets (its gains and bindings shared: no copy)."""
        return PDLaw(self.actuators, self.qpos, self.qvel, self.low, self.high, self.kp, self.kv, self.limit,
                     np.asarray(targets, dtype=np.float32))

    def apply(self, data) -> None:
        position = data.qpos[self.qpos].astype(np.float32)
        velocity = data.qvel[self.qvel].astype(np.float32)
        torque = self.kp * (self._target - position) - self.kv * velocity
        data.ctrl[self.actuators] = np.clip(torque, -self.limit, self.limit)


@dataclass(eq=False)
class Noise:
    """MuJoCo simulate's control noise (Simulate::InjectNoise, simulate.cc), before each
    step: a discrete Ornstein-Uhlenbeck process on every actuator's ctrl,

        rate = exp(-timestep / noise_rate)           (noise_rate 0: rate 0)
        scale = noise_scale * sqrt(1 - rate * rate)
        ctrl = rate * ctrl + (1 - rate) * midpoint
        ctrl += scale * halfrange * N(0, 1)
        ctrl = clip(ctrl, ctrlrange)                 (ctrllimited actuators only)

    midpoint / halfrange: the ctrlrange's centre and half width when ctrllimited, else
    0 / 1; a keyframe's ctrl is the midpoint when one is given. simulate draws N(0, 1)
    with C's unseeded rand(); here a numpy PCG64 generator seeded with `seed` (so a run
    can be repeated): the one law that keeps state (the generator), owned by the session.
    The arithmetic is simulate's, in its order, vectorised (elementwise: the same bits)."""

    scale: float
    rate: float  # seconds (simulate's "Noise rate")
    seed: int
    rate_factor: float = field(init=False)  # exp(-timestep / rate)
    step_scale: float = field(init=False)  # scale * sqrt(1 - rate_factor**2)
    midpoint: np.ndarray = field(init=False, repr=False)
    pull: np.ndarray = field(init=False, repr=False)  # (1 - rate_factor) * midpoint
    spread: np.ndarray = field(init=False, repr=False)  # step_scale * halfrange
    low: np.ndarray = field(init=False, repr=False)  # ctrlrange (-inf, inf: not ctrllimited)
    high: np.ndarray = field(init=False, repr=False)
    generator: np.random.Generator = field(init=False, repr=False)

    @classmethod
    def of(cls, model, scale: float, rate: float, seed: int, keyframe: int = -1) -> Noise | None:
        """The noise for `model` (None when `scale` <= 0: simulate then does nothing; None
        for a model without actuators too: nothing to add noise to)."""
        if not scale > 0 or model.nu == 0:
            return None
        noise = cls(float(scale), float(rate), int(seed))
        noise.generator = np.random.Generator(np.random.PCG64(noise.seed))
        noise.bind(model, keyframe)
        return noise

    def bind(self, model, keyframe: int = -1) -> None:
        """Ranges, midpoints and timestep of `model` (a recompile or a reset to another
        keyframe); the generator goes on where it was."""
        timestep = float(model.opt.timestep)
        # (C: exp(-timestep / 0) = exp(-inf) = 0; Python raises on the division)
        self.rate_factor = math.exp(-timestep / self.rate) if self.rate != 0 else 0.0
        self.step_scale = self.scale * math.sqrt(1 - self.rate_factor * self.rate_factor)
        limited = model.actuator_ctrllimited.astype(bool)
        ranges = model.actuator_ctrlrange
        bottom = np.where(limited, ranges[:, 0], 0.0)
        top = np.where(limited, ranges[:, 1], 0.0)
        midpoint = np.where(limited, 0.5 * (top + bottom), 0.0)
        halfrange = np.where(limited, 0.5 * (top - bottom), 1.0)
        if 0 <= keyframe < model.nkey:
            midpoint = model.key_ctrl[keyframe].astype(float)
        # (per step, simulate's expressions on the same doubles: (1 - rate) * midpoint and
        # step_scale * halfrange are what C computes each time; clipping an unlimited
        # actuator to -inf..inf changes nothing, NaN included)
        self.midpoint = midpoint
        self.pull = (1 - self.rate_factor) * midpoint
        self.spread = self.step_scale * halfrange
        self.low = np.where(limited, bottom, -np.inf)
        self.high = np.where(limited, top, np.inf)

    def apply(self, data) -> None:
        ctrl = self.rate_factor * data.ctrl
        ctrl += self.pull
        ctrl += self.spread * self.generator.standard_normal(len(ctrl))
        np.maximum(ctrl, self.low, out=ctrl)  # (mju_clip: below the bottom the bottom, above the top the top)
        np.minimum(ctrl, self.high, out=ctrl)
        data.ctrl[:] = ctrl

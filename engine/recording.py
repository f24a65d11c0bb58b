"""A simulation at a scene's frames: what a bake records and the timeline replays.

`Recording` holds, for each scene frame of a bake (row 0: its first frame), the
full state MuJoCo steps from (`mj_getState(mjSTATE_INTEGRATION)`, so a live
simulation can start again from any baked frame exactly), the sensor values,
and the poses the timeline shows: body positions and orientations, flex and
skin vertices (MuJoCo's kinematics of that state).

`Recorder` fills one as the simulation steps: the session asks it how many
steps remain until the next frame (`steps_to_next`), steps no further, and
hands it the state there (`capture`). Frame k is the state after
round(k / (fps * timestep)) steps: one simulated second is `fps` frames, and
rounding the count from the start (not per frame) never drifts. Only the
thread that owns the data calls a recorder.

Sensor values are those the last `mj_step` left (computed from the state one
step earlier), as `mujoco.rollout` records them; row 0's are of its own state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from . import skin

STATE = int(mujoco.mjtState.mjSTATE_INTEGRATION)
GROW = 256  # rows added at a time to an open-ended recording


def state_slices(model, signature: int = STATE) -> dict[str, slice]:
    """Where each component of an `mj_getState(signature)` row lies: "time", "qpos",
    "qvel", "act", "ctrl", "mocap_pos", ... (MuJoCo orders them by their bit)."""
    out, start = {}, 0
    for bit in range(signature.bit_length()):
        part = signature & (1 << bit)
        if not part:
            continue
        size = mujoco.mj_stateSize(model, part)
        name = mujoco.mjtState(part).name[len("mjSTATE_"):].lower()
        out[name] = slice(start, start + size)
        start += size
    return out


@dataclass
class Recording:
    """States at consecutive scene frames (all arrays have one row per frame)."""

    fps: float  # scene frames per simulated second
    frame_start: int  # the scene frame of row 0
    time: np.ndarray  # (F,)
    state: np.ndarray  # (F, mj_stateSize(model, mjSTATE_INTEGRATION))
    sensordata: np.ndarray  # (F, nsensordata)
    xpos: np.ndarray  # (F, nbody, 3)
    xquat: np.ndarray  # (F, nbody, 4)
    flexvert_xpos: np.ndarray  # (F, nflexvert, 3)
    skin_vertices: tuple = ()  # one (F, nvert, 3) array per skin
    slices: dict = field(default_factory=dict)  # state_slices of the model recorded
    message: str = ""  # why it ended early (diverged, stopped), or ""

    def __len__(self) -> int:
        return len(self.time)

    @property
    def frame_end(self) -> int:
        return self.frame_start + len(self) - 1

    def part(self, name: str) -> np.ndarray:
        """A component of the state per frame: "qpos", "qvel", "act", "ctrl", ..."""
        return self.state[:, self.slices[name]]

    @property
    def qpos(self) -> np.ndarray:
        return self.part("qpos")

    def row_of(self, frame: int) -> int | None:
        """The row of scene frame `frame`, None outside the recording."""
        row = frame - self.frame_start
        return row if 0 <= row < len(self) else None


def steps_at(frame: int, fps: float, timestep: float) -> int:
    """Steps from a recording's start to its frame `frame` (0, 1, ...)."""
    return int(round(frame / (fps * timestep)))


class Recorder:
    """Fills a `Recording` as a session steps (see the module's docstring)."""

    def __init__(self, model: mujoco.MjModel, fps: float, frame_start: int = 0, frames: int | None = None,
                 max_bytes: int = 1 << 30):
        """`frames`: how many to record (None: until stopped, within `max_bytes`)."""
        if not (fps > 0 and np.isfinite(fps)):
            raise ValueError(f"frames per second must be positive, not {fps}")
        self.model = model
        self.fps = float(fps)
        self.frame_start = frame_start
        self.frames = frames
        self.timestep = float(model.opt.timestep)
        self.steps = 0  # taken since the recording began
        self.count = 0  # frames captured
        self.message = ""
        self._row_bytes = 8 * (1 + mujoco.mj_stateSize(model, STATE) + model.nsensordata + 7 * model.nbody
                               + 3 * model.nflexvert + 3 * int(model.skin_vertnum.sum()))
        self.max_frames = frames if frames is not None else max(2, max_bytes // self._row_bytes)
        self._arrays = self._allocate(frames if frames is not None else GROW)

    def _allocate(self, rows: int) -> dict:
        m = self.model
        return {
            "time": np.empty(rows), "state": np.empty((rows, mujoco.mj_stateSize(m, STATE))),
            "sensordata": np.empty((rows, m.nsensordata)), "xpos": np.empty((rows, m.nbody, 3)),
            "xquat": np.empty((rows, m.nbody, 4)), "flexvert_xpos": np.empty((rows, m.nflexvert, 3)),
            "skins": [np.empty((rows, int(n), 3)) for n in m.skin_vertnum],
        }

    @property
    def done(self) -> bool:
        return self.count >= self.max_frames or bool(self.message)

    def steps_to_next(self) -> int:
        """Steps until the next frame is due (at least 1; a finished recorder never is)."""
        if self.done:
            return 1 << 30
        return max(1, steps_at(self.count, self.fps, self.timestep) - self.steps)

    def stepped(self, count: int, model, data) -> None:
        """`count` steps were taken; capture the state if a frame is due now."""
        self.steps += count
        # (several frames fall on one step when frames come faster than steps)
        while not self.done and self.steps >= steps_at(self.count, self.fps, self.timestep):
            self.capture(model, data)

    def capture(self, model, data) -> None:
        """Record the state of `data` now as the next frame, its kinematics recomputed
        (`mj_kinematics`, `mj_flex`: nothing the next step reads changes)."""
        if model is not self.model:
            self.message = "the model was recompiled: the recording ended there"
            return
        if self.done:
            return
        arrays = self._arrays
        if self.count == len(arrays["time"]):  # open-ended: grow
            more = self._allocate(min(max(GROW, self.count), self.max_frames - self.count))
            arrays = self._arrays = {key: _grown(value, more[key]) for key, value in arrays.items()}
        mujoco.mj_kinematics(model, data)  # (mj_step leaves the poses of the state before)
        if model.nflex:
            mujoco.mj_flex(model, data)
        row = self.count
        arrays["time"][row] = data.time
        mujoco.mj_getState(model, data, arrays["state"][row], STATE)
        arrays["sensordata"][row] = data.sensordata
        arrays["xpos"][row] = data.xpos
        arrays["xquat"][row] = data.xquat
        arrays["flexvert_xpos"][row] = data.flexvert_xpos
        for index, out in enumerate(arrays["skins"]):
            out[row] = skin.skin_vertices(model, data, index)
        self.count += 1
        if self.count == self.max_frames and self.frames is None:
            self.message = (f"the recording reached its memory limit ({self.count:,} frames): "
                            "it ended there")

    def recording(self) -> Recording:
        """What was recorded (trimmed to the frames captured; a full fixed-size recorder
        hands over its arrays: the recorder then holds none)."""
        n, arrays = self.count, self._arrays
        if n == len(arrays["time"]):
            self._arrays = self._allocate(0)
            return Recording(fps=self.fps, frame_start=self.frame_start, time=arrays["time"],
                             state=arrays["state"], sensordata=arrays["sensordata"], xpos=arrays["xpos"],
                             xquat=arrays["xquat"], flexvert_xpos=arrays["flexvert_xpos"],
                             skin_vertices=tuple(arrays["skins"]), slices=state_slices(self.model),
                             message=self.message)
        return Recording(fps=self.fps, frame_start=self.frame_start, time=arrays["time"][:n].copy(),
                         state=arrays["state"][:n].copy(), sensordata=arrays["sensordata"][:n].copy(),
                         xpos=arrays["xpos"][:n].copy(), xquat=arrays["xquat"][:n].copy(),
                         flexvert_xpos=arrays["flexvert_xpos"][:n].copy(),
                         skin_vertices=tuple(a[:n].copy() for a in arrays["skins"]),
                         slices=state_slices(self.model), message=self.message)


def _grown(kept, more):
    if isinstance(kept, list):  # (one array per skin)
        return [np.concatenate((a, b)) for a, b in zip(kept, more, strict=True)]
    return np.concatenate((kept, more))


def steps_for_frames(frames: int, fps: float, timestep: float) -> int:
    """Steps a bake of `frames` frames (the first one included) takes."""
    return steps_at(frames - 1, fps, timestep) if frames > 0 else 0

"""Trajectories recorded elsewhere (qpos over time) and a recording's export.

`read` loads a file of qpos over time, checks it against a model and returns a
`Trajectory`; `resample` puts it on a scene's frames (MuJoCo's own
interpolation per joint type); `to_recording` computes MuJoCo's forward
kinematics of each frame into the `Recording` a bake replays. `save_npz` and
`save_csv` write a recording so that `read` gives back the same numbers bit
for bit.

Files `read` accepts:

- `.npz`: `qpos` (T, nq) with `time` (or `t`, `times`) (T,) and optionally
  `qvel` (T, nv), `act` (T, na), `ctrl` (T, nu), `mocap_pos` (T, nmocap, 3),
  `mocap_quat` (T, nmocap, 4); or `state`: rows of `mj_getState`, (T, nstate),
  or the (nbatch, T, nstate) array `mujoco.rollout.rollout` returns. An
  integer `state_spec` (or `spec`) says which mjtState signature the rows
  hold; without it the width tells among mjSTATE_FULLPHYSICS (rollout's
  default), mjSTATE_INTEGRATION, mjSTATE_PHYSICS, qpos alone and time + qpos.
  Rollout's states begin *after* the first step: its row 0 is the state one
  timestep after the initial state it was given.
- `.npy`: one such array: width nq (qpos), 1 + nq (time + qpos), or a state
  width as above.
- `.csv`: comma-separated, an optional header row. A column named `time` or
  `t` is the time, `frame` is ignored; columns whose names begin with `qvel`,
  `act`, `ctrl`, `mocap_pos`, `mocap_quat` or `sensor` are those (sensor values
  are ignored: the kinematics recomputes them); every other column is qpos, in
  order, and there must be nq of them. Without a header: nq columns (qpos) or
  1 + nq (time + qpos).

Without a time, samples are one model timestep apart from t = 0. Times must
increase strictly; every value must be finite; the quaternion of a free or
ball joint (and of a mocap body) must not be zero, and one whose length is more
than 1e-9 off 1 is normalised (as MuJoCo's kinematics would; noted).
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass

import mujoco
import numpy as np

from .errors import MJBlendError
from .recording import STATE, Recorder, Recording, state_slices

EXTENSIONS = (".npz", ".npy", ".csv")
PARTS = ("qvel", "act", "ctrl", "mocap_pos", "mocap_quat")  # beside time and qpos
TIME_NAMES = ("time", "t", "times")
SNAP = 1e-9  # a frame this close to a sample (in units of the sample spacing) is that sample
MAX_FRAMES = 10_000_000

_S = mujoco.mjtState
FULLPHYSICS = int(_S.mjSTATE_FULLPHYSICS)
# The widths `read` recognises a state by, with what each means (the first of a match is its name)
CANDIDATES = (
    (FULLPHYSICS, "mujoco.rollout states (mjSTATE_FULLPHYSICS)"),
    (int(_S.mjSTATE_INTEGRATION), "mj_getState rows (mjSTATE_INTEGRATION)"),
    (int(_S.mjSTATE_PHYSICS), "mj_getState rows (mjSTATE_PHYSICS)"),
    (int(_S.mjSTATE_QPOS), "qpos"),
    (int(_S.mjSTATE_TIME | _S.mjSTATE_QPOS), "time + qpos"),
)
NAMED_SPECS = {int(getattr(_S, name)): name for name in (
    "mjSTATE_FULLPHYSICS", "mjSTATE_INTEGRATION", "mjSTATE_PHYSICS", "mjSTATE_USER")}
ALL_BITS = int(_S.mjSTATE_INTEGRATION)  # every component
FREE, BALL = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)
QPOS_SIZE = {FREE: 7, BALL: 4}  # by joint type (hinge, slide: 1)
DOF_SIZE = {FREE: 6, BALL: 3}
# A quaternion this close to unit length is kept as it is: MuJoCo's own states are up to ~1e-15 off
# (and its kinematics normalise a copy), so they read back bit for bit.
QUAT_TOLERANCE = 1e-9

# A CSV column of these (its name begins with one, then no letter) is that component
_PREFIX = re.compile(r"\s*(mocap_pos|mocap_quat|sensordata|sensor|qpos|qvel|ctrl|act)(?![a-z])",
                     re.IGNORECASE)


class TrajectoryError(MJBlendError, ValueError):
    """A trajectory file that cannot be used: the message names the file and why."""

    def __init__(self, path, problem: str):
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


@dataclass(frozen=True, eq=False)
class Trajectory:
    """Samples of a model's state over time, checked against that model (T samples)."""

    time: np.ndarray  # (T,) seconds, strictly increasing
    qpos: np.ndarray  # (T, nq)
    qvel: np.ndarray | None = None  # (T, nv)
    act: np.ndarray | None = None  # (T, na)
    ctrl: np.ndarray | None = None  # (T, nu)
    mocap_pos: np.ndarray | None = None  # (T, nmocap, 3)
    mocap_quat: np.ndarray | None = None  # (T, nmocap, 4), unit
    source: str = ""  # what was read, e.g. "time + qpos from walk.csv"
    notes: tuple[str, ...] = ()  # what the reader assumed or changed, for the user

    def __len__(self) -> int:
        return len(self.time)


@dataclass(frozen=True, eq=False)
class Frames:
    """A trajectory at a scene's frames (F frames, 1 / fps apart)."""

    time: np.ndarray  # (F,) seconds
    qpos: np.ndarray  # (F, nq)
    qvel: np.ndarray | None = None  # (F, nv)
    act: np.ndarray | None = None  # (F, na)
    ctrl: np.ndarray | None = None  # (F, nu)
    mocap_pos: np.ndarray | None = None  # (F, nmocap, 3)
    mocap_quat: np.ndarray | None = None  # (F, nmocap, 4)

    def __len__(self) -> int:
        return len(self.time)


# -------------------------------------------------------------------------------------------------- reading


def read(path, model: mujoco.MjModel, batch: int | None = None) -> Trajectory:
    """The trajectory in `path` (.npz, .npy or .csv; see the module's docstring),
    checked against `model`. `batch`: which rollout of a (nbatch, T, nstate) state
    array. Raises TrajectoryError naming the file and the problem."""
    path = os.fspath(path)
    extension = os.path.splitext(path)[1].lower()
    if extension not in EXTENSIONS:
        raise TrajectoryError(path, "is not a trajectory file MJBlend reads (.npz, .npy or .csv)")
    if not os.path.exists(path):
        raise TrajectoryError(path, "no such file")
    if not os.path.isfile(path):
        raise TrajectoryError(path, "is a folder, not a file")
    reader = {".npz": _read_npz, ".npy": _read_npy, ".csv": _read_csv}[extension]
    return reader(path, model, batch)


def _read_npz(path, model, batch):
    name = os.path.basename(path)
    _check_magic(path, (b"PK",), "a NumPy .npz archive (a zip file)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            keys = list(archive.files)
            arrays = {key: _numbers(path, archive, key) for key in keys
                      if key in ("qpos", "state", "state_spec", "spec", *TIME_NAMES, *PARTS)}
    except TrajectoryError:
        raise
    except Exception as error:  # truncated, damaged, ...: numpy says why
        raise TrajectoryError(path, f"could not be read as a NumPy .npz archive ({error})") from None
    time = next((arrays[key] for key in TIME_NAMES if key in arrays), None)
    if "qpos" in arrays:
        given = [part for part in PARTS if part in arrays]
        shown = [part for part in given if arrays[part].size]  # (not the empty ones of a model without)
        if batch not in (None, 0):
            raise TrajectoryError(path, f"holds one trajectory ('qpos'): there is no batch {batch}")
        source = " + ".join(["time"] * (time is not None) + ["qpos"] + shown) + f" from {name}"
        return _checked(path, model, time, arrays["qpos"], {part: arrays[part] for part in given}, source, [],
                        "qpos")
    if "state" in arrays:
        spec = next((arrays[key] for key in ("state_spec", "spec") if key in arrays), None)
        if spec is not None:
            if spec.size != 1 or not np.isfinite(spec).all() or spec.ravel()[0] != int(spec.ravel()[0]):
                raise TrajectoryError(path, "'state_spec' must be one integer (an mjtState signature)")
            spec = int(spec.ravel()[0])
        return _from_state(path, model, arrays["state"], spec, time, batch, "'state'")
    listed = ", ".join(repr(key) for key in keys) or "nothing"
    raise TrajectoryError(path, f"has neither 'qpos' nor 'state' (it holds {listed})")


def _read_npy(path, model, batch):
    _check_magic(path, (b"\x93NUMPY",), "a NumPy .npy array")
    try:
        array = np.load(path, allow_pickle=False)
    except Exception as error:
        raise TrajectoryError(path, f"could not be read as a NumPy .npy array ({error})") from None
    return _from_state(path, model, _as_float(path, array, "the array"), None, None, batch, "the array")


def _check_magic(path, starts, what):
    """Refuse a file that is empty or does not begin as `what` does."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as error:
        raise TrajectoryError(path, f"could not be read ({error.strerror or error})") from None
    if not head:
        raise TrajectoryError(path, "is empty: it has no samples")
    if not head.startswith(starts):
        raise TrajectoryError(path, f"is not {what}")


def _numbers(path, archive, key):
    try:
        array = archive[key]
    except ValueError:  # an object array: not loaded without pickle, which could run code
        raise TrajectoryError(path, f"{key!r} holds Python objects, which MJBlend does not load "
                                    "(save plain number arrays)") from None
    return _as_float(path, array, repr(key))


def _as_float(path, array, what):
    if array.dtype.kind not in "biuf":
        raise TrajectoryError(path, f"{what} holds {array.dtype.name} values, not numbers")
    return np.ascontiguousarray(array, dtype=np.float64)


def _spec_name(spec: int) -> str:
    if spec in NAMED_SPECS:
        return NAMED_SPECS[spec]
    return "|".join(_S(1 << bit).name for bit in range(spec.bit_length()) if spec & (1 << bit))


def _used(model, spec):
    """The components of `spec`'s rows a trajectory takes, with where they lie."""
    slices = state_slices(model, spec)
    return {key: s for key, s in slices.items() if key in ("time", "qpos", *PARTS) and s.stop > s.start}


def _width_meanings(model):
    return ", ".join(f"{mujoco.mj_stateSize(model, spec)} ({meaning})" for spec, meaning in CANDIDATES)


def _from_state(path, model, state, spec, time, batch, what):
    """Rows of mj_getState (2-D, or rollout's 3-D batch) as a trajectory."""
    name = os.path.basename(path)
    batch_note = ""
    if state.ndim == 3:
        count = state.shape[0]
        if batch is None and count != 1:
            raise TrajectoryError(path, f"holds {count} rollouts (an array of shape {state.shape}): "
                                        f"choose one of them (batch 0 to {count - 1})")
        batch = 0 if batch is None else batch
        if not 0 <= batch < count:
            raise TrajectoryError(path, f"has no rollout {batch}: it holds {count} (0 to {count - 1})")
        state = state[batch]
        batch_note = f" (rollout {batch} of {count})" if count > 1 else ""
    elif state.ndim == 2:
        if batch not in (None, 0):
            raise TrajectoryError(path, f"holds one trajectory: there is no batch {batch}")
    else:
        raise TrajectoryError(path, f"{what} has {state.ndim} dimension(s) (shape {state.shape}): expected "
                                    "one row per sample (T, width), or rollout's (nbatch, T, width)")
    if len(state) == 0:
        raise TrajectoryError(path, f"is empty: {what} has no rows (shape {state.shape})")
    width = state.shape[1]
    if spec is not None:
        if not 0 < spec <= ALL_BITS:
            raise TrajectoryError(path, f"state_spec {spec} is not an mjtState signature (1 to {ALL_BITS})")
        size = mujoco.mj_stateSize(model, spec)
        if width != size:
            raise TrajectoryError(path, f"{what} has {width} values per row, but a {_spec_name(spec)} state "
                                        f"(state_spec {spec}) of this model has {size}")
        meaning = f"mj_getState rows ({_spec_name(spec)})"
        if spec == FULLPHYSICS:
            meaning = "mujoco.rollout states (mjSTATE_FULLPHYSICS)"
    else:
        matches = [(s, meaning) for s, meaning in CANDIDATES if mujoco.mj_stateSize(model, s) == width]
        if not matches:
            raise TrajectoryError(path, f"{what} has {width} values per row, which does not fit the model "
                                        f"(nq = {model.nq}); the widths it could have: "
                                        f"{_width_meanings(model)}")
        layouts = {tuple((key, s.start, s.stop) for key, s in _used(model, m).items()) for m, _ in matches}
        if len(layouts) > 1:
            names = " or ".join(meaning for _, meaning in matches)
            raise TrajectoryError(path, f"{what} has {width} values per row, which for this model could be "
                                        f"{names}: save the mjtState signature as 'state_spec' in an .npz")
        spec, meaning = matches[0]
    used = _used(model, spec)
    if "qpos" not in used:
        raise TrajectoryError(path, f"a {_spec_name(spec)} state holds no qpos: there are no poses to show")
    notes = []
    if "time" in used:
        time = state[:, used["time"]][:, 0]
    parts = {key: state[:, s] for key, s in used.items() if key in PARTS}
    for key in ("mocap_pos", "mocap_quat"):
        if key in parts:
            parts[key] = parts[key].reshape(len(state), model.nmocap, -1)
    if spec == FULLPHYSICS and time is not None and len(time) and time[0] > 0:
        notes.append(f"mujoco.rollout states begin after the first step: the first sample is at "
                     f"t = {time[0]:g} s")
    source = f"{meaning}{batch_note} from {name}"
    return _checked(path, model, time, state[:, used["qpos"]], parts, source, notes, what)


def _read_csv(path, model, batch):
    name = os.path.basename(path)
    if batch not in (None, 0):
        raise TrajectoryError(path, f"holds one trajectory: there is no batch {batch}")
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            lines = [(number, row) for number, row in enumerate(csv.reader(fh), 1)
                     if row and any(cell.strip() for cell in row) and not row[0].lstrip().startswith("#")]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise TrajectoryError(path, f"could not be read as a CSV text file ({error})") from None
    if not lines:
        raise TrajectoryError(path, "is empty: it has no rows of samples")
    header = None
    if not all(_is_number(cell) for cell in lines[0][1]):
        header = [cell.strip() for cell in lines[0][1]]
        lines = lines[1:]
    if not lines:
        raise TrajectoryError(path, "has a header but no rows of samples")
    width = len(header) if header is not None else len(lines[0][1])
    values = np.empty((len(lines), width))
    for row, (number, cells) in enumerate(lines):
        if len(cells) != width:
            expected = "the header has" if header is not None else "the first row has"
            raise TrajectoryError(path, f"line {number} has {len(cells)} values, but {expected} {width}")
        try:
            values[row] = [float(cell) for cell in cells]
        except ValueError:
            bad = next(cell for cell in cells if not _is_number(cell))
            raise TrajectoryError(path, f"line {number}: {bad.strip()!r} is not a number") from None
    numbers = [number for number, _ in lines]

    def where(row, column):
        label = f" ({header[column]})" if header is not None else ""
        return f"line {numbers[row]}, column {column + 1}{label}"

    if header is None:
        if width == model.nq:
            columns = {"qpos": list(range(width))}
        elif width == model.nq + 1:
            columns = {"time": [0], "qpos": list(range(1, width))}
        else:
            raise TrajectoryError(path, f"has {width} columns, but the model has nq = {model.nq}: a file of "
                                        f"qpos alone has {model.nq} columns, of time + qpos {model.nq + 1} "
                                        "(or name the columns in a header row)")
    else:
        columns = {}
        for column, label in enumerate(header):
            lowered = label.lower()
            match = _PREFIX.match(label)
            if lowered in TIME_NAMES:
                kind = "time"
            elif lowered == "frame":
                kind = "frame"
            elif match:
                kind = match.group(1).lower()
                kind = "sensor" if kind == "sensordata" else kind
            else:
                kind = "qpos"  # a joint's name, or anything else: qpos, in order
            columns.setdefault(kind, []).append(column)
        if len(columns.get("time", [])) > 1:
            labels = ", ".join(header[c] for c in columns["time"])
            raise TrajectoryError(path, f"has more than one time column ({labels})")
    notes = []
    qpos_columns = columns.get("qpos", [])
    if len(qpos_columns) != model.nq:
        raise TrajectoryError(path, f"has {len(qpos_columns)} qpos columns, but the model has "
                                    f"nq = {model.nq} (every column but time, frame and those named "
                                    "qvel..., act..., ctrl..., mocap_... or sensor... is qpos)")
    if "sensor" in columns:
        notes.append(f"{len(columns['sensor'])} sensor column(s) ignored: the sensors are computed again")
    expected = {"qvel": model.nv, "act": model.na, "ctrl": model.nu, "mocap_pos": 3 * model.nmocap,
                "mocap_quat": 4 * model.nmocap}
    parts, locations = {}, {"qpos": qpos_columns}
    for key in PARTS:
        if key not in columns:
            continue
        if len(columns[key]) != expected[key]:
            raise TrajectoryError(path, f"has {len(columns[key])} {key} columns, but the model has "
                                        f"{expected[key]} {key} values")
        parts[key] = values[:, columns[key]]
        locations[key] = columns[key]
        if key.startswith("mocap"):
            parts[key] = parts[key].reshape(len(values), model.nmocap, -1)
    time = values[:, columns["time"][0]] if "time" in columns else None
    if time is not None:
        locations["time"] = columns["time"]

    def locate(key, row, column):
        return where(row, locations[key][column])

    source = " + ".join(["time"] * (time is not None) + ["qpos"] + list(parts)) + f" from {name}"
    return _checked(path, model, time, values[:, qpos_columns], parts, source, notes, locate=locate)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _checked(path, model, time, qpos, parts, source, notes, what="", locate=None) -> Trajectory:
    """The trajectory of these arrays once every check passes (copies; quaternions normalised)."""
    if locate is None:
        def locate(key, row, column):
            if key == "time":
                return f"row {row} (counting from 0)"
            return f"row {row}, column {column} of {key} (counting from 0)"
    if qpos.ndim != 2:
        raise TrajectoryError(path, f"'qpos' has {qpos.ndim} dimension(s) (shape {qpos.shape}): expected one "
                                    "row of nq values per sample")
    count = len(qpos)
    if count == 0:
        raise TrajectoryError(path, "is empty: it has no samples")
    if qpos.shape[1] != model.nq:
        raise TrajectoryError(path, f"{what or 'qpos'} has {qpos.shape[1]} qpos values per row, but the "
                                    f"model has nq = {model.nq}")
    notes = list(notes)
    if time is None:
        time = np.arange(count) * model.opt.timestep
        notes.append(f"no time given: samples taken every timestep {model.opt.timestep:g} s from t = 0")
    if time.shape != (count,):
        raise TrajectoryError(path, f"the time has shape {time.shape}, but there are {count} qpos rows")
    shapes = {"qvel": (model.nv,), "act": (model.na,), "ctrl": (model.nu,), "mocap_pos": (model.nmocap, 3),
              "mocap_quat": (model.nmocap, 4)}
    for key, array in parts.items():
        if array.shape != (count, *shapes[key]):
            raise TrajectoryError(path, f"{key!r} has shape {array.shape}, but this model and {count} "
                                        f"samples need {(count, *shapes[key])}")
    arrays = {"time": time[:, None], "qpos": qpos, **{key: a.reshape(count, -1) for key, a in parts.items()}}
    for key, array in arrays.items():
        bad = ~np.isfinite(array)
        if bad.any():
            row, column = np.argwhere(bad)[0]
            kind = "NaN (not a number)" if np.isnan(array[row, column]) else "infinite"
            raise TrajectoryError(path, f"a {key} value is {kind} at {locate(key, row, column)}")
    steps = np.diff(time)
    if (steps <= 0).any():
        row = int(np.argmax(steps <= 0)) + 1
        raise TrajectoryError(path, f"time does not increase at {locate('time', row, 0)}: "
                                    f"t = {time[row - 1]!r} s, then {time[row]!r} s")
    qpos = np.array(qpos, dtype=np.float64)
    parts = {key: np.array(array, dtype=np.float64) for key, array in parts.items()}
    normalised = 0
    for joint in range(model.njnt):
        kind = int(model.jnt_type[joint])
        if kind not in (FREE, BALL):
            continue
        start = int(model.jnt_qposadr[joint]) + (3 if kind == FREE else 0)
        label = f"joint {model.joint(joint).name!r}" if model.joint(joint).name else f"joint {joint}"
        normalised += _normalise(path, qpos[:, start:start + 4], f"the quaternion of {label}", locate,
                                 "qpos", start)
    if "mocap_quat" in parts:
        for index in range(model.nmocap):
            body = int(np.flatnonzero(model.body_mocapid == index)[0])
            label = f"body {model.body(body).name!r}" if model.body(body).name else f"body {body}"
            normalised += _normalise(path, parts["mocap_quat"][:, index], f"the mocap quaternion of {label}",
                                     locate, "mocap_quat", 4 * index)
    if normalised:
        notes.append(f"{normalised} quaternion(s) whose length was not 1 normalised")
    return Trajectory(time=np.array(time, dtype=np.float64), qpos=qpos, source=source, notes=tuple(notes),
                      **{key: parts.get(key) for key in PARTS})


def _normalise(path, quats, what, locate, key, column) -> int:
    """Normalise the rows of `quats` (T, 4) in place whose length is not 1; how many.
    (`locate(key, row, column)` says where a zero one is.)"""
    length = np.linalg.norm(quats, axis=1)
    zero = length < mujoco.mjMINVAL
    if zero.any():
        row = int(np.argmax(zero))
        raise TrajectoryError(path, f"{what} is zero at {locate(key, row, column)}: it cannot be made "
                                    "a rotation")
    off = np.abs(length - 1) > QUAT_TOLERANCE
    quats[off] /= length[off, None]
    return int(off.sum())


# ----------------------------------------------------------------------------------------------- resampling


def frame_count(duration: float, fps: float) -> int:
    """Frames 1 / fps apart from the start of `duration` seconds to its end (both ends included)."""
    return int(math.floor(duration * fps + SNAP)) + 1


def resample(trajectory: Trajectory, model: mujoco.MjModel, fps: float) -> Frames:
    """The trajectory at t0 + k / fps, k = 0 .. floor((t_end - t0) * fps): qpos
    interpolated the way MuJoCo integrates (`mj_differentiatePos` between the two
    samples around a frame, `mj_integratePos` of a fraction of it: quaternions
    slerped, hinges and slides linear), qvel / act / ctrl / mocap_pos linear,
    mocap_quat slerped. A frame at a sample's time (within 1e-9 of the spacing)
    is that sample exactly."""
    if not (fps > 0 and math.isfinite(fps)):
        raise ValueError(f"frames per second must be positive, not {fps}")
    t = trajectory.time
    count = frame_count(float(t[-1] - t[0]), fps)
    if count > MAX_FRAMES:
        raise ValueError(f"{trajectory.source}: {t[-1] - t[0]:g} s at {fps:g} fps makes {count:,} frames, "
                         f"more than {MAX_FRAMES:,}")
    times = t[0] + np.arange(count) / fps
    # the sample at or before each frame, and how far the frame is towards the next one
    low = np.clip(np.searchsorted(t, times, side="right") - 1, 0, len(t) - 1)
    high = np.minimum(low + 1, len(t) - 1)
    span = t[high] - t[low]
    alpha = np.divide(times - t[low], span, out=np.zeros(count), where=span > 0)
    at_next = alpha >= 1 - SNAP
    low[at_next] = high[at_next]
    alpha[at_next | (alpha <= SNAP)] = 0.0
    between = np.flatnonzero(alpha > 0)

    qpos = trajectory.qpos[low]  # exact at samples
    velocity = np.empty(model.nv)
    previous = -1
    for k in between:
        start = low[k]
        if start != previous:
            mujoco.mj_differentiatePos(model, velocity, 1.0, trajectory.qpos[start],
                                       trajectory.qpos[start + 1])
            previous = start
        mujoco.mj_integratePos(model, qpos[k], velocity * alpha[k], 1.0)

    def linear(array):
        if array is None:
            return None
        out = array[low]
        a = alpha[between].reshape(-1, *[1] * (array.ndim - 1))
        out[between] = array[low[between]] + a * (array[low[between] + 1] - array[low[between]])
        return out

    mocap_quat = None
    if trajectory.mocap_quat is not None:
        mocap_quat = trajectory.mocap_quat[low]
        quats = trajectory.mocap_quat
        mocap_quat[between] = _slerp(quats[low[between]], quats[low[between] + 1], alpha[between])
    return Frames(time=times, qpos=qpos, qvel=linear(trajectory.qvel), act=linear(trajectory.act),
                  ctrl=linear(trajectory.ctrl), mocap_pos=linear(trajectory.mocap_pos), mocap_quat=mocap_quat)


def _slerp(q1, q2, alpha):
    """Unit quaternions (N, M, 4) a fraction alpha (N,) of the shortest way from q1 to q2."""
    dot = np.sum(q1 * q2, axis=-1, keepdims=True)
    q2 = np.where(dot < 0, -q2, q2)
    angle = np.arccos(np.clip(np.abs(dot), 0.0, 1.0))
    sine = np.sin(angle)
    a = alpha.reshape(-1, 1, 1)
    small = sine < 1e-9  # (nearly) the same rotation: linear, then normalised
    w1 = np.where(small, 1 - a, np.sin((1 - a) * angle) / np.where(small, 1.0, sine))
    w2 = np.where(small, a, np.sin(a * angle) / np.where(small, 1.0, sine))
    out = w1 * q1 + w2 * q2
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


# ----------------------------------------------------------------------------------------------- kinematics


def to_recording(model: mujoco.MjModel, frames: Frames, fps: float, frame_start: int = 0) -> Recording:
    """MuJoCo's kinematics of every frame as a Recording (row k: scene frame
    frame_start + k). Each frame starts from a reset MjData (mocap bodies at the
    model's poses unless the frames give theirs; qvel, act, ctrl zero unless
    given), its time and qpos set, then `mj_forward`: the sensors are those of
    that state."""
    recorder = Recorder(model, fps, frame_start, frames=len(frames))
    data = mujoco.MjData(model)
    given = [(key, getattr(frames, key)) for key in PARTS if getattr(frames, key) is not None]
    for k in range(len(frames)):
        mujoco.mj_resetData(model, data)
        data.time = frames.time[k]
        data.qpos[:] = frames.qpos[k]
        for key, array in given:
            getattr(data, key)[:] = array[k]
        mujoco.mj_forward(model, data)
        recorder.capture(model, data)
    return recorder.recording()


# --------------------------------------------------------------------------------------------------- saving


def column_names(model: mujoco.MjModel) -> dict[str, list[str]]:
    """Readable names of every value of qpos, qvel, act, ctrl, mocap_pos,
    mocap_quat and sensordata, e.g. "qpos:root[0]", "qvel:hip_x", "ctrl:motor1",
    "sensor:accel[2]"; an unnamed element's values by their index ("qpos[7]")."""

    def named(prefix, name, start, size):
        if not name:
            return [f"{prefix}[{start + i}]" for i in range(size)]
        if size == 1:
            return [f"{prefix}:{name}"]
        return [f"{prefix}:{name}[{i}]" for i in range(size)]

    names = {key: [] for key in ("qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat", "sensor")}
    for j in range(model.njnt):
        kind, name = int(model.jnt_type[j]), model.joint(j).name
        names["qpos"] += named("qpos", name, int(model.jnt_qposadr[j]), QPOS_SIZE.get(kind, 1))
        names["qvel"] += named("qvel", name, int(model.jnt_dofadr[j]), DOF_SIZE.get(kind, 1))
    for a in range(model.nu):
        name = model.actuator(a).name
        names["ctrl"] += named("ctrl", name, a, 1)
        if model.actuator_actnum[a]:
            names["act"] += named("act", name, int(model.actuator_actadr[a]), int(model.actuator_actnum[a]))
    for index in range(model.nmocap):
        body = int(np.flatnonzero(model.body_mocapid == index)[0])
        name = model.body(body).name
        names["mocap_pos"] += named("mocap_pos", name, 3 * index, 3)  # (unnamed: by flat index)
        names["mocap_quat"] += named("mocap_quat", name, 4 * index, 4)
    for s in range(model.nsensor):
        names["sensor"] += named("sensor", model.sensor(s).name, int(model.sensor_adr[s]),
                                 int(model.sensor_dim[s]))
    return names


def _columns(recording: Recording, model) -> dict[str, np.ndarray]:
    """The recording's values per component, 2-D (F, width), in column_names' order."""
    frames = len(recording)
    out = {key: recording.part(key) for key in ("qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat")}
    out["sensor"] = recording.sensordata.reshape(frames, -1)
    return out


def save_npz(path, recording: Recording, model: mujoco.MjModel) -> None:
    """Write `recording` as an .npz `read` takes back: time, frame (scene frame
    numbers), fps, qpos, qvel, act, ctrl, mocap_pos (F, nmocap, 3), mocap_quat,
    sensordata, state (mj_getState rows) with state_spec (their mjtState
    signature), and the readable name of each column (`qpos_names`, ...)."""
    frames = len(recording)
    columns = _columns(recording, model)
    names = column_names(model)
    arrays = {
        "time": recording.time, "frame": recording.frame_start + np.arange(frames),
        "fps": np.float64(recording.fps),
        "qpos": columns["qpos"], "qvel": columns["qvel"], "act": columns["act"], "ctrl": columns["ctrl"],
        "mocap_pos": columns["mocap_pos"].reshape(frames, model.nmocap, 3),
        "mocap_quat": columns["mocap_quat"].reshape(frames, model.nmocap, 4),
        "sensordata": recording.sensordata, "state": recording.state, "state_spec": np.int64(STATE),
    }
    arrays.update({f"{key}_names": np.array(value, dtype=str) for key, value in names.items()})
    try:
        with open(path, "wb") as fh:  # (a file object: numpy adds no .npz to the name)
            np.savez_compressed(fh, **arrays)
    except OSError as error:
        raise TrajectoryError(path, f"could not be written ({error.strerror or error})") from None


def save_csv(path, recording: Recording, model: mujoco.MjModel) -> None:
    """Write `recording` as CSV: a header `time,frame,` then the qpos, qvel, act,
    ctrl, mocap and sensor columns by their `column_names`; one row per frame,
    each value the shortest decimal that reads back as the same double."""
    columns = _columns(recording, model)
    names = column_names(model)
    order = ("qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat", "sensor")
    header = ["time", "frame"] + [name for key in order for name in names[key]]
    values = np.concatenate([recording.time[:, None]] + [columns[key] for key in order], axis=1)
    try:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(header)
            for frame, row in enumerate(values.tolist(), recording.frame_start):
                # repr of a Python float: the shortest text that reads back bit for bit
                writer.writerow([repr(row[0]), str(frame), *map(repr, row[1:])])
    except OSError as error:
        raise TrajectoryError(path, f"could not be written ({error.strerror or error})") from None

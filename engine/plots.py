"""Time-series plots of a running simulation: which signals (channels), their last
seconds from the runner's history, nice axis ticks and the lines a figure draws.

A `Spec` names what the user asked for (a sensor, a joint's qpos or qvel, an
actuator's ctrl or force; by element name, `#id` for an unnamed element), and
`resolve` finds it in a model: which columns of the history's state rows (qpos,
qvel, ctrl) or signal rows (sensordata, actuator_force) hold it. The runner
builds a `Plots` for the channels asked for with each snapshot it publishes, on
its own thread (`build`): views on the main thread read that immutable copy,
never the history ring the physics thread writes.

No bpy: ui/plots/ draws what `figure` computes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from .history import History, state_offset

# kind -> (the element it reads, its label)
KINDS = {
    "sensor": ("sensor", "Sensor"),
    "qpos": ("joint", "Joint position"),
    "qvel": ("joint", "Joint velocity"),
    "ctrl": ("actuator", "Control"),
    "actuator_force": ("actuator", "Actuator force"),
}
ALL = -1  # a Spec's component: every component of the element
_FREE, _BALL = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)
_QPOS_LABELS = {_FREE: ("x", "y", "z", "qw", "qx", "qy", "qz"), _BALL: ("qw", "qx", "qy", "qz")}
_QVEL_LABELS = {_FREE: ("vx", "vy", "vz", "wx", "wy", "wz"), _BALL: ("wx", "wy", "wz")}
_QUAT_SENSORS = {int(mujoco.mjtSensor.mjSENS_FRAMEQUAT), int(mujoco.mjtSensor.mjSENS_BALLQUAT)}
_NAMES_SHOWN = 8  # names an unknown-name error lists


@dataclass(frozen=True)
class Spec:
    """A channel as asked for: `kind` (a KINDS key), the element's `name` ("#3":
    element 3, unnamed), `component` (ALL, or one of its components)."""

    kind: str
    name: str
    component: int = ALL

    def __str__(self) -> str:
        part = "" if self.component == ALL else f"[{self.component}]"
        return f"{KINDS[self.kind][1] if self.kind in KINDS else self.kind} {self.name}{part}"


@dataclass(frozen=True)
class Channel:
    """A Spec found in a model: the element's id and the history columns that hold it."""

    spec: Spec
    id: int
    columns: tuple  # of the state row (qpos, qvel, ctrl) or the signal row (sensor, force)
    signals: bool  # True: columns of History's signal rows (sensordata, then actuator_force)
    labels: tuple  # one per column: its component's name


@dataclass(frozen=True)
class Request:
    """What a view wants plotted: channels and the seconds they span."""

    specs: tuple = ()
    seconds: float = 5.0


@dataclass(frozen=True, eq=False)
class Series:
    """One channel's values (n, len(labels)) at a Plots' times, read-only; `error`: why
    there are none (the channel is not in the model)."""

    spec: Spec
    labels: tuple
    values: np.ndarray
    error: str = ""


@dataclass(frozen=True, eq=False)
class Plots:
    """The plots of one snapshot: the request they answer, the times of the kept
    states of its last `request.seconds` (n,), one Series per spec."""

    request: Request
    times: np.ndarray
    series: tuple


# ------------------------------------------------------------------ channels


def element_name(model, element: str, index: int) -> str:
    """The name a Spec gives element `index` of kind `element` ("#3" when unnamed)."""
    return getattr(model, element)(index).name or f"#{index}"


def element_count(model, element: str) -> int:
    return {"sensor": model.nsensor, "joint": model.njnt, "actuator": model.nu}[element]


def find(model, element: str, name: str) -> int:
    """The id of element `name` ("#3": id 3); ValueError naming the ones there are."""
    count = element_count(model, element)
    if name.startswith("#") and name[1:].isdigit():
        index = int(name[1:])
        if index < count and not getattr(model, element)(index).name:
            return index
        if index < count:
            raise ValueError(f"{element} #{index} has a name: "
                             f"{getattr(model, element)(index).name!r}")
    else:
        index = mujoco.mj_name2id(model, getattr(mujoco.mjtObj, f"mjOBJ_{element.upper()}"), name)
        if index >= 0:
            return index
    names = [element_name(model, element, i) for i in range(count)]
    there = (", ".join(names[:_NAMES_SHOWN]) + (f" and {len(names) - _NAMES_SHOWN} more"
                                                  if len(names) > _NAMES_SHOWN else "")
             if names else "none")
    raise ValueError(f"the model has no {element} named {name!r} ({element}s: {there})")


def resolve(model, spec: Spec) -> Channel:
    """`spec` found in `model`; ValueError (in a user's words) if it is not there."""
    if spec.kind not in KINDS:
        raise ValueError(f"unknown plot kind {spec.kind!r} (one of {', '.join(KINDS)})")
    element = KINDS[spec.kind][0]
    index = find(model, element, spec.name)
    signals = spec.kind in ("sensor", "actuator_force")
    if spec.kind == "sensor":
        start, width = int(model.sensor_adr[index]), int(model.sensor_dim[index])
        kind = int(model.sensor_type[index])
        labels = (("w", "x", "y", "z") if kind in _QUAT_SENSORS and width == 4 else
                  ("x", "y", "z") if width == 3 else tuple(str(i) for i in range(width)))
    elif spec.kind == "actuator_force":
        start, width, labels = model.nsensordata + index, 1, ("force",)
    elif spec.kind == "ctrl":
        start, width, labels = state_offset(model, mujoco.mjtState.mjSTATE_CTRL) + index, 1, ("ctrl",)
    else:
        joint = int(model.jnt_type[index])
        if spec.kind == "qpos":
            names = _QPOS_LABELS.get(joint, ("qpos",))
            start = state_offset(model, mujoco.mjtState.mjSTATE_QPOS) + int(model.jnt_qposadr[index])
        else:
            names = _QVEL_LABELS.get(joint, ("qvel",))
            start = state_offset(model, mujoco.mjtState.mjSTATE_QVEL) + int(model.jnt_dofadr[index])
        width, labels = len(names), names
    columns = tuple(range(start, start + width))
    if spec.component != ALL:
        if not 0 <= spec.component < width:
            raise ValueError(f"the {element} {spec.name} has {width} component{'s' if width != 1 else ''} "
                             f"(0-{width - 1}), not {spec.component}")
        columns, labels = (columns[spec.component],), (labels[spec.component],)
    return Channel(spec, index, columns, signals, labels)


def resolve_all(model, request: Request) -> tuple:
    """One Channel, or the error text, per spec of `request`."""
    out = []
    for spec in request.specs:
        try:
            out.append(resolve(model, spec))
        except ValueError as error:
            out.append(str(error))
    return tuple(out)


# ------------------------------------------------------------------ series


def series(history: History, channel: Channel, seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """(times (n,), values (n, len(channel.columns))) of the kept states of the last
    `seconds` (the runner's thread: the thread that records into `history`)."""
    rows = history.rows(seconds)
    return history.times(rows), history.columns(rows, channel.columns, channel.signals)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def build(history: History, request: Request, channels: tuple) -> Plots:
    """The Plots of `request` (its `channels`: resolve_all's) from `history` now: copies,
    read-only, bounded by the history itself (the runner's thread)."""
    rows = history.rows(request.seconds)
    out = []
    for spec, channel in zip(request.specs, channels, strict=True):
        if isinstance(channel, str):
            out.append(Series(spec, (), _frozen(np.empty((len(rows), 0))), channel))
        else:
            _times, values = series(history, channel, request.seconds)
            out.append(Series(spec, channel.labels, _frozen(values)))
    return Plots(request, _frozen(history.times(rows)), tuple(out))


# ------------------------------------------------------------- axes, figure


def nice_step(span: float, count: int = 4) -> float:
    """A round tick spacing (1, 2 or 5 times a power of ten) giving about `count`
    intervals over `span`."""
    raw = span / max(count, 1)
    if not raw > 0 or not math.isfinite(raw):
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if raw <= factor * power * (1 + 1e-9):
            return factor * power
    return 10.0 * power


def autoscale(values: np.ndarray, count: int = 4) -> tuple[float, float, float]:
    """(low, high, step): a range of whole tick steps that holds every finite value
    (a flat or empty signal gets a range around it)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        low, high = -1.0, 1.0
    else:
        low, high = float(finite.min()), float(finite.max())
        if high - low <= 1e-12 * max(1.0, abs(low), abs(high)):
            pad = 0.1 * abs(low) if low != 0 else 1.0
            low, high = low - pad, high + pad
    step = nice_step(high - low, count)
    return math.floor(low / step) * step, math.ceil(high / step) * step, step


def tick_values(low: float, high: float, step: float) -> list[float]:
    """The multiples of `step` in [low, high]."""
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    return [i * step for i in range(first, last + 1)][:50]


def tick_label(value: float, step: float) -> str:
    """`value` with the decimals `step` needs (no "-0")."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    if abs(value) >= 1e5 or (value != 0 and decimals > 6):
        return f"{value:.3g}"
    text = f"{value:.{decimals}f}"
    return "0" if float(text) == 0 else text


@dataclass(frozen=True, eq=False)
class Figure:
    """What one plot draws, in region pixels: its plotting area `rect` (x, y, width,
    height; y up), the ranges it maps, ticks ((pixel, label), ...), one line (n, 2)
    per component."""

    title: str
    labels: tuple
    rect: tuple
    xrange: tuple
    yrange: tuple
    xticks: tuple
    yticks: tuple
    lines: tuple
    error: str = ""
    colors: tuple = ()  # each line's colour index (figure_xy's: islands repeat colours); () its index


def figure(title: str, plots: Plots, index: int, rect: tuple, count: int = 3) -> Figure:
    """Series `index` of `plots` in `rect`: x spans the last `plots.request.seconds`
    up to the newest time, y autoscales to every value in the window."""
    x, y, width, height = rect
    one = plots.series[index]
    times, values = plots.times, one.values
    end = float(times[-1]) if len(times) else 0.0
    start = end - plots.request.seconds
    low, high, step = autoscale(values, count)
    if one.error or not len(times):
        lines = ()
    else:
        px = x + (times - start) / (end - start) * width
        shown = np.clip(np.nan_to_num(values, nan=low, posinf=high, neginf=low), low, high)
        py = y + (shown - low) / (high - low) * height
        lines = tuple(np.column_stack((px, py[:, k])) for k in range(values.shape[1]))
    tstep = nice_step(end - start, count)
    xticks = tuple((x + (t - start) / (end - start) * width, tick_label(t, tstep))
                   for t in tick_values(start, end, tstep))
    yticks = tuple((y + (v - low) / (high - low) * height, tick_label(v, step))
                   for v in tick_values(low, high, step))
    return Figure(title, one.labels, rect, (start, end), (low, high), xticks, yticks, lines, one.error)


def extended(low: float, high: float, values, count: int = 4) -> tuple[float, float, float]:
    """(low, high, step): the range [low, high] grown to hold every finite value, as a
    MuJoCo figure's minimum range with `flg_extend` grows, rounded out to whole ticks."""
    finite = np.asarray(values, dtype=float).reshape(-1)
    finite = finite[np.isfinite(finite)]
    if finite.size:
        low, high = min(low, float(finite.min())), max(high, float(finite.max()))
    step = nice_step(high - low, count)
    return math.floor(low / step + 1e-9) * step, math.ceil(high / step - 1e-9) * step, step


def figure_xy(title: str, labels: tuple, lines: tuple, rect: tuple, xrange: tuple, yrange: tuple,
              count: int = 4) -> Figure:
    """A figure of MuJoCo's kind (simulate's profiler): `lines` ((colour index, xs, ys), ...),
    drawn in `rect` over `xrange` and `yrange` (minimum ranges, grown to hold the data)."""
    x, y, width, height = rect
    xs = np.concatenate([line[1] for line in lines]) if lines else np.empty(0)
    ys = np.concatenate([line[2] for line in lines]) if lines else np.empty(0)
    xlow, xhigh, xstep = extended(*xrange, xs, count)
    low, high, step = extended(*yrange, ys, count)
    points = np.empty((len(xs), 2))  # (every line's points at once: a figure has up to 20 lines)
    points[:, 0] = x + (xs - xlow) * (width / (xhigh - xlow))
    shown = np.clip(ys, low, high)  # (infinities to the edges; NaN stays, then to the bottom)
    shown[np.isnan(shown)] = low
    points[:, 1] = y + (shown - low) * (height / (high - low))
    out = np.split(points, np.cumsum([len(line[1]) for line in lines])[:-1]) if lines else []
    xticks = tuple((x + (t - xlow) / (xhigh - xlow) * width, tick_label(t, xstep))
                   for t in tick_values(xlow, xhigh, xstep))
    yticks = tuple((y + (v - low) / (high - low) * height, tick_label(v, step))
                   for v in tick_values(low, high, step))
    return Figure(title, labels, rect, (xlow, xhigh), (low, high), xticks, yticks, tuple(out),
                  colors=tuple(line[0] for line in lines))

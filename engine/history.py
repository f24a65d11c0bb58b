"""The last seconds of a simulation as full physics states, to step back and scrub
(MuJoCo's `simulate` history slider), and for bakes and plots to read.

A ring of `mj_getState(mjSTATE_INTEGRATION)` rows: time, qpos, qvel, act, warm
start, controls, applied forces, mocap poses; everything the next step reads,
so a state loaded back continues exactly as the original did. Beside each state
it keeps the signals that are not part of it but that plots show: `sensordata`
and `actuator_force` as MuJoCo left them with that state (after `mj_step`: those
of the step that produced it). The ring holds at most `seconds` of simulated
time and at most `max_bytes` of memory (states, signals and times together),
whichever is less. Only the runner's thread touches it.
"""

from __future__ import annotations

import mujoco
import numpy as np

STATE = int(mujoco.mjtState.mjSTATE_INTEGRATION)
MAX_STATES = 100_000


def state_offset(model: mujoco.MjModel, component: int) -> int:
    """Where `component` (one mjtState bit of STATE) starts in a state row: the state
    lays its components out in the order of their bits."""
    return mujoco.mj_stateSize(model, STATE & (int(component) - 1))


class History:
    def __init__(self, model: mujoco.MjModel, seconds: float = 10.0, max_bytes: int = 256 << 20):
        self.seconds = seconds
        self.width = mujoco.mj_stateSize(model, STATE)
        self.nsensordata, self.nu = model.nsensordata, model.nu
        row_bytes = 8 * (self.width + self.nsensordata + self.nu + 1)  # state, signals, time
        capacity = max(2, min(MAX_STATES, max_bytes // row_bytes))
        self._states = np.empty((capacity, self.width))
        self._signals = np.empty((capacity, self.nsensordata + self.nu))  # sensordata, actuator_force
        self._times = np.empty(capacity)
        self._first = 0  # ring index of the oldest state
        self._count = 0

    @property
    def capacity(self) -> int:
        return len(self._times)

    def __len__(self) -> int:
        return self._count

    def _row(self, index: int) -> int:
        if not -self._count <= index < self._count:
            raise IndexError(f"history index {index} out of range ({self._count} states kept)")
        return (self._first + index % self._count) % self.capacity

    def time(self, index: int) -> float:
        return float(self._times[self._row(index)])

    def times(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The times of the kept states, oldest first (of ring `rows` only: see `rows`), a copy."""
        return self._times[self.rows() if rows is None else rows]

    def rows(self, seconds: float | None = None) -> np.ndarray:
        """Ring rows of the kept states, oldest first; with `seconds`, only those of
        the last `seconds` (time >= the newest time - seconds)."""
        rows = (self._first + np.arange(self._count)) % self.capacity
        if seconds is not None and self._count:
            times = self._times[rows]
            rows = rows[np.searchsorted(times, times[-1] - seconds, side="left"):]
        return rows

    def columns(self, rows: np.ndarray, columns, signals: bool = False) -> np.ndarray:
        """(len(rows), len(columns)): those columns of the state rows (of the signals
        rows with `signals`: sensordata, then actuator_force), a copy."""
        source = self._signals if signals else self._states
        return source[np.ix_(rows, np.asarray(columns, dtype=int))]

    def state(self, index: int) -> np.ndarray:
        return self._states[self._row(index)].copy()

    def clear(self) -> None:
        self._first = self._count = 0

    def record(self, model, data) -> None:
        """Keep the state of `data` (and its sensordata and actuator_force). A time not
        after the newest kept one (after a reset or a step back) first drops every
        state from that time on: the simulation's past is rewritten from there."""
        now = data.time
        while self._count and self._times[self._row(-1)] >= now:
            self._count -= 1
        while self._count and self._times[self._first] < now - self.seconds:
            self._first = (self._first + 1) % self.capacity
            self._count -= 1
        if self._count == self.capacity:  # full: the oldest goes
            self._first = (self._first + 1) % self.capacity
            self._count -= 1
        row = (self._first + self._count) % self.capacity
        mujoco.mj_getState(model, data, self._states[row], STATE)
        self._signals[row, :self.nsensordata] = data.sensordata
        self._signals[row, self.nsensordata:] = data.actuator_force
        self._times[row] = now
        self._count += 1

    def load(self, index: int, model, data) -> None:
        """Put state `index` (0 the oldest, -1 the newest) back into `data`, with
        every derived quantity recomputed (`mj_forward`)."""
        mujoco.mj_setState(model, data, self._states[self._row(index)], STATE)
        mujoco.mj_forward(model, data)

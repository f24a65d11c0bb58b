"""simulate's Info panel and its four profiler figures, from one MjData.

`take` copies what simulate's `UpdateInfoText` reads (time, nefc, ncon, the solver's
iterations and error over the islands with statistics, energy, fwdinv, arena use,
islands) and MuJoCo's timers since the previous snapshot; `lines` formats it with
simulate's C formats. `Profiler` keeps, on the runner's thread, what simulate's
`UpdateProfiler` draws: the solver's per-iteration statistics of each island (the
"Counts" and "Convergence" figures) and rings of the last 201 snapshots' CPU-time
breakdown and dimensions (simulate: video frames); `Profiler.take` returns a frozen
copy for the snapshot.

Timers: MuJoCo fills `d.timer` in wall seconds by itself; simulate shows
milliseconds, so the CPU figures here are in milliseconds too. A snapshot plays
the role of simulate's rendered frame (`timer_prev_`: the timers at the previous
one). A reset or a recompile restarts MuJoCo's timers: then the deltas count from
zero, as simulate's own reset of `timer_prev_` does.

No bpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

NISLAND, NSOLVER, MINVAL = mujoco.mjNISLAND, mujoco.mjNSOLVER, mujoco.mjMINVAL
MAXLINEPNT = getattr(mujoco, "mjMAXLINEPNT", 1001)
NTIMER = int(mujoco.mjtTimer.mjNTIMER)
T = mujoco.mjtTimer
STEP, FORWARD = int(T.mjTIMER_STEP), int(T.mjTIMER_FORWARD)
ENERGY, FWDINV, SLEEP = (int(mujoco.mjtEnableBit.mjENBL_ENERGY), int(mujoco.mjtEnableBit.mjENBL_FWDINV),
                         int(mujoco.mjtEnableBit.mjENBL_SLEEP))
ISLAND_OFF = int(mujoco.mjtDisableBit.mjDSBL_ISLAND)
PGS, CG = int(mujoco.mjtSolver.mjSOL_PGS), int(mujoco.mjtSolver.mjSOL_CG)
RING = 201  # simulate's figures of the last frames: 201 points, x from -200 to 0


def timers(data) -> tuple[np.ndarray, np.ndarray]:
    """Copies of MuJoCo's timers now: (durations in seconds, numbers), (mjNTIMER,) each."""
    return np.array(data.timer.duration, dtype=float), np.array(data.timer.number, dtype=np.int64)


def timer_delta(data, previous: tuple | None) -> tuple[np.ndarray, np.ndarray]:
    """The timers since `previous` (a `timers` copy; None, or newer than now after a
    reset or recompile: since zero)."""
    duration, number = timers(data)
    if previous is None or (number < previous[1]).any():
        return duration, number
    return duration - previous[0], number - previous[1]


def solver_error(data) -> float:
    """`log10` of the largest final solver error over the islands with statistics
    (simulate's "Solver" value)."""
    shown = max(1, min(data.nisland, NISLAND))
    solerr = 0.0
    improvement, gradient = data.solver.improvement, data.solver.gradient
    for i in range(shown):
        error = 0.0
        niter = int(data.solver_niter[i])
        if niter:
            at = i * NSOLVER + min(niter, NSOLVER) - 1
            error = min(improvement[at], gradient[at])
            if error == 0:
                error = max(improvement[at], gradient[at])
        solerr = max(solerr, float(error))
    return math.log10(max(MINVAL, solerr))


@dataclass(frozen=True, eq=False)
class Info:
    """simulate's Info values of one snapshot. `timer_duration` (seconds) and
    `timer_number` (mjNTIMER,): MuJoCo's timers since the snapshot before."""

    time: float
    nefc: int
    ncon: int
    niter: int  # summed over the islands with statistics
    solerr: float  # log10
    nisland: int
    energy: tuple  # (potential, kinetic)
    energy_on: bool
    fwdinv: tuple | None  # log10 of solver_fwdinv's two values, with the fwdinv flag
    islands_on: bool
    maxuse_arena: int
    narena: int
    timer_duration: np.ndarray
    timer_number: np.ndarray

    def cpu(self, playing: bool) -> float:
        """Milliseconds per step while playing, else per forward (simulate's "CPU")."""
        which = STEP if playing else FORWARD
        return 1e3 * float(self.timer_duration[which]) / max(1, int(self.timer_number[which]))


def take(model, data, previous: tuple | None) -> Info:
    """The Info of `data` now; `previous`: the timers at the snapshot before (`timers`)."""
    shown = max(1, min(data.nisland, NISLAND))
    duration, number = timer_delta(data, previous)
    duration.flags.writeable = number.flags.writeable = False
    enabled = model.opt.enableflags
    fwdinv = None
    if enabled & FWDINV:
        fwdinv = tuple(math.log10(max(MINVAL, float(v))) for v in data.solver_fwdinv)
    return Info(time=float(data.time), nefc=int(data.nefc), ncon=int(data.ncon),
                niter=int(sum(int(n) for n in data.solver_niter[:shown])), solerr=solver_error(data),
                nisland=int(data.nisland), energy=(float(data.energy[0]), float(data.energy[1])),
                energy_on=bool(enabled & ENERGY), fwdinv=fwdinv,
                islands_on=not model.opt.disableflags & ISLAND_OFF,
                maxuse_arena=int(data.maxuse_arena), narena=int(data.narena),
                timer_duration=duration, timer_number=number)


def fps_text(fps: float) -> str:
    return "%0.1f" % fps if fps < 1 else "%.0f" % fps


def lines(info: Info, fps: float | None, playing: bool) -> list[tuple[str, str]]:
    """(title, text) rows as simulate's Info shows them (its C formats), plus the
    energy's two parts; `fps` None: not known yet ("-")."""
    out = [("Time", "%-9.3f" % info.time), ("Size", "%d  (%d con)" % (info.nefc, info.ncon)),
           ("CPU", "%.3f" % info.cpu(playing)), ("Solver", "%.1f  (%d it)" % (info.solerr, info.niter)),
           ("FPS", "-" if fps is None else fps_text(fps)),
           ("Memory", "%.1f%% of %s" % (100 * info.maxuse_arena / info.narena if info.narena else 0.0,
                                        mujoco.mju_writeNumBytes(info.narena)))]
    if info.energy_on:
        potential, kinetic = info.energy
        out.append(("Energy", "%.3f  (potential %.3f, kinetic %.3f)" % (potential + kinetic, potential,
                                                                         kinetic)))
    if info.fwdinv is not None:
        out.append(("FwdInv", "%.1f %.1f" % info.fwdinv))
    if info.islands_on:
        out.append(("Islands", "%d" % info.nisland))
    return out


# ------------------------------------------------------------------ figures

COUNT_LABELS = ("total", "active", "changed", "evals", "updates")
COST_LABELS = ("improvement", "gradient", "lineslope")
TIMER_LABELS = ("total", "collision", "prepare", "solve", "other")
SIZE_LABELS = ("dof", "body", "constraint", "sqrt(nnz)", "contact", "iteration")


@dataclass(frozen=True)
class Request:
    """Whether the views show the figures (commands.Profile)."""

    on: bool = False


@dataclass(frozen=True, eq=False)
class Island:
    """One island's solver statistics per iteration (simulate's "Counts" and
    "Convergence" lines), read-only: `counts` (5, npoints) total, active, changed,
    evals, updates; `costs` (3, npoints) log10 improvement, gradient, lineslope. Lines
    the solver does not have are None (PGS: evals, updates, gradient, lineslope; CG: updates)."""

    counts: tuple
    costs: tuple


@dataclass(frozen=True, eq=False)
class Figures:
    """The profiler figures of one snapshot. `timers` (5, n) CPU milliseconds per step
    (total, collision, prepare, solve, other) and `sizes` (6, n) of the last n <= 201
    snapshots, newest first (x = 0, -1, ...), read-only."""

    islands: tuple
    timers: np.ndarray
    sizes: np.ndarray


def _frozen(array) -> np.ndarray:
    out = np.array(array, dtype=float)
    out.flags.writeable = False
    return out


def islands(model, data) -> tuple:
    """simulate's Counts and Convergence lines, per island with statistics."""
    count = max(1, min(data.nisland, NISLAND)) if data.nefc else 0
    solver, stat, out = int(model.opt.solver), data.solver, []
    log = np.frompyfunc(lambda v: math.log10(max(MINVAL, v)), 1, 1)
    for k in range(count):
        npoints = min(int(data.solver_niter[k]), NSOLVER, MAXLINEPNT)
        rows = slice(k * NSOLVER, k * NSOLVER + npoints)
        total = np.full(npoints, data.nefc if count == 1 else data.island_nefc[k], dtype=float)
        counts = [total, stat.nactive[rows], stat.nchange[rows], stat.neval[rows], stat.nupdate[rows]]
        costs = [log(stat.improvement[rows]), log(stat.gradient[rows]), log(stat.lineslope[rows])]
        if solver == PGS:
            counts[3] = counts[4] = costs[1] = costs[2] = None
        elif solver == CG:
            counts[4] = None
        out.append(Island(tuple(None if c is None else _frozen(c) for c in counts),
                          tuple(None if c is None else _frozen(c) for c in costs)))
    return tuple(out)


def timer_lines(duration: np.ndarray, number: np.ndarray) -> tuple | None:
    """CPU milliseconds per step (per forward when no step ran) of simulate's CPU
    figure: total, collision, prepare, solve, other; None without measurements."""
    total, count = duration[STEP], int(number[STEP])
    if not count:
        total, count = duration[FORWARD], int(number[FORWARD])
    if count <= 0:
        return None
    collision = duration[T.mjTIMER_POS_COLLISION] / count
    prepare = (duration[T.mjTIMER_POS_MAKE] + duration[T.mjTIMER_POS_PROJECT]) / count
    solve = duration[T.mjTIMER_CONSTRAINT] / count
    total = total / count
    return tuple(1e3 * v for v in (total, collision, prepare, solve, total - collision - prepare - solve))


def size_lines(model, data) -> tuple:
    """simulate's Dimensions: dof, body (awake ones with sleep), constraints,
    sqrt(nnz), contacts, iterations per island (0 without constraints)."""
    count = max(1, min(data.nisland, NISLAND)) if data.nefc else 0
    nnz = sum(int(n) for n in data.solver_nnz[:count])
    niter = sum(int(n) for n in data.solver_niter[:count])
    sleep = model.opt.enableflags & SLEEP
    return (float(data.nv_awake if sleep else model.nv), float(data.nbody_awake if sleep else model.nbody),
            float(data.nefc), math.sqrt(nnz), float(data.ncon), niter / count if count else 0.0)


class Profiler:
    """The rings of the CPU and Dimensions figures, on the runner's thread."""

    def __init__(self):
        self.timers = np.zeros((len(TIMER_LABELS), RING))
        self.sizes = np.zeros((len(SIZE_LABELS), RING))
        self.timer_points = self.size_points = 0

    def clear(self) -> None:
        self.timer_points = self.size_points = 0

    @staticmethod
    def _push(ring: np.ndarray, points: int, values) -> int:
        points = min(RING, points + 1)
        ring[:, 1:points] = ring[:, :points - 1].copy()  # (older one to the right, as simulate shifts)
        ring[:, 0] = values
        return points

    def take(self, model, data, info: Info) -> Figures:
        """Add this snapshot's points and return the figures (frozen copies)."""
        lines = timer_lines(info.timer_duration, info.timer_number)
        if lines is not None:  # (no measurements: simulate skips the update)
            self.timer_points = self._push(self.timers, self.timer_points, lines)
        self.size_points = self._push(self.sizes, self.size_points, size_lines(model, data))
        return Figures(islands(model, data), _frozen(self.timers[:, :self.timer_points]),
                       _frozen(self.sizes[:, :self.size_points]))


# (title, legend, minimum x range, minimum y range): simulate's InitializeProfiler
FIGURES = (("Counts", COUNT_LABELS, (0.0, 20.0), (0.0, 80.0)),
           ("Convergence (log 10)", COST_LABELS, (0.0, 20.0), (-15.0, 5.0)),
           ("CPU time (msec)", TIMER_LABELS, (-200.0, 0.0), (0.0, 0.4)),
           ("Dimensions", SIZE_LABELS, (-200.0, 0.0), (0.0, 100.0)))


def figure_lines(figures: Figures) -> tuple:
    """The four figures' lines, ((colour index, xs, ys), ...) each, in FIGURES' order: the
    solver's per island against the iteration (each island's lines in the same colours,
    as simulate repeats them), the rings against the snapshot (0 the newest, -1 ...)."""
    counts, costs = [], []
    for island in figures.islands:
        for target, group in ((counts, island.counts), (costs, island.costs)):
            for color, line in enumerate(group):
                if line is not None:
                    target.append((color, np.arange(len(line), dtype=float), line))
    rings = []
    for ring in (figures.timers, figures.sizes):
        x = -np.arange(ring.shape[1], dtype=float)
        rings.append(tuple((color, x, ring[color]) for color in range(len(ring))) if ring.shape[1] else ())
    return tuple(counts), tuple(costs), rings[0], rings[1]

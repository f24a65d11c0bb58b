"""engine/info.py and what the runner publishes for simulate's Info panel and its
profiler figures: every value equals simulate.cc's formula (UpdateInfoText,
UpdateProfiler) applied to MuJoCo's own MjData, stepped alongside with plain
`mj_step`, bit for bit; the texts equal C's printf of simulate's formats (libc's
snprintf through ctypes). MuJoCo's timers are wall clock, so for them only the
arithmetic is checkable: on the runner's own MjData. Real MuJoCo, no bpy."""

import copy
import ctypes
import math
import os

import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.engine import commands as cmd, info
from mjblend.engine.runner import Runner
from mjblend.engine.session import EngineSession

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
NSOLVER, MINVAL = mujoco.mjNSOLVER, mujoco.mjMINVAL
T = mujoco.mjtTimer
LIBC = ctypes.CDLL(None)


def boxes(count=4, flags="", solver="Newton"):
    """`count` boxes resting apart on a plane: one constraint island each."""
    bodies = "".join(f'<body pos="{i * 0.5} 0 .1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>'
                     for i in range(count))
    return (f'<mujoco><option solver="{solver}">{flags}</option><worldbody>'
            f'<geom type="plane" size="5 5 .1"/>{bodies}</worldbody></mujoco>')


ENERGY = boxes(2, '<flag energy="enable" fwdinv="enable"/>')


def c_format(fmt: str, *args) -> str:
    """C's snprintf of `fmt` (ints as int, floats as double)."""
    out = ctypes.create_string_buffer(256)
    cargs = [ctypes.c_int(a) if isinstance(a, int) else ctypes.c_double(a) if isinstance(a, float)
             else ctypes.c_char_p(a.encode()) for a in args]
    LIBC.snprintf(out, 256, fmt.encode(), *cargs)
    return out.value.decode()


def _run(model, steps):
    runner = Runner(EngineSession(model), threaded=False)
    reference = copy.copy(runner.session.data)
    runner.send(cmd.Profile(info.Request(True)))
    runner.send(cmd.Step(steps))
    for _ in range(steps):
        mujoco.mj_step(model, reference)
    mujoco.mj_kinematics(model, reference)  # (what the runner computes before each snapshot)
    mujoco.mj_comPos(model, reference)
    if model.ntendon:
        mujoco.mj_tendon(model, reference)
    return runner, reference


def simulate_info(m, d):
    """simulate.cc UpdateInfoText's numbers, transcribed as scalar code."""
    nisland = max(1, min(d.nisland, mujoco.mjNISLAND))
    solerr = 0.0
    for i in range(nisland):
        solerr_i = 0.0
        if d.solver_niter[i]:
            ind = min(d.solver_niter[i], NSOLVER) - 1
            stat = d.solver[i * NSOLVER + ind]
            improvement, gradient = stat.improvement, stat.gradient
            solerr_i = min(improvement, gradient)
            if solerr_i == 0:
                solerr_i = max(improvement, gradient)
        solerr = max(solerr, solerr_i)
    solerr = math.log10(max(MINVAL, solerr))
    niter = 0
    for i in range(nisland):
        niter += int(d.solver_niter[i])
    return solerr, niter


def simulate_profiler(m, d):
    """simulate.cc UpdateProfiler's per-island lines and its Dimensions row."""
    nisland = max(1, min(d.nisland, mujoco.mjNISLAND)) if d.nefc else 0
    islands = []
    for k in range(nisland):
        npoints = min(d.solver_niter[k], NSOLVER, 1001)
        nefc = d.nefc if nisland == 1 else d.island_nefc[k]
        counts = [[], [], [], [], []]
        costs = [[], [], []]
        for i in range(npoints):
            s = d.solver[k * NSOLVER + i]
            for line, value in zip(counts, (nefc, s.nactive, s.nchange, s.neval, s.nupdate), strict=True):
                line.append(float(value))
            for line, value in zip(costs, (s.improvement, s.gradient, s.lineslope), strict=True):
                line.append(math.log10(max(MINVAL, value)))
        islands.append((counts, costs))
    nnz = niter = 0
    for k in range(nisland):
        nnz += d.solver_nnz[k]
        niter += d.solver_niter[k]
    sizes = [m.nv, m.nbody, d.nefc, math.sqrt(nnz), d.ncon, niter / nisland if nisland else 0.0]
    return islands, [float(v) for v in sizes]


def _same(a, b):
    assert np.asarray(a, float).tobytes() == np.asarray(b, float).tobytes()


def _check(model, shot, reference):
    solerr, niter = simulate_info(model, reference)
    got = shot.info
    assert (got.nefc, got.ncon, got.nisland) == (reference.nefc, reference.ncon, reference.nisland)
    assert (got.niter, got.maxuse_arena, got.narena) == (niter, reference.maxuse_arena, reference.narena)
    assert got.time == reference.time
    _same(got.solerr, solerr)
    _same(got.energy, reference.energy)
    islands, sizes = simulate_profiler(model, reference)
    figures = shot.figures
    _same(figures.sizes[:, 0], sizes)
    assert len(figures.islands) == len(islands)
    for island, (counts, costs) in zip(figures.islands, islands, strict=True):
        for line, expected in zip(island.counts + island.costs, counts + costs, strict=True):
            if line is not None:
                _same(line, expected)
                assert not line.flags.writeable
    return figures


@needs_corpus
def test_humanoid_info_and_figures_equal_simulates_formulas():
    model = mujoco.MjModel.from_xml_path(HUMANOID)
    runner, reference = _run(model, 150)
    shot = runner.latest
    assert reference.nefc > 0 and shot.info.niter > 0
    figures = _check(model, shot, reference)
    assert len(figures.islands) == 1 and all(line is not None for line in figures.islands[0].counts)
    assert not shot.info.energy_on and shot.info.fwdinv is None and shot.info.islands_on
    # simulate's texts are C's printf of its formats
    rows = dict(info.lines(shot.info, 59.6, playing=True))
    solerr, niter = simulate_info(model, reference)
    assert rows["Time"] == c_format("%-9.3f", reference.time)
    assert rows["Size"] == c_format("%d  (%d con)", reference.nefc, reference.ncon)
    assert rows["Solver"] == c_format("%.1f  (%d it)", solerr, niter)
    assert rows["Memory"] == c_format("%.1f%% of %s", 100 * reference.maxuse_arena / float(reference.narena),
                                      mujoco.mju_writeNumBytes(reference.narena))
    assert rows["FPS"] == c_format("%.0f", 59.6) and info.fps_text(0.25) == c_format("%0.1f", 0.25)
    assert rows["Islands"] == c_format("%d", reference.nisland)
    assert "Energy" not in rows and "FwdInv" not in rows


def test_islands_energy_and_fwdinv():
    model = mujoco.MjModel.from_xml_string(ENERGY)
    runner, reference = _run(model, 60)
    shot = runner.latest
    assert shot.info.energy_on and reference.energy[1] != 0.0
    _check(model, shot, reference)
    assert shot.info.fwdinv == tuple(math.log10(max(MINVAL, v)) for v in reference.solver_fwdinv)
    rows = dict(info.lines(shot.info, None, playing=False))
    potential, kinetic = reference.energy
    total = c_format("%.3f", potential + kinetic)
    assert rows["Energy"].startswith(total + "  ") and c_format("%.3f", kinetic) in rows["Energy"]
    assert rows["FwdInv"] == c_format("%.1f %.1f", *shot.info.fwdinv)

    model = mujoco.MjModel.from_xml_string(boxes(4))
    runner, reference = _run(model, 40)
    shot = runner.latest
    assert reference.nisland == 4 and shot.info.nisland == 4
    figures = _check(model, shot, reference)
    assert len(figures.islands) == 4
    for k, island in enumerate(figures.islands):  # (several islands: each its own constraint count)
        assert set(island.counts[0]) <= {float(reference.island_nefc[k])}


@pytest.mark.parametrize("solver, hidden", [("PGS", {3, 4, 6, 7}), ("CG", {4})])
def test_pgs_and_cg_hide_lines_as_simulate_does(solver, hidden):
    model = mujoco.MjModel.from_xml_string(boxes(1, solver=solver))
    runner, reference = _run(model, 20)
    figures = _check(model, runner.latest, reference)
    lines = figures.islands[0].counts + figures.islands[0].costs
    assert {i for i, line in enumerate(lines) if line is None} == hidden


def test_no_constraints_no_islands_and_zero_iterations():
    model = mujoco.MjModel.from_xml_string('<mujoco><worldbody><body><freejoint/><geom size=".1"/></body>'
                                           '</worldbody></mujoco>')
    runner, reference = _run(model, 10)
    figures = _check(model, runner.latest, reference)
    assert figures.islands == () and figures.sizes[5, 0] == 0.0  # (simulate divides by zero here)


def test_timers_since_the_previous_snapshot_and_the_cpu_ring():
    model = mujoco.MjModel.from_xml_string(boxes(3))
    runner = Runner(EngineSession(model), threaded=False)
    runner.send(cmd.Profile(info.Request(True)))
    data = runner.session.data
    first = runner.latest
    before = info.timers(data)
    expected = []
    for steps in (5, 9, 3):
        runner.send(cmd.Step(steps))
        shot = runner.latest
        now = info.timers(data)
        _same(shot.info.timer_duration, now[0] - before[0])
        assert shot.info.timer_number.tolist() == (now[1] - before[1]).tolist()
        assert shot.info.timer_number[T.mjTIMER_STEP] == steps  # (MuJoCo counted each step)
        d, n = now[0] - before[0], now[1] - before[1]
        total = d[T.mjTIMER_STEP] / n[T.mjTIMER_STEP]
        collision = d[T.mjTIMER_POS_COLLISION] / steps
        prepare = (d[T.mjTIMER_POS_MAKE] + d[T.mjTIMER_POS_PROJECT]) / steps
        solve = d[T.mjTIMER_CONSTRAINT] / steps
        row = [1e3 * v for v in (total, collision, prepare, solve, total - collision - prepare - solve)]
        expected.insert(0, row)
        _same(shot.figures.timers, np.array(expected).T)  # newest first, as simulate shifts
        assert shot.info.cpu(True) == 1e3 * d[T.mjTIMER_STEP] / steps
        assert shot.info.cpu(False) == 1e3 * d[T.mjTIMER_FORWARD] / max(1, n[T.mjTIMER_FORWARD])
        before = now
    assert shot.figures.sizes.shape == (6, 4)
    assert first.figures.timers.shape == (5, 0)  # (no step nor forward measured yet: simulate skips)
    # a reset zeroes MuJoCo's timers: the deltas count from zero (simulate resets timer_prev_)
    runner.send(cmd.Reset())
    runner.send(cmd.Step(2))
    shot = runner.latest
    assert shot.info.timer_number.tolist() == info.timers(data)[1].tolist()
    assert shot.info.timer_number[T.mjTIMER_STEP] == 2
    # the ring keeps the last 201 snapshots
    for _ in range(info.RING + 5):
        runner.send(cmd.Step(1))
        shot = runner.latest
    assert shot.figures.timers.shape == (5, info.RING) and shot.figures.sizes.shape == (6, info.RING)
    runner.send(cmd.Profile(info.Request(False)))
    assert runner.latest.figures is None and runner.latest.info is not None

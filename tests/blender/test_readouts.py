"""simulate's Info, Watch and profiler figures in Blender (bpy module): Watch rows added
with the operator on an imported humanoid and kept in the file, the values the
panel shows equal MuJoCo's MjData of the simulation (the inline runner's, read on
this thread); the Info line; the energy flag set by the Info panel's button reaches
MuJoCo; the four figures the draw callback lays out (without a GPU) carry the
snapshot's solver statistics and rings, mapped into their rectangles."""

import os

import bpy
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.engine import commands, info, watch
from mjblend.importer import build
from mjblend.live import scene_session
from mjblend.ui import readouts
from mjblend.ui.plots import draw

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")


@pytest.fixture
def humanoid(clean_scene):
    build.import_file(HUMANOID, clean_scene)
    yield clean_scene
    scene_session.end_all()


@needs_corpus
def test_watch_rows_show_mujocos_values_and_are_kept(humanoid, tmp_path):
    assert bpy.ops.mujoco.watch_add() == {"FINISHED"}  # simulate's default: qpos, 0
    assert bpy.ops.mujoco.watch_add(field="xpos", index=3 * 4 + 2) == {"FINISHED"}
    assert bpy.ops.mujoco.watch_add(field="efc_force", index=0) == {"FINISHED"}
    assert bpy.ops.mujoco.watch_add(field="qvel", index=10_000) == {"FINISHED"}
    assert bpy.ops.mujoco.watch_add(field="qpso", index=0) == {"FINISHED"}
    rows = humanoid.mujoco_plots.watch
    rows[0].index = 2
    running = scene_session.start_simulation(humanoid)
    readouts.ask(humanoid, running)  # (what the panels' and viewport's draws ask)
    running.send(commands.Step(150))
    shot = running.latest
    data = running.runner.session.data  # (inline: this thread owns it between commands)
    assert shot.watch[:3] == (float(data.qpos[2]), float(data.xpos[4, 2]), float(data.efc_force[0]))
    assert shot.watch[3:] == (watch.INVALID_INDEX, watch.INVALID_FIELD)
    assert data.efc_force[0] != 0.0
    # an edited row is asked for again
    rows[1].field = "cfrc_ext"
    readouts.ask(humanoid, running)
    assert running.latest.watch[1] == float(data.cfrc_ext.reshape(-1)[3 * 4 + 2])
    assert bpy.ops.mujoco.watch_remove(index=4) == {"FINISHED"}
    with pytest.raises(RuntimeError, match=r"No watched value 9 \(there are 4\)"):
        bpy.ops.mujoco.watch_remove(index=9)
    scene_session.end_all()
    path = str(tmp_path / "watch.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    kept = bpy.context.scene.mujoco_plots.watch
    assert [(r.field, r.index) for r in kept] == [("qpos", 2), ("cfrc_ext", 14), ("efc_force", 0),
                                                  ("qvel", 10_000)]


@needs_corpus
def test_info_line_energy_button_and_figures(humanoid):
    settings = humanoid.mujoco_plots
    settings.show_info = settings.show_figures = True
    settings.show_plots = False
    running = scene_session.start_simulation(humanoid)
    readouts.ask(humanoid, running)
    for count in (20, 30, 10, 40):
        running.send(commands.Step(count))
    shot = running.latest
    data = running.runner.session.data
    assert (shot.info.nefc, shot.info.ncon, shot.info.nisland) == (data.nefc, data.ncon, data.nisland)
    assert not shot.info.energy_on
    line = readouts.info_line(running)
    assert line.startswith(f"Time {data.time:.3f}   Size {data.nefc}  ({data.ncon} con)   CPU ")
    assert "Memory" in line and "Energy" not in line
    # the Info panel's button: the energy flag as an option override, applied to the running model
    assert bpy.ops.mujoco.enable_energy() == {"FINISHED"}
    assert humanoid.mujoco_simulation.override.use_enableflags
    assert "ENERGY" in humanoid.mujoco_simulation.override.enableflags
    running.send(commands.Step(5))
    shot = running.latest
    assert shot.info.energy_on and shot.info.energy == tuple(float(e) for e in data.energy)
    assert data.energy[1] > 0.0 and "Energy" in readouts.info_line(running)

    # the four figures the draw callback lays out, MuJoCo's titles, the snapshot's data
    placed = draw.layout(humanoid, 1400, 1200, scale=1.0, insets=(0, 300))
    assert [fig.title for _frame, fig in placed.figures] == [f[0] for f in info.FIGURES]
    assert placed.info[0] == readouts.info_line(running)
    counts, costs, cpu, sizes = (fig for _frame, fig in placed.figures)
    island = shot.figures.islands[0]
    assert len(counts.lines) == 5 and len(costs.lines) == 3  # (Newton: every line)
    for fig, values in ((counts, island.counts), (costs, island.costs), (cpu, shot.figures.timers),
                        (sizes, shot.figures.sizes)):
        x, y, w, h = fig.rect
        low, high = fig.yrange
        for line, expected in zip(fig.lines, values, strict=True):
            assert np.allclose(line[:, 1], y + (np.clip(expected, low, high) - low) / (high - low) * h)
            assert line[:, 0].min() >= x - 1e-6 and line[:, 0].max() <= x + w + 1e-6
    if len(counts.lines[0]) == 1:  # (one solver iteration: a short dash, not nothing)
        dash = draw.segments(counts.lines[0])
        assert len(dash) == 2 and dash[1, 0] - dash[0, 0] == 2 * draw.TICK and dash[0, 1] == dash[1, 1]
    assert sizes.xrange == (-200.0, 0.0)
    assert sizes.lines[0][0, 0] == pytest.approx(sizes.rect[0] + sizes.rect[2])  # (the newest at x = 0)
    assert sizes.yrange[0] <= 0.0 and sizes.yrange[1] >= 100.0  # (simulate's minimum range)
    assert shot.figures.sizes.shape[1] >= 5  # one point per snapshot published since it was asked
    settings.show_figures = False
    readouts.ask(humanoid, running)
    assert running.latest.figures is None

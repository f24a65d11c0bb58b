"""Plots and the profiler line in Blender's real user interface (issue 20): a
humanoid falls on the physics thread with two sensor plots and the profiler on;
the screenshot shows each plot's line colours inside its plotting rectangle
(and not outside the figures). With MJBLEND_UPDATE_DOCS=1 the screenshot
becomes docs/images/plots.png."""

import os
import shutil

import numpy as np
import pytest
from addon_loader import ROOT
from gui_blender import assert_real_screenshot, leftover_processes, run_reporting_script, screenshot_pixels
from helpers import needs_corpus

DOCS = os.path.join(ROOT, "docs", "images")
TOLERANCE = 0.12  # per channel
MIN_PIXELS = 100  # pixels of its lines' colours a plot of a few hundred points shows at least


@pytest.fixture(scope="module")
def plotted(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "plots_view.py",
                                env=lambda folder: {"MJBLEND_SCREENSHOT": str(folder / "plots.png")})


def _count(pixels, color, box=None) -> int:
    """Pixels of `color` (in `box`: x, y, width, height, y up as the image rows go)."""
    if box is not None:
        x, y, w, h = (int(round(v)) for v in box)
        pixels = pixels[max(0, y):y + h, max(0, x):x + w]
    return int((np.abs(pixels - np.array(color[:3])) < TOLERANCE).all(axis=2).sum())


@pytest.mark.gui
@needs_corpus
def test_two_sensor_plots_and_the_profiler_draw_while_playing(plotted):
    proc, report, folder = plotted
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert report["added"] == [["FINISHED"], ["FINISHED"]]
    assert "MJBLEND_PT_plots" in report["drawn"]  # the sidebar's Plots panel drew (without an error)
    assert report["sidebar"] > 100  # and the plots keep clear of it
    clear = report["area"][0] - report["sidebar"]
    assert all(f["frame"][0] + f["frame"][2] <= clear for f in report["figures"])
    assert report["playing"] and report["time"] > 1.0
    assert report["plotted"] == ["Sensor sensor_root_veloc", "Sensor sensor_root_gyro"]
    assert [f["title"] for f in report["figures"]] == report["plotted"]
    assert all(f["labels"] == ["x", "y", "z"] and f["points"] > 20 for f in report["figures"])
    step, sync, draw, fps = report["profile"]
    assert step > 0 and sync > 0 and draw > 0 and fps > 0
    assert "ms per frame" in report["profile_line"] and "real time" in report["profile_line"]
    picture = folder / "plots.png"
    assert_real_screenshot(picture)
    pixels = screenshot_pixels(picture)
    assert list(pixels.shape[1::-1]) == report["area"]
    outside = pixels.copy()
    seen = np.zeros(len(report["colors"]), dtype=int)
    for figure in report["figures"]:
        # x, y and z of the sensor, each in its colour (a flat one may hide behind the one drawn after it)
        counts = np.array([_count(pixels, color, figure["rect"]) for color in report["colors"]])
        assert counts.sum() >= MIN_PIXELS, (figure, counts)
        seen += counts
        x, y, w, h = (int(round(v)) for v in figure["frame"])
        outside[max(0, y - 4):y + h + 4, max(0, x - 4):x + w + 4] = 0
    assert (seen >= 5).all(), seen  # every colour shows somewhere
    for color in report["colors"]:  # and the lines stay in their figures
        assert _count(outside, color) < 5, color
    if os.environ.get("MJBLEND_UPDATE_DOCS") == "1":
        shutil.copyfile(picture, os.path.join(DOCS, "plots.png"))

"""The randomization preview in Blender's real user interface (issue 19): four
randomized humanoids side by side, stepped by the Start operator's real modal
timer; Play refused meanwhile; Redraw and Stop. With MJBLEND_UPDATE_DOCS=1 the
screenshot becomes docs/images/randomization-preview.png."""

import os
import shutil

import numpy as np
import pytest
from addon_loader import ROOT
from gui_blender import assert_real_screenshot, leftover_processes, run_reporting_script, screenshot_pixels
from helpers import needs_corpus

DOCS = os.path.join(ROOT, "docs", "images")


@pytest.fixture(scope="module")
def preview(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "randomization_preview.py",
                                env=lambda folder: {"MJBLEND_SCREENSHOT": str(folder / "preview.png")})


@pytest.mark.gui
@needs_corpus
def test_the_preview_steps_on_the_real_timer(preview):
    proc, report, folder = preview
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert report["start"] == ["RUNNING_MODAL"] and report["count"] == 4
    assert report["instancer"] == "Scene (randomization preview)" and report["sources_hidden"]
    assert "MJBLEND_PT_randomization_preview" in report["drawn"]
    samples = np.array(report["samples"])
    assert samples[-1, 2] > samples[0, 2]  # the timer stepped it
    # each tick steps the wall time since the one before (up to LONGEST_TICK): real time
    # however slowly Blender draws (its software OpenGL here takes ~0.5 s a frame)
    ticks = np.array(report["ticks"])
    assert len(ticks) >= 3, ticks
    waited = np.minimum(np.diff(ticks[:, 0]), report["longest_tick"])
    stepped = ticks[1:, 1] * report["timestep"]
    assert np.abs(stepped - waited).max() < 0.02, (stepped, waited)
    draws = np.array(report["draws"])
    assert len(np.unique(draws[:, 0])) == 4  # four masses, four gravities
    assert len(np.unique(np.round(report["torso_heights"], 6))) == 4  # four different falls
    assert "randomization preview is running" in report["play"]
    assert report["redrawn"] and report["time_after_redraw"] == 0.0 and report["time_later"] > 0.0
    assert report["steps_after_stop"] == 0 and not report["preview_after_stop"]
    assert report["restored"] and report["counts_restored"]


@pytest.mark.gui
@needs_corpus
def test_the_preview_screenshot(preview):
    _proc, _report, folder = preview
    picture = folder / "preview.png"
    assert_real_screenshot(picture)
    # the four humanoids are drawn (only the preview's instancer draws them, tan on the
    # grey floor): pixels with red > green > blue between the toolbar and the sidebar
    rgb = screenshot_pixels(picture)
    middle = rgb[:, int(0.1 * rgb.shape[1]):int(0.75 * rgb.shape[1])]
    red, green, blue = middle[..., 0], middle[..., 1], middle[..., 2]
    drawn = ((red > green) & (green > blue) & (red - blue > 0.08)).sum()
    assert drawn > 5000, f"{drawn} humanoid pixels: the preview drew nothing"
    if os.environ.get("MJBLEND_UPDATE_DOCS") == "1":
        shutil.copyfile(picture, os.path.join(DOCS, "randomization-preview.png"))

"""simulate's Info, Watch and profiler figures in Blender's real user interface (issue 34):
MuJoCo's humanoid plays on the physics thread with the sidebar's Info and Watch panels
open, two watched values and the Info line and four MuJoCo figures on; the panels draw
without an error, the watched values are the shown snapshot's own numbers, the Info
line is its Info, and the screenshot shows the history figures' line colours inside
their plotting rectangles. With MJBLEND_UPDATE_DOCS=1 the screenshot becomes
docs/images/readouts.png."""

import os
import shutil

import numpy as np
import pytest
from gui_blender import assert_real_screenshot, leftover_processes, run_reporting_script, screenshot_pixels
from helpers import needs_corpus

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "images")
TOLERANCE = 0.12  # per channel
TITLES = ["Counts", "Convergence (log 10)", "CPU time (msec)", "Dimensions"]


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "readouts_view.py",
                                env=lambda folder: {"MJBLEND_SCREENSHOT": str(folder / "readouts.png")})


def _count(pixels, color, box) -> int:
    x, y, w, h = (int(round(v)) for v in box)
    pixels = pixels[max(0, y):y + h, max(0, x):x + w]
    return int((np.abs(pixels - np.array(color[:3])) < TOLERANCE).all(axis=2).sum())


@pytest.mark.gui
@needs_corpus
def test_info_watch_and_figures_while_playing(shown):
    proc, report, folder = shown
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert report["added"] == [["FINISHED"]] * 3
    assert {"MJBLEND_PT_info", "MJBLEND_PT_watch"} <= set(report["drawn"])  # (drew without an error)
    assert report["playing"] and report["time"] > 1.0
    # the watched values are the shown snapshot's own numbers; a bad field reads as simulate says
    snap = report["snapshot"]
    assert report["watch"][:2] == [snap["qpos2"], snap["xpos2z"]]
    assert report["watch"][2] == "invalid field"
    assert report["watch_text"][0] == "%g" % snap["qpos2"]
    # the Info rows and line are that snapshot's Info
    rows = dict((title, text) for title, text in report["info_rows"])
    info = report["info"]
    assert rows["Size"] == "%d  (%d con)" % (info["nefc"], info["ncon"]) and info["ncon"] == info["contacts"]
    assert rows["Time"].strip() == "%.3f" % info["time"] and rows["FPS"] != "-"
    assert report["info_line"].startswith("Time %.3f   Size" % info["time"])
    assert info["steps_timed"] > 0  # (MuJoCo's step timer counted the steps since the snapshot before)
    # the four figures, MuJoCo's titles; the history ones filled over the frames played
    assert [f["title"] for f in report["figures"]] == TITLES
    data = report["figure_data"]
    assert data["timers"] > 20 and data["sizes"] > 20 and data["nv"] == data["model_nv"]
    picture = folder / "readouts.png"
    assert_real_screenshot(picture)
    pixels = screenshot_pixels(picture)
    assert list(pixels.shape[1::-1]) == report["area"]
    for figure in report["figures"][2:]:  # (CPU time, Dimensions: a line per colour, many points)
        assert min(figure["points"]) > 20
        counts = [_count(pixels, color, figure["rect"]) for color in report["colors"][:len(figure["labels"])]]
        assert sum(c > 0 for c in counts) >= 3, (figure["title"], counts)  # (flat lines may overlap)
        assert sum(counts) > 100, (figure["title"], counts)
    # the texts, drawn from the glyph texture: the Info line's characters light on its dark strip,
    # each legend label in its line's colour in the figure's title row
    x, y, w, h = (int(round(v)) for v in report["info_box"])
    strip = pixels[max(0, y):y + h, max(0, x):x + w]
    glyphs = len(report["info_line"].replace(" ", ""))
    lit = (strip > 0.7).all(axis=2).sum()  # (the strip over a white floor reads ~0.5: blended linear)
    assert lit >= 2 * glyphs, (lit, glyphs)
    for figure in report["figures"]:
        fx, fy, fw, fh = figure["frame"]
        title_row = (fx, fy + fh - 20, fw, 20)
        counts = [_count(pixels, color, title_row) for color in report["colors"][:len(figure["labels"])]]
        assert all(c > 0 for c in counts), (figure["title"], counts)
    if os.environ.get("MJBLEND_UPDATE_DOCS") == "1":
        shutil.copyfile(picture, os.path.join(DOCS, "readouts.png"))

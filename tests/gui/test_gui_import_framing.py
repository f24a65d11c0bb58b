"""Import framing in Blender's real user interface (issue 20): a model dropped on the
viewport is framed in every 3D view of the window but one looking through a camera;
its bodies fill the view, the floor does not decide it. With MJBLEND_UPDATE_DOCS=1
the screenshot becomes docs/images/import-framing.png."""

import os
import shutil

import pytest
from addon_loader import ROOT
from gui_blender import assert_real_screenshot, leftover_processes, run_reporting_script
from helpers import needs_corpus

DOCS = os.path.join(ROOT, "docs", "images")


@pytest.fixture(scope="module")
def framing(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "import_framing.py",
                                env=lambda folder: {"MJBLEND_SCREENSHOT": str(folder / "framing.png")})


@pytest.mark.gui
@needs_corpus
@pytest.mark.parametrize("view", ["main", "ortho"])
def test_the_views_frame_the_bodies_not_the_floor(framing, view):
    proc, report, folder = framing
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert report["imported_in"] < 60 and report["active"] == "MODEL", report
    seen = report[view]
    assert report["body_geoms"] > 10 and report["floors"], report
    # every body geom's centre is in the view, and the bodies fill a good part of it
    assert seen["centres_inside"] == seen["centres"] == report["body_geoms"], seen
    assert seen["extent"] > 0.25, seen
    # the floor (Blender shows it far larger than the model) reaches out of the view
    assert seen["floor_corners_inside"] < seen["floor_corners"], seen
    assert leftover_processes(folder) == []


@pytest.mark.gui
@needs_corpus
def test_a_view_through_a_camera_is_left_alone(framing):
    _proc, report, _folder = framing
    assert report["camera_view_after"] == report["camera_view_before"]
    assert report["camera_view_after"][0] == "CAMERA"


@pytest.mark.gui
@needs_corpus
def test_cameras_are_drawn_at_mujocos_size(framing):
    _proc, report, _folder = framing
    assert len(report["cameras"]) == 3
    for name, size in report["cameras"]:
        assert size == pytest.approx(report["mujoco_camera_size"], rel=0.01), name


@pytest.mark.gui
@needs_corpus
def test_the_framing_screenshot(framing):
    _proc, _report, folder = framing
    picture = folder / "framing.png"
    assert_real_screenshot(picture)
    if os.environ.get("MJBLEND_UPDATE_DOCS") == "1":
        shutil.copyfile(picture, os.path.join(DOCS, "import-framing.png"))

"""The contact overlays in Blender's real user interface (issue 20): a box resting
on a plane with the contact point and force overlays on shows their colours at the
contact points and along the force arrows in a screenshot. With
MJBLEND_UPDATE_DOCS=1 the screenshot becomes docs/images/overlays-contacts.png."""

import os
import shutil

import numpy as np
import pytest
from addon_loader import ROOT
from gui_blender import assert_real_screenshot, leftover_processes, run_reporting_script, screenshot_pixels

DOCS = os.path.join(ROOT, "docs", "images")
NEAR = 5  # pixels around a projected point searched for its colour
TOLERANCE = 0.12  # per channel


@pytest.fixture(scope="module")
def contacts(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "overlay_contacts.py",
                                env=lambda folder: {"MJBLEND_SCREENSHOT": str(folder / "contacts.png")})


def _coloured_near(pixels, at, color) -> bool:
    x, y = int(round(at[0])), int(round(at[1]))
    patch = pixels[max(0, y - NEAR):y + NEAR + 1, max(0, x - NEAR):x + NEAR + 1]
    return bool((np.abs(patch - np.array(color[:3])) < TOLERANCE).all(axis=2).any())


@pytest.mark.gui
def test_contact_points_and_forces_are_drawn_where_mujoco_has_them(contacts):
    proc, report, folder = contacts
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert report["toggled"] == [["FINISHED"]] * 3
    assert report["ncon"] == 4  # a box resting on a plane: its four corners
    assert len(report["contacts"]) == 4 and None not in report["contacts"]
    picture = folder / "contacts.png"
    assert_real_screenshot(picture)
    pixels = screenshot_pixels(picture)
    point_color, force_color = report["colors"]["contact points"], report["colors"]["contact forces"]
    for at in report["contacts"]:
        assert _coloured_near(pixels, at, point_color), (at, point_color)
    for tip in report["tips"]:
        assert _coloured_near(pixels, tip, force_color), (tip, force_color)
    # the body's label: white text just right of and above its origin (the box's centre)
    (text, x, y), = report["labels"]
    assert text == "box"
    label = pixels[int(y) + 4:int(y) + 18, int(x) + 4:int(x) + 30]
    assert (label > 0.85).all(axis=2).sum() >= 10
    # and not everywhere: the overlay colours are absent from a corner of the view
    corner = pixels[:40, -40:]
    assert not (np.abs(corner - np.array(point_color[:3])) < TOLERANCE).all(axis=2).any()
    if os.environ.get("MJBLEND_UPDATE_DOCS") == "1":
        shutil.copyfile(picture, os.path.join(DOCS, "overlays-contacts.png"))

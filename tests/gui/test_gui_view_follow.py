"""The 3D view following the simulation in Blender's real user interface
(tests/gui/view_follow.py): Track keeps the view's centre on the falling ball's
subtree_com (= its xpos: one free sphere) within 1e-6 in every frame shown, its
turn and distance the user's; View Through Camera draws with the model camera's
pose and vertical field of view; Free gives the view back; Copy Camera copies the
eye; the Screenshot key writes the region, overlays included, as the X server
shows it."""

import math
import re

import gui_x11
import numpy as np
import pytest
from gui_blender import leftover_processes, run_reporting_script

from mjblend.engine import png


@pytest.fixture(scope="module")
def followed(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "view_follow.py")


@pytest.mark.gui
def test_track_keeps_the_view_on_the_falling_body(followed):
    proc, report, folder = followed
    assert "Traceback" not in proc.stderr and report["errors"] == [], proc.stderr[-3000:]
    assert report["track"] == ["FINISHED"]
    frames = report["tracked"]
    assert len(frames) >= 4, frames  # (llvmpipe shows a few frames a second here)
    assert len({f["frame"] for f in frames}) == len(frames)  # (each shown frame once)
    for f in frames:
        assert np.abs(np.subtract(f["view"], f["com"])).max() < 1e-6, f
        assert np.abs(np.subtract(f["view"], f["xpos"])).max() < 1e-6, f
    heights = [f["view"][2] for f in frames]
    assert max(heights) - min(heights) > 0.5, heights  # it followed the fall (2 m down to the floor)
    assert report["ball_end"][2] < 0.11
    assert report["rotation_kept"] and report["distance_kept"]  # (MuJoCo's tracking never turns)
    assert leftover_processes(folder) == []


@pytest.mark.gui
def test_track_moves_a_blender_camera_the_view_looks_through(followed):
    _proc, report, _folder = followed
    assert report["camera_track"] == ["FINISHED"] and report["camera_perspective"] == "CAMERA"
    assert "view: TRACK" in report["drawn"]  # the sidebar's View sub-panel drew, tracking
    moved = report["camera_tracked"]
    assert len(moved) >= 4, moved
    first = moved[0]
    for f in moved:  # the camera goes along with the ball from where it was
        went = np.subtract(f["camera"], first["camera"])
        np.testing.assert_allclose(went, np.subtract(f["com"], first["com"]), atol=1e-6)
    assert first["camera"][2] - moved[-1]["camera"][2] > 0.5
    before = np.array(report["camera_before"])
    np.testing.assert_allclose(report["camera_turn"], before[:3, :3], atol=1e-6)  # (it never turned)
    # back where it was (Blender keeps the matrix as location, rotation and scale: single precision)
    np.testing.assert_allclose(report["camera_after"], report["camera_before"], atol=1e-6)


@pytest.mark.gui
def test_a_model_camera_and_free(followed):
    _proc, report, _folder = followed
    assert report["camera"] == ["FINISHED"]
    through = report["through"]
    assert through["perspective"] == "PERSP"
    np.testing.assert_allclose(through["eye"], through["cam_eye"], atol=1e-6)
    np.testing.assert_allclose(through["axes"], through["cam_axes"], atol=1e-6)
    width, height = through["region"]
    # Blender's view fits its 72 mm sensor across the wider side: fovy is the vertical angle
    tangent = 36.0 * min(1.0, height / width) / through["lens"]
    assert 2.0 * math.degrees(math.atan(tangent)) == pytest.approx(through["fovy"], abs=1e-4)
    assert report["free"] == ["FINISHED"] and report["free_again"] is False
    assert report["after"] == report["before"]  # the view's own pose back, exactly


@pytest.mark.gui
def test_copy_camera(followed):
    _proc, report, _folder = followed
    assert report["copy"] == ["FINISHED"]
    found = re.fullmatch(r'<camera pos="([^"]+)" xyaxes="([^"]+)"/>\n', report["copied"])
    assert found, report["copied"]
    pos, axes = (np.array(group.split(), float) for group in found.groups())
    expected = report["copy_expected"]
    np.testing.assert_allclose(pos, expected["pos"], atol=6e-4)
    np.testing.assert_allclose(axes, expected["x"] + expected["y"], atol=6e-4)


@pytest.mark.gui
def test_the_screenshot_key_writes_the_region_with_its_overlays(followed):
    """The key's shots, one taken with the mouse over another editor (the third) and
    one with Blender's overlays hidden (the fourth) against the X server's picture:
    the lit floor and the overlays, within 3 levels."""
    _proc, report, folder = followed
    assert report["shots"] == [f"mujoco_screenshot_00{n}.png" for n in (1, 2, 3, 4)]
    assert report["shot_elsewhere"] == report["shot_hidden"] == ["RUNNING_MODAL"]
    assert report["mouse_over"] != "VIEW_3D"
    bare, shot, elsewhere, hidden = (png.read(str(folder / name)) for name in report["shots"])
    grab, grab_hidden = (png.read(str(folder / name)) for name in ("grab.png", "grab_hidden.png"))
    width, height = report["region"]
    covered = gui_x11.covered(grab.shape, report["laid_over"])  # (drawn over the view after it)
    assert covered.mean() < 0.2, report["laid_over"]
    for picture, screen in ((shot, grab), (elsewhere, grab), (hidden, grab_hidden)):
        assert picture.shape == screen.shape == (height, width, 3)
        difference = np.abs(picture.astype(int) - screen.astype(int)).max(axis=2)
        assert difference[~covered].max() <= 3, (difference[~covered].max(), np.count_nonzero(difference > 3))
        assert np.count_nonzero(screen[~covered].min(axis=1) > 120) > 1000  # (the lit floor: in the shots)
    assert (shot != bare).any(axis=2).sum() > 20  # the overlays (contacts, centres of mass) are in it
    assert (shot != hidden).any(axis=2).sum() > 20  # (and not with Blender's overlays hidden)

"""The timeline in Blender's real user interface (issue 17): a bake invoked from the
3D view runs modal on the physics thread, then Blender's own player (the real Space
key) shows MuJoCo's simulation frame by frame."""

import pytest
from gui_blender import run_reporting_script


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "bake_timeline.py")


@pytest.mark.gui
def test_a_bake_from_the_viewport_plays_with_blenders_own_player(played):
    proc, report, _folder = played
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert report["invoke"] == ["RUNNING_MODAL"]  # modal on the physics thread
    assert report["baked"] == [1, 49] and not report["live_after_bake"]
    played_frames = report["played"]
    assert len(played_frames) >= 3 and played_frames[-1] > 1, played_frames  # the player ran
    assert report["animation_playing_after"] is False  # and Space stopped it
    assert report["play_error"] < 1e-5  # every frame shown is MuJoCo's state at its time
    assert report["scrub_error"] < 1e-5

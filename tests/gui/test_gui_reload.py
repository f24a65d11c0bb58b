"""Follow File in Blender's real user interface (issue 34, part 3): the arm's file saved
again while it plays changes the forearm in place (the same object, MuJoCo's new size),
the simulation goes on playing from where it was, the view stays; a save MuJoCo refuses
keeps the model and its message shows in the Model panel (tests/gui/reload_view.py)."""

import os

import pytest
from gui_blender import assert_real_screenshot, leftover_processes, read_report, run_gui_script

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.gui
def test_follow_file_reloads_a_playing_model_in_place(tmp_path):
    result_file, picture = tmp_path / "result.json", tmp_path / "screenshot.png"
    proc = run_gui_script(os.path.join(HERE, "reload_view.py"), tmp_path,
                          env={"MJBLEND_RESULT": str(result_file), "MJBLEND_SCREENSHOT": str(picture)})
    report = read_report(proc, result_file)
    assert report["errors"] == [], report["errors"]
    assert leftover_processes(tmp_path) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    before, after, refused = report["before"], report["after"], report["refused"]
    assert before["playing"] and before["time"] > 0.2
    assert report["reload_seconds"] < 3.0 and report["reloads"] == 1  # (one save, one reload)
    assert after["pointer"] == before["pointer"]  # the same object, reshaped
    assert after["width"] == pytest.approx(2 * before["width"], rel=1e-3)
    assert before["radius"] == pytest.approx(0.04) and after["radius"] == pytest.approx(0.08)
    assert after["same_simulation"] and after["playing"] and after["time"] > before["time"]
    assert report["view_after"] == report["view_before"]
    assert "arm.xml" in refused["error"] and refused["reloads"] == 1
    assert refused["pointer"] == before["pointer"] and refused["playing"]
    assert refused["time"] > after["time"]
    assert "MJBLEND_PT_model" in refused["drawn"]
    assert_real_screenshot(picture)

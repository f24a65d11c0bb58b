"""File > Import in Blender's real user interface (issue 35): the objects of a model of
thousands of bodies are built in steps with the progress shown, Blender keeps drawing,
and a real Esc during the build leaves nothing behind."""

import pytest
from gui_blender import leftover_processes, run_reporting_script


@pytest.fixture(scope="module")
def cancelled(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "build_cancel.py")


@pytest.mark.gui
def test_the_build_shows_its_progress_and_blender_keeps_drawing(cancelled):
    proc, report, folder = cancelled
    progress = report["progress_before_esc"]
    assert len(progress) >= 3 and progress == sorted(progress) and 0 < progress[-1] < 1, report
    shown = report["statuses"]
    assert any(s.startswith("Building big.xml: ") and s.endswith("Esc to cancel") for s in shown), shown
    # a 20 Hz timer while it built: it fired between the build's steps (each step up to 0.5 s:
    # 4x the time Blender took between them, so at least once per gap between shown steps)
    assert report["ticks_while_building"] >= len(progress) - 1, report
    assert report["longest_gap"] < max(2.0, report["building_seconds"] / 3), report
    # part way: objects made, none of them in the scene yet
    assert report["objects_made_before_esc"] > 0, report
    assert report["scene_objects_while_building"] == 0, report
    assert report["children_while_building"] == report["children_before"], report


@pytest.mark.gui
def test_esc_during_the_build_leaves_nothing_behind(cancelled):
    proc, report, folder = cancelled
    escape = [e for e in report["after_esc"] if e[1] == "ESC"]
    assert escape and escape[0][2] == ["CANCELLED"], report["after_esc"]  # (no undo step)
    assert report["data_changed"] == {}, report["data_changed"]
    assert report["children_after"] == report["children_before"], report
    assert report["scene_objects_after_cancel"] == 0, report


@pytest.mark.gui
def test_a_model_then_imports_through_the_same_path(cancelled):
    proc, report, folder = cancelled
    assert report["desk_bodies"], report
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]

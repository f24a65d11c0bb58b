"""File > Import in Blender's real user interface (issue 16): MuJoCo's load runs while
Blender keeps drawing, a real Esc cancels it (nothing added, the probe process gone),
and a model then imports through the same path."""

import pytest
from gui_blender import leftover_processes, run_reporting_script



@pytest.fixture(scope="module")
def cancel(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "import_cancel.py")


@pytest.mark.gui
def test_blender_keeps_drawing_while_mujoco_reads(cancel):
    proc, report, folder = cancel
    assert report["errors"] == [], report["errors"]
    assert report["probe_running"], report
    # a 20 Hz timer over 2 s of loading: it fires (Blender is not frozen)
    assert report["ticks_while_loading"] >= 15, report
    assert report["longest_gap"] < 0.5, report


@pytest.mark.gui
def test_esc_cancels_the_load_and_adds_nothing(cancel):
    proc, report, folder = cancel
    assert report["children_after_cancel"] == report["children_before"], report
    assert report["objects_added_by_cancelled"] == 0, report


@pytest.mark.gui
def test_a_model_then_imports_through_the_same_path(cancel):
    proc, report, folder = cancel
    assert report["desk_bodies"], report
    assert report["desk_imported_in"] < 30, report
    assert report["children_at_end"] == report["children_before"], report
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]

"""A long Simulate Duration in Blender's real user interface (issue 16): invoked in
the 3D view it runs modal on the physics thread, Blender stays responsive with
its progress shown, and the real Escape key cancels it at a step boundary."""

import pytest
from gui_blender import leftover_processes, run_reporting_script

COUNT = 1_000_000  # simulate_cancel.py's steps


@pytest.fixture(scope="module")
def cancelled(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "simulate_cancel.py")


@pytest.mark.gui
def test_a_long_simulate_runs_modal_and_blender_stays_responsive(cancelled):
    proc, report, folder = cancelled
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert report["invoke"] == ["RUNNING_MODAL"] and report["threads"] == ["MJBlend physics (Scene)"]
    # the script's own timer on Blender's main thread kept its beat while MuJoCo stepped,
    # the viewport redrawn with the progress: under Xvfb Blender draws with software
    # OpenGL, so a frame's own cost here is the measure
    frame = report["frame_seconds"]
    here = f"(Blender draws a frame in {frame:.2f} s here)"
    # (generous: the box is shared; run synchronously, these steps would freeze it ~20 s)
    assert report["ticks"] >= 3, f"{report['ticks']} ticks in 2 s {here}"
    assert report["tick_gap_max"] < max(1.5, 3 * frame), \
        f"the main thread stalled {report['tick_gap_max']:.2f} s {here}"
    done, count = report["progress_before_esc"]
    assert count == COUNT and 0 < done < COUNT  # it was part way through
    assert report["statuses"] >= 5  # the status bar's progress, updated as it went
    assert report["status_growing"] == sorted(report["status_growing"])


@pytest.mark.gui
def test_escape_cancels_it_at_a_step_boundary(cancelled):
    _proc, report, _folder = cancelled
    ends = report["after_esc"]  # [seconds after the key, event, result]
    escape = next((e for e in ends if e[1] == "ESC"), None)
    assert escape is not None and escape[2] == ["RUNNING_MODAL"], ends  # the key was the operator's
    finished = [e for e in ends if e[1] == "TIMER"]
    # it ended on its next look at the runner: the cancel took effect within a chunk of steps
    assert finished and finished[0][2] == ["CANCELLED"] and finished[0][0] - escape[0] < 1.0, ends
    done, count = report["progress_after"]
    assert done >= report["progress_before_esc"][0] and done < COUNT
    assert report["steps_after"] == done and not report["playing_after"]
    assert report["steps_later"] == done  # nothing stepped after the cancel
    assert report["time_after"] == pytest.approx(done * 0.002)
    assert report["box_error"] < 1e-5  # the objects show the state it stopped in


@pytest.mark.gui
def test_blender_works_after_the_cancel(cancelled):
    _proc, report, _folder = cancelled
    assert report["simulate_after"] == ["FINISHED"]
    assert report["steps_after_simulate"] == report["steps_after"] + 50
    assert report["threads_after_stop"] == [] and not report["live_after_stop"]


@pytest.mark.gui
def test_a_file_load_during_a_long_simulate_ends_it_cleanly(cancelled):
    _proc, report, _folder = cancelled
    assert report["running_before_load"]
    assert len(report["cancels"]) == 1  # Blender ended the modal operator (its cancel())
    assert report["threads_after_load"] == [] and report["live_after_load"] == 0
    assert report["steps_after_load"] is None  # (the simulation was dropped)

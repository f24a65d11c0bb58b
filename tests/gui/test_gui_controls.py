"""simulate's tools in Blender's real user interface (issue 34, part 2): control noise
moves the controls of a playing arm on the physics thread, the elbow's slider value set
while paused is the simulation's, Copy Pose puts simulate's `<key>` on the system
clipboard, Print Data fills its text block, and the Simulation, Joints and Controls
panels draw without an error (tests/gui/controls_view.py)."""

import os

import numpy as np
import pytest
from gui_blender import assert_real_screenshot, leftover_processes, read_report, run_gui_script

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.gui
def test_noise_joint_slider_copy_pose_and_print_data_in_the_window(tmp_path):
    result_file, picture = tmp_path / "result.json", tmp_path / "screenshot.png"
    proc = run_gui_script(os.path.join(HERE, "controls_view.py"), tmp_path,
                          env={"MJBLEND_RESULT": str(result_file), "MJBLEND_SCREENSHOT": str(picture)})
    report = read_report(proc, result_file)
    assert report["errors"] == [], report["errors"]
    assert leftover_processes(tmp_path) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert report["threaded"] and report["paused_time"] > 0.5
    ctrl = np.array(report["ctrl"])  # (the arm's controls were never set: only the noise moved them)
    assert (ctrl != 0).all() and (np.abs(ctrl) <= [2, 1]).all(), ctrl
    assert report["elbow"][0] == report["elbow"][1] == float(np.float32(0.4))
    assert report["copied"] == ["FINISHED"] and report["printed"] == ["FINISHED"]
    assert report["clipboard"] == report["key_text"]
    assert report["key_text"].startswith("<key\n  time=")
    assert "QPOS" in report["data_text"]
    assert {"MJBLEND_PT_simulation", "MJBLEND_PT_joints", "MJBLEND_PT_controls"} <= set(report["drawn"])
    assert_real_screenshot(picture)

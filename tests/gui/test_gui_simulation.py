"""The modal play operator in Blender's real user interface: a real window-manager
timer steps the simulation in real time, the sidebar panels draw, pause holds,
stop ends the modal operator and restores every object."""

import os

import numpy as np
import pytest
from addon_loader import ROOT
from gui_blender import (assert_real_screenshot, leftover_processes, read_report, run_background_script,
                         run_gui_script, user_folder)
from helpers import CORPUS

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(ROOT, "docs", "images")


def keep_for_docs(picture, name):
    """With MJBLEND_UPDATE_DOCS=1 the screenshot replaces the user guide's picture."""
    if os.environ.get("MJBLEND_UPDATE_DOCS") == "1":
        with open(picture, "rb") as src, open(os.path.join(DOCS, name), "wb") as dst:
            dst.write(src.read())


def run_gui_case(tmp_path, script):
    """Run tests/gui/`script` in the real user interface: (process, its report, screenshot path)."""
    result_file, picture = tmp_path / "result.json", tmp_path / "screenshot.png"
    proc = run_gui_script(os.path.join(HERE, script), tmp_path,
                          env={"MJBLEND_RESULT": str(result_file), "MJBLEND_SCREENSHOT": str(picture)})
    return proc, read_report(proc, result_file), picture


def check_clean_end(proc, tmp_path, picture, docs_name):
    """Nothing left running, no traceback, a real screenshot (kept for the docs on request)."""
    assert leftover_processes(tmp_path) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert_real_screenshot(picture)
    keep_for_docs(picture, docs_name)


@pytest.mark.gui
def test_play_runs_on_the_window_timer(tmp_path):
    proc, report, picture = run_gui_case(tmp_path, "play_modal.py")
    assert report["modal_running"]
    samples = np.array(report["samples"])  # wall seconds, simulated seconds, box height
    wall, sim, height = samples[-1]
    assert sim > 0.5 * wall, f"the timer stepped too little: {sim:.2f} s simulated in {wall:.2f} s"
    assert sim < 1.2 * wall + 0.1, "faster than real time at speed 1"
    assert np.all(np.diff(samples[:, 1]) >= 0)
    assert height < report["start_height"] - 0.2  # the box fell onto the table
    assert report["paused_at_once"] and report["snapshot_paused"]
    assert report["paused_advance"] == 0
    assert report["restored"] and not report["live_after_stop"] and not report["modal_after_stop"]
    assert {"MJBLEND_PT_simulation", "MJBLEND_PT_controls", "MJBLEND_PT_model",
            "MJBLEND_PT_keyframes"} <= set(report["drawn"]), report["drawn"]
    menus = {"MJBLEND_MT_add", "MJBLEND_MT_add_joint", "MJBLEND_MT_add_geom", "MJBLEND_MT_add_site",
             "MJBLEND_MT_add_light", "MJBLEND_MT_add_actuator", "MJBLEND_MT_add_sensor",
             "MJBLEND_MT_add_equality", "MJBLEND_MT_convert"}
    assert menus <= set(report["drawn"]), sorted(menus - set(report["drawn"]))
    check_clean_end(proc, tmp_path, picture, "simulation-sidebar.png")


@pytest.mark.gui
def test_ctrl_drag_pulls_bodies_with_the_real_mouse(tmp_path):
    proc, report, picture = run_gui_case(tmp_path, "perturb_drag.py")
    wall, sim = report["realtime_total"]
    assert abs(sim - wall) < 0.2 * wall, f"{sim:.2f} s simulated in {wall:.2f} s of wall time"
    # the box follows the cursor (-X) by a clear margin, then comes to rest
    assert report["grabbed_box"]
    assert report["box_during"] < report["box_start"][0] - 0.3, report
    assert report["released_box"]
    assert report["box_speed_after"] < 0.05
    # the pendulum swings toward the cursor (+X)
    assert report["grabbed_pendulum"]
    assert report["bob_during"] > report["bob_start"][0] + 0.1, report
    # Esc lets go in the middle of a drag
    assert report["grab_before_escape"] and not report["grab_after_escape"]
    assert report["button_still_down"]  # it was Esc that let go, not the button
    assert not report["force_after_escape"]
    # stopped: plain Blender, nothing simulated or grabbed
    assert not report["stopped_live"] and not report["stopped_box_moved"]
    assert report["double_click_selected"] == "pendulum"
    check_clean_end(proc, tmp_path, picture, "perturb-drag.png")


@pytest.mark.gui
def test_the_blender_executable_runs_mjblend_in_background(tmp_path):
    """Import, simulate and export in Debian's real Blender executable, no window, with
    the mujoco the extension zip brought (Blender's user folder), bit for bit MuJoCo's."""
    model = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
    if not os.path.exists(model):
        model = os.path.join(ROOT, "examples", "desk_toys.xml")
    result = tmp_path / "result.json"
    proc = run_background_script(os.path.join(HERE, "background_smoke.py"), tmp_path,
                                 args=(model, result))
    report = read_report(proc, result)
    assert report["import"] == report["simulate"] == report["export"] == ["FINISHED"]
    assert report["time"] == pytest.approx(0.5) and report["same_qpos"]
    assert report["mujoco"].startswith(os.path.join(user_folder(), "extensions")), report["mujoco"]
    assert report["sizes"][:3] == report["sizes"][3:]
    assert leftover_processes(tmp_path) == []

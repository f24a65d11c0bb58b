"""The modal play operator in Blender's real user interface: a real window-manager
timer steps the simulation in real time, the sidebar panels draw, pause holds,
stop ends the modal operator and restores every object."""

import json
import os

import numpy as np
import pytest
from gui_blender import run_gui_script

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(os.path.dirname(HERE), "docs", "images")


@pytest.mark.gui
def test_play_runs_on_the_window_timer(tmp_path):
    result_file, picture = tmp_path / "result.json", tmp_path / "simulation.png"
    proc = run_gui_script(os.path.join(HERE, "gui", "play_modal.py"), tmp_path,
                          env={"MJBLEND_RESULT": str(result_file), "MJBLEND_SCREENSHOT": str(picture)})
    assert result_file.exists(), \
        f"Blender ended without a result:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    report = json.loads(result_file.read_text())
    assert report["errors"] == []
    assert report["modal_running"]
    samples = np.array(report["samples"])  # wall seconds, simulated seconds, box height
    wall, sim, height = samples[-1]
    assert sim > 0.5 * wall, f"the timer stepped too little: {sim:.2f} s simulated in {wall:.2f} s"
    assert sim < 1.2 * wall + 0.1, "faster than real time at speed 1"
    assert np.all(np.diff(samples[:, 1]) >= 0)
    assert height < report["start_height"] - 0.2  # the box fell onto the table
    assert report["paused_advance"] == 0
    assert report["restored"] and not report["live_after_stop"] and not report["modal_after_stop"]
    assert {"MJBLEND_PT_simulation", "MJBLEND_PT_controls"} <= set(report["drawn"]), report["drawn"]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]

    import bpy  # a real screenshot, not a blank frame; kept for the user guide
    image = bpy.data.images.load(str(picture))
    pixels = np.array(image.pixels[:]).reshape(-1, image.channels)[:, :3]
    assert image.size[0] > 500 and pixels.std() > 0.05
    bpy.data.images.remove(image)
    os.makedirs(DOCS, exist_ok=True)
    with open(picture, "rb") as src, open(os.path.join(DOCS, "simulation-sidebar.png"), "wb") as dst:
        dst.write(src.read())

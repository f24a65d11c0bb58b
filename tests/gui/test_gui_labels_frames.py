"""Labels, frames, groups and the Visualization panel in Blender's real user interface
(issue 34, part 4; tests/gui/labels_frames_view.py): while a model plays, the labels
key cycles through every MuJoCo label kind and each draws, the frame switch through
every frame kind, the overlay popover and the sidebar's Controls and Visualization
panels draw without an error, flex and skin groups show their objects, a disabled
actuator group reaches the running model and greys its Controls row, and a `<visual>`
edit reaches the running model without a recompile."""

import numpy as np
import pytest
from gui_blender import assert_real_screenshot, leftover_processes, run_reporting_script

LABEL_KINDS = ["BODY", "JOINT", "GEOM", "SITE", "CAMERA", "LIGHT", "TENDON", "ACTUATOR", "CONSTRAINT", "FLEX",
               "SKIN", "SELECTION", "SELPNT", "CONTACTPOINT", "CONTACTFORCE", "ISLAND", "NONE"]
FRAME_KINDS = ["BODY", "GEOM", "SITE", "CAMERA", "LIGHT", "CONTACT", "WORLD", "NONE"]


@pytest.fixture(scope="module")
def viewed(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "labels_frames_view.py",
                                env=lambda folder: {"MJBLEND_SCREENSHOT": str(folder / "labels.png")})


@pytest.mark.gui
def test_every_label_and_frame_kind_while_playing(viewed):
    proc, report, folder = viewed
    assert report["errors"] == [], report["errors"]
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert [kind for kind, _count, _time in report["labels"]] == LABEL_KINDS
    times = [t for _kind, _count, t in report["labels"]]
    assert times == sorted(times) and times[-1] > times[0]  # playing all along
    counts = {kind: count for kind, count, _time in report["labels"]}
    # the model has every kind but sites, tendons and a selection (no active object)
    for kind in ("BODY", "JOINT", "GEOM", "CAMERA", "LIGHT", "ACTUATOR", "CONSTRAINT", "FLEX", "SKIN",
                 "CONTACTPOINT", "CONTACTFORCE", "ISLAND"):
        assert counts[kind] > 0, (kind, counts)
    drawn = {kind for kind, count, _path in report["label_draws"] if count}
    assert drawn >= {"BODY", "JOINT", "GEOM", "CAMERA", "ACTUATOR", "CONTACTPOINT"}, report["label_draws"]
    assert {path for _kind, _count, path in report["label_draws"]} == {"atlas"}
    assert [kind for kind, _names in report["frames"]] == FRAME_KINDS
    frames = dict(report["frames"])
    for kind in ("BODY", "GEOM", "CAMERA", "LIGHT", "CONTACT", "WORLD"):
        assert frames[kind] == [f"{kind.lower()} frame"], (kind, frames[kind])
    assert frames["SITE"] == [] and frames["NONE"] == []
    assert {"MJBLEND_PT_simulation", "MJBLEND_PT_controls", "MJBLEND_PT_visualization",
            "MJBLEND_PT_overlays"} <= set(report["drawn"])
    assert_real_screenshot(folder / "labels.png")


@pytest.mark.gui
def test_groups_actuator_enable_and_visual_edits_while_playing(viewed):
    _proc, report, _folder = viewed
    assert report["imported"] == {"flex": [True, True], "skin": [True, True]}  # groups 3 and 4
    assert report["toggled"] == {"flex": [False, False], "skin": [False, False]}
    assert report["disableactuator"] == 2
    force = np.array(report["actuator_force"])
    assert force[0] != 0 and force[1] == 0  # the elbow's group is disabled
    assert report["rows_after"] == {"shoulder": [True], "elbow": [False]}
    assert report["vis_force"] == pytest.approx(0.05) and report["same_model"]
    assert report["playing"]

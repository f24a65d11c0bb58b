"""The first look in Blender's real user interface (tests/gui/first_look.py): after an
import of MuJoCo's humanoid the 3D view shows no joint helper over a body, pixel for
pixel the view without any joint or frame object, as MuJoCo's default view draws no
joints; with the Joints overlay on they show, and a hidden joint made active is drawn."""

import numpy as np
import pytest
from gui_blender import assert_real_screenshot, leftover_processes, run_reporting_script
from helpers import load_tool, needs_corpus

render_docs = load_tool("render_docs")


@pytest.fixture(scope="module")
def looked(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "first_look.py",
                                env=lambda folder: {"MJBLEND_SHOTS": str(folder)})


def pixels(folder, name):
    return render_docs.load_pixels(str(folder / f"{name}.png"))[..., :3]


def differing(a, b):
    return int(np.any(a != b, axis=-1).sum())


@pytest.mark.gui
@needs_corpus
def test_no_joint_helper_is_drawn_until_asked(looked):
    proc, report, folder = looked
    assert "Traceback" not in proc.stderr and report["errors"] == [], proc.stderr[-3000:]
    assert report["joints"] > 15 and report["visible_helpers"] == []
    assert_real_screenshot(folder / "imported.png")
    bare = pixels(folder, "no_helpers")
    assert differing(pixels(folder, "imported"), bare) == 0  # A == C: nothing of a helper drawn
    assert differing(pixels(folder, "joints_off"), bare) == 0
    assert report["visible_with_joints_on"] == report["joints"]  # (all of groups 0-2)
    assert differing(pixels(folder, "joints_on"), bare) > 200  # B != C: the joints drawn
    assert leftover_processes(folder) == []


@pytest.mark.gui
@needs_corpus
def test_a_hidden_joint_made_active_is_drawn(looked):
    _proc, report, folder = looked
    assert report["knee_visible"] is False
    changed = differing(pixels(folder, "active"), pixels(folder, "no_helpers"))
    assert 5 < changed < 5000  # one joint's axis, not the others

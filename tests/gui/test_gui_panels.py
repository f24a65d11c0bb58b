"""Every MuJoCo panel draws, for every kind, in Blender's real user interface."""

import os

import pytest
from gui_blender import assert_real_screenshot, read_report, run_gui_script

from mjblend.components.schema import OBJECT_KINDS

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.gui
def test_every_panel_draws_for_every_kind(tmp_path):
    result_file, picture = tmp_path / "result.json", tmp_path / "object-panel.png"
    proc = run_gui_script(os.path.join(HERE, "draw_panels.py"), tmp_path,
                          env={"MJBLEND_RESULT": str(result_file),
                               "MJBLEND_SCREENSHOT": str(picture)})
    report = read_report(proc, result_file)
    drawn = {tuple(d) for d in report["drawn"]}
    expected = {("MJBLEND_PT_object", k.upper()) for k in OBJECT_KINDS}
    expected |= {("MJBLEND_PT_mesh", "MESH"), ("MJBLEND_PT_mesh", "HFIELD"),
                 ("MJBLEND_PT_material", "MATERIAL"), ("MJBLEND_PT_image", "TEXTURE")}
    assert expected - drawn == set(), f"never drawn: {sorted(expected - drawn)}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]

    assert_real_screenshot(picture)

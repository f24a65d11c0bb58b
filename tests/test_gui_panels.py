"""Every MuJoCo panel draws, for every kind, in Blender's real user interface."""

import json
import os

import numpy as np
import pytest
from gui_blender import run_gui_script

from mjblend.components.schema import OBJECT_KINDS

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.gui
def test_every_panel_draws_for_every_kind(tmp_path):
    result_file, picture = tmp_path / "result.json", tmp_path / "object-panel.png"
    proc = run_gui_script(os.path.join(HERE, "gui", "draw_panels.py"), tmp_path,
                          env={"MJBLEND_RESULT": str(result_file),
                               "MJBLEND_SCREENSHOT": str(picture)})
    assert result_file.exists(), \
        f"Blender ended without a result:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    report = json.loads(result_file.read_text())
    assert report["errors"] == []
    drawn = {tuple(d) for d in report["drawn"]}
    expected = {("MJBLEND_PT_object", k.upper()) for k in OBJECT_KINDS}
    expected |= {("MJBLEND_PT_mesh", "MESH"), ("MJBLEND_PT_mesh", "HFIELD"),
                 ("MJBLEND_PT_material", "MATERIAL"), ("MJBLEND_PT_image", "TEXTURE")}
    assert expected - drawn == set(), f"never drawn: {sorted(expected - drawn)}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]

    import bpy  # the picture is a real screenshot, not a blank frame
    image = bpy.data.images.load(str(picture))
    pixels = np.array(image.pixels[:]).reshape(-1, image.channels)[:, :3]
    assert image.size[0] > 500 and pixels.std() > 0.05
    bpy.data.images.remove(image)

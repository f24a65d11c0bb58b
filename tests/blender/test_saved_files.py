"""A .blend saved by an earlier MJBlend opens and exports the same file.

tests/blender/data/saved_before_layout.blend was saved by MJBlend as of commit
95f47f8 (before the stage layout): desk_toys imported, then edited (a geom
resized, a body moved, a body and a geom added with the Add operators); the
.xml next to it is what that MJBlend exported from it (both made by running
that tree's add-on in the bpy 4.2 module, the oldest supported release, so
every newer one opens the file: import, edit, save, export).
"""

import os

import bpy
import mujoco

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def test_a_blend_saved_before_the_layout_exports_the_same_file(tmp_path):
    bpy.ops.wm.open_mainfile(filepath=os.path.join(DATA, "saved_before_layout.blend"))
    out = tmp_path / "model.xml"
    assert bpy.ops.export_scene.mjcf(filepath=str(out)) == {"FINISHED"}
    expected = open(os.path.join(DATA, "saved_before_layout.xml"), encoding="utf-8").read()
    assert out.read_text(encoding="utf-8") == expected
    model = mujoco.MjModel.from_xml_path(str(out))
    # the edits made before saving are in it: the body and geom added, the resized box
    assert model.body("body1").parentid[0] == model.body("arm").id
    assert model.geom("geom1").bodyid[0] == model.body("body1").id
    assert list(model.geom_size[model.body("box").geomadr[0]]) == [0.061, 0.042, 0.033]

"""Export of models whose assets are files named relative to the model: the
six files of a cube or skybox texture, under the model's texturedir, referred
to where they are or copied next to the written MJCF (and into a zip)."""

import os
import shutil
import zipfile

import bpy
import mujoco
import numpy as np
import pytest

SIDES = ("right", "left", "up", "down", "front", "back")
CUBE_FILES = " ".join(f'file{side}="{side}.png"' for side in SIDES)
MODEL = f"""<mujoco><compiler texturedir="tex"/><asset>
  <texture name="sky" type="skybox" {CUBE_FILES}/>
  <texture name="cube" type="cube" {CUBE_FILES}/>
  <material name="boxy" texture="cube"/></asset>
  <worldbody><geom type="box" size=".1 .1 .1" material="boxy"/></worldbody></mujoco>"""


@pytest.fixture
def cube_model(tmp_path, clean_scene):
    """A model with a skybox and a cube texture, each from six PNG files."""
    source = tmp_path / "source"
    (source / "tex").mkdir(parents=True)
    for i, side in enumerate(SIDES):
        image = bpy.data.images.new(side, 4, 4)
        pixels = np.zeros((4, 4, 4), np.float32)
        pixels[..., i % 3], pixels[..., 3], pixels[0, 0, :3] = 1.0, 1.0, i / 10
        image.pixels.foreach_set(pixels.ravel())
        image.filepath_raw, image.file_format = str(source / "tex" / f"{side}.png"), "PNG"
        image.save()
        bpy.data.images.remove(image)
    path = source / "model.xml"
    path.write_text(MODEL, encoding="utf-8")
    assert bpy.ops.import_scene.mjcf(filepath=str(path)) == {"FINISHED"}
    return path


def _export(path, **options):
    path.parent.mkdir(parents=True, exist_ok=True)
    assert bpy.ops.export_scene.mjcf(filepath=str(path), **options) == {"FINISHED"}
    return path


def test_cube_texture_files_are_referred_to_where_they_are(cube_model, tmp_path):
    written = _export(tmp_path / "elsewhere" / "model.xml")
    assert os.listdir(written.parent) == ["model.xml"]
    assert 'fileright="../source/tex/right.png"' in written.read_text(encoding="utf-8")
    original = mujoco.MjModel.from_xml_path(str(cube_model))
    assert np.array_equal(mujoco.MjModel.from_xml_path(str(written)).tex_data, original.tex_data)


def test_cube_texture_files_are_copied(cube_model, tmp_path):
    original = mujoco.MjModel.from_xml_path(str(cube_model))
    written = _export(tmp_path / "copied" / "model.xml", copy_assets=True)
    assert sorted(os.listdir(written.parent / "tex")) == sorted(f"{side}.png" for side in SIDES)
    shutil.rmtree(cube_model.parent)  # the copy stands on its own
    assert np.array_equal(mujoco.MjModel.from_xml_path(str(written)).tex_data, original.tex_data)


def test_cube_texture_files_go_into_the_zip(cube_model, tmp_path):
    written = _export(tmp_path / "zipped" / "model.zip", file_format="ZIP")
    with zipfile.ZipFile(written) as archive:
        names = sorted(archive.namelist())
    assert names == sorted(["model.xml"] + [f"tex/{side}.png" for side in SIDES])

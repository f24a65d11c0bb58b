"""Imported models render: one model of each kind, framed and rendered with Workbench.

The framing is tools/render_docs.py's (which makes the documentation's
pictures of the same models with a better engine). Floors are hidden and the
film is transparent, so the pixels with alpha are the model itself (and the
height field, for the terrain).
"""

import os

import bpy
import numpy as np
import pytest

from helpers import CORPUS, load_tool

render_docs = load_tool("render_docs")

WIDTH, HEIGHT = 160, 120
# Distinct colours (in steps of 1/15) the model's pixels must have: shading and
# materials give several; the flag is one flat grey flex at qpos0, so one colour.
MIN_COLOURS = {"cloth": 1}


def model_params():
    if not os.path.exists(os.path.join(CORPUS, "models.tsv")):
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"no corpus at {CORPUS}"))]
    return [pytest.param(name, path, id=name, marks=pytest.mark.corpus)
            for name, (path, _) in render_docs.MODELS.items()]


@pytest.mark.parametrize("name, path", model_params())
def test_model_renders(clean_scene, tmp_path, name, path):
    from mjblend.importer import build

    scene = clean_scene
    result = build.import_file(os.path.join(CORPUS, path), scene)
    framing = render_docs.MODELS[name][1]
    keep_floor = "terrain_margin" in framing
    subject = render_docs.subject_objects(result.collection)
    assert subject, "nothing visible was imported"
    for floor in render_docs.floor_objects(result.collection):
        if not (keep_floor and floor.mujoco.geom.type == "HFIELD"):
            floor.hide_render = True

    render_docs.use_workbench(scene)
    render_docs.prepare_scene(scene, result.collection, WIDTH, HEIGHT, framing)
    assert scene.camera is not None
    assert any(o.type == "LIGHT" for o in scene.objects)
    scene.render.film_transparent = True
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGBA"
    scene.render.filepath = str(tmp_path / f"{name}.png")
    bpy.ops.render.render(write_still=True)

    pixels = render_docs.load_pixels(scene.render.filepath)
    assert pixels.shape == (HEIGHT, WIDTH, 4)
    covered = pixels[..., 3] > 0.5
    fraction = covered.mean()
    assert fraction > 0.02, f"the model covers only {fraction:.1%} of the picture"
    if not keep_floor:  # framed with a margin: the model is in the picture, not cut by it
        border = np.concatenate([covered[0], covered[-1], covered[:, 0], covered[:, -1]])
        assert border.mean() < 0.1, "the model runs off the picture"
        assert fraction < 0.9
    colours = np.unique(np.round(pixels[covered][:, :3] * 15).astype(int), axis=0)
    wanted = MIN_COLOURS.get(name, 6)
    assert len(colours) >= wanted, f"only {len(colours)} distinct colours: {colours.tolist()}"

"""Render imported corpus models for the documentation: docs/images/import-<name>.png.

    .venv/bin/python tools/render_docs.py [name ...] [--engine ENGINE] [--size WxH]

Imports each model of MODELS from the corpus (../shared/corpus, or
$MJBLEND_CORPUS) into an empty scene with MJBlend, frames it with a camera
from a 3/4 view and renders it: EEVEE when it works here and is quick (the bpy
module renders headless through EGL, but without a GPU that is software
OpenGL and far too slow: see engine_works), else Cycles on the CPU with few
samples, else Workbench. The model's own skybox World is kept when it has
one, otherwise the background is a neutral grey; its floor is kept as
imported.

The framing and scene helpers (`subject_objects`, `world_bbox`,
`add_camera`, `prepare_scene`, ...) are shared with tests/blender/test_render.py,
which loads this file by path; importing it has no side effects beyond
importing bpy, numpy and mathutils.
"""

from __future__ import annotations

import math
import os
import sys
import time

import bpy
import numpy as np
from mathutils import Vector

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))
IMAGES = os.path.join(ROOT, "docs", "images")

# name -> (corpus path, framing options for add_camera)
# Azimuth is measured in the ground plane from +X towards +Y (MuJoCo models
# mostly face +X, so -40 looks at the front-right); elevation is above the
# horizon.
MODELS = {
    "arm": ("menagerie/franka_emika_panda/scene.xml", {"azimuth": -50, "elevation": 22}),
    "hand": ("menagerie/shadow_hand/scene_right.xml", {"azimuth": -60, "elevation": 30}),
    "humanoid": ("mujoco_model/model/humanoid/humanoid.xml", {"azimuth": -35, "elevation": 12}),
    "quadruped": ("pip/gymnasium/envs/mujoco/assets/ant.xml", {"azimuth": -50, "elevation": 35}),
    "cloth": ("mujoco_model/model/flex/flag.xml", {"azimuth": -60, "elevation": 30}),
    "terrain": ("menagerie/google_barkour_vb/scene_hfield_mjx.xml",
                {"azimuth": -40, "elevation": 25, "terrain_margin": 0.25}),
}

NEUTRAL_BACKGROUND = (0.18, 0.19, 0.21)


# ------------------------------------------------------------------ framing

def is_floor(obj) -> bool:
    """A ground plane or height field geom (drawn, but not what the picture is of)."""
    if obj.mujoco.kind != "GEOM":
        return False
    return obj.mujoco.geom.type in ("PLANE", "HFIELD")


def rendered(obj) -> bool:
    return obj.type == "MESH" and not obj.hide_render and obj.visible_get()


def subject_objects(collection) -> list:
    """The model's visible mesh objects, without floors: what the camera frames."""
    return [obj for obj in collection.all_objects if rendered(obj) and not is_floor(obj)]


def floor_objects(collection) -> list:
    return [obj for obj in collection.all_objects if rendered(obj) and is_floor(obj)]


def world_bbox(objects) -> tuple[np.ndarray, np.ndarray]:
    """(min corner, max corner) of the objects' evaluated bounding boxes, in world space."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    points = []
    for obj in objects:
        evaluated = obj.evaluated_get(depsgraph)
        matrix = evaluated.matrix_world
        points.extend(matrix @ Vector(corner) for corner in evaluated.bound_box)
    if not points:
        raise ValueError("nothing visible to frame")
    arr = np.array([tuple(p) for p in points], dtype=float)
    return arr.min(axis=0), arr.max(axis=0)


def clip_bbox(lo, hi, around_lo, around_hi, margin):
    """The part of box (lo, hi) within `margin` (relative to the other box's size) of it."""
    pad = margin * float(np.max(around_hi - around_lo))
    return np.maximum(lo, around_lo - pad), np.minimum(hi, around_hi + pad)


def add_camera(scene, lo, hi, azimuth=-45.0, elevation=25.0, fov=40.0, fill=0.9,
               name="MJBlend docs camera"):
    """A camera looking at box (lo, hi) from (azimuth, elevation), degrees, close enough that
    the box's eight corners fill `fill` of the frame; it becomes the scene camera."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    center = Vector(((lo + hi) / 2).tolist())
    az, el = math.radians(azimuth), math.radians(elevation)
    direction = Vector((math.cos(az) * math.cos(el), math.sin(az) * math.cos(el), math.sin(el)))
    rotation = (-direction).to_track_quat("-Z", "Y")

    data = bpy.data.cameras.new(name)
    data.sensor_fit = "AUTO"  # `angle` is the field of view across the longer side
    data.angle = math.radians(fov)
    width = scene.render.resolution_x * scene.render.pixel_aspect_x
    height = scene.render.resolution_y * scene.render.pixel_aspect_y
    half = math.tan(data.angle / 2)
    tan_x, tan_y = (half, half * height / width) if width >= height else (half * width / height, half)
    tan_x, tan_y = tan_x * fill, tan_y * fill

    inverse = rotation.to_matrix().transposed()
    distance = 0.0
    corners = np.array(np.meshgrid(*zip(lo, hi, strict=True))).T.reshape(-1, 3)
    for corner in corners:
        x, y, z = inverse @ (Vector(corner.tolist()) - center)  # camera axes; +z towards it
        distance = max(distance, z + abs(x) / tan_x, z + abs(y) / tan_y)
    size = float(np.linalg.norm(hi - lo)) or 1.0
    distance = max(distance, 0.5 * size)

    obj = bpy.data.objects.new(name, data)
    scene.collection.objects.link(obj)
    obj.rotation_mode = "QUATERNION"
    obj.rotation_quaternion = rotation
    obj.location = center + direction * distance
    data.clip_start = max(distance - size, distance * 0.01, 1e-4) * 0.5
    data.clip_end = distance + 100 * size
    scene.camera = obj
    return obj


def has_lights(scene) -> bool:
    return any(obj.type == "LIGHT" and not obj.hide_render for obj in scene.objects)


def add_sun(scene, strength=3.0, name="MJBlend docs sun"):
    light = bpy.data.lights.new(name, "SUN")
    light.energy = strength
    light.angle = math.radians(10)
    obj = bpy.data.objects.new(name, light)
    scene.collection.objects.link(obj)
    obj.rotation_euler = (math.radians(40), math.radians(15), math.radians(-30))
    return obj


def match_viewport_visibility(collection) -> int:
    """Hide from renders what the import hid in the viewport (geom groups 3-5, i.e. the
    collision meshes): the importer only hides them in the view layer. Returns how many."""
    hidden = [obj for obj in collection.all_objects if obj.hide_get() and not obj.hide_render]
    for obj in hidden:  # (not while iterating all_objects: hide_render resets that cache)
        obj.hide_render = True
    return len(hidden)


def prepare_scene(scene, collection, width, height, framing=None, sun=True):
    """Camera (and a sun if the scene has no light) for the model imported into
    `collection` (an ImportResult's); returns the camera."""
    framing = dict(framing or {})
    terrain_margin = framing.pop("terrain_margin", None)
    scene.render.resolution_x, scene.render.resolution_y = width, height
    scene.render.resolution_percentage = 100
    match_viewport_visibility(collection)
    lo, hi = world_bbox(subject_objects(collection))
    if terrain_margin is not None:  # show the ground around the model too
        floors = [o for o in floor_objects(collection) if o.mujoco.geom.type == "HFIELD"]
        if floors:
            flo, fhi = world_bbox(floors)
            flo, fhi = clip_bbox(flo, fhi, lo, hi, terrain_margin)
            lo, hi = np.minimum(lo, flo), np.maximum(hi, fhi)
    camera = add_camera(scene, lo, hi, **framing)
    if sun and not has_lights(scene):
        add_sun(scene)
    return camera


def use_workbench(scene):
    scene.render.engine = "BLENDER_WORKBENCH"
    shading = scene.display.shading
    shading.light = "STUDIO"
    shading.color_type = "MATERIAL"  # MuJoCo's colours (the materials' diffuse_color)
    scene.view_settings.view_transform = "Standard"


def neutral_world(scene):
    if scene.world is None:
        world = bpy.data.worlds.new("MJBlend docs background")
        if world.node_tree is None:  # Blender < 5: worlds made in Python have no nodes yet
            world.use_nodes = True
        background = world.node_tree.nodes.get("Background")
        background.inputs["Color"].default_value = (*NEUTRAL_BACKGROUND, 1.0)
        background.inputs["Strength"].default_value = 1.0
        world.color = NEUTRAL_BACKGROUND
        scene.world = world
    return scene.world


def load_pixels(path) -> np.ndarray:
    """A PNG as a (height, width, 4) float array, bottom row first (Blender's order)."""
    image = bpy.data.images.load(path, check_existing=False)
    try:
        width, height = image.size
        pixels = np.empty(width * height * 4, dtype=np.float32)
        image.pixels.foreach_get(pixels)
        return pixels.reshape(height, width, 4)
    finally:
        bpy.data.images.remove(image)


# ------------------------------------------------------------- docs pictures

ENGINES = ("BLENDER_EEVEE", "CYCLES", "BLENDER_WORKBENCH")


def set_engine(scene, engine) -> None:
    if engine == "BLENDER_WORKBENCH":
        use_workbench(scene)
        return
    scene.render.engine = engine
    scene.view_settings.view_transform = "Standard"
    scene.view_settings.look = "None"
    if engine == "CYCLES":
        scene.cycles.device = "CPU"
        scene.cycles.samples = 32
        scene.cycles.use_denoising = True
    else:
        scene.eevee.taa_render_samples = 32


def engine_works(engine, budget=None) -> bool:
    """Render a lit cube with `engine` in a scratch scene: is the picture not black (and,
    with a `budget` in seconds, was it quick)? EEVEE does render headless in the bpy
    module, through EGL, but on a machine without a GPU that is Mesa's software
    OpenGL: then each model takes many minutes (the Panda at 64x40 with one sample:
    47 s), and the probe cube more than a second instead of a fraction of one."""
    scene = bpy.data.scenes.new("MJBlend engine probe")
    path = os.path.join(bpy.app.tempdir or "/tmp", f"mjblend-probe-{engine}.png")
    try:
        set_engine(scene, engine)
        if engine == "CYCLES":
            scene.cycles.samples = 1
            scene.cycles.use_denoising = False
        elif engine == "BLENDER_EEVEE":
            scene.eevee.taa_render_samples = 1
        scene.render.resolution_x = scene.render.resolution_y = 32
        mesh = bpy.data.meshes.new("probe")
        mesh.from_pydata([(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], [],
                         [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4),
                          (1, 5, 7, 3)])
        cube = bpy.data.objects.new("probe", mesh)
        scene.collection.objects.link(cube)
        add_camera(scene, (-1, -1, -1), (1, 1, 1))
        add_sun(scene)
        scene.render.filepath = path
        started = time.perf_counter()
        bpy.ops.render.render(write_still=True, scene=scene.name)
        seconds = time.perf_counter() - started
        if float(load_pixels(path)[..., :3].max()) <= 0.05:
            print(f"{engine} renders black here")
            return False
        if budget is not None and seconds > budget:
            print(f"{engine} is too slow here ({seconds:.1f} s for a 32x32 cube; "
                  "no GPU, software OpenGL?)")
            return False
        return True
    except Exception as error:  # noqa: BLE001  (any failure means: use the next engine)
        print(f"{engine} does not render here: {error}")
        return False
    finally:
        for obj in list(scene.objects):
            bpy.data.objects.remove(obj)
        bpy.data.scenes.remove(scene)
        if os.path.exists(path):
            os.remove(path)


def pick_engine() -> str:
    if engine_works("BLENDER_EEVEE", budget=1.5):
        return "BLENDER_EEVEE"
    if engine_works("CYCLES"):
        return "CYCLES"
    return "BLENDER_WORKBENCH"


def enable_addon():
    """Load the repository as the add-on, the way tests/conftest.py does."""
    import addon_utils
    import re
    import tempfile

    text = open(os.path.join(ROOT, "blender_manifest.toml"), encoding="utf-8").read()
    addon = re.search(r'^id\s*=\s*"([^"]+)"', text, re.M).group(1)
    link_dir = tempfile.mkdtemp(prefix="mjblend-addons-")
    os.symlink(ROOT, os.path.join(link_dir, addon))
    sys.path.insert(0, link_dir)
    errors = []
    module = addon_utils.enable(addon, default_set=True, handle_error=errors.append)
    if errors or module is None:
        raise SystemExit(f"enabling {addon} failed: {errors}")
    ADDON[:] = [addon]
    return addon


def importer():
    """The add-on's importer module (`mjblend.importer.build`), once enable_addon() ran."""
    import importlib

    return importlib.import_module(f"{ADDON[0]}.importer.build")


ADDON = []  # the add-on's module name, set by enable_addon()


def render_model(name, engine, width, height, folder=IMAGES):
    path, framing = MODELS[name]
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    started = time.perf_counter()
    result = importer().import_file(os.path.join(CORPUS, path), scene)
    imported = time.perf_counter()
    collection = result.collection
    set_engine(scene, engine)
    neutral_world(scene)
    prepare_scene(scene, collection, width, height, framing)
    scene.render.filepath = os.path.join(folder, f"import-{name}.png")
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGB"
    bpy.ops.render.render(write_still=True)
    done = time.perf_counter()
    return scene.render.filepath, imported - started, done - imported


def main(argv):
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"models to render: {', '.join(MODELS)} "
                        "(default: all)")
    parser.add_argument("--engine", choices=ENGINES, help="default: the first that works")
    parser.add_argument("--size", default="640x400", help="WIDTHxHEIGHT (default 640x400)")
    parser.add_argument("--out", default=IMAGES, help="folder (default docs/images)")
    args = parser.parse_args(argv)
    unknown = set(args.names) - set(MODELS)
    if unknown:
        parser.error(f"unknown model(s) {', '.join(sorted(unknown))}; choose from {', '.join(MODELS)}")
    width, height = (int(v) for v in args.size.lower().split("x"))
    if not os.path.exists(os.path.join(CORPUS, "models.tsv")):
        raise SystemExit(f"no corpus at {CORPUS} (set MJBLEND_CORPUS)")
    enable_addon()
    engine = args.engine or pick_engine()
    os.makedirs(args.out, exist_ok=True)
    print(f"engine: {engine}")
    for name in args.names or MODELS:
        out, t_import, t_render = render_model(name, engine, width, height, args.out)
        print(f"{name:10s} import {t_import:6.2f} s  render {t_render:6.2f} s  -> "
              f"{os.path.relpath(out)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

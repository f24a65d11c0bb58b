"""A camera dataset of a scene's bake (engine/dataset.py writes it): the bake's
recorded states, the compiled model, and the renderer, MuJoCo's (on a private copy
of the model) or Blender's (the scene posed at each baked frame, its materials and
lights randomized and put back exactly afterwards).
"""

from __future__ import annotations

import dataclasses
import os

import bpy
import numpy as np
from mathutils import Matrix

from ..engine import cameras, dataset
from ..sync import timeline
from . import blender_camera, scene_session


def job(scene, folder: str, settings: dataset.Settings, prefs=None) -> dataset.Job:
    """A dataset Job for `scene`'s bake (DatasetError / CameraError / SimulationError
    saying why not: nothing baked, the model changed since, an unknown camera, ...)."""
    settings.check(cameras_named=False)
    recording = timeline.recorded(scene)
    if recording is None:
        raise dataset.DatasetError(
            "Nothing is baked: bake the simulation first (Sidebar > MuJoCo > Timeline)"
        )
    running = scene_session.simulation(scene)
    live = scene_session.start_simulation(scene, prefs)
    model = live.model
    if running is None or settings.renderer == "blender":  # (Blender's renderer draws the timeline's poses)
        scene_session.end_simulation(live, restore=True)
    if timeline.fingerprint(model) != timeline.fingerprint_of(scene):
        raise dataset.DatasetError(
            "The model was changed since it was baked: its recording no longer matches it (bake again)"
        )
    names = settings.cameras or tuple(c.name for c in _all_cameras(model))
    settings = dataclasses.replace(settings, cameras=tuple(names))
    if settings.renderer == "mujoco":
        renderer = dataset.MujocoFrames(model, textures=settings.textures, load=load_image)
    else:
        renderer = BlenderFrames(scene, settings)
    extra = {"scene": scene.name, "blend": _blend_path(), "bake": {"source": scene.mujoco_bake.source}}
    try:
        return dataset.Job(folder, model, dataset.Frames.of_recording(recording), settings, renderer, extra)
    except BaseException:
        renderer.close()
        raise


def load_image(path: str) -> np.ndarray:
    """Any image file Blender reads, as (H, W, 4) uint8, row 0 at the top, its bytes
    as stored (no colour conversion: MuJoCo's textures hold sRGB bytes too)."""
    try:
        image = bpy.data.images.load(path, check_existing=False)
    except RuntimeError as error:
        raise dataset.DatasetError(f"Cannot read the texture {path}: {error}") from None
    try:
        image.colorspace_settings.is_data = True  # (the file's bytes, not linearized)
        width, height = image.size
        pixels = np.empty(width * height * 4, np.float32)
        image.pixels.foreach_get(pixels)
    finally:
        bpy.data.images.remove(image)
    rows = pixels.reshape(height, width, 4)[::-1]  # (Blender's row 0 is the bottom)
    return np.clip(np.round(rows * 255), 0, 255).astype(np.uint8)


def _all_cameras(model):
    found = cameras.cameras(model)
    if not found:
        raise dataset.DatasetError(
            "The scene has no MuJoCo camera: add one (Add > MuJoCo > Camera) to render a dataset"
        )
    return found


def _blend_path() -> str:
    return bpy.data.filepath


class BlenderFrames:
    """Frames from Blender's renderer (live/blender_camera.py): the scene at each
    frame; a randomization sets materials' colours and roughness and lights' strength
    and direction, and `close` puts every value back and the frame shown."""

    name = "blender"

    def __init__(self, scene, settings: dataset.Settings):
        self.module = blender_camera
        self.scene = scene
        self.settings = settings
        self.frame_was = scene.frame_current
        self._materials = {}  # name -> material
        for obj in scene.objects:
            for slot in getattr(obj, "material_slots", ()):
                if slot.material is not None:
                    self._materials[slot.material.name] = slot.material
        self._lights = {obj.name: obj for obj in scene.objects if obj.type == "LIGHT"}
        self._saved = {name: _material_values(m) for name, m in self._materials.items()}
        self._added = []  # (material, node) image nodes a drawn texture added
        self._images = {}  # file name -> bpy image loaded for the draws
        self._saved_lights = {name: _light_values(o) for name, o in self._lights.items()}
        self._draw = None
        self._frame = None

    def materials(self) -> list:
        return sorted(self._materials)

    def lights(self) -> list:
        return sorted(self._lights)

    def describe(self) -> dict:
        engine = self.settings.engine
        samples = self.settings.samples
        if samples is None and engine == "CYCLES":
            samples = self.module.CYCLES_SAMPLES
        elif samples is None and engine.startswith("BLENDER_EEVEE"):
            samples = self.module.EEVEE_SAMPLES
        return {"name": "blender", "engine": engine, "samples": samples, "blender": bpy.app.version_string}

    def apply(self, draw: dict | None) -> None:
        self._draw = draw
        self._put_back()
        self._frame = None  # (lights turn relative to their pose at the frame: posed again)

    def render(self, frame: int, state, cam, kinds, width, height):
        if self._frame != frame:
            self.scene.frame_set(frame)
            self._frame = frame
            if self._draw is not None:
                self._randomize(self._draw)
        return self.module.render(
            self.scene,
            cam,
            kinds=kinds,
            width=width,
            height=height,
            engine=self.settings.engine,
            samples=self.settings.samples,
        )

    def _randomize(self, draw: dict) -> None:
        for name, entry in draw["materials"].items():
            material = self._materials[name]
            if "rgb" in entry:
                material.diffuse_color[:3] = entry["rgb"]
                _principled_input(material, "Base Color", (*entry["rgb"], 1.0))
            if "roughness" in entry:
                material.roughness = entry["roughness"]
                _principled_input(material, "Roughness", entry["roughness"])
            if "texture" in entry:
                self._texture(material, entry["texture"])
        for name, entry in draw["lights"].items():
            obj = self._lights[name]
            obj.data.energy = self._saved_lights[name]["energy"] * entry["strength"]
            world = np.array(obj.matrix_world)
            world[:3, :3] = dataset.rotation(entry["axis"], entry["angle"]) @ world[:3, :3]
            obj.matrix_world = Matrix(world.tolist())
        self.scene.view_layers[0].update() if self.scene.view_layers else None

    def _texture(self, material, file_name: str) -> None:
        """The drawn image into the Principled BSDF's Base Color through a new Image
        Texture node (a material whose Base Color is linked already keeps its own)."""
        node = _principled(material)
        if node is None or node.inputs["Base Color"].is_linked:
            return
        if file_name not in self._images:
            path = os.path.join(self.settings.textures, file_name)
            try:
                self._images[file_name] = bpy.data.images.load(path, check_existing=False)
            except RuntimeError as error:
                raise dataset.DatasetError(f"Cannot read the texture {path}: {error}") from None
        image_node = material.node_tree.nodes.new("ShaderNodeTexImage")
        image_node.image = self._images[file_name]
        material.node_tree.links.new(image_node.outputs["Color"], node.inputs["Base Color"])
        self._added.append((material, image_node))

    def _put_back(self) -> None:
        for material, node in self._added:
            material.node_tree.nodes.remove(node)  # (its link goes with it)
        self._added = []
        for name, material in self._materials.items():
            _set_material_values(material, self._saved[name])
        for name, obj in self._lights.items():
            _set_light_values(obj, self._saved_lights[name])

    def close(self) -> None:
        self._put_back()
        for image in self._images.values():
            bpy.data.images.remove(image)
        self._images = {}
        self.scene.frame_set(self.frame_was)


def _principled(material):
    if material.node_tree is None:
        return None
    return next((n for n in material.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None)


def _principled_input(material, name: str, value) -> None:
    node = _principled(material)
    if node is not None and name in node.inputs and not node.inputs[name].is_linked:
        node.inputs[name].default_value = value


def _material_values(material) -> dict:
    node = _principled(material)
    inputs = {}
    if node is not None:
        for name in ("Base Color", "Roughness"):
            if name in node.inputs:
                value = node.inputs[name].default_value
                inputs[name] = tuple(value) if hasattr(value, "__len__") else value
    return {"diffuse_color": tuple(material.diffuse_color), "roughness": material.roughness, "inputs": inputs}


def _set_material_values(material, values: dict) -> None:
    material.diffuse_color = values["diffuse_color"]
    material.roughness = values["roughness"]
    node = _principled(material)
    for name, value in values["inputs"].items():
        node.inputs[name].default_value = value


_TRANSFORM = (
    "location",
    "rotation_mode",
    "rotation_euler",
    "rotation_quaternion",
    "rotation_axis_angle",
    "scale",
)


def _light_values(obj) -> dict:
    out = {"energy": obj.data.energy}
    for name in _TRANSFORM:
        value = getattr(obj, name)
        out[name] = value if isinstance(value, str) else tuple(value)
    return out


def _set_light_values(obj, values: dict) -> None:
    obj.data.energy = values["energy"]
    for name in _TRANSFORM:
        setattr(obj, name, values[name])

"""The camera preview's settings of a scene (saved in the .blend): on or off, which
MuJoCo camera, which renderer, which image, how large, where in the viewport.

The preview itself (a render thread, the image) is live/camera_preview.py; an edit
here reaches it through the connected `Reactions` (scene_settings.py)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, IntProperty, PointerProperty, StringProperty

from . import scene_settings

RENDERERS = (("MUJOCO", "MuJoCo", "mujoco.Renderer on a thread of its own, from the simulation's snapshots: "
                                  "pixel for pixel what a policy trained in MuJoCo sees"),
             ("BLENDER", "Blender", "Blender's Workbench through the scene's own objects, on the main thread "
                                    "at a capped rate"))
IMAGES = (("RGB", "RGB", "Colour, as the camera sees it"),
          ("DEPTH", "Depth", "Distance along the view axis, coloured near (yellow) to far (purple)"),
          ("SEGMENTATION", "Segmentation", "MuJoCo's object id per pixel, each id in a colour of its own"))
CORNERS = (("TOP_LEFT", "Top Left", ""), ("TOP_RIGHT", "Top Right", ""),
           ("BOTTOM_LEFT", "Bottom Left", ""), ("BOTTOM_RIGHT", "Bottom Right", ""))
_items: dict = {}  # camera names -> the enum's items (Blender keeps pointers to their strings)


def _changed(self, _context):
    scene_settings.reactions().camera_preview_changed(self)


def camera_names(scene) -> list[str]:
    """The MuJoCo cameras a preview can show: the running model's (live/camera_preview
    fills `scene_settings.reactions().camera_names`), else the scene's camera elements."""
    names = scene_settings.reactions().camera_names(scene)
    if names is None:
        names = sorted(o.mujoco.name or o.name for o in scene.objects
                       if getattr(o, "mujoco", None) is not None and o.mujoco.kind == "CAMERA")
    return names


def _camera_items(self, context):
    scene = self.id_data if isinstance(self.id_data, bpy.types.Scene) else context.scene
    names = camera_names(scene)
    if self.camera_name and self.camera_name not in names:
        names = [*names, self.camera_name]  # (kept: the panel says it is not in the model)
    key = tuple(names)
    if key not in _items:
        items = [(name, name, f"MuJoCo camera '{name}'", "CAMERA_DATA", i) for i, name in enumerate(names)]
        _items[key] = items or [("", "(no cameras)", "The scene has no MuJoCo camera", "ERROR", 0)]
    return _items[key]


def _camera_get(self):
    names = [item[0] for item in _camera_items(self, bpy.context)]
    return names.index(self.camera_name) if self.camera_name in names else 0


def _camera_set(self, value):
    items = _camera_items(self, bpy.context)
    self.camera_name = items[value][0] if 0 <= value < len(items) else ""


class MJBLEND_PG_camera_preview(bpy.types.PropertyGroup):
    enabled: BoolProperty(
        name="Preview", default=False, update=_changed,
        description="Show a MuJoCo camera's live image while the scene simulates (a corner of the 3D "
                    "viewport, and the image 'MuJoCo Preview' for the Image Editor)")
    camera: EnumProperty(name="Camera", items=_camera_items, get=_camera_get, set=_camera_set,
                         description="The MuJoCo camera to preview")
    camera_name: StringProperty(name="Camera Name", update=_changed,
                                description="The MuJoCo name of the camera previewed")
    renderer: EnumProperty(name="Renderer", items=RENDERERS, default="MUJOCO", update=_changed,
                           description="What renders the preview")
    image: EnumProperty(name="Image", items=IMAGES, default="RGB", update=_changed,
                        description="Which image of the camera to show")
    width: IntProperty(name="Width", default=320, min=16, max=4096, soft_max=1280, subtype="PIXEL",
                       update=_changed,
                       description="Image width in pixels (the height follows the camera's aspect ratio)")
    show_in_viewport: BoolProperty(name="In Viewport", default=True, update=_changed,
                                   description="Draw the image in a corner of the 3D viewport")
    corner: EnumProperty(name="Corner", items=CORNERS, default="TOP_LEFT", update=_changed,
                         description="The viewport corner the image goes in")
    max_fps: IntProperty(name="Max FPS", default=30, min=1, max=240, update=_changed,
                         description="The most frames per second the preview renders (it leaves the rest of "
                                     "the machine to the simulation)")


CLASSES = (MJBLEND_PG_camera_preview,)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.mujoco_camera_preview = PointerProperty(type=MJBLEND_PG_camera_preview)


def unregister():
    del bpy.types.Scene.mujoco_camera_preview
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

"""Draws the camera preview's image in a corner of the 3D viewport (a POST_PIXEL
handler: region pixels) with Blender's `gpu` module: the image live/camera_preview.py
uploaded, as a texture, and a line under it (camera, frame rate, depth range)."""

from __future__ import annotations

import blf
import bpy
import gpu
from gpu_extras.batch import batch_for_shader

from ...live import camera_preview
from ..drawing import builtin_shader, text_size
from ..plots.draw import insets

MARGIN, MAX_SHARE, TEXT_SIZE, LINE = 12, 0.4, 11, 16  # pixels at UI scale 1; the most of the region's width
TEXT = (0.9, 0.9, 0.9, 1.0)
BACKGROUND = (0.05, 0.05, 0.05, 0.8)
_handles: list = []


def placement(settings, size: tuple, region_size: tuple, scale: float = 1.0,
              covered: tuple = (0.0, 0.0)) -> tuple:
    """(x, y, width, height) of an image of `size` pixels in the settings' corner of a
    region (`covered`: what the toolbar and sidebar cover, left and right): its own
    size times the UI scale, at most MAX_SHARE of the region's width."""
    width, height = size
    tallest = region_size[1] - (2 * MARGIN + LINE) * scale
    shown = min(width * scale, region_size[0] * MAX_SHARE, tallest * width / height)
    shown = max(shown, 1.0)
    w, h = shown, shown * height / width
    margin = MARGIN * scale
    x = covered[0] + margin if settings.corner.endswith("LEFT") else region_size[0] - covered[1] - margin - w
    top = settings.corner.startswith("TOP")
    y = region_size[1] - margin - h if top else margin + LINE * scale
    return x, y, w, h


def caption(preview, settings) -> str:
    frame = preview.frame
    text = f"{frame.camera.name}  {frame.width}x{frame.height}  {preview.fps:.0f} fps"
    if settings.image == "DEPTH" and preview.depth_range is not None:
        text += f"  depth {preview.depth_range[0]:.2f}-{preview.depth_range[1]:.2f} m"
    return text


def draw() -> None:
    context = bpy.context
    scene, region, area = context.scene, context.region, context.area
    if scene is None or region is None or area is None:
        return
    settings = scene.mujoco_camera_preview
    if not (settings.enabled and settings.show_in_viewport):
        return
    preview = camera_preview.of(scene)
    image = preview.image() if preview is not None and preview.frame is not None else None
    if image is None:
        return
    scale = context.preferences.system.ui_scale
    x, y, w, h = placement(settings, tuple(image.size), (region.width, region.height), scale,
                           insets(area, region))
    shader = builtin_shader("IMAGE", "2D_IMAGE")
    flat = builtin_shader("UNIFORM_COLOR", "2D_UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    text_size(TEXT_SIZE * scale)
    text = caption(preview, settings)
    line = LINE * scale
    text_width = blf.dimensions(0, text)[0]
    right = x + max(w, text_width + 8 * scale)
    box = [(x, y - line), (right, y - line), (right, y), (x, y)]
    flat.bind()
    flat.uniform_float("color", BACKGROUND)
    batch_for_shader(flat, "TRI_FAN", {"pos": box}).draw(flat)
    corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
    uv = [(0, 0), (1, 0), (1, 1), (0, 1)]
    batch = batch_for_shader(shader, "TRI_FAN", {"pos": corners, "texCoord": uv})
    shader.bind()
    shader.uniform_sampler("image", gpu.texture.from_image(image))
    batch.draw(shader)
    blf.color(0, *TEXT)
    blf.position(0, x + 4 * scale, y - line + 4 * scale, 0)
    blf.draw(0, text)
    gpu.state.blend_set("NONE")


def register():
    _handles.append(bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_PIXEL"))


def unregister():
    while _handles:
        bpy.types.SpaceView3D.draw_handler_remove(_handles.pop(), "WINDOW")

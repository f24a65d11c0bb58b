"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

Enables MJBlend, makes one element of every kind (filled with MuJoCo's
defaults through spec_io), shows each in the editor that draws it, forces
real redraws, and writes to MJBLEND_RESULT which panel draws ran for which
kind and every exception a draw raised (gui_script.record_draws).

Usage (tests/gui/test_gui_panels.py does this):
    xvfb-run blender start.blend --python-use-system-env --python draw_panels.py
"""

import importlib
import os
import sys

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import ADDON, SCREENSHOT, record_draws, report, run_steps, screenshot_area  # noqa: E402

report["steps"] = []


def instrument(panel_classes):
    """Record which panel drew for which kind (and what a draw raised)."""
    for cls in panel_classes:
        record_draws(cls, lambda context, name=cls.__name__: [name, _subject(context, name)])


def _subject(context, panel):
    if panel == "MJBLEND_PT_object":
        return context.object.mujoco.kind if context.object else ""
    if panel == "MJBLEND_PT_mesh":
        return context.mesh.mujoco.kind if getattr(context, "mesh", None) else ""
    if panel == "MJBLEND_PT_material":
        return context.material.mujoco.kind if getattr(context, "material", None) else ""
    image = getattr(context.space_data, "image", None)
    return image.mujoco.kind if image else ""


def build_scene():
    import mujoco

    spec_io = importlib.import_module(ADDON + ".components.spec_io")
    schema = importlib.import_module(ADDON + ".components.schema")
    spec = mujoco.MjSpec()
    tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
    sys.path.insert(0, tools)
    makers = importlib.import_module("gen_schema").ELEMENT_KINDS  # kind -> (struct, maker, docs)
    scene = bpy.context.scene
    root = bpy.data.objects.new("model", None)
    scene.collection.objects.link(root)
    root.mujoco.kind = "MODEL"
    for kind in schema.MODEL_SETTINGS:
        spec_io.settings_to_props(spec, getattr(root.mujoco.model, kind), kind)
    item = root.mujoco.model.defaults.add()
    item.name = "main"
    for kind in schema.DEFAULT_KINDS:
        spec_io.element_to_props(getattr(spec.default, kind), getattr(item, kind), kind)
    objects = {"MODEL": root}
    for kind in schema.OBJECT_KINDS:
        if kind == "model":
            continue
        element = makers[kind][1](spec)
        obj = bpy.data.objects.new(kind, None)
        scene.collection.objects.link(obj)
        obj.parent = root
        obj.mujoco.kind = kind.upper()
        obj.mujoco.name = kind
        spec_io.element_to_props(element, getattr(obj.mujoco, kind), kind)
        if kind == "tendon":
            wrap = obj.mujoco.tendon.path.add()
            spec_io.element_to_props(element.wrap_site("s"), wrap, "wrap")
        objects[kind.upper()] = obj
    mesh = bpy.data.meshes.new("mesh")
    mesh.mujoco.kind = "MESH"
    spec_io.element_to_props(spec.add_mesh(), mesh.mujoco.mesh, "mesh")
    hfield = bpy.data.meshes.new("hfield")
    hfield.mujoco.kind = "HFIELD"
    spec_io.element_to_props(spec.add_hfield(), hfield.mujoco.hfield, "hfield")
    material = bpy.data.materials.new("material")
    material.mujoco.kind = "MATERIAL"
    spec_io.element_to_props(spec.add_material(), material.mujoco.material, "material")
    image = bpy.data.images.new("texture", 4, 4)
    image.mujoco.kind = "TEXTURE"
    spec_io.element_to_props(spec.add_texture(), image.mujoco.texture, "texture")
    for name, data in (("mesh_geom", mesh), ("hfield_geom", hfield)):
        obj = bpy.data.objects.new(name, data)
        scene.collection.objects.link(obj)
        obj.data.materials.append(material)
        objects[name] = obj
    return objects, image


def properties_area():
    window = bpy.context.window_manager.windows[0]
    area = max((a for a in window.screen.areas if a.type == "PROPERTIES"),
               key=lambda a: a.width * a.height)
    return window, area


def show_steps(objects, image, window, area):
    """Each step changes what the editor shows; Blender redraws between steps."""
    view_layer = bpy.context.view_layer

    def show(obj, ctx):
        def step():
            view_layer.objects.active = obj
            area.spaces.active.context = ctx
            report["steps"].append([obj.name, ctx])
        return step

    for obj in objects.values():
        for ctx in ["OBJECT"] + (["DATA", "MATERIAL"] if obj.type == "MESH" else []):
            yield show(obj, ctx)

    big = max(window.screen.areas, key=lambda a: a.width * a.height)  # the 3D view

    def image_editor():  # textures are drawn in the Image editor's sidebar
        big.type = "IMAGE_EDITOR"
    yield image_editor

    def show_image():
        big.spaces.active.image = image
        big.spaces.active.show_region_ui = True
        report["steps"].append([image.name, "IMAGE_EDITOR"])
    yield show_image

    def image_tab():  # (the sidebar opens on its Tool tab)
        sidebar = next(r for r in big.regions if r.type == "UI")
        sidebar.active_panel_category = "Image"
    yield image_tab
    yield lambda: None
    yield lambda: None

    def enlarge():  # a big Properties editor for the picture
        big.type = "PROPERTIES"
    yield enlarge

    def show_geom():  # the picture: a geom, its sections below its transform
        big.spaces.active.context = "OBJECT"
        view_layer.objects.active = objects["GEOM"]
    yield show_geom
    yield lambda: None

    def screenshot():
        if SCREENSHOT:
            screenshot_area(SCREENSHOT, big)
    yield screenshot


def steps():
    """Set up once, then one display step per timer call; Blender redraws between."""
    panels = importlib.import_module(ADDON + ".ui.panels")
    instrument([c for c in panels.CLASSES if issubclass(c, bpy.types.Panel)])
    objects, image = build_scene()
    window, area = properties_area()
    for step in show_steps(objects, image, window, area):
        step()
        for screen_area in window.screen.areas:
            screen_area.tag_redraw()
        yield 0.3


run_steps(steps)

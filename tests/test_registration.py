"""Enabling and disabling the add-on leaves Blender as it found it."""

import bpy
from conftest import ADDON, disable_addon, enable_addon

ID_TYPES = ("Object", "Mesh", "Material", "Image", "Scene")


def handler_counts():
    handlers = bpy.app.handlers
    return {name: len(getattr(handlers, name)) for name in dir(handlers)
            if isinstance(getattr(handlers, name), list)}


def footprint():
    """What the add-on adds to Blender: classes, ID properties, handlers."""
    classes = {name for name in dir(bpy.types) if name.startswith("MJBLEND_")}
    id_props = {t for t in ID_TYPES if hasattr(getattr(bpy.types, t), "mujoco")}
    return classes, id_props


def test_enable_disable_twice_leaves_nothing_behind():
    assert ADDON in bpy.context.preferences.addons
    enabled = footprint()
    assert enabled[0] and enabled[1] == {"Object", "Mesh", "Material", "Image"}
    with_addon = handler_counts()
    disable_addon()
    without = handler_counts()
    assert sum(with_addon.values()) > sum(without.values())  # it does register handlers
    enable_addon()
    for _ in range(2):
        disable_addon()
        assert footprint() == (set(), set())
        assert handler_counts() == without
        assert ADDON not in bpy.context.preferences.addons
        enable_addon()
        assert footprint() == enabled
        assert handler_counts() == with_addon


def test_properties_work_again_after_a_re_enable(clean_scene):
    disable_addon()
    enable_addon()
    obj = bpy.data.objects.new("geom", None)
    obj.mujoco.kind = "GEOM"
    obj.mujoco.geom.size = (0.1, 0.2, 0.3)
    assert tuple(round(v, 6) for v in obj.mujoco.geom.size) == (0.1, 0.2, 0.3)

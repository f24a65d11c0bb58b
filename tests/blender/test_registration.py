"""Enabling and disabling the add-on leaves Blender as it found it."""

import json
import subprocess
import sys
import textwrap

import bpy
import mujoco
from addon_loader import ADDON, LINK_DIR, disable_addon, enable_addon
from helpers import site_without_mujoco

from mjblend.operators import io
from mjblend.ui import menus

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


# Enabling MJBlend in a Blender whose Python has no mujoco:
# a fresh interpreter with bpy but no mujoco on its path, the add-on found
# through the same symlink as the suite's.
WITHOUT_MUJOCO = textwrap.dedent("""
    import json, sys
    sys.path[:0] = [sys.argv[1], sys.argv[2]]
    import bpy, addon_utils

    def footprint():
        handlers = bpy.app.handlers
        return {
            "classes": sorted(n for n in dir(bpy.types) if n.startswith(("MJBLEND_", "MUJOCO_"))),
            "id_props": sorted(t for t in ("Object", "Mesh", "Material", "Image", "Scene")
                               if hasattr(getattr(bpy.types, t), "mujoco")),
            "handlers": sum(len(getattr(handlers, n)) for n in dir(handlers)
                            if isinstance(getattr(handlers, n), list)),
            "operators": sorted(dir(bpy.ops.mujoco)),
        }

    before = footprint()
    errors = []
    module = addon_utils.enable(sys.argv[3], default_set=True, handle_error=errors.append)
    print(json.dumps({
        "module": module is not None,
        "enabled": sys.argv[3] in bpy.context.preferences.addons,
        "errors": [f"{type(e).__name__}: {e}" for e in errors],
        "before": before, "after": footprint(),
    }))
""")


def test_enabling_without_mujoco_says_what_to_install_and_registers_nothing(tmp_path):
    site = site_without_mujoco(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", WITHOUT_MUJOCO, site, LINK_DIR, ADDON],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not report["module"] and not report["enabled"]
    (error,) = report["errors"]
    assert error.startswith("MuJoCoMissing: MJBlend needs MuJoCo's Python bindings"), error
    assert f"-m pip install mujoco-core=={mujoco.__version__}" in error
    assert "Nothing was registered" in error
    assert report["after"] == report["before"]


def test_menus_name_the_operators_they_show():
    """ui/ names operators by id (it may not import operators/): the ids must be theirs."""
    assert menus.IMPORT_OPERATOR == io.IMPORT_SCENE_OT_mjcf.bl_idname
    assert menus.EXPORT_OPERATOR == io.EXPORT_SCENE_OT_mjcf.bl_idname

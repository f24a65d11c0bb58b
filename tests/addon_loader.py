"""Makes MJBlend importable as the package Blender would load, and enables it in bpy.

A symlink named after the manifest id points at the repository root; its
parent folder goes on sys.path. Importing this module does not import bpy:
the engine tier (tests/engine) uses the package without Blender, the Blender
tier (tests/blender) enables the add-on with `addon_utils.enable`.
"""

import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def addon_id() -> str:
    text = open(os.path.join(ROOT, "blender_manifest.toml"), encoding="utf-8").read()
    return re.search(r'^id\s*=\s*"([^"]+)"', text, re.M).group(1)


ADDON = addon_id()
LINK_DIR = tempfile.mkdtemp(prefix="mjblend-addons-")
os.symlink(ROOT, os.path.join(LINK_DIR, ADDON))
sys.path.insert(0, LINK_DIR)


def enable_addon():
    import addon_utils

    errors = []
    module = addon_utils.enable(ADDON, default_set=True, handle_error=errors.append)
    if errors or module is None:
        raise RuntimeError(f"enabling {ADDON} failed: {errors}")
    return module


def disable_addon():
    import addon_utils

    errors = []
    addon_utils.disable(ADDON, default_set=True, handle_error=errors.append)
    if errors:
        raise RuntimeError(f"disabling {ADDON} failed: {errors}")

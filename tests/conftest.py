"""The three tiers (docs/developing.md): tests/engine needs only mujoco and numpy,
tests/blender runs the real bpy module with the add-on enabled, tests/gui runs
Debian's Blender under Xvfb. This file only makes tests/ importable (helpers,
addon_loader) and says which Blender and MuJoCo the run uses."""

import atexit
import os
import shutil
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # helpers, addon_loader
# mujoco.Renderer's backend is picked when mujoco is first imported: EGL (a GPU, or
# Mesa's llvmpipe) unless the run names another (tests/engine/test_cameras.py)
os.environ.setdefault("MUJOCO_GL", "egl")
# the entries the tests' servers write for URLab's pool (bridge/registry.py) go in a folder
# of the run's own, never in the user's cache (a test naming its own folder passes it)
os.environ["URLAB_REGISTRY_DIR"] = tempfile.mkdtemp(prefix="mjblend-registry-")
atexit.register(shutil.rmtree, os.environ["URLAB_REGISTRY_DIR"], True)

import addon_loader  # noqa: E402,F401  (the package link, before any test imports mjblend)


def pytest_report_header(config):
    try:
        bpy = f"bpy module {version('bpy')}"
    except PackageNotFoundError:
        bpy = "no bpy"
    return f"{bpy}, mujoco-core {version('mujoco-core')}"

"""Loads MJBlend into the real `bpy` module, the way Blender loads an add-on.

A symlink named after the manifest id points at the repository root; its
parent folder goes on sys.path and `addon_utils.enable` does the rest. No
fake bpy anywhere: these tests run Blender itself (`make test` runs them once
per supported release: 4.2 LTS, 4.5 LTS, 5.0).
"""

import os
import re
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/helpers.py


def addon_id() -> str:
    text = open(os.path.join(ROOT, "blender_manifest.toml"), encoding="utf-8").read()
    return re.search(r'^id\s*=\s*"([^"]+)"', text, re.M).group(1)


ADDON = addon_id()
LINK_DIR = tempfile.mkdtemp(prefix="mjblend-addons-")
os.symlink(ROOT, os.path.join(LINK_DIR, ADDON))
sys.path.insert(0, LINK_DIR)

import bpy  # noqa: E402  (after sys.path is ready)
import addon_utils  # noqa: E402


def enable_addon():
    errors = []
    module = addon_utils.enable(ADDON, default_set=True, handle_error=errors.append)
    if errors or module is None:
        raise RuntimeError(f"enabling {ADDON} failed: {errors}")
    return module


def disable_addon():
    errors = []
    addon_utils.disable(ADDON, default_set=True, handle_error=errors.append)
    if errors:
        raise RuntimeError(f"disabling {ADDON} failed: {errors}")


# The bpy 4.2 module crashes the interpreter at exit after a pytest run (a static
# SpaceType destructor frees a registered Python class after Python has shut
# down: PyGILState_Ensure on a finalized interpreter, seen in gdb), exit status
# 139 after every test passed. On those releases the run ends with os._exit and
# pytest's own status once pytest is done. bpy 4.5 and 5.0 exit cleanly.
EXIT_CRASHES = bpy.app.version < (4, 5, 0)
_exit_status = None


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


def pytest_unconfigure(config):
    if EXIT_CRASHES and _exit_status is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status)


def pytest_report_header(config):
    import mujoco

    return f"Blender (bpy module) {bpy.app.version_string}, mujoco {mujoco.__version__}"


@pytest.fixture(scope="session", autouse=True)
def addon():
    """The add-on, enabled for the whole session."""
    module = enable_addon()
    yield module
    if ADDON in bpy.context.preferences.addons:
        disable_addon()


@pytest.fixture
def clean_scene():
    """An empty scene (read_homefile keeps add-ons enabled, read_factory_settings does not)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    yield bpy.context.scene

"""Tier 2: the real `bpy` module with MJBlend enabled the way Blender enables an
add-on. No fake bpy anywhere: these tests run Blender itself (`make test` runs
them once per supported release: 4.2 LTS, 4.5 LTS, 5.0)."""

import os
import sys

import bpy
import pytest
from addon_loader import ADDON, disable_addon, enable_addon

# The bpy 4.2 module crashes the interpreter at exit after a pytest run (a static
# SpaceType destructor frees a registered Python class after Python has shut
# down: PyGILState_Ensure on a finalized interpreter, seen in gdb), exit status
# 139 after every test passed. On those releases the run ends with os._exit and
# pytest's own status once pytest is done. The bpy 4.5 module can hang at exit instead:
# after some sequences of baking and frame changes (tests/blender/test_timeline.py), its
# exit handlers destroy a condition variable its `delayed_close_thread_run` thread still
# waits on (seen in gdb: __pthread_cond_destroy in GlobalState::~GlobalState), so it
# ends the same way. bpy 5.0 exits cleanly.
EXIT_CRASHES = bpy.app.version < (5, 0, 0)
_exit_status = None


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


def pytest_unconfigure(config):
    if EXIT_CRASHES and _exit_status is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status)


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

"""Tier 1 needs no Blender: every module of engine/ (and bridge/, batch/ once they
exist) imports in a Python where bpy cannot be imported at all. (`make test` also
runs this whole tier with bpy made unimportable: tools/run_tests.sh.)"""

import os
import subprocess
import sys

from addon_loader import ADDON, LINK_DIR, ROOT

BPY_FREE = ("engine", "bridge", "batch")

# bpy and its companions made unimportable (None in sys.modules), then every module imported.
PROBE = """
import importlib, sys
for name in ("bpy", "mathutils", "gpu", "bpy_extras", "addon_utils", "bmesh"):
    sys.modules[name] = None
sys.path.insert(0, sys.argv[1])
for module in sys.argv[2:]:
    importlib.import_module(module)
print("imported", len(sys.argv) - 2)
"""


def bpy_free_modules():
    for package in BPY_FREE:
        folder = os.path.join(ROOT, package)
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".py"):
                    yield f"{ADDON}.{package}" + ("" if name == "__init__.py" else f".{name[:-3]}")


def test_engine_modules_import_without_blender():
    modules = list(bpy_free_modules())
    assert f"{ADDON}.engine.session" in modules
    proc = subprocess.run([sys.executable, "-c", PROBE, LINK_DIR, *modules], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["imported", str(len(modules))]


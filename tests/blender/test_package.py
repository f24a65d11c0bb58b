# SPDX-License-Identifier: GPL-3.0-or-later
"""The linux-x64 extension zip builds, validates, installs into this environment's bpy
(4.2, 4.5 or 5.0: the suite runs once per release) with no mujoco on the path,
brings its own mujoco, and imports and simulates a model with it.

Slow-ish (a few seconds once the wheels are cached in ./wheels; the first run
downloads the mujoco-core wheels from PyPI).
"""

import importlib.util
import json
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import addon_loader
import pytest
from helpers import site_without_mujoco

ROOT = Path(addon_loader.ROOT)
SITE_PACKAGES = Path(importlib.util.find_spec("bpy").origin).parent.parent
BLENDER_EXT = next(SITE_PACKAGES.glob("bpy/*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))

pytestmark = pytest.mark.skipif(
    (platform.system(), platform.machine()) != ("Linux", "x86_64"),
    reason="installs the linux-x64 zip into this machine's bpy",
)

# Run in a fresh interpreter whose path holds bpy, numpy, ... but not the venv's mujoco.
# After the install it imports a model and simulates it with the bundled mujoco,
# and steps the same file with that mujoco for comparison.
INSTALL_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import bpy

    try:
        import mujoco
        sys.exit("mujoco importable before install: " + mujoco.__file__)
    except ImportError:
        pass
    result = bpy.ops.extensions.package_install_files(
        filepath=sys.argv[2], repo="user_default", enable_on_install=True)
    enabled = "bl_ext.user_default.mjblend" in bpy.context.preferences.addons
    import mujoco  # now from the wheel Blender unpacked for the extension
    import numpy as np
    import importlib
    live = importlib.import_module("bl_ext.user_default.mjblend.live.scene_session")

    bpy.ops.wm.read_homefile(use_empty=True)
    imported = bpy.ops.import_scene.mjcf(filepath=sys.argv[3])
    simulated = bpy.ops.mujoco.simulate(duration=0.5)
    ours = live.get(bpy.context.scene).session.data.qpos.copy()
    model = mujoco.MjModel.from_xml_path(sys.argv[3])
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=int(round(0.5 / model.opt.timestep)))
    bpy.ops.mujoco.stop()

    bpy.ops.preferences.addon_disable(module="bl_ext.user_default.mjblend")
    print(json.dumps({
        "blender": bpy.app.version_string,
        "result": sorted(result),
        "enabled": enabled,
        "disabled": "bl_ext.user_default.mjblend" not in bpy.context.preferences.addons,
        "imported": sorted(imported), "simulated": sorted(simulated),
        "objects": len(bpy.data.objects),
        "qpos_equal": bool(np.array_equal(ours, data.qpos)),
        "moved": float(np.abs(data.qpos - model.qpos0).max()),
        "mujoco_file": mujoco.__file__,
        "mujoco_version": mujoco.__version__,
        "extensions_dir": bpy.utils.user_resource("EXTENSIONS"),
    }))
""")


def bpy_version():
    """The bpy release of this environment, without importing bpy (which is slow)."""
    from importlib.metadata import version

    return version("bpy")


def run(cmd, **kwargs):
    start = time.monotonic()
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kwargs)
    print(f"{time.monotonic() - start:6.1f}s  {' '.join(str(c) for c in cmd[:3])} ...")
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_linux_zip_builds_installs_and_bundles_mujoco(tmp_path):
    dist = tmp_path / "dist"
    run([sys.executable, ROOT / "tools" / "build_extension.py",
         "--platform", "linux-x64", "--output-dir", dist])
    (zip_path,) = dist.glob("mjblend-*-linux_x64.zip")
    run([sys.executable, BLENDER_EXT, "validate", zip_path])

    # `python -I -S` ignores PYTHONPATH and the venv's site-packages; the script then
    # puts a folder of symlinks to every venv package except mujoco* on sys.path.
    site = site_without_mujoco(tmp_path)
    user = tmp_path / "blender-user"  # BLENDER_USER_RESOURCES keeps ~/.config/blender untouched
    env = {"PATH": "/usr/bin:/bin", "BLENDER_USER_RESOURCES": str(user)}
    model = ROOT / "examples" / "desk_toys.xml"
    proc = run([sys.executable, "-I", "-S", "-c", INSTALL_SCRIPT, site, zip_path, model], env=env)
    info = json.loads(proc.stdout.strip().splitlines()[-1])

    assert info["result"] == ["FINISHED"]
    assert info["enabled"] and info["disabled"]
    assert info["blender"].split()[0] == bpy_version()  # "4.5.15 LTS"
    # A model imports and simulates with the bundled mujoco, step for step as that mujoco.
    assert info["imported"] == info["simulated"] == ["FINISHED"]
    assert info["objects"] > 5 and info["moved"] > 0.01
    assert info["qpos_equal"]
    assert Path(info["extensions_dir"]) == user / "extensions"
    # Blender unpacks extension wheels into <user>/extensions/.local/lib/pythonX.Y/site-packages.
    wheel_site = user / "extensions" / ".local" / "lib" / "python3.11" / "site-packages"
    assert Path(info["mujoco_file"]).is_relative_to(wheel_site), info["mujoco_file"]
    version = next(line for line in (ROOT / "requirements-dev.txt").read_text().splitlines()
                   if line.startswith("mujoco-core=="))
    assert info["mujoco_version"] == version.split("==")[1]

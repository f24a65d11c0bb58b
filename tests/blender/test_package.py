# SPDX-License-Identifier: GPL-3.0-or-later
"""The linux-x64 extension zip builds, validates, installs into this environment's bpy
(4.2, 4.5 or 5.0: the suite runs once per release) with no mujoco, zmq or msgpack on
the path, brings its own (the wheels pinned in requirements-dev.txt), imports and
simulates a model with its mujoco, and answers a client's handshake through its
network bridge with its zmq and msgpack.

Slow-ish (a few seconds once the wheels are cached in ./wheels; the first run
downloads the wheels from PyPI).
"""

import importlib.util
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
import tomllib
import zipfile
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

# The packages the zip bundles: {distribution: import name}
BUNDLED = {"mujoco-core": "mujoco", "pyzmq": "zmq", "msgpack": "msgpack"}

# Run in a fresh interpreter whose path holds bpy, numpy, ... but not the venv's mujoco,
# zmq or msgpack. After the install it imports a model and simulates it with the bundled
# mujoco, and steps the same file with that mujoco for comparison; then it serves the
# model with the extension's bridge and sends it a `hello` (the bundled zmq, msgpack).
INSTALL_SCRIPT = textwrap.dedent("""
    import json, socket, sys
    sys.path.insert(0, sys.argv[1])
    import bpy

    for name in ("mujoco", "zmq", "msgpack"):
        try:
            module = __import__(name)
            sys.exit(name + " importable before install: " + module.__file__)
        except ImportError:
            pass
    result = bpy.ops.extensions.package_install_files(
        filepath=sys.argv[2], repo="user_default", enable_on_install=True)
    enabled = "bl_ext.user_default.mjblend" in bpy.context.preferences.addons
    import mujoco  # now from the wheel Blender unpacked for the extension
    import msgpack, zmq  # (likewise)
    import numpy as np
    import importlib
    live = importlib.import_module("bl_ext.user_default.mjblend.live.scene_session")
    bridge_host = importlib.import_module("bl_ext.user_default.mjblend.bridge.host")
    bridge_server = importlib.import_module("bl_ext.user_default.mjblend.bridge.server")

    bpy.ops.wm.read_homefile(use_empty=True)
    imported = bpy.ops.import_scene.mjcf(filepath=sys.argv[3])
    simulated = bpy.ops.mujoco.simulate(duration=0.5)
    ours = live.get(bpy.context.scene).session.data.qpos.copy()
    model = mujoco.MjModel.from_xml_path(sys.argv[3])
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=int(round(0.5 / model.opt.timestep)))
    bpy.ops.mujoco.stop()

    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    host = bridge_host.ModelHost.from_file(sys.argv[3])
    port = free_port()
    bridge = bridge_server.Bridge(host, request_port=port, state_port=free_port())
    bridge.start()
    context = zmq.Context()
    client = context.socket(zmq.REQ)
    client.setsockopt(zmq.LINGER, 0)
    client.setsockopt(zmq.RCVTIMEO, 10000)
    client.connect(f"tcp://127.0.0.1:{port}")
    client.send(msgpack.packb({"op": "hello"}, use_bin_type=True))
    hello = msgpack.unpackb(client.recv(), raw=False)
    client.close()
    context.term()
    bridge.stop()
    host.close()

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
        "zmq_file": zmq.__file__, "pyzmq_version": zmq.__version__,
        "msgpack_file": msgpack.__file__, "msgpack_version": ".".join(map(str, msgpack.version)),
        "hello": hello.get("op"), "hello_mujoco": hello.get("mujoco_version"),
        "extensions_dir": bpy.utils.user_resource("EXTENSIONS"),
    }))
""")


def bpy_version():
    """The bpy release of this environment, without importing bpy (which is slow)."""
    from importlib.metadata import version

    return version("bpy")


def pinned(package):
    """The version requirements-dev.txt pins `package` at."""
    line = next(line for line in (ROOT / "requirements-dev.txt").read_text().splitlines()
                if line.startswith(package + "=="))
    return line.split("==")[1].strip()


def site_without_bundled(tmp_path):
    """site_without_mujoco, less zmq and msgpack too: the child can only use the
    extension's own wheels of every bundled package."""
    site = site_without_mujoco(tmp_path)
    for entry in os.listdir(site):
        if entry.lower().startswith(("zmq", "pyzmq", "msgpack")):
            os.unlink(os.path.join(site, entry))
    return site


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
    # One linux wheel of each bundled package at its pinned version; the bridge's
    # permission declared.
    with zipfile.ZipFile(zip_path) as zf:
        wheels = sorted(n for n in zf.namelist() if n.endswith(".whl"))
        manifest = tomllib.loads(zf.read("blender_manifest.toml").decode())
    assert len(wheels) == len(BUNDLED), wheels
    for package in BUNDLED:
        prefix = f"wheels/{package.replace('-', '_')}-{pinned(package)}-cp311-"
        assert sum(w.startswith(prefix) for w in wheels) == 1, (package, wheels)
    assert all("linux" in w.rsplit("-", 1)[-1] for w in wheels), wheels
    assert set(manifest["permissions"]) == {"files", "network"}

    # `python -I -S` ignores PYTHONPATH and the venv's site-packages; the script then
    # puts a folder of symlinks to every venv package but mujoco*, zmq and msgpack on sys.path.
    site = site_without_bundled(tmp_path)
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
    for name in BUNDLED.values():
        assert Path(info[f"{name}_file"]).is_relative_to(wheel_site), info[f"{name}_file"]
    assert info["mujoco_version"] == pinned("mujoco-core")
    assert info["pyzmq_version"] == pinned("pyzmq")
    assert info["msgpack_version"] == pinned("msgpack")
    # The extension's bridge answers a client with the bundled zmq and msgpack.
    assert info["hello"] == "hello_ok" and info["hello_mujoco"] == info["mujoco_version"]

# SPDX-License-Identifier: GPL-3.0-or-later
"""The linux-x64 extension zip builds, validates, installs into this environment's bpy
(4.2, 4.5, 5.0 on Python 3.11; 5.1, 5.2 on Python 3.13 in the Debian root: the suite
runs once per release) with no mujoco, zmq, msgpack, PyOpenGL or glfw on
the path, brings its own (the wheels pinned in requirements-dev.txt), imports and
simulates a model with its mujoco, answers a client's handshake through its
network bridge with its zmq and msgpack, and renders a camera with mujoco.Renderer
over the OpenGL backend the add-on chose itself (MUJOCO_GL unset: EGL on Linux)
with its PyOpenGL.

Every zip carries those wheels for each Python a supported Blender runs (3.11, 3.13,
3.14): Blender's own installer code (bl_pkg of the release under test), asked as if it
ran each of those Pythons on each platform, accepts the zip and picks exactly one wheel
of each package.

Slow-ish (a few seconds once the wheels are cached in ./wheels; the first run
downloads the wheels from PyPI). The wheel-picking test needs neither.
"""

import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import sysconfig
import textwrap
import time
import tomllib
import zipfile
from pathlib import Path
from unittest import mock

import addon_loader
import pytest
from helpers import CORPUS, load_tool, site_without_mujoco

ROOT = Path(addon_loader.ROOT)
SITE_PACKAGES = Path(importlib.util.find_spec("bpy").origin).parent.parent
BLENDER_EXT = next(SITE_PACKAGES.glob("bpy/*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))

linux_x64_only = pytest.mark.skipif(
    (platform.system(), platform.machine()) != ("Linux", "x86_64"),
    reason="installs the linux-x64 zip into this machine's bpy",
)

# The packages the zip bundles: {distribution: import name}
BUNDLED = {"mujoco-core": "mujoco", "pyzmq": "zmq", "msgpack": "msgpack", "PyOpenGL": "OpenGL",
           "glfw": "glfw"}
# The one pure (py3-none-any) wheel among them: in every platform's zip.
PURE = ("PyOpenGL",)
# Every Python a supported Blender runs: official 4.2 - 5.0, official 5.1 - 5.2,
# distribution builds (Debian's 5.2.2).
PYTHONS = ("3.11", "3.13", "3.14")
# Blender platform -> what `sysconfig.get_platform()` says there (Blender's installer
# reads it to match wheels).
SYSCONFIG_PLATFORMS = {
    "linux-x64": "linux-x86_64", "linux-arm64": "linux-aarch64",
    "macos-x64": "macosx-11.0-x86_64", "macos-arm64": "macosx-11.0-arm64",
    "windows-x64": "win-amd64", "windows-arm64": "win-arm64",
}

# Run in a fresh interpreter whose path holds bpy, numpy, ... but not the venv's mujoco,
# zmq, msgpack, PyOpenGL or glfw, and whose environment has no MUJOCO_GL. After the install
# it imports a model and simulates it with the bundled mujoco, and steps the same file with
# that mujoco for comparison; then it serves the model with the extension's bridge and sends
# it a `hello` (the bundled zmq, msgpack); then it renders a camera through the extension's
# CameraRenderer and through mujoco.Renderer itself (the same calls in the same order), on
# the backend the add-on chose before mujoco's first import (the bundled PyOpenGL).
INSTALL_SCRIPT = textwrap.dedent("""
    import json, os, socket, sys
    sys.path.insert(0, sys.argv[1])
    import bpy

    gl_before = os.environ.get("MUJOCO_GL")
    for name in ("mujoco", "zmq", "msgpack", "OpenGL", "glfw"):
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
    import importlib, importlib.util
    live = importlib.import_module("bl_ext.user_default.mjblend.live.scene_session")
    bridge_host = importlib.import_module("bl_ext.user_default.mjblend.bridge.host")
    bridge_server = importlib.import_module("bl_ext.user_default.mjblend.bridge.server")

    bpy.ops.wm.read_homefile(use_empty=True)
    imported = bpy.ops.import_scene.mjcf(filepath=sys.argv[3])
    simulated = bpy.ops.mujoco.simulate(duration=0.5)
    ours = live.simulation(bpy.context.scene).session.data.qpos.copy()
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

    cameras = importlib.import_module("bl_ext.user_default.mjblend.engine.cameras")
    scene = mujoco.MjModel.from_xml_string(sys.argv[4])
    state = mujoco.MjData(scene)
    mujoco.mj_forward(scene, state)
    with cameras.CameraRenderer(scene) as camera_renderer:
        frame = camera_renderer.render(state, "eye", ("rgb", "depth", "segmentation"))
    reference = mujoco.Renderer(scene, frame.height, frame.width)
    reference.update_scene(state, "eye")
    rgb = reference.render()
    reference.enable_depth_rendering()
    depth = reference.render()
    reference.disable_depth_rendering()
    reference.enable_segmentation_rendering()
    segmentation = reference.render()
    reference.close()
    gl_context = sys.modules["mujoco.rendering.classic.gl_context"]
    import OpenGL
    glfw_file = importlib.util.find_spec("glfw").origin  # (found, not loaded: EGL draws)

    # What Blender unpacked (disabling the extension removes it again).
    import os
    wheel_site = os.path.dirname(os.path.dirname(mujoco.__file__))
    unpacked = sorted(os.listdir(wheel_site))
    extension_modules = sorted(f for _, _, files in os.walk(wheel_site) for f in files
                               if ".cpython-" in f and f.endswith(".so"))

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
        "gl_before": gl_before, "gl_after": os.environ.get("MUJOCO_GL"),
        "gl_context": gl_context.GLContext.__module__,
        "OpenGL_file": OpenGL.__file__, "pyopengl_version": OpenGL.__version__,
        "glfw_file": glfw_file, "glfw_loaded": "glfw" in sys.modules,
        "frame_shape": [frame.height, frame.width],
        "rgb_equal": bool(np.array_equal(frame.rgb, rgb)),
        "depth_equal": bool(np.array_equal(frame.depth, depth)),
        "segmentation_equal": bool(np.array_equal(frame.segmentation, segmentation)),
        "geoms_seen": sorted(set(int(i) for i in np.unique(frame.segmentation[..., 0])) - {-1}),
        "colours": len(np.unique(frame.rgb.reshape(-1, 3), axis=0)),
        "extensions_dir": bpy.utils.user_resource("EXTENSIONS"),
        "unpacked": unpacked, "extension_modules": extension_modules,
    }))
""")


# The camera the installed extension renders: a box on a plane, both in view.
CAMERA_SCENE = """<mujoco>
  <visual><global offwidth="64" offheight="48"/></visual>
  <worldbody>
    <light pos="0 0 3"/>
    <geom type="plane" size="2 2 0.1" rgba="0.3 0.5 0.7 1"/>
    <geom type="box" size="0.2 0.2 0.2" pos="0 0 0.2" rgba="0.9 0.4 0.1 1"/>
    <camera name="eye" pos="0 -1.5 1" xyaxes="1 0 0 0 0.6 0.8" resolution="64 48"/>
  </worldbody>
</mujoco>"""


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
    """site_without_mujoco, less zmq, msgpack, PyOpenGL (OpenGL) and glfw too: the child
    can only use the extension's own wheels of every bundled package."""
    site = site_without_mujoco(tmp_path)
    for entry in os.listdir(site):
        if entry.lower().startswith(("zmq", "pyzmq", "msgpack", "opengl", "pyopengl", "glfw")):
            os.unlink(os.path.join(site, entry))
    return site


def wheel_prefix(package):
    """The file-name start of `package`'s wheels at its pinned version (normalized as
    wheel names are: `PyOpenGL` -> `pyopengl-3.1.10-`)."""
    return f"{package.replace('-', '_').lower()}-{pinned(package)}-"


def installer_picks(wheels, platform_name, python):
    """The wheels of `wheels` that Blender's installer (bl_pkg of the release under test)
    unpacks on `platform_name` under Python `python` ("3.13"): its own filter, which reads
    both from the running interpreter, with those two swapped in."""
    ops = importlib.import_module("bl_pkg.bl_extension_ops")
    major, minor = map(int, python.split("."))
    with mock.patch.object(sys, "version_info", (major, minor, 0, "final", 0)), \
            mock.patch.object(sysconfig, "get_platform", lambda: SYSCONFIG_PLATFORMS[platform_name]):
        return ops._extensions_wheel_filter_for_this_system(list(wheels))


def install_check(wheels, platform_name, python):
    """Blender's verdict on installing an extension with these `wheels` on `platform_name`
    under Python `python`: None, or its error ("This Python version (3.13) isn't
    compatible with (3.11)"). Blender derives the Python versions from the wheels."""
    import bpy

    utils = importlib.import_module("bl_pkg.bl_extension_utils")
    versions = utils.python_versions_from_wheels(wheels)
    assert not isinstance(versions, str), versions
    major, minor = map(int, python.split("."))
    return utils.pkg_manifest_params_compatible_or_error(
        blender_version_min="4.2.0", blender_version_max="", platforms=[platform_name],
        python_versions=[".".join(map(str, v)) for v in versions], this_platform=platform_name,
        this_blender_version=tuple(bpy.app.version), this_python_version=(major, minor, 0),
        error_fn=print)


def assert_one_wheel_per_package_per_python(wheels, platform_name):
    """For each of PYTHONS, Blender installs the extension on `platform_name` and picks
    exactly one wheel of each BUNDLED package at its pinned version, and nothing else
    (no second wheel, e.g. a free-threaded cp314t one, which its filter would take for cp314)."""
    for python in PYTHONS:
        assert install_check(wheels, platform_name, python) is None, (platform_name, python)
        picked = [w.rsplit("/", 1)[-1] for w in installer_picks(wheels, platform_name, python)]
        for package in BUNDLED:
            ours = [w for w in picked if w.startswith(wheel_prefix(package))]
            assert len(ours) == 1, (platform_name, python, picked)
        assert len(picked) == len(BUNDLED), (platform_name, python, picked)
        # mujoco-core has no stable-ABI wheel: each Python gets its own build.
        (mujoco_wheel,) = (w for w in picked if w.startswith(wheel_prefix("mujoco-core")))
        assert mujoco_wheel.split("-")[2] == "cp" + python.replace(".", ""), mujoco_wheel


def test_installer_picks_one_wheel_of_each_package_per_python():
    """Each zip's wheels (what `blender_ext.py build --split-platforms` puts into it from
    the manifest, which `make build` keeps in step) install under Python 3.11, 3.13 and
    3.14, one wheel of each bundled package each. Needs no zip and no download."""
    blender_ext = importlib.import_module("bl_pkg.cli.blender_ext")
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    assert {"linux-x64", "linux-arm64", "macos-arm64", "windows-x64"} <= set(manifest["platforms"])
    for platform_name in manifest["platforms"]:
        wheels = blender_ext.paths_filter_wheels_by_platform(manifest["wheels"], platform_name)
        assert_one_wheel_per_package_per_python(wheels, platform_name)
    # The check has teeth: a zip of cp311 wheels only is refused on 3.13, as issue 29 saw.
    cp311_only = [w for w in manifest["wheels"] if "-cp311-" in w]
    assert "isn't compatible" in (install_check(cp311_only, "linux-x64", "3.13") or "")
    # tools/build_extension.py checks each zip with its own copy of this filter's rule
    # (it runs without bpy): the two agree, on these wheels and on the kinds it must refuse.
    build_extension = load_tool("build_extension")
    linux = blender_ext.paths_filter_wheels_by_platform(manifest["wheels"], "linux-x64") + [
        f"./wheels/x-1-{tags}-manylinux_2_28_x86_64.whl"
        for tags in ("cp314-cp314t", "cp313-cp313t", "cp38-abi3", "cp312-abi3", "cp315-abi3", "py3-none",
                     "cp312-cp312")]
    for python in PYTHONS:
        ours = [w for w in linux if build_extension.blender_picks(w.rsplit("/", 1)[-1], python)]
        assert ours == installer_picks(linux, "linux-x64", python), python


def run(cmd, **kwargs):
    start = time.monotonic()
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kwargs)
    print(f"{time.monotonic() - start:6.1f}s  {' '.join(str(c) for c in cmd[:3])} ...")
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


@linux_x64_only
def test_linux_zip_builds_installs_and_bundles_mujoco(tmp_path):
    dist = tmp_path / "dist"
    run([sys.executable, ROOT / "tools" / "build_extension.py",
         "--platform", "linux-x64", "--output-dir", dist])
    (zip_path,) = dist.glob("mjblend-*-linux_x64.zip")
    run([sys.executable, BLENDER_EXT, "validate", zip_path])
    # The linux wheels of each bundled package at its pinned version, for every Python:
    # Blender picks one of each under 3.11, 3.13 and 3.14; the bridge's permission declared.
    with zipfile.ZipFile(zip_path) as zf:
        wheels = sorted(n for n in zf.namelist() if n.endswith(".whl"))
        manifest = tomllib.loads(zf.read("blender_manifest.toml").decode())
    assert wheels == sorted(w.removeprefix("./") for w in manifest["build"]["generated"]["wheels"])
    # Linux wheels, and the pure ones (PyOpenGL's py3-none-any, in every platform's zip)
    assert all("linux" in w.rsplit("-", 1)[-1] for w in wheels if not w.endswith("-any.whl")), wheels
    assert sorted(w for w in wheels if w.endswith("-none-any.whl")) == sorted(
        f"wheels/{wheel_prefix(package)}py3-none-any.whl" for package in PURE), wheels
    for python in PYTHONS:  # (mujoco-core and msgpack: cp311, cp313, cp314; pyzmq: cp311, cp312-abi3)
        assert any(f"-cp{python.replace('.', '')}-" in w for w in wheels), (python, wheels)
    assert_one_wheel_per_package_per_python(wheels, "linux-x64")
    assert set(manifest["permissions"]) == {"files", "network"}

    # `python -I -S` ignores PYTHONPATH and the venv's site-packages; the script then
    # puts a folder of symlinks to every venv package but mujoco*, zmq and msgpack on sys.path.
    site = site_without_bundled(tmp_path)
    user = tmp_path / "blender-user"  # BLENDER_USER_RESOURCES keeps ~/.config/blender untouched
    env = {"PATH": "/usr/bin:/bin", "BLENDER_USER_RESOURCES": str(user)}
    # a third-party model (the corpus humanoid) where the corpus is, else the project's own
    model = Path(CORPUS) / "mujoco_model" / "model" / "humanoid" / "humanoid.xml"
    if not model.exists():
        model = ROOT / "examples" / "desk_toys.xml"
    # (MUJOCO_GL is not in `env`: the add-on's own choice is what renders)
    proc = run([sys.executable, "-I", "-S", "-c", INSTALL_SCRIPT, site, zip_path, model, CAMERA_SCENE],
               env=env)
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
    this_python = f"{sys.version_info.major}.{sys.version_info.minor}"  # (the install ran on it)
    wheel_site = user / "extensions" / ".local" / "lib" / f"python{this_python}" / "site-packages"
    for name in BUNDLED.values():
        assert Path(info[f"{name}_file"]).is_relative_to(wheel_site), info[f"{name}_file"]
    # It unpacked this Python's wheels only: one of each package, no other Python's builds.
    dist_infos = [d for d in info["unpacked"] if d.endswith(".dist-info")]
    for package in BUNDLED:
        assert sum(d.startswith(wheel_prefix(package).rstrip("-")) for d in dist_infos) == 1, dist_infos
    assert info["extension_modules"], info["unpacked"]
    # (this Python's own builds, or the stable ABI's: pyzmq's cp312-abi3 wheel on 3.13+)
    own = (f".cpython-{this_python.replace('.', '')}-", ".abi3.")
    assert all(any(tag in f for tag in own) for f in info["extension_modules"]), info["extension_modules"]
    assert info["mujoco_version"] == pinned("mujoco-core")
    assert info["pyzmq_version"] == pinned("pyzmq")
    assert info["msgpack_version"] == pinned("msgpack")
    # The extension's bridge answers a client with the bundled zmq and msgpack.
    assert info["hello"] == "hello_ok" and info["hello_mujoco"] == info["mujoco_version"]
    # The add-on chose EGL before mujoco's first import (nobody had set MUJOCO_GL), and
    # mujoco.Renderer draws with it and the bundled PyOpenGL: the extension's camera frame
    # is mujoco.Renderer's bit for bit, and shows the scene (its two geoms, shaded).
    assert info["gl_before"] is None
    assert info["gl_after"] == "egl" and info["gl_context"] == "mujoco.egl" and not info["glfw_loaded"]
    assert info["pyopengl_version"] == pinned("PyOpenGL")
    assert info["frame_shape"] == [48, 64]
    assert info["rgb_equal"] and info["depth_equal"] and info["segmentation_equal"]
    assert info["geoms_seen"] == [0, 1] and info["colours"] > 10

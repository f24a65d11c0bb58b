"""Runs a script inside Debian's Blender 5.2 LTS with its real user interface,
on a virtual X screen, with MJBlend installed from its extension zip by
Blender's own extension installer.

`make test` runs this tier inside the Debian sid root (tools/debian_root.sh:
Debian's blender, which runs the system's Python 3.14, with Xvfb and xdotool)
and builds the linux zip first (MJBLEND_GUI_ZIP). Blender installs the zip's
cp314 wheels (mujoco, pyzmq, msgpack) beside the extension: nothing else gives
that Python a mujoco. A missing piece is a test failure, never a skip.
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile

import numpy as np
from addon_loader import ADDON

BLENDER = os.environ.get("MJBLEND_GUI_BLENDER", "/usr/bin/blender")
ZIP = os.environ.get("MJBLEND_GUI_ZIP", "")
# The module Blender gives an extension installed into its "user_default" repository.
REPOSITORY = "user_default"
EXTENSION = f"bl_ext.{REPOSITORY}.{ADDON}"
SCREEN = "1600x1000x24"
_user_folder = []  # Blender's user folder with the extension installed, once per run


def check_prerequisites():
    missing = [tool for tool in (BLENDER, "xvfb-run", "xdotool") if not shutil.which(tool)]
    if not os.path.isfile(ZIP):
        missing.append(f"the linux extension zip in MJBLEND_GUI_ZIP ({ZIP or 'unset'})")
    assert not missing, (f"GUI test tier needs {missing}: run `make test` (tools/run_tests.sh "
                         "runs it in the Debian root with the zip it builds)")


def blender_command(*args, timeout=300) -> subprocess.CompletedProcess:
    """`blender ARGS` as a user of the installed extension runs it (no window)."""
    return _run([BLENDER, *map(str, args)], user_environment(), timeout)


def user_folder() -> str:
    """A Blender user folder (BLENDER_USER_RESOURCES: preferences, extensions) where
    Blender's own installer (`blender --command extension install-file --enable`)
    installed MJBlend from the zip; made on first use, shared by the run."""
    if not _user_folder:
        check_prerequisites()
        folder = tempfile.mkdtemp(prefix="mjblend-gui-user-")
        atexit.register(shutil.rmtree, folder, True)  # (the extension's unpacked wheels: ~100 MB)
        proc = _run([BLENDER, "--background", "--factory-startup", "--command", "extension", "install-file",
                     "--repo", REPOSITORY, "--enable", ZIP],
                    {**os.environ, "BLENDER_USER_RESOURCES": folder}, 300)
        assert proc.returncode == 0, f"installing {ZIP} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        _user_folder.append(folder)
    return _user_folder[0]


def user_environment(env=None):
    """The environment Blender runs in: the user folder with the extension installed."""
    environment = {**os.environ, "BLENDER_USER_RESOURCES": user_folder(), "MJBLEND_ADDON": EXTENSION,
                   **(env or {})}
    environment.pop("PYTHONPATH", None)  # nothing but what Blender installed
    return environment


def _run(command, env, timeout):
    """Run in a process group of its own; on a timeout the whole group (Blender,
    Xvfb) is killed, so nothing is left behind."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        stderr += f"\n[killed after {timeout} s]"
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def run_gui_script(script, tmp_path, env=None, timeout=180, screen=SCREEN):
    """Run `script` in Blender's UI (on a virtual screen of `screen`: WIDTHxHEIGHTxDEPTH);
    returns the CompletedProcess."""
    check_prerequisites()
    # A file given on the command line opens without the splash screen.
    start = tmp_path / "start.blend"
    subprocess.run([BLENDER, "-b", "--factory-startup", "--python-expr",
                    f"import bpy; bpy.ops.wm.save_as_mainfile(filepath={str(start)!r})"],
                   check=True, capture_output=True, timeout=timeout)
    return _run(["xvfb-run", "-a", "-s", f"-screen 0 {screen}", BLENDER, str(start),
                 "--python-use-system-env", "--python", script],
                user_environment(env), timeout)


def run_reporting_script(tmp_path_factory, script, env=None, **kwargs):
    """Run tests/gui/`script` once in Blender's UI, in a folder of its own, its report
    going to MJBLEND_RESULT there: (CompletedProcess, report, folder). `env(folder)`:
    more variables (files the script writes there)."""
    folder = tmp_path_factory.mktemp(os.path.basename(script).removesuffix(".py"))
    env = {"MJBLEND_RESULT": str(folder / "result.json"), **(env(folder) if env else {})}
    proc = run_gui_script(os.path.join(os.path.dirname(os.path.abspath(__file__)), script), folder,
                          env=env, **kwargs)
    return proc, read_report(proc, folder / "result.json"), folder


def run_background_script(script, tmp_path, args=(), env=None, timeout=180):
    """Run `script` in the Blender executable without a window (`--background`)."""
    check_prerequisites()
    return _run([BLENDER, "--background", "--factory-startup", "--python-use-system-env",
                 "--python", script, "--", *map(str, args)], user_environment(env), timeout)


def leftover_processes(tmp_path) -> list[str]:
    """Processes still running that were started for `tmp_path` (should be none)."""
    found = subprocess.run(["pgrep", "-af", str(tmp_path)], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if "pgrep" not in line]


def read_report(proc, result_file) -> dict:
    """The report a GUI script wrote; fails with Blender's output if there is none,
    or if the script or a draw raised."""
    assert result_file.exists(), \
        f"Blender ended without a result:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    report = json.loads(result_file.read_text())
    assert report["errors"] == [], report["errors"]
    return report


def screenshot_pixels(path) -> np.ndarray:
    """(height, width, 3) RGB of a screenshot, rows bottom up (as Blender's regions count y)."""
    import bpy

    image = bpy.data.images.load(str(path))
    try:
        width, height = image.size
        return np.array(image.pixels[:]).reshape(height, width, image.channels)[:, :, :3]
    finally:
        bpy.data.images.remove(image)


def assert_real_screenshot(picture) -> None:
    """A screenshot of Blender's window, not a blank frame."""
    import bpy

    image = bpy.data.images.load(str(picture))
    try:
        pixels = np.array(image.pixels[:]).reshape(-1, image.channels)[:, :3]
        assert image.size[0] > 500 and pixels.std() > 0.05
    finally:
        bpy.data.images.remove(image)

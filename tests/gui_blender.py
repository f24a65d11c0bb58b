"""Runs a script inside Debian's Blender (3.4) with its real user interface,
on a virtual X screen, with MJBlend loadable as a legacy add-on.

`make test` installs what this needs (tools/install_gui_deps.sh): Debian's
blender, xvfb and xdotool, and mujoco + numpy for Blender's own Python in
.venv/blender-site. A missing piece is a test failure, never a skip.
"""

import os
import shutil
import subprocess

from conftest import ADDON, ROOT

BLENDER = os.environ.get("MJBLEND_GUI_BLENDER", "/usr/bin/blender")
SITE = os.path.join(ROOT, ".venv", "blender-site")
SCREEN = "1600x1000x24"


def check_prerequisites():
    missing = [tool for tool in (BLENDER, "xvfb-run", "xdotool") if not shutil.which(tool)]
    if not os.path.isdir(os.path.join(SITE, "mujoco")):
        missing.append(f"mujoco for Blender's Python in {SITE}")
    assert not missing, (f"GUI test tier needs {missing}: run `make test` "
                         "(tools/install_gui_deps.sh installs them)")


def run_gui_script(script, tmp_path, env=None, timeout=180):
    """Run `script` in Blender's UI; returns the CompletedProcess."""
    check_prerequisites()
    addons = tmp_path / "addons"
    addons.mkdir()
    os.symlink(ROOT, addons / ADDON)
    # A file given on the command line opens without the splash screen.
    start = tmp_path / "start.blend"
    subprocess.run([BLENDER, "-b", "--factory-startup", "--python-expr",
                    f"import bpy; bpy.ops.wm.save_as_mainfile(filepath={str(start)!r})"],
                   check=True, capture_output=True, timeout=timeout)
    full_env = {**os.environ, "PYTHONPATH": f"{addons}{os.pathsep}{SITE}",
                "MJBLEND_ADDON": ADDON, **(env or {})}
    return subprocess.run(
        ["xvfb-run", "-a", "-s", f"-screen 0 {SCREEN}", BLENDER, str(start),
         "--python-use-system-env", "--python", script],
        env=full_env, capture_output=True, text=True, timeout=timeout)

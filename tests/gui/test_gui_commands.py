"""The add-on's `blender --command` entries in the real Blender executable
(Debian's 5.2 LTS), MJBlend installed from its zip and enabled in Blender's
preferences by Blender's own installer, as a user runs them on a server:
`mjblend_serve` answers URLab's protocol until a client asks it to stop, and
`mjblend_export_batch` writes a .blend's scene as the MJCF MuJoCo compiles."""

import os
import queue
import subprocess
import sys
import threading
import time

import mujoco
import numpy as np
import pytest
from gui_blender import BLENDER, blender_command, leftover_processes, run_background_script, user_environment
from helpers import CORPUS, free_port, port_is_free

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bridge"))
from wire_client import WireClient  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
READY = "MJBlend bridge serving"  # app/serve.py READY

pytestmark = [pytest.mark.gui, pytest.mark.corpus]


def same_model(a: mujoco.MjModel, b: mujoco.MjModel, names=True) -> list[str]:
    """The names of the model arrays that differ (bit for bit); `names=False`: but
    the element names (the bridge serves them with the entity's prefix)."""
    differ = []
    for name in dir(a):
        if not names and (name.startswith(("name", "_sizes")) or name.endswith("_names")):
            continue
        value = getattr(a, name, None)
        if isinstance(value, np.ndarray) and not np.array_equal(value, getattr(b, name), equal_nan=True):
            differ.append(name)
    return differ


def test_serve_answers_a_client_and_stops_when_asked(tmp_path):
    request_port, state_port = free_port(), free_port()
    process = subprocess.Popen(
        [BLENDER, "--background", "--command", "mjblend_serve", HUMANOID, "--port", str(request_port),
         "--state-port", str(state_port), "--paused"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=user_environment(),
        cwd=tmp_path, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout] + [lines.put(None)],
                     daemon=True).start()
    output = []
    try:
        deadline = time.monotonic() + 120
        while not (output and output[-1].startswith(READY)):
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert line is not None, "the server ended:\n" + "".join(output)
            output.append(line)
        client = WireClient(request_port)
        try:
            hello = client.hello()
            assert hello["op"] == "hello_ok", hello
            served = mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": hello["mjb"]})
            assert served.body("Humanoid_torso").id == 1  # (URLab's entity prefix)
            assert same_model(served, mujoco.MjModel.from_xml_path(HUMANOID), names=False) == []
            assert client.call("set_mode", mode="direct")["op"] == "set_mode_ok"
            stepped = client.call("step", n_steps=10)
            assert stepped["op"] == "step_ok", stepped
            assert client.call("shutdown")["op"] == "shutdown_ok"
        finally:
            client.close()
        status = process.wait(60)
        while (line := lines.get(timeout=10)) is not None:
            output.append(line)
        assert status == 0, "".join(output)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert port_is_free(request_port) and port_is_free(state_port)
    assert leftover_processes(tmp_path) == []


def test_export_batch_writes_what_mujoco_compiles_to_the_same_model(tmp_path):
    blend, out = tmp_path / "humanoid.blend", tmp_path / "out"
    proc = run_background_script(os.path.join(HERE, "save_blend.py"), tmp_path, args=(HUMANOID, blend))
    assert proc.returncode == 0 and blend.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    proc = blender_command("--background", "--command", "mjblend_export_batch", blend, out)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "MJBlend exported" in proc.stdout
    exported = mujoco.MjModel.from_xml_path(str(out / "humanoid.xml"))
    assert same_model(exported, mujoco.MjModel.from_xml_path(HUMANOID)) == []
    # a missing file is the command's own clear error, exit status 1
    missing = tmp_path / "missing.blend"
    proc = blender_command("--background", "--command", "mjblend_export_batch", missing, out, timeout=120)
    assert proc.returncode == 1 and "MJBlend: no file" in proc.stderr, proc.stderr[-2000:]

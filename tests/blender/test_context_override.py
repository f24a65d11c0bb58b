"""Why a script parks the physics thread (engine/runner.Runner.parked) around
operators it calls with a context override while a simulation plays.

Blender runs an operator called from Python with the GIL released
(bpy_operator.cc, BPY_RELEASE_GIL) and reads a context override's members from
that C code, taking the GIL only when `PyThreadState_GetDict()` is NULL
(BPY_context_member_get). Python 3.11 (Blender 4.2 LTS, 4.5 LTS, 5.0) answers
that from the process-wide current thread state, which is the GIL holder's: while
another Python thread runs, Blender reads the override's dictionary without the
GIL and corrupts Python's allocator (a segmentation fault or an abort within
seconds).
Python 3.12+ (Blender 5.1, 5.2) keeps the current thread state per thread.

Each case runs in its own interpreter: a crash is its exit status."""

import os
import signal
import subprocess
import sys

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# argv: tests folder, calls, "runner" (a playing simulation, parked around the
# calls) or "thread" (a plain Python thread allocating, nothing parked)
SCRIPT = """
import contextlib, os, sys, threading
sys.path.insert(0, sys.argv[1])
import addon_loader  # noqa: F401  (mjblend importable)
import bpy
import mujoco
from mjblend.engine import commands
from mjblend.engine.runner import Runner
from mjblend.engine.session import EngineSession

calls, case = int(sys.argv[2]), sys.argv[3]
bpy.ops.wm.read_homefile(use_empty=True)
objects = []
for i in range(10):
    obj = bpy.data.objects.new(f"probe {i}", None)
    bpy.context.scene.collection.objects.link(obj)
    objects.append(obj)


def busy(*_args):
    table = {}
    for k in range(3000):
        table[str(k)] = (k, [k])


stop = threading.Event()
if case == "runner":
    bodies = "".join(f'<body pos="{i} 0 1"><freejoint/><geom size=".1"/></body>' for i in range(10))
    model = mujoco.MjModel.from_xml_string(
        f'<mujoco><worldbody><geom type="plane" size="9 9 .1"/>{bodies}</worldbody></mujoco>')
    runner = Runner(EngineSession(model), threaded=True)
    runner.listen(busy)  # (Python work on the physics thread, as a recorder's or a stream's)
    runner.start()
    runner.send(commands.FastForward(True))
    runner.wait(runner.send(commands.Play()), timeout=10)
    guard = runner.parked()
else:
    def churn():
        while not stop.is_set():
            busy()
    threading.Thread(target=churn, daemon=True).start()
    guard = contextlib.nullcontext()
with guard:
    for i in range(calls):
        with bpy.context.temp_override(active_object=objects[i % 10], selected_objects=objects,
                                       selected_editable_objects=objects):
            bpy.ops.object.location_clear()
stop.set()
if case == "runner":
    runner.stop()
print("survived", flush=True)
os._exit(0)  # (the bpy 4.2 and 4.5 modules can crash or hang at exit: tests/blender/conftest.py)
"""


def run(case, calls):
    return subprocess.run([sys.executable, "-c", SCRIPT, TESTS, str(calls), case],
                          capture_output=True, text=True, timeout=600)


def test_operators_with_an_override_run_safely_beside_a_parked_simulation():
    proc = run("runner", 50000)
    assert proc.returncode == 0 and "survived" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12+ keeps the thread state per thread")
def test_without_parking_blender_crashes_beside_a_running_python_thread():
    """The reason Runner.parked exists, still so on this Blender: if this fails,
    Blender takes the GIL itself now and the guard can go (docs/developing.md)."""
    proc = run("thread", 200000)
    crashed = proc.returncode in (-signal.SIGSEGV, -signal.SIGABRT, -signal.SIGBUS)
    assert crashed, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])

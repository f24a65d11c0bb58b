"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

File > Import's MuJoCo load while Blender keeps drawing (issue 16): a model
MuJoCo would parse for hours (a replicate of 10^6) is imported as a drop on the
viewport does (INVOKE with files + directory); while MuJoCo reads it a 20 Hz
timer keeps firing; a real Esc key press
cancels: no object is added and MuJoCo's probe process is gone. Then a small
model imports through the same path.

Usage (tests/gui/test_gui_import.py does this):
    xvfb-run blender start.blend --python-use-system-env --python import_cancel.py
"""

import os
import subprocess
import sys
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import Ticks, import_invoke, report, run_steps, view3d  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DESK = os.path.join(HERE, "..", "..", "examples", "desk_toys.xml")
FOLDER = os.path.dirname(os.environ["MJBLEND_RESULT"])
MILLION = ('<mujoco><worldbody><replicate count="1000000" offset="1 0 0">'
           '<body><geom size=".1"/></body></replicate></worldbody></mujoco>')


def children():
    """Processes whose parent is this Blender (MJBlend's probe helper, forked at register)."""
    out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(os.getpid())],
                         capture_output=True, text=True)
    return [int(line.split()[0]) for line in out.stdout.splitlines() if line.split()[1:] != ["ps"]]


def cpu_below(pid):
    """CPU clock ticks used so far by every process below `pid`: MuJoCo's probe runs as a
    child of MJBlend's probe helper, itself Blender's child."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))  # ppid, utime+stime
    below, ticks, grew = {pid}, 0, True
    while grew:
        grew = False
        for child, (parent, used) in stats.items():
            if parent in below and child not in below:
                below.add(child)
                ticks += used
                grew = True
    return ticks




def steps():
    for obj in list(bpy.context.scene.objects):
        bpy.data.objects.remove(obj)
    million = os.path.join(FOLDER, "million.xml")
    with open(million, "w") as fh:
        fh.write(MILLION)
    report["children_before"] = children()
    objects_before = len(bpy.data.objects)
    ticks = Ticks()
    report["settled_in"] = yield from ticks.settled()  # (the load starts once Blender is idle)

    import_invoke(million)
    start = time.perf_counter()
    yield 0.5
    used = cpu_below(os.getpid())
    yield 0.5
    report["probe_cpu_ticks"] = cpu_below(os.getpid()) - used  # (MuJoCo parsing, off Blender)
    report["probe_running"] = report["probe_cpu_ticks"] >= 5
    while time.perf_counter() - start < 2.5:
        yield 0.1
    window, area, _region = view3d()
    during = [t for t in ticks if t > start + 0.5]
    report["ticks_while_loading"] = len(during)
    report["longest_gap"] = max(b - a for a, b in zip(during, during[1:], strict=False))

    # a real Esc with the mouse over the viewport
    subprocess.run(["xdotool", "mousemove", str(area.x + area.width // 2),
                    str(window.height - (area.y + area.height // 2)), "key", "Escape"], check=True)
    yield 1.0
    report["children_after_cancel"] = children()
    report["objects_added_by_cancelled"] = len(bpy.data.objects) - objects_before

    import_invoke(DESK)
    start = time.perf_counter()
    while time.perf_counter() - start < 30 and not any(o.mujoco.kind == "MODEL" for o in bpy.data.objects):
        yield 0.2
    report["desk_imported_in"] = time.perf_counter() - start
    report["desk_bodies"] = sorted(o.mujoco.name for o in bpy.data.objects if o.mujoco.kind == "BODY")
    yield 0.5
    report["children_at_end"] = children()
    ticks.stop()


run_steps(steps)

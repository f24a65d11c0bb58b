"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

File > Import's build of the objects in steps (issue 35): a generated model of
thousands of bodies is imported as a drop on the viewport does (INVOKE); once
MuJoCo has loaded it MJBlend builds its objects a tick at a time while Blender
keeps drawing, the progress shown; a real Esc key press during the build
cancels it: every datablock it had made is gone and the operator ends
CANCELLED (no undo step). Then a small model imports through the same path.

Usage (tests/gui/test_gui_build_cancel.py does this):
    xvfb-run blender start.blend --python-use-system-env --python build_cancel.py
"""

import importlib
import os
import subprocess
import sys
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import ADDON, Ticks, cheap_viewport, import_invoke, report, run_steps, view3d  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DESK = os.path.join(HERE, "..", "..", "examples", "desk_toys.xml")
FOLDER = os.path.dirname(os.environ["MJBLEND_RESULT"])
BODIES = 3000


def big_model(count):
    """`count` bodies in a chain of rows, each with a hinge, a box and a site."""
    bodies = "".join(f'<body name="b{i}" pos="{i % 60} {i // 60} 0"><joint type="hinge"/>'
                     f'<geom type="box" size=".1 .1 .1"/><site name="s{i}"/></body>' for i in range(count))
    return f"<mujoco><worldbody>{bodies}</worldbody></mujoco>"


def data_counts():
    return {p.identifier: len(getattr(bpy.data, p.identifier)) for p in bpy.data.bl_rna.properties
            if p.type == "COLLECTION"}


def instrument(events):
    """Record every progress the import shows (time, fraction), every status-bar text and
    every answer of its modal() other than a build tick's RUNNING_MODAL."""
    wait = importlib.import_module(ADDON + ".operators.io").IMPORT_SCENE_OT_mjcf_wait
    modal, progress, status = wait.modal, wait._show_progress, wait._show_status

    def recorded_modal(self, context, event):
        kind = event.type
        result = modal(self, context, event)
        if kind != "TIMER" or result != {"RUNNING_MODAL"}:
            events["modal"].append([time.perf_counter(), kind, sorted(result)])
        return result

    def recorded_progress(self, context, fraction):
        events["progress"].append([time.perf_counter(), fraction])
        progress(self, context, fraction)

    def recorded_status(self, context, text, every=0.0):
        before = self._status
        status(self, context, text, every)
        if self._status != before:
            events["status"].append(text)
    wait.modal, wait._show_progress, wait._show_status = recorded_modal, recorded_progress, recorded_status


def steps():
    for obj in list(bpy.context.scene.objects):
        bpy.data.objects.remove(obj)
    scene = bpy.context.scene
    big = os.path.join(FOLDER, "big.xml")
    with open(big, "w") as fh:
        fh.write(big_model(BODIES))
    _window, area, _region = view3d()
    cheap_viewport(area)
    events = {"modal": [], "progress": [], "status": []}
    instrument(events)
    ticks = Ticks()
    yield from ticks.settled()  # (the build starts once Blender is idle)
    before = data_counts()
    children_before = [c.name for c in scene.collection.children]
    scene_objects_before = len(scene.objects)

    import_invoke(big)
    start = time.perf_counter()
    while time.perf_counter() - start < 120 and not (
            len(events["progress"]) >= 3 and events["progress"][-1][1] >= 0.4):
        yield 0.05
    building_since = events["progress"][0][0] if events["progress"] else start
    report["progress_before_esc"] = [f for _t, f in events["progress"]]
    report["objects_made_before_esc"] = len(bpy.data.objects) - before["objects"]
    report["scene_objects_while_building"] = len(scene.objects) - scene_objects_before
    report["children_while_building"] = [c.name for c in scene.collection.children]
    during = [t for t in ticks if t > building_since]
    report["ticks_while_building"] = len(during)
    report["longest_gap"] = max((b - a for a, b in zip(during, during[1:], strict=False)), default=None)
    report["building_seconds"] = time.perf_counter() - building_since

    window, area, _region = view3d()
    subprocess.run(["xdotool", "mousemove", str(area.x + area.width // 2),
                    str(window.height - (area.y + area.height // 2)), "key", "Escape"], check=True)
    pressed = time.perf_counter()
    while time.perf_counter() - pressed < 10 and not any(e[0] > pressed and e[2] != ["RUNNING_MODAL"]
                                                         for e in events["modal"]):
        yield 0.05
    report["after_esc"] = [[t - pressed, kind, result] for t, kind, result in events["modal"] if t > pressed]
    yield 0.5
    after = data_counts()
    report["data_changed"] = {k: [before[k], after[k]] for k in before if before[k] != after[k]}
    report["children_after"] = [c.name for c in scene.collection.children]
    report["children_before"] = children_before
    report["scene_objects_after_cancel"] = len(scene.objects) - scene_objects_before
    report["statuses"] = list(events["status"])

    import_invoke(DESK)
    start = time.perf_counter()
    while time.perf_counter() - start < 30 and not any(o.mujoco.kind == "MODEL" for o in bpy.data.objects):
        yield 0.2
    report["desk_bodies"] = sorted(o.mujoco.name for o in scene.objects if o.mujoco.kind == "BODY")
    ticks.stop()


run_steps(steps)

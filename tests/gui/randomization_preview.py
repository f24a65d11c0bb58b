"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

The randomization preview: the humanoid with its torso's mass and the gravity
randomized (entries authored with `mujoco.randomization_add`), four
environments started with `mujoco.randomization_preview_start` INVOKE'd in the
3D view (the modal operator on a real window timer at the scene's frame rate).
It steps on its own; Play is refused meanwhile; Redraw starts them again;
Stop removes everything it made and shows the objects as authored. A
screenshot of the viewport (the sidebar's MuJoCo tab on the preview's section)
goes to MJBLEND_SCREENSHOT; what it saw to MJBLEND_RESULT.
"""

import importlib
import os
import sys
import time

import bpy
from mathutils import Quaternion

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import (ADDON, SCREENSHOT, open_sidebar_tab, report, run_steps,  # noqa: E402
                        screenshot_view, view3d)
from gui_script import reopen_sidebar  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(HERE, "..", "..", "..", "shared", "corpus"))
HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")


def scene_state():
    transforms = importlib.import_module(ADDON + ".scene.transforms")
    return {o.name: [transforms.transform(o), o.hide_viewport, o.hide_render, o.visible_get()]
            for o in bpy.context.scene.objects}


def data_counts():
    return {name: len(getattr(bpy.data, name))
            for name in ("objects", "meshes", "node_groups", "collections")}


def element(kind, name):
    return next(o for o in bpy.context.scene.objects if o.mujoco.kind == kind and o.mujoco.name == name)


def randomize(obj, attribute, low, high):
    """An entry added as the Properties editor's + button adds it."""
    bpy.context.view_layer.objects.active = obj
    bpy.ops.mujoco.randomization_add()
    item = obj.mujoco.randomize[obj.mujoco.randomize_active]
    item.attribute = attribute
    item.low, item.high = low, high


def show_panels(sidebar):
    """For the picture: the preview's section and Simulation open, the others closed
    on first draw."""
    reopen_sidebar(sidebar, {"MJBLEND_PT_randomization_preview", "MJBLEND_PT_simulation"}, record_all=True)

def steps():
    preview_module = importlib.import_module(ADDON + ".live.randomization_preview")
    sidebar = importlib.import_module(ADDON + ".ui.sidebar")
    show_panels(sidebar)
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    bpy.ops.import_scene.mjcf(filepath=HUMANOID)
    scene = bpy.context.scene
    randomize(element("BODY", "torso"), "mass", 0.3, 3.0)
    randomize(next(o for o in scene.objects if o.mujoco.kind == "MODEL"), "gravity", 0.2, 1.5)
    scene.mujoco_preview.count = 4
    window, area, region = view3d()
    space = area.spaces.active
    space.show_region_ui = True
    view = space.region_3d
    view.view_perspective = "PERSP"
    view.view_rotation = Quaternion((0.82, 0.42, 0.18, 0.35))  # from the front right, above
    view.view_location = (1.5, 1.25, 0.4)
    view.view_distance = 6.5
    space.overlay.show_overlays = False
    before, counts = scene_state(), data_counts()
    yield 0.5

    yield from open_sidebar_tab(window, area, "MJBLEND_PT_randomization_preview")

    # ------------------------------------------------------------------ start
    with bpy.context.temp_override(window=window, area=area, region=region):
        report["start"] = sorted(bpy.ops.mujoco.randomization_preview_start("INVOKE_DEFAULT"))
    preview = preview_module.get(scene)
    report["count"] = preview.count if preview else None
    report["instancer"] = preview.instancer.object.name if preview else None
    report["sources_hidden"] = all(not o.visible_get() and o.hide_render for o in preview.instancer.sources)
    report["draws"] = preview.pool.parameters.draws.tolist()
    ticks = report["ticks"] = []  # (wall s, steps) of each tick the operator's timer made
    tick = preview.tick

    def noted_tick(nstep=None):
        ticks.append([time.perf_counter(), nstep])
        return tick(nstep)
    preview.tick = noted_tick
    wall0 = time.perf_counter()
    samples = []  # wall s, preview time s, steps

    def shot_due():
        return SCREENSHOT and not os.path.exists(SCREENSHOT)
    # 3 s, and on until the screenshot is taken: a tick steps at most LONGEST_TICK,
    # and Blender's software OpenGL here draws this window in ~1 s (measured on 5.2)
    while time.perf_counter() - wall0 < 3.0 or (shot_due() and time.perf_counter() - wall0 < 20.0):
        samples.append([time.perf_counter() - wall0, preview.time, preview.steps])
        if shot_due() and preview.time >= 0.9:
            screenshot_view(SCREENSHOT)  # (mid-fall: each falls its own way)
        yield 0.1
    report["samples"] = samples
    report["timestep"] = preview.model.opt.timestep
    report["longest_tick"] = preview_module.LONGEST_TICK
    model = preview.model
    xpos, _xquat = preview.pool.body_poses(preview.state)
    report["torso_heights"] = xpos[:, model.body("torso").id, 2].tolist()

    # Play is refused while it runs
    try:
        bpy.ops.mujoco.play()
        report["play"] = "started"
    except RuntimeError as error:
        report["play"] = str(error)

    # Redraw: new values, the initial state
    old_draws = preview.pool.parameters.draws.copy()
    bpy.ops.mujoco.randomization_preview_reset()
    report["redrawn"] = bool((preview.pool.parameters.draws != old_draws).any())
    report["time_after_redraw"] = preview.time
    yield 0.6
    report["time_later"] = preview.time

    # ------------------------------------------------------------------ stop
    bpy.ops.mujoco.randomization_preview_stop()
    stopped_at = preview.steps
    yield 0.5  # the modal operator sees the stop on its next timer event
    report["steps_after_stop"] = preview.steps - stopped_at
    report["preview_after_stop"] = preview_module.get(scene) is not None
    report["restored"] = scene_state() == before
    report["counts_restored"] = data_counts() == counts


run_steps(steps)

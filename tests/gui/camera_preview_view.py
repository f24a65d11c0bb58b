"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

The camera preview: examples/desk_toys.xml played with `mujoco.play` INVOKE'd in the
3D view (the runner on its physics thread), the preview of camera 'overview' on
(160 px wide, top left), the sidebar's MuJoCo tab open on the Camera panel: 4 s
with MuJoCo's renderer (its render process), then a changed request (Max FPS) until
frames of 4 states, then Blender's renderer until frames of 4 states. The
preview's own timer uploads the frames (nothing here calls `update`); what it
showed, its frame rate, its render thread, the simulation's speed and where the
image is drawn go to MJBLEND_RESULT, a screenshot of the 3D view to
MJBLEND_SCREENSHOT; then the preview is switched off and the simulation stopped,
and what is left of its thread is reported.
"""

import importlib
import os
import sys
import threading
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import (ADDON, SCREENSHOT, look, open_sidebar_tab, overlay_view, physics_parked,  # noqa: E402
                        play_invoke, report, run_steps, screenshot_view, view3d)
from gui_script import reopen_sidebar  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DESK = os.path.join(HERE, "..", "..", "examples", "desk_toys.xml")


def show_camera_panel(sidebar, camera_panel):
    """The sidebar's Camera panel open, the tab's other panels closed on first draw."""
    reopen_sidebar(sidebar, {camera_panel.MJBLEND_PT_camera_preview.__name__})

def preview_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("MJBlend camera preview")]


def enough(start, frames) -> bool:
    """Watched long enough: 4 s (the rates are measured over 3) and frames of 4 different
    states, or 20 s (a busy machine renders slowly in software)."""
    elapsed = time.perf_counter() - start
    return elapsed >= 20.0 or (elapsed >= 4.0 and len({sim_time for _id, sim_time in frames}) >= 4)


def shown(scene, settings, area, region, camera_preview, preview_draw) -> dict:
    """What the preview shows now: status, frame rates, threads, the frame, the image and
    where it is drawn (screenshot pixels), the frame's RGB rows bottom up."""
    preview = camera_preview.of(scene)
    frame = preview.frame
    image = preview.image()
    out = {"status": list(camera_preview.status(scene)), "fps": [preview.fps, preview.shown_fps],
           "threads": preview_threads(), "area": [area.width, area.height],
           "frame": None if frame is None else [frame.width, frame.height, frame.sim_time],
           "image": None if image is None else list(image.size)}
    if image is not None:
        scale = bpy.context.preferences.system.ui_scale
        x, y, w, h = preview_draw.placement(settings, tuple(image.size), (region.width, region.height),
                                            scale, preview_draw.insets(area, region))
        offset = (region.x - area.x, region.y - area.y)
        out["rect"] = [x + offset[0], y + offset[1], w, h]
        out["rgb"] = frame.rgb[::-1].reshape(-1).tolist()
    return out


def steps():
    show_camera_panel(importlib.import_module(ADDON + ".ui.sidebar"),
                      importlib.import_module(ADDON + ".ui.camera_preview.panel"))
    build = importlib.import_module(ADDON + ".importer.build")
    camera_preview = importlib.import_module(ADDON + ".live.camera_preview")
    preview_draw = importlib.import_module(ADDON + ".ui.camera_preview.draw")
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    scene = bpy.context.scene
    build.import_file(DESK, scene)
    window, area, region = view3d()
    overlay_view(area)
    look(area, (0.0, 0.0, 0.3), (1.1, 0.0, 0.8), 2.5)
    settings = scene.mujoco_camera_preview
    settings.camera = "overview"
    settings.width, settings.corner = 160, "TOP_LEFT"
    settings.enabled = True
    area.spaces.active.show_region_ui = True
    yield 0.5
    yield from open_sidebar_tab(window, area, "MJBLEND_PT_camera_preview")

    running = play_invoke()
    start, start_time = time.perf_counter(), running.latest.time
    while time.perf_counter() - start < 4.0:  # MuJoCo's renderer, from the render process
        yield 0.25
    with physics_parked(running):
        preview = camera_preview.of(scene)
        report["speed"] = (running.latest.time - start_time) / (time.perf_counter() - start)
        report["mujoco_status"] = list(camera_preview.status(scene))
        frame = preview.frame
        report["mujoco_frame"] = None if frame is None else [frame.width, frame.height, frame.sim_time]
        report["mujoco_fps"] = preview.fps
        report["mujoco_threads"] = preview_threads()

    settings.max_fps = 20  # a changed request: the worker renders on at the new rate
    start, start_time = time.perf_counter(), running.latest.time
    report["changed_frames"] = []
    while not enough(start, report["changed_frames"]):
        preview = camera_preview.of(scene)
        if preview is not None and preview.frame is not None:
            report["changed_frames"].append([preview.frame.frame_id, preview.frame.sim_time])
        yield 0.25
    with physics_parked(running):
        report["changed_speed"] = (running.latest.time - start_time) / (time.perf_counter() - start)
        report["changed"] = shown(scene, settings, area, region, camera_preview, preview_draw)
    if SCREENSHOT:
        screenshot_view(SCREENSHOT.replace(".png", "_mujoco.png"))
    yield 0.3

    settings.renderer = "BLENDER"  # Blender's renderer (Workbench), on the main thread
    start = time.perf_counter()
    report["frames"] = []
    while not enough(start, report["frames"]):
        preview = camera_preview.of(scene)
        if preview is not None and preview.frame is not None:
            report["frames"].append([preview.frame.frame_id, preview.frame.sim_time])
        yield 0.25
    with physics_parked(running):
        preview = camera_preview.of(scene)
        report.update(shown(scene, settings, area, region, camera_preview, preview_draw))
    if SCREENSHOT:  # (in the same step: no timer uploads another frame before it)
        screenshot_view(SCREENSHOT)
    yield 0.3
    settings.renderer = "MUJOCO"
    yield 1.0
    settings.enabled = False
    yield 0.5
    report["threads_off"] = preview_threads()
    report["image_off"] = camera_preview.image_name(scene) in bpy.data.images
    bpy.ops.mujoco.stop()
    yield 1.0
    report["threads_stopped"] = preview_threads()


run_steps(steps)

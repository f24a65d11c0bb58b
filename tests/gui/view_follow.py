"""Runs inside Blender's real user interface (Debian's blender under Xvfb) for
tests/gui/test_gui_view_follow.py: a ball (with a camera riding on it) falls onto a
floor, its model root moved and turned; the largest 3D view drawn cheaply.

1. Track (mujoco.view_track on the ball's body object), then Play (the modal
   operator on a real window timer): every frame the simulation shows, the view's
   centre and the ball's subtree_com / xpos (MuJoCo's world moved by the root) of
   that snapshot are recorded.
2. Paused: View Through Camera (the ball's camera): the view matrix Blender draws
   with, against cam_xpos / cam_xmat; the lens against cam_fovy.
3. Free: the view's pose back; Copy Camera's clipboard text.
4. The Screenshot key (Shift+Alt+P, the real key, the mouse over the view), with
   the overlays off then on: the PNGs written beside the saved .blend, then the
   region read from the X server after one more draw (gui_x11.grab), and where
   the regions laid over the view (header, toolbar) are in it; then the
   Screenshot operator with the mouse over another editor, and with Blender's
   overlays hidden (against a second grab).
5. Reset, a Blender camera as the scene's, the view through it, Track and Play:
   the camera's position each shown frame against the tracked point; Free puts
   the camera back.
"""

import importlib
import os
import subprocess
import sys
import time

import bpy
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_x11  # noqa: E402
from gui_mouse import blender_window, region_xy  # noqa: E402
from gui_script import (ADDON, RESULT, open_sidebar_tab, overlay_view, physics_parked, play_invoke,  # noqa: E402
                        record_draws, report, run_steps, view3d)

FOLDER = os.path.dirname(RESULT)
BALL = """<mujoco model="drop"><option timestep="0.002"/><worldbody>
<geom name="floor" type="plane" size="3 3 .1"/>
<body name="ball" pos="0 0 2"><freejoint/><geom type="sphere" size=".1"/>
  <camera name="rider" pos="0 -1.5 .6" xyaxes="1 0 0 0 .35 1" fovy="50"/></body>
</worldbody></mujoco>"""


def pose(area) -> dict:
    view = area.spaces.active.region_3d
    return {"location": list(view.view_location), "rotation": list(view.view_rotation),
            "distance": view.view_distance, "perspective": view.view_perspective,
            "lens": area.spaces.active.lens}


def press(key, region):
    x, y = region_xy(region, region.width // 2, region.height // 2)
    subprocess.run(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y), "sleep", "0.1",
                    "key", key], check=True)


def wait_for(path, seconds=10.0):
    deadline = time.perf_counter() + seconds
    while not os.path.exists(path):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{path} was never written")
        yield 0.1
    yield 0.2  # (written whole: the operator writes it in one call)


def steps():
    build = importlib.import_module(ADDON + ".importer.build")
    scene_session = importlib.import_module(ADDON + ".live.scene_session")
    view_follow = importlib.import_module(ADDON + ".live.view_follow")
    scene_scan = importlib.import_module(ADDON + ".scan.scene_scan")
    scene = bpy.context.scene
    for obj in list(scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    model_path = os.path.join(FOLDER, "ball.xml")
    with open(model_path, "w", encoding="utf-8") as fh:
        fh.write(BALL)
    build.import_file(model_path, scene)
    (root,) = scene_scan.model_roots(scene)
    root.location, root.rotation_euler = (0.5, -0.3, 0.2), (0.0, 0.0, 0.5)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(FOLDER, "view.blend"))  # (screenshots go beside it)
    window, area, region = view3d()
    overlay_view(area)
    area.spaces.active.show_gizmo = False
    shading = area.spaces.active.shading
    shading.background_type, shading.background_color = "VIEWPORT", (0.0, 0.0, 0.4)
    shading.color_type, shading.single_color = "SINGLE", (0.5, 0.5, 0.5)
    view = area.spaces.active.region_3d
    view.view_perspective = "PERSP"
    yield 0.3
    report["before"] = pose(area)
    override = {"window": window, "area": area, "region": region}

    # 1. Track, then Play: each shown frame recorded
    running = scene_session.start_simulation(scene)
    ball_object = scene.objects["ball"]
    ball = running.binding.body_of(ball_object)
    bpy.context.view_layer.objects.active = ball_object
    with physics_parked(running), bpy.context.temp_override(**override):
        report["track"] = sorted(bpy.ops.mujoco.view_track())
    frames = report["tracked"] = []
    original = view_follow.shown

    def recording(owner, shot, world, model):
        original(owner, shot, world, model)
        follow = owner.follow
        if follow is not None and follow.mode == view_follow.TRACK and shot.model is model:
            w = np.array(world)
            frames.append({"frame": shot.frame, "time": shot.time, "view": list(view.view_location),
                           "com": (w[:3, :3] @ shot.subtree_com[ball] + w[:3, 3]).tolist(),
                           "xpos": (w[:3, :3] @ shot.xpos[ball] + w[:3, 3]).tolist()})
    view_follow.shown = recording
    report["tracked_start"] = list(view.view_location)
    report["ball_start"] = running.latest.xpos[ball].tolist()
    play_invoke()
    start = time.perf_counter()
    while running.latest.time < 1.2 and time.perf_counter() - start < 20.0:
        yield 0.1
    bpy.ops.mujoco.pause()
    yield 0.3
    view_follow.shown = original
    report["ball_end"] = running.latest.xpos[ball].tolist()
    report["rotation_kept"] = list(view.view_rotation) == report["before"]["rotation"]
    report["distance_kept"] = view.view_distance == report["before"]["distance"]

    # 2. through the ball's camera
    with physics_parked(running), bpy.context.temp_override(**override):
        report["camera"] = sorted(bpy.ops.mujoco.view_camera(camera="0"))
    yield 0.3
    area.tag_redraw()
    yield 0.3
    shot = running.latest
    world = np.array(running.binding.world)
    drawn = np.array(view.view_matrix.inverted(), float)
    report["through"] = {"eye": drawn[:3, 3].tolist(), "axes": drawn[:3, :3].tolist(),
                         "cam_eye": (world[:3, :3] @ shot.cam_xpos[0] + world[:3, 3]).tolist(),
                         "cam_axes": (world[:3, :3] @ shot.cam_xmat[0].reshape(3, 3)).tolist(),
                         "lens": area.spaces.active.lens, "fovy": float(shot.model.cam_fovy[0]),
                         "region": [region.width, region.height], "perspective": view.view_perspective}

    # 3. Free, Copy Camera
    with physics_parked(running), bpy.context.temp_override(**override):
        report["free"] = sorted(bpy.ops.mujoco.view_free())
        report["free_again"] = bpy.ops.mujoco.view_free.poll()
    report["after"] = pose(area)
    yield 0.3
    with physics_parked(running), bpy.context.temp_override(**override):
        report["copy"] = sorted(bpy.ops.mujoco.copy_camera())
    eye = np.linalg.inv(world) @ np.array(view.view_matrix.inverted(), float)
    report["copied"] = bpy.context.window_manager.clipboard
    report["copy_expected"] = {"pos": eye[:3, 3].tolist(), "x": eye[:3, 0].tolist(), "y": eye[:3, 1].tolist()}

    # 4. the Screenshot key, overlays off then on
    overlays = scene.mujoco_overlays
    press("shift+alt+p", region)
    yield from wait_for(os.path.join(FOLDER, "mujoco_screenshot_001.png"))
    overlays.contact_points = overlays.com = True
    area.tag_redraw()
    yield 0.5
    press("shift+alt+p", region)
    yield from wait_for(os.path.join(FOLDER, "mujoco_screenshot_002.png"))
    with physics_parked(running), bpy.context.temp_override(window=window, area=area):
        bpy.ops.wm.redraw_timer(type="DRAW_WIN_SWAP", iterations=1)
    top = window.height - (region.y + region.height)  # (X11 y grows downwards)
    gui_x11.save_png(os.path.join(FOLDER, "grab.png"),
                     gui_x11.grab(gui_x11.blender_x_window(), region.x, top, region.width, region.height))
    report["region"] = [region.width, region.height]
    # what Blender draws over the view after it (header, toolbar...): boxes in the region's picture
    report["laid_over"] = gui_x11.laid_over(area, region, round(20 * bpy.context.preferences.system.ui_scale))
    # the Screenshot (as from the sidebar's button) with the mouse over another editor
    other = max((a for a in window.screen.areas if a.type != "VIEW_3D"), key=lambda a: a.width * a.height)
    x, y = region_xy(other, other.width // 2, other.height // 2)
    subprocess.run(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y), "sleep", "0.2"],
                   check=True)
    report["mouse_over"] = other.type
    with physics_parked(running), bpy.context.temp_override(window=window, area=area):
        report["shot_elsewhere"] = sorted(bpy.ops.mujoco.screenshot())
    yield from wait_for(os.path.join(FOLDER, "mujoco_screenshot_003.png"))
    # and with Blender's overlays hidden (the scene and MJBlend's drawings: Blender still runs them)
    area.spaces.active.overlay.show_overlays = False
    yield 0.5
    with physics_parked(running), bpy.context.temp_override(window=window, area=area):
        report["shot_hidden"] = sorted(bpy.ops.mujoco.screenshot())
    yield from wait_for(os.path.join(FOLDER, "mujoco_screenshot_004.png"))
    with physics_parked(running), bpy.context.temp_override(window=window, area=area):
        bpy.ops.wm.redraw_timer(type="DRAW_WIN_SWAP", iterations=1)
    gui_x11.save_png(os.path.join(FOLDER, "grab_hidden.png"),
                     gui_x11.grab(gui_x11.blender_x_window(), region.x, top, region.width, region.height))
    area.spaces.active.overlay.show_overlays = True
    report["shots"] = sorted(f for f in os.listdir(FOLDER) if f.startswith("mujoco_screenshot_"))

    # 5. Track in a view through a Blender camera: the camera goes along with the ball
    overlays.contact_points = overlays.com = False
    with physics_parked(running):
        bpy.ops.mujoco.reset()
    yield 0.3
    camera = bpy.data.objects.new("Watcher", bpy.data.cameras.new("Watcher"))
    scene.collection.objects.link(camera)
    camera.location, camera.rotation_euler = (2.0, -3.0, 1.5), (1.3, 0.0, 0.6)
    scene.camera = camera
    view.view_perspective = "CAMERA"
    bpy.context.view_layer.update()
    camera_before = [list(row) for row in camera.matrix_world]
    moved = report["camera_tracked"] = []

    def recording_camera(owner, shot, world, model):
        original(owner, shot, world, model)
        follow = owner.follow
        if follow is not None and follow.camera is not None and shot.model is model:
            w = np.array(world)
            moved.append({"frame": shot.frame, "camera": list(camera.matrix_world.translation),
                          "com": (w[:3, :3] @ shot.subtree_com[ball] + w[:3, 3]).tolist()})
    view_follow.shown = recording_camera
    bpy.context.view_layer.objects.active = ball_object
    with physics_parked(running), bpy.context.temp_override(**override):
        report["camera_track"] = sorted(bpy.ops.mujoco.view_track())
    play_invoke()
    start = time.perf_counter()
    while running.latest.time < 1.0 and time.perf_counter() - start < 20.0:
        yield 0.1
    bpy.ops.mujoco.pause()
    yield 0.3
    view_follow.shown = original
    report["camera_perspective"] = view.view_perspective
    report["camera_turn"] = [list(r) for r in camera.matrix_world.to_3x3()]
    # the sidebar's View sub-panel draws (while tracking: its "Tracking" line too)
    record_draws(bpy.types.MJBLEND_PT_view,
                 lambda context: f"view: {getattr(scene_session.of(context.scene).follow, 'mode', 'FREE')}")
    area.spaces.active.show_region_ui = True
    yield 0.5
    yield from open_sidebar_tab(window, area, "MJBLEND_PT_view")
    with physics_parked(running), bpy.context.temp_override(**override):
        bpy.ops.mujoco.view_free()
    report["camera_before"] = camera_before
    report["camera_after"] = [list(row) for row in camera.matrix_world]
    bpy.ops.mujoco.stop()
    yield 0.3


run_steps(steps)

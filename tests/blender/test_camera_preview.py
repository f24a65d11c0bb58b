"""The camera preview in the bpy module: a render thread beside the simulation, its
frames mujoco.Renderer's bit for bit, the image Blender shows holding their pixels,
and the thread gone whenever the preview is. Timers never fire here: the tests call
`camera_preview.update`, the function the timer calls."""

import os
import threading
import time

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import ROOT, disable_addon, enable_addon

from mjblend.engine import cameras
from mjblend.importer import build
from mjblend.live import camera_preview, scene_session

DESK = os.path.join(ROOT, "examples", "desk_toys.xml")
CAMERA = "overview"  # desk_toys.xml's camera
WAIT = 30.0


@pytest.fixture
def desk(clean_scene):
    build.import_file(DESK, clean_scene)
    yield clean_scene
    scene_session.end_all()


def preview_threads() -> list:
    """The preview's render threads, and its render processes (children of this one)."""
    threads = [t for t in threading.enumerate() if t.name.startswith(camera_preview.THREAD_NAME)]
    return threads + render_processes()


def render_processes() -> list:
    children = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"render_process" in cmdline:
            children.append(int(pid))
    return children


def shown_frame(scene, sim_time=None, image=None):
    """update() (as the timer would) until the preview shows a frame of `sim_time`
    (default: the latest snapshot's) of the `image` kind asked for."""
    running = scene_session.simulation(scene)
    sim_time = running.latest.time if sim_time is None else sim_time
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        camera_preview.update(scene)
        preview = camera_preview.of(scene)
        frame = preview.frame if preview is not None else None
        if frame is not None and frame.sim_time == sim_time and (
                image is None or camera_preview._kind_of(frame) == image):
            return frame
        time.sleep(0.005)
    raise AssertionError(f"no frame of t={sim_time} shown; preview says {preview and preview.message!r}")


def start(scene, image="RGB", width=160, camera=CAMERA):
    running = scene_session.start_simulation(scene)
    settings = scene.mujoco_camera_preview
    settings.camera_name, settings.image, settings.width = camera, image, width
    return running, settings


def reference(model, snapshot, cam_name, width, height, kinds):
    """mujoco.Renderer alone, a fresh one, called in the order the worker called its own:
    for each kind, update_scene then render (see tests/engine/test_cameras.py: on
    llvmpipe an RGB frame depends on what its GL context drew before)."""
    data = mujoco.MjData(model)
    cameras.load_state(model, data, snapshot)
    renderer = mujoco.Renderer(model, height, width)
    try:
        images = []
        for kind in kinds:
            renderer.update_scene(data, cam_name)
            if kind == "depth":
                renderer.enable_depth_rendering()
            elif kind == "segmentation":
                renderer.enable_segmentation_rendering()
            images.append(renderer.render())
            renderer.disable_depth_rendering()
            renderer.disable_segmentation_rendering()
        return images
    finally:
        renderer.close()


def image_pixels(image) -> np.ndarray:
    """The bpy image's pixels as (H, W, 3) uint8, rows top down (as the frame's)."""
    width, height = image.size
    flat = np.empty(width * height * 4, np.float32)
    image.pixels.foreach_get(flat)
    return np.round(flat.reshape(height, width, 4)[::-1, :, :3] * 255).astype(np.uint8)


def test_the_preview_source_is_mujoco_renderer_bit_for_bit_and_the_image_holds_it(desk):
    running, settings = start(desk)
    running.step(20)
    snapshot = running.latest
    settings.enabled = True  # (its worker's first frame is of this state)
    rgb_frame = shown_frame(desk, image="RGB")
    assert len(preview_threads()) == 2  # (the render thread and its process)
    model = running.model
    width, height = 160, round(160 * 480 / 640)
    assert (rgb_frame.width, rgb_frame.height) == (width, height)
    settings.image = "DEPTH"
    depth_frame = shown_frame(desk, image="DEPTH")
    settings.image = "SEGMENTATION"
    seg_frame = shown_frame(desk, image="SEGMENTATION")
    rgb, depth, seg = reference(model, snapshot, CAMERA, width, height, ("rgb", "depth", "segmentation"))
    assert np.array_equal(rgb_frame.rgb, rgb)
    assert np.array_equal(depth_frame.depth.view(np.uint32), depth.view(np.uint32))
    assert np.array_equal(seg_frame.segmentation, seg)
    assert len(np.unique(seg[..., 0])) > 3  # (several objects in view: a real comparison)
    image = camera_preview.of(desk).image()
    assert tuple(image.size) == (width, height)
    # the image now shows the segmentation: one stable colour per object id
    shown = image_pixels(image)
    colours = camera_preview.segmentation_colours(seg)
    assert np.array_equal(shown, colours)
    for objid in np.unique(seg[..., 0]):
        mask = seg[..., 0] == objid
        assert len(np.unique(shown[mask].reshape(-1, 3), axis=0)) == 1
    assert (shown[seg[..., 0] < 0] == 0).all()
    # RGB again: the image holds the frame's own pixels
    settings.image = "RGB"
    frame = shown_frame(desk, image="RGB")
    assert np.array_equal(image_pixels(camera_preview.of(desk).image()), frame.rgb)


def test_depth_is_shown_over_the_range_in_view(desk):
    running, settings = start(desk, image="DEPTH")
    settings.enabled = True
    frame = shown_frame(desk, image="DEPTH")
    preview = camera_preview.of(desk)
    model = running.model
    far_clip = model.vis.map.zfar * model.stat.extent
    seen = frame.depth < far_clip * 0.999
    near, far = preview.depth_range
    assert near == pytest.approx(float(frame.depth[seen].min()))
    assert far == pytest.approx(float(frame.depth[seen].max()))
    shown = image_pixels(preview.image())
    nearest = np.unravel_index(np.where(seen, frame.depth, np.inf).argmin(), frame.depth.shape)
    farthest = np.unravel_index(np.where(seen, frame.depth, -np.inf).argmax(), frame.depth.shape)
    assert tuple(shown[nearest]) == tuple(camera_preview._DEPTH_MAP[0])
    assert tuple(shown[farthest]) == tuple(camera_preview._DEPTH_MAP[-1])


def test_frames_follow_the_simulation_at_a_reported_rate_without_holding_it_up(desk):
    running, settings = start(desk, width=64)
    settings.max_fps = 240
    settings.enabled = True
    shown_frame(desk)
    for _ in range(8):
        running.step(2)
        frame = shown_frame(desk)
        assert frame.sim_time == running.latest.time
    preview = camera_preview.of(desk)
    assert preview.fps > 0 and preview.shown_fps > 0
    # a capped rate: snapshots come faster than max_fps, frames do not
    settings.max_fps = 4
    start_time = time.monotonic()
    first = preview.worker.frame_id
    while time.monotonic() - start_time < 1.5:
        running.step(1)
        camera_preview.update(desk)
        time.sleep(0.01)
    assert preview.worker.frame_id - first <= 4 * 1.5 + 2


def test_off_ending_the_simulation_and_loading_a_file_stop_the_thread(desk):
    running, settings = start(desk)
    settings.enabled = True
    shown_frame(desk)
    assert len(preview_threads()) == 2
    settings.enabled = False
    assert preview_threads() == []
    assert bpy.data.images.get(camera_preview.image_name(desk)) is None
    assert scene_session.simulation(desk) is running  # (the simulation goes on)
    settings.enabled = True
    shown_frame(desk)
    assert len(preview_threads()) == 2
    scene_session.end_simulation(running)
    assert preview_threads() == []
    running = scene_session.start_simulation(desk)  # preview on: it starts with the simulation
    shown_frame(desk)
    assert len(preview_threads()) == 2
    bpy.ops.wm.read_homefile(use_empty=True)  # (load_pre: every session ends)
    assert preview_threads() == []


def test_an_unknown_camera_says_so_and_changes_nothing_else(desk):
    running, settings = start(desk)
    settings.enabled = True
    before = shown_frame(desk)
    settings.camera_name = "no such camera"
    running.step(3)
    camera_preview.update(desk)
    message, alert = camera_preview.status(desk)
    assert alert and "no such camera" in message and CAMERA in message  # (it names the cameras there are)
    preview = camera_preview.of(desk)
    assert preview.frame is before and preview.running and len(preview_threads()) == 2
    assert scene_session.simulation(desk) is running and running.latest.time > before.sim_time
    settings.camera_name = CAMERA
    shown_frame(desk)
    assert camera_preview.status(desk) == ("", False)


def test_a_size_beyond_the_offscreen_buffer_says_how_to_raise_it(desk):
    running, settings = start(desk)
    settings.enabled = True
    before = shown_frame(desk)
    settings.width = 4000
    camera_preview.update(desk)
    message, alert = camera_preview.status(desk)
    assert alert and "offwidth" in message
    assert camera_preview.of(desk).frame is before and len(preview_threads()) == 2


def test_a_mujoco_renderer_that_cannot_start_says_so_and_changes_nothing_else(desk, monkeypatch):
    running, settings = start(desk)
    monkeypatch.setenv("MUJOCO_GL", "glfw")  # (the render process inherits it: no display here)
    monkeypatch.setenv("DISPLAY", "")
    monkeypatch.setenv("WAYLAND_DISPLAY", "")
    settings.enabled = True
    deadline = time.monotonic() + WAIT
    while not camera_preview.status(desk)[1] and time.monotonic() < deadline:
        camera_preview.update(desk)
        time.sleep(0.02)
    message, alert = camera_preview.status(desk)
    assert alert and "MUJOCO_GL=glfw" in message and "MUJOCO_GL=egl" in message
    assert camera_preview.of(desk).frame is None
    deadline = time.monotonic() + 10
    while preview_threads() and time.monotonic() < deadline:  # (the failed worker ends its process)
        time.sleep(0.05)
    assert preview_threads() == []
    running.step(3)  # (the simulation goes on)
    assert scene_session.simulation(desk) is running and running.latest.steps == 3
    monkeypatch.setenv("MUJOCO_GL", "egl")
    settings.width = 128  # (a changed request starts it again)
    assert shown_frame(desk).width == 128 and camera_preview.status(desk) == ("", False)


def test_blenders_renderer_previews_on_the_main_thread_at_a_capped_rate(desk):
    running, settings = start(desk)
    settings.enabled = True
    shown_frame(desk)
    assert len(preview_threads()) == 2
    running.step(10)
    settings.renderer = "BLENDER"  # (the MuJoCo worker ends: one renderer at a time)
    assert preview_threads() == []
    preview = camera_preview.of(desk)
    frame = preview.frame
    assert frame.frame_id > 0 and camera_preview.status(desk) == ("", False)
    assert frame.rgb.shape == (120, 160, 3) and frame.sim_time == running.latest.time
    shown = image_pixels(preview.image())
    assert np.array_equal(shown, frame.rgb) and shown.std() > 5  # (a picture, not a blank)
    assert camera_preview.update(desk) is False  # capped: not again at once
    settings.image = "DEPTH"
    deadline = time.monotonic() + WAIT
    while camera_preview._kind_of(preview.frame) != "DEPTH" and time.monotonic() < deadline:
        camera_preview.update(desk)
        time.sleep(0.05)
    assert preview.frame.depth.shape == (120, 160) and preview.depth_range[0] > 0
    settings.width = 640  # (Blender's renderer renders the preview at most BLENDER_MAX_WIDTH wide)
    deadline = time.monotonic() + WAIT
    while preview.frame.width != camera_preview.BLENDER_MAX_WIDTH and time.monotonic() < deadline:
        camera_preview.update(desk)
        time.sleep(0.05)
    assert (preview.frame.width, preview.frame.height) == (320, 240)


def test_the_camera_enum_lists_the_running_models_cameras(desk):
    settings = desk.mujoco_camera_preview
    assert settings.camera_name == ""
    settings.camera = CAMERA  # (from the scene's camera elements before it simulates)
    assert settings.camera_name == CAMERA
    running, _ = start(desk)
    settings.camera = CAMERA
    assert settings.camera == CAMERA and settings.camera_name == CAMERA
    with pytest.raises(TypeError):
        settings.camera = "no such camera"
    settings.camera_name = ""
    settings.enabled = True
    assert shown_frame(desk).camera.name == CAMERA  # (none chosen: the model's first)


def test_deleting_the_scene_and_disabling_the_addon_stop_the_thread(desk):
    running, settings = start(desk)
    other = bpy.data.scenes.new("Other")
    settings.enabled = True
    shown_frame(desk)
    assert len(preview_threads()) == 2
    if bpy.context.window is not None:
        bpy.context.window.scene = other
    bpy.data.scenes.remove(desk)
    assert camera_preview._tick() is None  # the timer finds the scene gone: its session ends
    assert preview_threads() == []
    scene = bpy.data.scenes["Other"]
    build.import_file(DESK, scene)
    scene_session.start_simulation(scene)
    scene.mujoco_camera_preview.camera_name = CAMERA
    scene.mujoco_camera_preview.enabled = True
    shown_frame(scene)
    assert len(preview_threads()) == 2
    disable_addon()
    try:
        assert preview_threads() == []
    finally:
        enable_addon()

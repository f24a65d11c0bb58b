"""The camera preview: a MuJoCo camera's live image while a scene simulates.

MuJoCo's renderer runs for a `RenderWorker` thread (engine/cameras.py) in a child
process of its own at a lower priority (engine/render_process.py: it takes only the
CPU the physics leaves, and its OpenGL context stays out of Blender's), fed by the
runner's snapshots as they are published, at most `max_fps` frames a second: never
on Blender's main thread, never holding up the physics. The main
thread only takes the newest finished frame and copies it into the image
"MuJoCo Preview: <scene>" (`update`, cheap), which the viewport draws in a corner
(ui/camera_preview) and the Image Editor can show. Blender's renderer must run on
the main thread: it renders in `update` itself, small and at a capped rate.

`update(scene)` is the one step: a timer (`wake`) calls it in a window; scripts and
tests, where timers never fire, call it themselves. One `CameraPreview` per scene
session (`SceneSession.camera_preview`); it ends with the preview switched off, the
simulation's end, the scene's deletion, file load and the add-on's disable.
"""

from __future__ import annotations

import threading
import time

import bpy
import numpy as np

from ..engine import cameras, render_process
from ..engine.errors import MJBlendError
from ..sync import views
from . import blender_camera, scene_session


INTERVAL = 1 / 30  # seconds between the timer's uploads
RATE_WINDOW = 3.0  # seconds the frame rates shown are measured over (software rendering: ~1 frame/s)
BLENDER_MAX_FPS = 4.0  # Blender's renderer blocks the UI: at most this often ...
BLENDER_MAX_SHARE = 0.25  # ... and at most this share of the main thread's time
BLENDER_MAX_WIDTH = 320
THREAD_NAME = "MJBlend camera preview"
RENDERER = render_process.ProcessRenderer  # (cameras.CameraRenderer draws on the thread: bench/ compares)
# the depth colour map (near -> far), viridis' ends and middle
_DEPTH_STOPS = np.array([(253, 231, 37), (94, 201, 98), (33, 145, 140), (59, 82, 139), (68, 1, 84)], float)
_DEPTH_MAP = np.stack([np.interp(np.linspace(0, 1, 256), np.linspace(0, 1, len(_DEPTH_STOPS)),
                                 _DEPTH_STOPS[:, c]) for c in range(3)], axis=1).round().astype(np.uint8)


def image_name(scene) -> str:
    return f"MuJoCo Preview: {scene.name}"


# ------------------------------------------------------------ colouring


def depth_colours(depth: np.ndarray, far_clip: float) -> tuple[np.ndarray, tuple[float, float]]:
    """(H, W, 3) uint8 of a depth image, near yellow to far purple over the range of what
    is in view (the background, at the far clip, black); and that (near, far) in metres."""
    seen = depth < far_clip * 0.999
    values = depth[seen]
    if not values.size:
        return np.zeros((*depth.shape, 3), np.uint8), (0.0, 0.0)
    near, far = float(values.min()), float(values.max())
    t = (depth - near) / max(far - near, 1e-9)
    out = _DEPTH_MAP[np.clip(t * 255, 0, 255).astype(np.intp)]
    out[~seen] = 0
    return out, (near, far)


def segmentation_colours(segmentation: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8: one colour per (object id, object type), the same in every frame
    and session (a hash of the pair); nothing (id -1) black."""
    ids = segmentation[..., 0].astype(np.uint32)
    types = segmentation[..., 1].astype(np.uint32)
    key = (ids * np.uint32(16) + types + np.uint32(1)) * np.uint32(2654435761)  # (Knuth's multiplier)
    key ^= key >> np.uint32(15)
    out = np.stack([(key >> np.uint32(s)) & np.uint32(0xFF) for s in (0, 8, 16)], axis=-1).astype(np.uint8)
    out |= 0x40  # (never near black: black is nothing)
    out[segmentation[..., 0] < 0] = 0
    return out


def colours(frame: cameras.Frame, image: str, far_clip: float) -> tuple[np.ndarray, tuple | None]:
    """What the preview shows of `frame` (RGB, DEPTH or SEGMENTATION), (H, W, 3) uint8,
    and the depth range shown (None for the others)."""
    if image == "DEPTH":
        return depth_colours(frame.depth, far_clip)
    if image == "SEGMENTATION":
        return segmentation_colours(frame.segmentation), None
    return frame.rgb, None


def pixels(rgb: np.ndarray) -> np.ndarray:
    """Blender's image pixels of an (H, W, 3) uint8 image: float RGBA, rows bottom up."""
    height, width = rgb.shape[:2]
    out = np.ones((height, width, 4), np.float32)
    out[..., :3] = rgb[::-1]
    out[..., :3] *= np.float32(1 / 255)
    return out.ravel()


def upload(name: str, rgb: np.ndarray):
    """Copy an (H, W, 3) uint8 image into the bpy image `name` (made or resized as needed;
    Non-Color: its bytes are shown as they are, as MuJoCo's renderer made them)."""
    height, width = rgb.shape[:2]
    image = bpy.data.images.get(name)
    if image is not None and tuple(image.size) != (width, height):
        bpy.data.images.remove(image)
        image = None
    if image is None:
        image = bpy.data.images.new(name, width, height, alpha=False)
        image.colorspace_settings.name = "Non-Color"
    image.pixels.foreach_set(pixels(rgb))
    image.update()
    return image


# -------------------------------------------------------------- preview


class CameraPreview:
    """The preview of one scene's simulation: the render worker and what was shown."""

    def __init__(self, live):
        self.live = live
        self.scene_name = live.scene.name
        self.worker: cameras.RenderWorker | None = None
        self.key = None  # (camera, image, width, height, max_fps) the worker renders
        self.message = ""  # why there is no image, or an error (the panel shows it)
        self.frame: cameras.Frame | None = None  # the source of the image shown last
        self.depth_range: tuple | None = None  # (near, far) metres of the depth image shown
        self.image_name = image_name(live.scene)
        self._shown: list = []  # wall times of the recent uploads
        self._rendered: list = []  # (wall time, the worker's frame id) at the recent updates
        self._newest = None  # the newest snapshot published (set on the publishing thread)
        self._held = None  # the snapshot the worker renders (at most max_fps new ones a second)
        self._held_at = 0.0
        self._period = 0.0
        self._lock = threading.Lock()
        self._blender_next = 0.0

    # the worker's side (its own thread, or the runner's while it publishes)

    def _published(self, snapshot) -> None:
        self._newest = snapshot
        worker = self.worker
        if worker is not None:
            worker.notify()

    def _source(self):
        """The snapshot to render: the newest, unless one was taken less than a period ago."""
        with self._lock:
            newest, now = self._newest, time.perf_counter()
            if newest is not None and (self._held is None or (newest.frame != self._held.frame
                                                             and now - self._held_at >= self._period)):
                self._held, self._held_at = newest, now
            return self._held

    # the main thread's side

    @property
    def running(self) -> bool:
        """Whether its render thread runs."""
        return self.worker is not None and self.worker.error is None

    @property
    def fps(self) -> float:
        """Frames per second rendered over the last few seconds (MuJoCo: by the worker, as
        seen at each update; Blender: shown)."""
        if self.worker is None:
            return self.shown_fps
        samples = self._rendered
        if len(samples) < 2 or time.perf_counter() - samples[-1][0] > RATE_WINDOW:
            return 0.0
        (t0, id0), (t1, id1) = samples[0], samples[-1]
        return (id1 - id0) / (t1 - t0) if t1 > t0 else 0.0

    @property
    def shown_fps(self) -> float:
        """Frames per second uploaded over the last few seconds."""
        times = self._shown
        if len(times) < 2 or time.perf_counter() - times[-1] > RATE_WINDOW:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0])

    def image(self):
        return bpy.data.images.get(self.image_name)

    def start_worker(self) -> None:
        runner = self.live.runner
        self._newest = runner.latest  # (main thread: an inline runner publishes here)
        # (the drawing in a child process at a lower priority: engine/render_process.py)
        self._rendered = []
        self.worker = cameras.RenderWorker(self._source, name=f"{THREAD_NAME} ({self.scene_name})",
                                           renderer=RENDERER)
        runner.listen(self._published)
        self.worker.start()

    def stop_worker(self) -> bool:
        """The render thread ended and its GL context freed (False: it would not end)."""
        worker, self.worker, self.key = self.worker, None, None
        if worker is None:
            return True
        runner = self.live.runner
        if runner is not None:
            runner.unlisten(self._published)
        with self._lock:
            self._held = None
        return worker.stop()

    def close(self) -> None:
        """Everything ended: the thread, the image."""
        self.stop_worker()
        image = bpy.data.images.get(self.image_name)
        if image is not None:
            bpy.data.images.remove(image)
        self.frame = None

    def show(self, frame: cameras.Frame, image: str, model) -> bool:
        """Upload `frame` (main thread) unless it is shown already."""
        if frame is self.frame:
            return False
        far_clip = model.vis.map.zfar * model.stat.extent
        rgb, self.depth_range = colours(frame, image, far_clip)
        upload(self.image_name, rgb)
        self.frame = frame
        now = time.perf_counter()
        self._shown = [t for t in self._shown if now - t <= RATE_WINDOW] + [now]
        return True

    def update(self, settings) -> bool:
        """One main-thread step; True if a new image was uploaded."""
        model = self.live.model
        every = cameras.cameras(model)
        if not every:
            self.message = "The simulated model has no camera (add one: Add > MuJoCo > Camera)"
            return False
        try:  # (no camera chosen: the model's first)
            cam = cameras.camera(model, settings.camera_name) if settings.camera_name else every[0]
        except cameras.CameraError as error:
            self.message = str(error)
            return False  # (the worker renders what it did: nothing else changes)
        width = settings.width
        height = max(1, round(width * cam.height / cam.width))
        if settings.renderer == "BLENDER":
            return self._update_blender(settings, cam, width, height)
        return self._update_mujoco(settings, cam, width, height)

    def _update_mujoco(self, settings, cam, width, height) -> bool:
        key = (cam.name, settings.image, width, height, settings.max_fps)
        if self.worker is not None and self.worker.error is not None and key == self.key:
            self.message = _error_text(self.worker.error)
            return False  # (it failed on this request: a changed one tries again)
        try:
            cameras.check_size(self.live.model, cam, width, height)
        except cameras.CameraError as error:
            self.message = str(error)
            return False
        if self.worker is None or self.worker.error is not None:
            self.stop_worker()
            self.start_worker()
        if key != self.key:
            self._period = 1.0 / settings.max_fps
            self.worker.request(cameras.Request((cam.name,), (settings.image.lower(),), width, height))
            self.key = key
        if self.worker.error is not None:
            self.message = _error_text(self.worker.error)
            return False
        self.message = ""
        now = time.perf_counter()
        recent = [sample for sample in self._rendered if now - sample[0] <= RATE_WINDOW]
        self._rendered = [*recent, (now, self.worker.frame_id)]
        frame = self.worker.latest(cam.name)
        if frame is None or (frame.width, frame.height, _kind_of(frame)) != (width, height, settings.image):
            return False  # (the new request's first frame is not out yet)
        return self.show(frame, settings.image, self.live.model)

    def _update_blender(self, settings, cam, width, height) -> bool:
        self.stop_worker()  # (one renderer at a time)
        now = time.perf_counter()
        if now < self._blender_next:
            return False
        scale = min(1.0, BLENDER_MAX_WIDTH / width)
        w, h = max(1, round(width * scale)), max(1, round(height * scale))
        start = time.perf_counter()
        try:
            frame = blender_camera.render(self.live.scene, cam.name, kinds=(settings.image.lower(),),
                                          width=w, height=h)
        except Exception as error:  # noqa: BLE001 -- shown in the panel; the simulation goes on
            self.message = _error_text(error)
            self._blender_next = now + 1.0
            return False
        spent = time.perf_counter() - start
        period = 1.0 / min(settings.max_fps, BLENDER_MAX_FPS)
        self._blender_next = now + max(period, spent / BLENDER_MAX_SHARE)
        self.message = ""
        return self.show(frame, settings.image, self.live.model)


def _kind_of(frame: cameras.Frame) -> str:
    return "RGB" if frame.rgb is not None else "DEPTH" if frame.depth is not None else "SEGMENTATION"


def _error_text(error: BaseException) -> str:
    return str(error) if isinstance(error, MJBlendError) else f"{type(error).__name__}: {error}"


# ------------------------------------------------------ the main thread


def of(scene) -> CameraPreview | None:
    owner = scene_session.existing(scene)
    return owner.camera_preview if owner is not None else None


def update(scene) -> bool:
    """Bring the scene's preview in line with its settings and its simulation, and upload
    the newest finished frame (main thread; what the timer calls). True if a new image
    was uploaded."""
    settings = scene.mujoco_camera_preview
    owner = scene_session.existing(scene)
    live = owner.simulation if owner is not None else None
    if owner is None or not settings.enabled or live is None or live.runner is None:
        if owner is not None:
            owner.end_camera_preview()
        return False
    preview = owner.camera_preview
    if preview is None or preview.live is not live:
        owner.end_camera_preview()
        preview = owner.camera_preview = CameraPreview(live)
    return preview.update(settings)


def status(scene) -> tuple[str, bool]:
    """(What the panel says about the scene's preview, whether it is an error)."""
    settings = scene.mujoco_camera_preview
    live = scene_session.simulation(scene)
    if not settings.enabled:
        return "", False
    if live is None:
        return "The preview shows while the scene simulates", False
    preview = of(scene)
    if preview is None:
        return "Starting", False
    if preview.message:
        return preview.message, True
    return "", False


def _tick():
    """The timer: every scene's preview updated; it stops when none is on."""
    active = False
    for owner in scene_session.all_sessions():
        try:
            scene = owner.scene
            if update(scene):
                _redraw_views()
            active |= owner.camera_preview is not None
        except ReferenceError:  # the scene was deleted: its session ends
            owner.end(restore=True)
    return INTERVAL if active else None


def _redraw_views() -> None:
    views.redraw(("VIEW_3D", "IMAGE_EDITOR"))


def wake() -> None:
    """Run the timer (in a window; scripts and tests call `update`)."""
    if not bpy.app.background and not bpy.app.timers.is_registered(_tick):
        bpy.app.timers.register(_tick, first_interval=INTERVAL)


def unregister() -> None:
    if bpy.app.timers.is_registered(_tick):
        bpy.app.timers.unregister(_tick)

"""MuJoCo cameras as sensors: what each MJCF camera of a compiled model sees, from
MuJoCo's own renderer (`mujoco.Renderer`), bpy-free.

Each camera's description (`cameras(model)`, `camera(model, name)`): its name
and id, its resolution (the camera's `resolution` attribute, `model.cam_resolution`;
MuJoCo's default "1 1" means unset and gives DEFAULT_RESOLUTION, 640 x 480), its
intrinsics and, from a state, its extrinsics.

Conventions, stated once:

- MuJoCo's camera frame (`cam_xmat`, world from camera, columns x y z): x right,
  y up, the camera looks along -z. `world_from_camera` is that frame as a 4 x 4.
- OpenCV's camera frame: x right, y down, looking along +z, so
  R_cv = cam_xmat @ diag(1, -1, -1); `camera_from_world_cv` is [R_cv^T | -R_cv^T p],
  the extrinsic matrix of a pinhole pipeline (x_cam = R x_world + t).
- K = [[fx, 0, cx], [0, fy, cy], [0, 0, 1]] in pixels, image row 0 at the top
  (as mujoco.Renderer returns it), the centre of pixel (i, j) at (u, v) = (j, i):
  OpenCV's convention, half a pixel left of and above OpenGL's window coordinates.
  K is what MuJoCo's renderer projects with: the frustum `mjv_updateScene` puts
  in the scene (`frustum`), drawn over the image's width and height. For a fovy
  camera, fy = (H / 2) / tan(fovy / 2), fx = fy (the width follows the image's
  aspect), (cx, cy) the image centre; for one with focal / sensorsize / principal
  (`cam_intrinsic`, `cam_sensorsize`), fx = f_x W / s_x, fy = f_y H / s_y,
  cx = (W - 1) / 2 - p_x W / s_x, cy = (H - 1) / 2 - p_y H / s_y (MuJoCo's sign:
  its frustum moves right and down with p, the image's centre left and up). An image whose
  aspect differs from the sensor's is stretched, as MuJoCo draws it.
  An orthographic camera has no pinhole: K then maps camera-frame metres,
  u = fx X + cx, v = fy Y + cy, with no division by depth (`orthographic`).
- Depth: float32 metres along the view axis (OpenCV's Z), as mujoco.Renderer's
  depth rendering gives it; segmentation: int32 (H, W, 2), (object id, mjtObj
  type) per pixel, (-1, -1) where nothing is drawn.

Rendering (`CameraRenderer`) never reads a live MjData: it fills a private one
from a state (a runner `Snapshot`, an MjData read between steps, or an
`mj_getState` vector) by `mj_setState` + `mj_forward`, then `update_scene` and
`render` exactly as mujoco.Renderer does, so its frames are that renderer's bit
for bit and it may run on a thread beside the runner (`RenderWorker`). A
renderer is bound to the thread that first renders with it (its GL context).
Blender's main thread in a window cannot render (it holds Blender's own OpenGL
context: engine/gl_backend.py); `RenderThread` serves such a caller synchronously
from a thread of its own.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import mujoco
import numpy as np

from . import gl_backend
from .errors import MJBlendError

DEFAULT_RESOLUTION = (640, 480)  # (width, height) of a camera whose MJCF sets no resolution
KINDS = ("rgb", "depth", "segmentation")
STATE = mujoco.mjtState.mjSTATE_FULLPHYSICS  # what a state vector holds unless told
_OPENCV = np.diag([1.0, -1.0, -1.0])  # MuJoCo's camera frame -> OpenCV's


class CameraError(MJBlendError, ValueError):
    """A camera request that cannot be served: an unknown camera, a size beyond the
    model's offscreen buffer, an unknown image kind."""


# MuJoCo's rendering context cannot be made again in a process where making it failed
# once (mjr_makeContext raised FatalError, e.g. MUJOCO_GL=glfw without a display): a second
# try aborts the process (libc++: "__cxa_guard_acquire detected recursive initialization").
# The first such failure's message is kept here (the backend is the process's) and raised
# again instead of trying.
_context_failed: list[str] = []
NO_RETRY = ("MuJoCo cannot make a rendering context again in this process after it failed: "
            "restart it with another MUJOCO_GL.")


class RendererUnavailable(MJBlendError, RuntimeError):
    """MuJoCo's renderer cannot start here (no OpenGL context of the backend MUJOCO_GL names)."""


@dataclass(frozen=True)
class Camera:
    """One MJCF camera as a sensor: its description, the same for every state."""

    name: str
    id: int
    width: int
    height: int
    resolution_set: bool  # False: the MJCF set none, (width, height) is DEFAULT_RESOLUTION
    fovy: float  # degrees (orthographic: the view's height in metres), as compiled
    orthographic: bool
    focal: tuple | None  # (f_x, f_y) in metres where the MJCF gives sensorsize, else None
    principal: tuple | None  # (p_x, p_y) in metres, likewise
    sensorsize: tuple | None  # (s_x, s_y) in metres, likewise
    near: float  # clipping distances in metres (visual.map znear / zfar times the extent)
    far: float

    def K(self, width: int | None = None, height: int | None = None) -> np.ndarray:
        """The 3 x 3 OpenCV intrinsic matrix at (width, height), the camera's own by default."""
        return _intrinsic_matrix(self, width or self.width, height or self.height)

    def world_from_camera(self, state) -> np.ndarray:
        """4 x 4, MuJoCo's camera frame (looks along -z, y up) in the world, of a state
        with `cam_xpos` / `cam_xmat` (a Snapshot, an MjData after kinematics, a Frame)."""
        out = np.eye(4)
        out[:3, :3] = np.asarray(state.cam_xmat)[self.id].reshape(3, 3)
        out[:3, 3] = np.asarray(state.cam_xpos)[self.id]
        return out

    def camera_from_world_cv(self, state) -> np.ndarray:
        """4 x 4 OpenCV extrinsic [R | t] (x right, y down, looking along +z) of a state."""
        return opencv_extrinsic(self.world_from_camera(state))


def opencv_extrinsic(world_from_camera: np.ndarray) -> np.ndarray:
    """MuJoCo's world-from-camera 4 x 4 -> OpenCV's camera-from-world 4 x 4."""
    rotation = world_from_camera[:3, :3] @ _OPENCV
    out = np.eye(4)
    out[:3, :3] = rotation.T
    out[:3, 3] = -rotation.T @ world_from_camera[:3, 3]
    return out


def cameras(model: mujoco.MjModel) -> tuple:
    """Every camera of a compiled model, in id order."""
    return tuple(_describe(model, i) for i in range(model.ncam))


def camera(model: mujoco.MjModel, which) -> Camera:
    """One camera by name or id; CameraError names the cameras there are."""
    if isinstance(which, str):
        index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, which)
    else:
        index = int(which)
    if not 0 <= index < model.ncam:
        names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) or f"#{i}"
                 for i in range(model.ncam)]
        there = ", ".join(names) if names else "none: the model has no camera"
        raise CameraError(f"No camera {which!r} in the model (its cameras: {there})")
    return _describe(model, index)


def _describe(model, i: int) -> Camera:
    name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) or f"camera {i}"
    width, height = (int(v) for v in model.cam_resolution[i])
    resolution_set = (width, height) != (1, 1)
    if not resolution_set:
        width, height = DEFAULT_RESOLUTION
    sensorsize = model.cam_sensorsize[i]
    has_sensor = bool(sensorsize[0] and sensorsize[1])
    intrinsic = model.cam_intrinsic[i]
    extent = model.stat.extent
    return Camera(
        name=name, id=i, width=width, height=height, resolution_set=resolution_set,
        fovy=float(model.cam_fovy[i]),
        orthographic=int(model.cam_projection[i]) == int(mujoco.mjtProjection.mjPROJ_ORTHOGRAPHIC),
        focal=(float(intrinsic[0]), float(intrinsic[1])) if has_sensor else None,
        principal=(float(intrinsic[2]), float(intrinsic[3])) if has_sensor else None,
        sensorsize=(float(sensorsize[0]), float(sensorsize[1])) if has_sensor else None,
        near=float(model.vis.map.znear * extent), far=float(model.vis.map.zfar * extent))


def frustum(cam: Camera) -> tuple:
    """(center, halfwidth, bottom, top) at the near plane, as mjv_updateScene sets the
    scene's camera (halfwidth 0: from the image's aspect, as mjr_render takes it)."""
    if cam.orthographic:
        half = cam.fovy / 2
        return 0.0, 0.0, -half, half
    if cam.sensorsize is None:
        top = cam.near * math.tan(math.radians(cam.fovy) / 2)
        return 0.0, 0.0, -top, top
    (fx, fy), (px, py), (sx, sy) = cam.focal, cam.principal, cam.sensorsize
    return (cam.near / fx * px, cam.near / fx * sx / 2,
            cam.near / fy * (-sy / 2 - py), cam.near / fy * (sy / 2 - py))


def _intrinsic_matrix(cam: Camera, width: int, height: int) -> np.ndarray:
    center, halfwidth, bottom, top = frustum(cam)
    if halfwidth == 0:
        halfwidth = (top - bottom) / 2 * width / height
    scale = 1.0 if cam.orthographic else cam.near  # the plane the frustum is given at
    fx = scale * width / (2 * halfwidth)
    fy = scale * height / (top - bottom)
    cx = width * (halfwidth - center) / (2 * halfwidth) - 0.5
    cy = height * top / (top - bottom) - 0.5
    return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])


@dataclass(frozen=True, eq=False)
class Frame:
    """What one camera saw of one state. Images are None for kinds not asked for;
    `cam_xpos` / `cam_xmat` are that state's camera poses (Camera.world_from_camera)."""

    camera: Camera
    frame_id: int  # one more for every frame its renderer made
    sim_time: float  # the time of the state rendered
    width: int
    height: int
    rgb: np.ndarray | None  # (H, W, 3) uint8
    depth: np.ndarray | None  # (H, W) float32 metres
    segmentation: np.ndarray | None  # (H, W, 2) int32: object id, mjtObj type
    K: np.ndarray  # 3 x 3, OpenCV
    cam_xpos: np.ndarray
    cam_xmat: np.ndarray

    @property
    def world_from_camera(self) -> np.ndarray:
        return self.camera.world_from_camera(self)

    @property
    def camera_from_world_cv(self) -> np.ndarray:
        return self.camera.camera_from_world_cv(self)


def load_state(model, data, state, spec: int = STATE) -> None:
    """Put a state into `data` and compute what drawing needs (mj_forward).

    `state`: an `mj_getState` vector of `spec`, or anything with qpos, qvel, act,
    mocap_pos, mocap_quat and time (a runner Snapshot; an MjData, read where no
    other thread steps it), whose ctrl and eq_active are taken too where present."""
    if isinstance(state, np.ndarray):
        mujoco.mj_setState(model, data, state, spec)
    else:
        data.qpos[:] = state.qpos
        data.qvel[:] = state.qvel
        data.act[:] = state.act
        data.mocap_pos[:] = state.mocap_pos
        data.mocap_quat[:] = state.mocap_quat
        data.time = state.time
        for field in ("ctrl", "eq_active"):
            if hasattr(state, field):
                getattr(data, field)[:] = getattr(state, field)
    mujoco.mj_forward(model, data)


class CameraRenderer:
    """Renders a model's cameras from states with mujoco.Renderer: one private MjData,
    one mujoco.Renderer per image size, made on first use. Use it from one thread."""

    def __init__(self, model: mujoco.MjModel, max_geom: int = 10000):
        self.model = model
        self.data = mujoco.MjData(model)
        self.max_geom = max_geom
        self.frames = 0
        self._renderers: dict = {}  # (width, height) -> mujoco.Renderer

    def camera(self, which) -> Camera:
        return camera(self.model, which)

    def render(self, state, which, kinds=("rgb",), width: int | None = None, height: int | None = None,
               spec: int = STATE) -> Frame:
        """One Frame of camera `which` (name or id) of `state` (see load_state), of the
        `kinds` asked for, at (width, height), the camera's own resolution by default."""
        cam = self.camera(which)
        kinds = tuple(kinds)
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds:
            raise CameraError(f"Unknown image kind {unknown or kinds!r} for camera '{cam.name}' "
                              f"(kinds: {', '.join(KINDS)})")
        width, height = width or cam.width, height or cam.height
        renderer = self._renderer(cam, width, height)
        load_state(self.model, self.data, state, spec)
        return self.render_loaded(renderer, cam, kinds, width, height)

    def render_loaded(self, renderer, cam: Camera, kinds, width: int, height: int) -> Frame:
        """Render the state already in self.data (load_state was called)."""
        renderer.update_scene(self.data, cam.id)
        images = {}
        for kind in kinds:
            if kind == "depth":
                renderer.enable_depth_rendering()
            elif kind == "segmentation":
                renderer.enable_segmentation_rendering()
            else:
                renderer.disable_depth_rendering()
                renderer.disable_segmentation_rendering()
            images[kind] = renderer.render()
        renderer.disable_depth_rendering()
        renderer.disable_segmentation_rendering()
        self.frames += 1
        return Frame(camera=cam, frame_id=self.frames, sim_time=float(self.data.time), width=width,
                     height=height, rgb=images.get("rgb"), depth=images.get("depth"),
                     segmentation=images.get("segmentation"), K=cam.K(width, height),
                     cam_xpos=self.data.cam_xpos.copy(), cam_xmat=self.data.cam_xmat.copy())

    def _renderer(self, cam: Camera, width: int, height: int):
        key = (width, height)
        if key in self._renderers:
            return self._renderers[key]
        check_size(self.model, cam, width, height)
        if _context_failed:
            raise RendererUnavailable(_context_failed[0])
        try:
            renderer = mujoco.Renderer(self.model, height, width, max_geom=self.max_geom)
        except ValueError as exc:  # (the size was checked: this is MuJoCo's own refusal)
            raise CameraError(f"Camera '{cam.name}': {exc}") from exc
        except mujoco.FatalError as exc:  # mjr_makeContext failed: never call it again here
            _context_failed.append(f"{renderer_unavailable(exc)} {NO_RETRY}")
            raise RendererUnavailable(_context_failed[0]) from exc
        except Exception as exc:  # noqa: BLE001 -- any backend failure: no GL context here
            raise renderer_unavailable(exc) from exc
        self._renderers[key] = renderer
        return renderer

    def upload_textures(self, textures) -> None:
        """Send changed texture pixels (`model.tex_data` of these texture ids) to every
        renderer made so far (one made later uploads all textures itself).
        mujoco.Renderer keeps its GL context private, hence its attributes here."""
        for renderer in self._renderers.values():
            renderer._gl_context.make_current()
            for tex in textures:
                mujoco.mjr_uploadTexture(self.model, renderer._mjr_context, int(tex))

    def close(self) -> None:
        """Free every GL context (on the thread that rendered with them)."""
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class RenderThread:
    """A CameraRenderer that lives on a thread of its own, called synchronously:
    `render` (as CameraRenderer.render) and `call(fn, ...)` run there and return its
    result or raise its error. For callers on a thread where MuJoCo's renderer cannot
    run: Blender's main thread in a window, which holds Blender's OpenGL context (EGL
    refuses it with EGL_BAD_ACCESS; CGL and glfw would replace that context). Frames are
    CameraRenderer's, made in the same order."""

    def __init__(self, model, max_geom: int = 10000, name: str = "MJBlend renderer"):
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=name)  # (one thread, kept)
        self.renderer = self.call(CameraRenderer, model, max_geom)

    @property
    def model(self):
        return self.renderer.model

    def call(self, fn, *args, **kwargs):
        """`fn(*args, **kwargs)` on the render thread (where its GL contexts are current)."""
        return self._executor.submit(fn, *args, **kwargs).result()

    def render(self, *args, **kwargs) -> Frame:
        return self.call(self.renderer.render, *args, **kwargs)

    def upload_textures(self, textures) -> None:
        """CameraRenderer.upload_textures, on the render thread (where its contexts live)."""
        self.call(self.renderer.upload_textures, textures)

    def close(self) -> None:
        """Free the GL contexts on their thread, then end it (a second close does nothing)."""
        if self._executor is not None:
            self.call(self.renderer.close)
            self._executor.shutdown()
            self._executor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_size(model, cam: Camera, width: int, height: int) -> None:
    """CameraError unless (width, height) fits the model's offscreen buffer, the cap
    mujoco.Renderer draws into (visual/global offwidth, offheight)."""
    buffer = (model.vis.global_.offwidth, model.vis.global_.offheight)
    if width < 1 or height < 1 or width > buffer[0] or height > buffer[1]:
        raise CameraError(
            f"Camera '{cam.name}': {width} x {height} pixels do not fit the model's offscreen buffer, "
            f"{buffer[0]} x {buffer[1]}, the largest image MuJoCo's renderer draws. Ask for a smaller "
            f"size, or raise the buffer in the MJCF: <visual><global offwidth=\"{max(width, buffer[0])}\" "
            f"offheight=\"{max(height, buffer[1])}\"/></visual> (MjSpec: spec.visual.global_.offwidth / "
            f"offheight)")


def renderer_unavailable(exc: BaseException) -> RendererUnavailable:
    """The error for a renderer that cannot start: which backend mujoco took (and,
    if mujoco was imported before the add-on chose one, that), and what to set."""
    return RendererUnavailable(gl_backend.explain(exc))


@dataclass(frozen=True)
class Request:
    """What a RenderWorker renders: these cameras' kinds at one size (None: each
    camera's own), once (`continuous` False) or from every new snapshot."""

    cameras: tuple
    kinds: tuple = ("rgb",)
    width: int | None = None
    height: int | None = None
    continuous: bool = True


class RenderWorker:
    """A thread that renders the newest Request from the newest snapshot, beside the
    runner and never blocking it: `source()` returns the latest snapshot (e.g.
    `lambda: runner.latest`), `notify()` (e.g. `runner.listen(lambda s: worker.notify())`)
    says a new one is there. Only the newest request is kept; frames are read with
    `latest(name)` or waited for with `wait(frame_id)`; `fps` is the frames per
    second it made over the last second or so. A request's error (unknown camera,
    size) is raised by `request` itself; a renderer that fails later is kept in `error`."""

    def __init__(self, source, name: str = "MJBlend cameras", max_geom: int = 10000, renderer=None):
        self.source = source
        self.name = name
        self.max_geom = max_geom
        # what draws: CameraRenderer's interface (engine/render_process.ProcessRenderer: in a child process)
        self.make_renderer = renderer or CameraRenderer
        self.error: BaseException | None = None
        self._request: Request | None = None
        self._request_id = 0
        self._done = (0, -1)  # (request id, snapshot frame) rendered last
        self._frames: dict = {}  # camera name -> newest Frame
        self._frame_id = 0
        self._times: list = []  # wall times of the recent frames (fps)
        self._changed = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            alive = self._thread.is_alive()
            self._thread = None
            return not alive
        return True

    def request(self, request: Request) -> int:
        """Replace what is rendered; the request checked first (CameraError). Its id."""
        snapshot = self.source()
        if snapshot is not None:
            for which in request.cameras:
                cam = camera(snapshot.model, which)
                check_size(snapshot.model, cam, request.width or cam.width, request.height or cam.height)
            bad = [k for k in request.kinds if k not in KINDS]
            if bad or not request.kinds:
                raise CameraError(f"Unknown image kind {bad or request.kinds!r} (kinds: {', '.join(KINDS)})")
        with self._changed:
            self._request_id += 1
            self._request = request
            self._changed.notify_all()
            return self._request_id

    def notify(self) -> None:
        """A new snapshot is there (cheap: call it from the publishing thread)."""
        with self._changed:
            self._changed.notify_all()

    def latest(self, name: str) -> Frame | None:
        with self._changed:
            return self._frames.get(name)

    @property
    def frame_id(self) -> int:
        return self._frame_id

    @property
    def fps(self) -> float:
        with self._changed:
            times = list(self._times)
        if len(times) < 2 or time.perf_counter() - times[-1] > 1.0:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0])

    def wait(self, frame_id: int, timeout: float | None = None) -> bool:
        """Wait until a frame with id >= frame_id is out (False on timeout or an error)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._frame_id >= frame_id or self.error is not None,
                                          timeout) and self.error is None

    def wait_request(self, request_id: int, timeout: float | None = None) -> bool:
        """Wait until request `request_id` (request's return) or a newer one has frames."""
        with self._changed:
            return self._changed.wait_for(lambda: self._done[0] >= request_id or self.error is not None,
                                          timeout) and self.error is None

    def _work(self):
        """(request id, request, snapshot) to render now, or None."""
        request, snapshot = self._request, self.source()
        if request is None or snapshot is None:
            return None
        if self._done[0] == self._request_id and (not request.continuous or self._done[1] == snapshot.frame):
            return None
        return self._request_id, request, snapshot

    def _loop(self) -> None:
        renderer = None
        try:
            while True:
                with self._changed:
                    work = None
                    while not self._stopping and self.error is None:
                        work = self._work()
                        if work is not None:
                            break
                        self._changed.wait(0.1)  # (notify wakes it sooner)
                    if self._stopping or self.error is not None:
                        return
                request_id, request, snapshot = work
                if renderer is None or renderer.model is not snapshot.model:
                    if renderer is not None:
                        renderer.close()
                    renderer = self.make_renderer(snapshot.model, self.max_geom)
                frames = []
                for which in request.cameras:
                    frame = renderer.render(snapshot, which, request.kinds, request.width, request.height)
                    frames.append(frame)
                now = time.perf_counter()
                with self._changed:
                    for frame in frames:
                        self._frame_id += 1
                        frame = _numbered(frame, self._frame_id)
                        self._frames[frame.camera.name] = frame
                    self._done = (request_id, snapshot.frame)
                    self._times = [t for t in self._times if now - t <= 1.0] + [now]
                    self._changed.notify_all()
        except BaseException as exc:  # noqa: BLE001 -- kept for the caller; the thread ends
            with self._changed:
                self.error = exc
                self._changed.notify_all()
        finally:
            if renderer is not None:
                renderer.close()


def _numbered(frame: Frame, frame_id: int) -> Frame:
    return replace(frame, frame_id=frame_id)

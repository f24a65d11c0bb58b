"""Cameras over the bridge, laid out as URLab serves them.

Every MJCF camera of the served model is a URLab camera. Its name on the wire
(the `camera_topics` key, the ZMQ topic, `set_camera_streaming`'s key) is its
compiled MuJoCo name, e.g. `arm_wrist` for camera `wrist` of model root `arm`
(URLab's canonical name: the MuJoCo name, '/' and '\\' made '_'). It belongs to
the entity whose prefix its name carries; cameras of no entity are `global_cameras`.

Frames come from MuJoCo's renderer (engine/cameras.py) unless the client or the
scene asks for Blender's (below), on one thread of their
own, which owns its GL context and a private MjData: it renders states it is
handed (copies of the state a direct step made, or the runner's published
snapshots in live mode), never the runner's MjData, never bpy. A streaming
camera is published on

- ZMQ: one PUB socket per camera, bound on the first free port from 5558 (up to
  5567), send high-water mark 10, two frames [topic][payload], and
- shared memory: `cam_<prefix>_<name>.shm` in the handshake's `shm_session_dir`
  (global cameras: prefix `global`), URLab's 64-byte `URLB` header and two slots
  of `[u32 size][payload]`; the slot that is not latest written, then
  `latest_idx`, then `sequence` (bridge/shm_transport.Region).

A payload is URLab's frame header v2 (`UCM1`, 40 bytes, little-endian:
magic u32, version u32 = 2, frame_id u64, sim_time f64, width u32, height u32,
capture_unix_time f64) and the pixels, row 0 at the top: BGRA8 for mode `real`,
float32 metres for `depth`, and for `instance` / `semantic` the int32 (object id + 1)
or (object type + 1) of MuJoCo's segmentation, 0 where nothing is drawn (4
bytes a pixel, as URLab's BGRA8 segmentation). `frame_id` is the id of the state
rendered (the step reply's `frame_id`), `sim_time` its time.

A PUB socket never blocks: a subscriber that does not read loses frames beyond
its queue; the simulation is not slowed. Frames are rendered once per new state
(newest first: states that come faster than frames are skipped), so a camera
costs the simulation nothing but a state copy per direct step.

Blender's renderer (a camera's `renderer` "blender": asked by the client in
`set_camera_streaming` or `include_cameras`, or the host's default, the scene's
Bridge setting) draws on Blender's main thread only, never here: the host's
`blender_frames` (bridge/blender_frames.py) carries asks there, and the main
thread renders the newest state for streaming Blender cameras (`blender_due`)
and hands the frames back (`deliver`); this thread publishes them as it does its
own. A host without Blender (ModelHost) has no `blender_frames`: "blender" is refused.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import struct
import threading
import time
import zlib
from concurrent.futures import Future

import numpy as np
import zmq

from ..engine import cameras as engine_cameras
from ..engine.errors import MJBlendError
from .entities import matches
from .wire import ProtocolError

FRAME_MAGIC = 0x314D4355  # 'UCM1', little-endian
FRAME_VERSION = 2
FRAME_HEADER = struct.Struct("<IIQdIId")  # 40 bytes: magic, version, frame_id, sim_time, w, h, capture time
BASE_PORT = 5558
PORT_TRIES = 10  # 5558 .. 5567
SEND_HWM = 10
SLOTS = 2
MODES = ("real", "depth", "semantic", "instance")
KINDS = {"real": "rgb", "depth": "depth", "semantic": "segmentation", "instance": "segmentation"}
RENDERERS = ("mujoco", "blender")
GLOBAL = "global"  # the stream prefix URLab's client gives a camera of no entity
CAPTURE_TIMEOUT = 10.0  # seconds an include_cameras render may take (a first one makes a GL context)


@dataclasses.dataclass
class Delay:
    """set_camera_delay, as URLab: a frame is published `delay_s` after its state
    (each frame's delay drawn uniformly from delay_s +- jitter_s, clamped at 0, by
    a per-camera generator seeded with `seed`, or from the camera's name for 0),
    on the simulation's clock ("sim") or the wall clock ("wall"); at most `max_fps`
    frames a second are rendered (0: every new state)."""

    delay_s: float = 0.0
    jitter_s: float = 0.0
    clock: str = "sim"
    seed: int = 0
    on_state_change: bool = True
    max_fps: float = 0.0

    def echo(self) -> dict:
        return {"delay_s": self.delay_s, "jitter_s": self.jitter_s, "clock": self.clock,
                "seed": self.seed, "on_state_change": self.on_state_change, "max_fps": self.max_fps}


@dataclasses.dataclass(eq=False)
class ServedCamera:
    """One camera as the bridge serves it."""

    name: str  # compiled MuJoCo name: the wire name
    id: int
    prefix: str  # its entity's prefix, or GLOBAL
    mode: str
    width: int
    height: int
    fovy: float
    port: int  # where its PUB binds first (advertised before it streams)
    renderer: str | None = None  # asked by the client or the host's settings (None: the host's default)
    zmq: bool = False
    shm: bool = False
    socket: object = None
    endpoint: str = ""
    region: object = None
    delay: Delay = dataclasses.field(default_factory=Delay)
    rng: random.Random = dataclasses.field(default_factory=random.Random)
    pending: list = dataclasses.field(default_factory=list)  # (due, payload) waiting for their delay
    rendered_at: float = -math.inf  # wall time of its last frame (max_fps)
    published: int = 0

    @property
    def streaming(self) -> bool:
        return self.zmq or self.shm

    def topic(self, address: str, renderer: str) -> dict:
        """Its `camera_topics` entry (URLab's hello)."""
        endpoint = self.endpoint or f"tcp://{address}:{self.port}"
        return {"mode": self.mode, "resolution": [self.width, self.height], "fovy": self.fovy,
                "zmq_endpoint": endpoint.replace("*", "127.0.0.1"), "zmq_topic": self.name,
                "renderer": renderer}


@dataclasses.dataclass(frozen=True)
class StateCopy:
    """What drawing needs of a state (engine.cameras.load_state), copied so the
    render thread reads nothing that the simulation goes on writing."""

    model: object
    frame: int
    time: float
    qpos: np.ndarray
    qvel: np.ndarray
    act: np.ndarray
    ctrl: np.ndarray
    mocap_pos: np.ndarray
    mocap_quat: np.ndarray

    @classmethod
    def of(cls, state) -> StateCopy:
        if isinstance(state, cls):
            return state
        return cls(state.model, int(state.frame), float(state.time), np.array(state.qpos),
                   np.array(state.qvel), np.array(state.act), np.array(state.ctrl),
                   np.array(state.mocap_pos), np.array(state.mocap_quat))


def pixels(frame: engine_cameras.Frame, mode: str) -> tuple[str, np.ndarray]:
    """(URLab dtype, the 4-byte-a-pixel image) of a rendered frame in `mode`."""
    if mode == "real":
        out = np.empty((frame.height, frame.width, 4), np.uint8)
        out[..., 0], out[..., 1], out[..., 2] = frame.rgb[..., 2], frame.rgb[..., 1], frame.rgb[..., 0]
        out[..., 3] = 255
        return "bgra8", out
    if mode == "depth":
        return "float32", np.ascontiguousarray(frame.depth, dtype="<f4")
    ids = frame.segmentation[..., 0 if mode == "instance" else 1]
    return "bgra8", (ids.astype("<i4") + 1)


def header(frame_id: int, sim_time: float, width: int, height: int, capture: float) -> bytes:
    return FRAME_HEADER.pack(FRAME_MAGIC, FRAME_VERSION, frame_id, sim_time, width, height, capture)


class CameraStreams:
    """The served model's cameras, their streams and the thread that renders them."""

    def __init__(self, address: str = "127.0.0.1", base_port: int = BASE_PORT, shm_dir=lambda: None,
                 settings=None, blender=None, default_renderer=None):
        """`shm_dir`: () -> the directory camera rings go in (the shared-memory
        transport's session, None if the bridge serves none). `settings`: () ->
        {camera name: {"mode", "resolution", "renderer"}} the host asks for.
        `blender`: the host's BlenderFrames (None: no Blender to render with);
        `default_renderer`: () -> the renderer of a camera nobody named one for."""
        self.address, self.base_port = address, base_port
        self.shm_dir = shm_dir
        self.settings = settings or (lambda: {})
        self.blender = blender
        self.default_renderer = default_renderer or (lambda: "mujoco")
        self._delivered: list = []  # (camera, frame_id, sim_time, engine Frame) Blender rendered
        self.blender_last_frame = -1  # the newest state the streaming Blender cameras had
        self.model = None
        self.cameras: dict[str, ServedCamera] = {}
        self._context = zmq.Context()
        self._out = threading.Lock()  # sockets and rings: made, used, closed under it
        self._wake = threading.Condition()
        self._jobs: list = []  # (cameras, state, future): renders a reply waits for
        self._offered = None  # newest state handed over by a direct step (a StateCopy)
        self._runner = None
        self._last_frame = -1  # the newest state streamed
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None  # a renderer that failed while streaming
        self._ready: set = set()

    # ---------------------------------------------------------------- model

    def serve(self, model, entities) -> None:
        """Describe `model`'s cameras (a new model: every stream of the old one ends)."""
        if model is self.model:
            return
        self.close_streams()
        settings = self.settings() or {}
        served = {}
        for cam in engine_cameras.cameras(model):
            owner = next((e.prefix for e in entities if matches(cam.name, e.prefix)), GLOBAL)
            asked = settings.get(cam.name, {})
            width, height = asked.get("resolution", (cam.width, cam.height))
            served[cam.name] = ServedCamera(
                name=cam.name, id=cam.id, prefix=owner, mode=asked.get("mode", "real"), width=int(width),
                height=int(height), fovy=cam.fovy, port=self.base_port + min(len(served), PORT_TRIES - 1),
                renderer=asked.get("renderer"))
        self.model, self.cameras = model, served
        self._ready = set()  # image sizes whose renderer the render thread has made
        self.blender_last_frame = -1  # (a new model's simulation may number its states anew)

    def topics(self, prefix: str) -> dict:
        return {c.name: c.topic(self.address, self.renderer_of(c)) for c in self.cameras.values()
                if c.prefix == prefix}

    def renderer_of(self, camera: ServedCamera, asked: str | None = None) -> str:
        """Which renderer draws `camera`: `asked` (a request's), else the one the client
        or the settings named for it, else the host's default (the scene's setting)."""
        return asked or camera.renderer or self.default_renderer() or "mujoco"

    def find(self, name) -> ServedCamera:
        camera = self.cameras.get(name) if isinstance(name, str) else None
        if camera is None:
            there = ", ".join(self.cameras) or "none: the model has no camera"
            raise ProtocolError("unknown_camera", f"no camera {str(name)[:60]!r} (the scene's cameras, by "
                                f"their URLab names: {there})")
        return camera

    def check(self, camera: ServedCamera, renderer: str | None = None) -> None:
        """The clear error a camera that cannot be served gets (before anything changes)."""
        renderer = self.renderer_of(camera, renderer)
        if renderer not in RENDERERS:
            raise ProtocolError("bad_value", f"camera {camera.name!r}: unknown renderer "
                                f"{str(renderer)[:40]!r} (renderers: {', '.join(RENDERERS)})")
        if renderer == "blender" and self.blender is None:
            raise ProtocolError("unsupported", f"camera {camera.name!r}: this server has no Blender to "
                                "render with (it serves a model file, not a Blender scene); ask for renderer "
                                "'mujoco' (MuJoCo's renderer), or serve the scene from Blender (the Bridge "
                                "panel, or `blender --command mjblend_serve`)")
        if camera.mode not in MODES:
            raise ProtocolError("bad_value", f"camera {camera.name!r}: unknown mode {camera.mode!r} "
                                f"(modes: {', '.join(MODES)})")
        if renderer == "blender":
            return  # (its size is Blender's to refuse: up to 8192 a side)
        try:
            engine_cameras.check_size(self.model, engine_cameras.camera(self.model, camera.id),
                                      camera.width, camera.height)
        except engine_cameras.CameraError as problem:
            raise ProtocolError("bad_resolution", str(problem)) from None

    # ------------------------------------------------------------ streaming

    def set_streaming(self, wanted: dict) -> dict:
        """{name: (zmq, shm, renderer or None)} applied whole or not at all."""
        cameras = {name: self.find(name) for name in wanted}
        for name, (zmq_on, shm_on, renderer) in wanted.items():
            if zmq_on or shm_on:
                self.check(cameras[name], renderer)
        renderers = {n: self.renderer_of(cameras[n], r) for n, (_, _, r) in wanted.items()}
        starting = [cameras[n] for n, (z, s, _) in wanted.items()
                    if (z or s) and (not cameras[n].streaming
                                     or renderers[n] != self.renderer_of(cameras[n]))]
        if starting:  # (a renderer that cannot start fails here, nothing changed)
            self.prepare([c for c in starting if renderers[c.name] == "mujoco"])
            self.prepare_blender([c for c in starting if renderers[c.name] == "blender"])
        made = []
        try:
            for name, (zmq_on, shm_on, _) in wanted.items():
                camera = cameras[name]
                if zmq_on and camera.socket is None:
                    made.append(("zmq", camera, self._bind(camera)))
                if shm_on and camera.region is None:
                    made.append(("shm", camera, self._ring(camera)))
        except Exception:
            for _, _, thing in made:
                self._close(thing)
            raise
        with self._out:
            for kind, camera, thing in made:
                if kind == "zmq":
                    camera.socket, camera.endpoint = thing
                else:
                    camera.region = thing
            for name, (zmq_on, shm_on, renderer) in wanted.items():
                camera = cameras[name]
                if renderer is not None:
                    camera.renderer = renderer
                camera.zmq, camera.shm = bool(zmq_on and camera.socket), bool(shm_on and camera.region)
                if not zmq_on and camera.socket is not None:
                    self._close((camera.socket, camera.endpoint))
                    camera.socket, camera.endpoint = None, ""
                if not shm_on and camera.region is not None:
                    self._close(camera.region)
                    camera.region = None
                if not camera.streaming:
                    camera.pending.clear()
        self._last_frame = self.blender_last_frame = -1  # (a camera switched on gets the state now)
        self._poke()
        out = {}
        for name in wanted:
            camera = cameras[name]
            entry = {"streaming": camera.streaming, "zmq": camera.zmq, "shm": camera.shm,
                     "renderer": self.renderer_of(camera)}
            if camera.zmq:
                entry.update(zmq_endpoint=camera.endpoint.replace("*", "127.0.0.1"), zmq_topic=camera.name)
            if camera.shm:
                entry["shm_path"] = camera.region.path
            out[name] = entry
        return out

    def set_delay(self, wanted: dict) -> dict:
        cameras = {name: self.find(name) for name in wanted}
        for name, delay in wanted.items():
            camera = cameras[name]
            camera.delay = delay
            camera.rng = random.Random(delay.seed or zlib.crc32(name.encode()))
        return {name: cameras[name].delay.echo() for name in wanted}

    def _bind(self, camera: ServedCamera):
        socket = self._context.socket(zmq.PUB)
        socket.setsockopt(zmq.SNDHWM, SEND_HWM)
        socket.setsockopt(zmq.LINGER, 0)
        for port in range(self.base_port, self.base_port + PORT_TRIES):
            endpoint = f"tcp://{self.address}:{port}"
            try:
                socket.bind(endpoint)
                return socket, endpoint
            except zmq.ZMQError:
                continue
        socket.close(linger=0)
        last = self.base_port + PORT_TRIES - 1
        raise ProtocolError("port_in_use", f"camera {camera.name!r}: no free port for its stream from "
                            f"{self.base_port} to {last} on {self.address} (each streaming camera takes "
                            "one; stop another server or stream fewer cameras)")

    def _ring(self, camera: ServedCamera):
        from .shm_transport import Region  # (Linux and macOS only)
        folder = self.shm_dir()
        if folder is None:
            return None  # (no shared-memory transport: the client has no folder to look in)
        path = os.path.join(folder, f"cam_{camera.prefix}_{camera.name}.shm")
        if os.path.exists(path):
            os.unlink(path)
        stride = camera.width * camera.height * 4 + 4 + FRAME_HEADER.size
        return Region(path, stride, SLOTS)

    @staticmethod
    def _close(thing) -> None:
        if thing is None:
            return
        if isinstance(thing, tuple):
            thing[0].close(linger=0)
            return
        thing.close()
        try:
            os.unlink(thing.path)
        except OSError:
            pass

    def close_streams(self) -> None:
        with self._out:
            for camera in self.cameras.values():
                self._close((camera.socket, camera.endpoint) if camera.socket is not None else None)
                self._close(camera.region)
                camera.socket, camera.endpoint, camera.region = None, "", None
                camera.zmq = camera.shm = False
                camera.pending.clear()

    @property
    def streaming(self) -> list:
        return [c for c in self.cameras.values() if c.streaming]

    @property
    def blender_streaming(self) -> list:
        """The streaming cameras Blender renders (on its main thread)."""
        return [c for c in self.streaming if self.renderer_of(c) == "blender"]

    # --------------------------------------------------------------- states

    def attach(self, runner) -> None:
        """Stream `runner`'s published snapshots in live mode."""
        if self._runner is not None:
            self._runner.unlisten(self._snapshot)
        self._runner = runner
        if runner is not None:
            runner.listen(self._snapshot)

    def _snapshot(self, shot) -> None:  # (the physics thread: as little as possible)
        if self._thread is not None and self.streaming:
            self._poke()

    def offer(self, state) -> None:
        """A state the bridge stepped itself (direct and puppet modes): rendered for the
        streaming cameras (copied here, the step goes on)."""
        if self.streaming and state.model is self.model:
            with self._wake:
                self._offered = StateCopy.of(state)
                self._wake.notify_all()

    def capture(self, state, names, timeout: float = CAPTURE_TIMEOUT, snapshot=None) -> dict:
        """include_cameras: {name: {width, height, frame_id, sim_time, dtype, data}} of
        `state`, rendered now (MuJoCo's on the render thread, Blender's on Blender's main
        thread: the caller waits). `names`: a list, or {name: renderer or None};
        `snapshot`: `state` published as a snapshot (what Blender's objects show; needed
        when a camera is Blender's and `state` is not one)."""
        asked = names if isinstance(names, dict) else dict.fromkeys(names)
        cameras = [self.find(name) for name in asked]
        for camera in cameras:
            self.check(camera, asked[camera.name])
        drawn_by = {c.name: self.renderer_of(c, asked[c.name]) for c in cameras}
        ours = [c for c in cameras if drawn_by[c.name] == "mujoco"]
        blenders = [c for c in cameras if drawn_by[c.name] == "blender"]
        frames = self._run(ours, StateCopy.of(state), timeout) if ours else {}
        if blenders:
            shot = snapshot if snapshot is not None else state
            if int(shot.frame) != int(state.frame):
                raise ProtocolError("internal_error",
                                    "Blender's cameras need the state as a published snapshot")
            frames.update(self.blender.ask(blenders, shot))
        out = {}
        for camera in cameras:
            dtype, image = pixels(frames[camera.name], camera.mode)
            out[camera.name] = {"width": camera.width, "height": camera.height, "frame_id": int(state.frame),
                                "sim_time": float(state.time), "dtype": dtype, "data": image.tobytes()}
        return out

    def prepare(self, cameras) -> None:
        """Make the renderers `cameras` need (their GL contexts), or say why not: a
        renderer that cannot start is refused before a request changes anything."""
        if any((c.width, c.height) not in self._ready for c in cameras):
            self._run(cameras, None, CAPTURE_TIMEOUT)

    def prepare_blender(self, cameras) -> None:
        """Blender's renderer tried once on `cameras` (the newest state, frames dropped):
        an engine that cannot render here is refused before anything changes."""
        new = [c for c in cameras if (c.name, c.width, c.height) not in self._ready]
        if new:
            self.blender.ask(new, None)
            self._ready.update((c.name, c.width, c.height) for c in new)

    # ------------------------------------------- Blender's frames (main thread)

    def blender_due(self, now: float | None = None) -> list:
        """(Blender's main thread) The streaming Blender cameras whose max_fps lets them
        have a frame now."""
        now = time.monotonic() if now is None else now
        return [c for c in self.blender_streaming
                if not c.delay.max_fps or now - c.rendered_at >= 1.0 / c.delay.max_fps]

    def deliver(self, frames: dict, frame_id: int, sim_time: float) -> None:
        """(Blender's main thread) {name: engine Frame} Blender rendered of state
        `frame_id` for streaming cameras: published by this module's thread (delays,
        transports) as its own frames are."""
        now = time.monotonic()
        self.blender_last_frame = max(self.blender_last_frame, int(frame_id))
        with self._wake:
            for name, frame in frames.items():
                camera = self.cameras.get(name)
                if camera is not None:
                    camera.rendered_at = now
                    self._delivered.append((camera, int(frame_id), float(sim_time), frame))
            self._wake.notify_all()
        self._start()

    def _run(self, cameras, state, timeout: float) -> dict:
        self._start()
        done: Future = Future()
        with self._wake:
            self._jobs.append((cameras, state, done))
            self._wake.notify_all()
        try:
            return done.result(timeout)
        except TimeoutError:
            raise ProtocolError("camera_timeout",
                                f"the cameras were not rendered within {timeout:g} s") from None
        except engine_cameras.RendererUnavailable as problem:
            raise ProtocolError("renderer_unavailable", str(problem)) from None
        except MJBlendError as problem:
            raise ProtocolError("camera_error", str(problem)) from None

    def _poke(self) -> None:
        with self._wake:
            self._wake.notify_all()

    # --------------------------------------------------------------- thread

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stopping, self.error = False, None
            self._thread = threading.Thread(target=self._loop, name="MJBlend bridge cameras", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        if self.blender is not None:
            self.blender.close()  # (a request waiting for Blender's frames fails now)
        self.attach(None)
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.close_streams()
        self._context.term()

    def _newest(self):
        """The newest state no streaming camera has had yet, or None."""
        state = self._offered
        # (while the bridge steps the simulation itself, the runner's snapshot is of before)
        shot = self._runner.latest if self._runner is not None and not self._runner.lent else None
        if shot is not None and shot.model is self.model and (state is None or shot.frame > state.frame):
            state = shot
        if state is None or state.frame == self._last_frame:
            return None
        return state

    def _due(self) -> float | None:
        """Seconds until the next delayed frame is due on the wall clock (None: none waits)."""
        waits = [due - time.monotonic() for c in self.streaming if c.delay.clock == "wall"
                 for due, _ in c.pending]
        return max(0.0, min(waits)) if waits else None

    def _loop(self) -> None:
        renderer = None
        try:
            while True:
                with self._wake:
                    while True:
                        if self._stopping:
                            return
                        if self._jobs:
                            job = self._jobs.pop(0)
                            break
                        if self._delivered:
                            delivered, self._delivered = self._delivered, []
                            job = ("delivered", delivered)
                            break
                        state = self._newest() if self.streaming else None
                        if state is not None:
                            job = None
                            break
                        due = self._due()
                        if due == 0.0:
                            job = state = None
                            break
                        self._wake.wait(0.05 if due is None else min(due, 0.05))
                if job is not None and job[0] == "delivered":
                    for camera, frame_id, sim_time, frame in job[1]:
                        if camera.streaming:
                            self._send(camera, frame, frame_id, sim_time, time.monotonic())
                    continue
                if job is not None:
                    cameras, job_state, done = job
                    if not done.set_running_or_notify_cancel():
                        continue
                    try:
                        if renderer is None or renderer.model is not self.model:
                            renderer = self._renderer(renderer)
                        done.set_result(self._render(renderer, cameras, job_state))
                    except BaseException as problem:  # noqa: BLE001 -- the waiting request says it
                        done.set_exception(problem)
                    continue
                if state is not None:
                    if renderer is None or renderer.model is not self.model:
                        renderer = self._renderer(renderer)
                    self._stream(renderer, state)
                self._release(state)
        except BaseException as problem:  # noqa: BLE001 -- kept for the status; the thread ends
            self.error = problem
        finally:
            if renderer is not None:
                renderer.close()

    def _renderer(self, old):
        if old is not None:
            old.close()
        return engine_cameras.CameraRenderer(self.model)

    def _render(self, renderer, cameras, state) -> dict:
        """{name: engine Frame} of `state` (None: make the renderers only)."""
        if state is not None:
            engine_cameras.load_state(self.model, renderer.data, state)
        frames = {}
        for camera in cameras:
            cam = engine_cameras.camera(self.model, camera.id)
            gl = renderer._renderer(cam, camera.width, camera.height)
            self._ready.add((camera.width, camera.height))
            if state is not None:
                frames[camera.name] = renderer.render_loaded(gl, cam, (KINDS[camera.mode],), camera.width,
                                                             camera.height)
        return frames

    def _stream(self, renderer, state) -> None:
        self._last_frame = state.frame
        now = time.monotonic()
        cameras = [c for c in self.streaming if self.renderer_of(c) == "mujoco"
                   and (not c.delay.max_fps or now - c.rendered_at >= 1.0 / c.delay.max_fps)]
        if not cameras:
            return
        frames = self._render(renderer, cameras, state)
        for camera in cameras:
            camera.rendered_at = now
            self._send(camera, frames[camera.name], int(state.frame), float(state.time), now)

    def _send(self, camera: ServedCamera, frame, frame_id: int, sim_time: float, now: float) -> None:
        """Publish `frame` of state (frame_id, sim_time), or keep it for its delay."""
        payload = header(frame_id, sim_time, camera.width, camera.height, time.time()) \
            + pixels(frame, camera.mode)[1].tobytes()
        delay = camera.delay
        wait = delay.delay_s
        if delay.jitter_s > 0:
            low, high = delay.delay_s - delay.jitter_s, delay.delay_s + delay.jitter_s
            wait = max(0.0, camera.rng.uniform(low, high))
        if wait <= 0:
            self._publish(camera, payload)
        else:
            base = sim_time if delay.clock == "sim" else now
            camera.pending.append((base + wait, payload))

    def _release(self, state) -> None:
        """Publish the delayed frames that are due (sim clock: by `state`'s time)."""
        for camera in self.streaming:
            if not camera.pending:
                continue
            clock = camera.delay.clock
            now = time.monotonic() if clock == "wall" else (float(state.time) if state is not None else None)
            if now is None:
                continue
            while camera.pending and camera.pending[0][0] <= now:
                self._publish(camera, camera.pending.pop(0)[1])

    def _publish(self, camera: ServedCamera, payload: bytes) -> None:
        with self._out:
            if camera.socket is not None:
                try:
                    camera.socket.send_multipart([camera.name.encode(), payload], flags=zmq.NOBLOCK)
                except zmq.Again:
                    pass  # (PUB drops for a subscriber whose queue is full; never blocks)
            if camera.region is not None:
                camera.region.write(payload)
            camera.published += 1


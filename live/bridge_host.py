"""The Blender side of the bridge: one scene's live simulation served over the network.

`SceneHost` is what the bridge's dispatcher reads (bridge/host.py): the runner
of the scene's `LiveSimulation`, the entity prefixes of its model roots, where
recordings go. The dispatcher and the state stream call it from their own
threads, so it never touches Blender data there: everything Blender knows
(prefixes, folder, name) is read on the main thread, when the bridge starts
and when the simulation compiles (`LiveSimulation.served_prefixes`).

The simulation a bridge serves runs on a physics thread: in live mode the
bridge's thread queues commands and waits for the snapshot after them; in
direct and puppet modes the physics thread is parked and lends the simulation
to the bridge (Runner.lend), which then applies what Blender sends between its
own requests. An inline runner has no thread to park: Blender's main thread and
the bridge's would both apply commands. Its model roots are attached with their
prefixes (`LiveSimulation.for_bridge`; `entity_prefixes` here decides them and the
scan is handed them), so URLab's client finds each entity's elements by
`prefix + "_"`.

One bridge per Blender session (it holds the ports), owned by the served
scene's SceneSession (`owner.bridge`):

    bridge_host.start(scene, address, request_port, state_port, ("zmq",))
    bridge_host.status()    # what the Bridge panel shows, or None
    bridge_host.stop()      # every socket closed, every thread joined

It ends with its scene's session (file load, undo, redo, add-on disable) and
whenever its simulation ends (stop, a bake that keeps a recording, ...), but for a
client's stop_pie: then it serves on without a simulation until the client's
begin_pie, or Blender's Play, starts one (live/bridge_scene.py).

Cameras a client asks Blender's renderer for (or all of them, when the scene's
Bridge setting says Blender) are rendered on the main thread, by `serve_cameras`,
which `watch` calls: the bridge's threads put asks on `SceneHost.blender_frames`
(bridge/blender_frames.py) and wait; streaming cameras get the newest snapshot
rendered. The scene shows the snapshot rendered (`LiveSimulation.show_snapshot`),
so the frame's id and time are its. At most `blender_frames.SHARE` of the main
thread's time goes to these renders.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
import warnings
from dataclasses import dataclass

import bpy

from ..bridge.blender_frames import BlenderFrames
from ..bridge.camera_streams import KINDS
from ..bridge.host import Host, model_fields, prefix_of
from ..bridge.main_thread import MainThread, run_call
from ..bridge.uploads import import_xml_reply
from ..bridge.wire import ProtocolError
from ..engine import cameras as engine_cameras
from ..importer import build, mujoco_load
from ..scan import scene_scan
from ..scene import preferences
from ..scene.names import first_free, numbered
from ..scene.errors import MJBlendError
from ..sync import views
from . import blender_camera, bridge_scene, scene_session, served_files, simulation, viewport

WATCH_INTERVAL = 0.25  # seconds between the main thread's looks at a served simulation
CAMERA_INTERVAL = 0.02  # ... while clients use Blender's renderer (an ask waits for the next look)
IMPORT_TAKEN = 30.0  # seconds an upload's commit waits for the main thread to take its import


class BridgeError(MJBlendError):
    """The bridge cannot start (a taken port, a missing package, a scene that does not
    compile): the message is for the user, `objects` the objects at fault."""


class SceneHost(Host):
    """One scene's simulation as the bridge serves it."""

    def __init__(self, scene, live: simulation.LiveSimulation, remote_stop: bool = False,
                 cameras: dict | None = None):
        """`cameras`: Host.camera_settings (a script's per-camera mode, resolution, renderer)."""
        self.scene = scene  # (main thread only)
        self.name = scene.name
        self.remote_stop = remote_stop  # headless serving only: a client may stop it
        self.live = live
        self._recordings = recordings_folder()
        self._uploads = uploads_folder()
        self.import_limits = build.limits(preferences.settings(bpy.context))  # (the import's guard)
        self._cameras = dict(cameras or {})
        self.blender_frames = BlenderFrames()
        self.main_thread = MainThread(wake=self.blender_frames.wake)  # (one event wakes the headless loop)
        self.scene_edits = bridge_scene.SceneEdits(self)  # (URLab's scene, outliner and sim ops)
        self.renderer, self.engine, self.samples = "mujoco", "BLENDER_WORKBENCH", None
        self.camera_problem = ""  # the last streamed Blender frame that failed, for the panel
        self.viewport = viewport.Viewport(self)  # URLab's viewport ops (main thread)
        self.read_settings()

    def read_settings(self) -> None:
        """(Main thread) The scene's Bridge settings as plain values the bridge's threads read."""
        settings = self.scene.mujoco_bridge
        self.renderer = "blender" if settings.camera_renderer == "BLENDER" else "mujoco"
        self.engine, self.samples = settings.camera_engine, settings.camera_samples or None

    def follow(self, live: simulation.LiveSimulation | None) -> None:
        """(Main thread) Serve `live` from now on (the scene's simulation restarted; None: a
        client stopped it, and the bridge serves on without one)."""
        self.live = live
        if live is not None:
            self.scene_edits.stopped = False

    # -------------------------------------------------- the bridge's threads

    def runner(self):
        live = self.live
        return live.runner if live is not None else None

    def root_prefixes(self) -> list[str]:
        """The prefixes of the model the runner runs (a recompile's model may reach the
        runner a moment after the main thread bound it: the one before is kept too)."""
        live = self.live
        runner = live.runner if live is not None else None
        served = live.served_prefixes if live is not None else ()
        model = runner.session.model if runner is not None else None
        for compiled, prefixes in served:
            if compiled is model:
                return list(prefixes)
        return list(served[0][1]) if served else []

    def compiled_files(self):
        """(A bridge thread; URLab's `include_assets`) The served model's MJCF and asset
        files, written by the exporter on the main thread while this thread waits."""
        live = self.live
        runner = live.runner if live is not None else None
        if runner is None:
            raise ProtocolError("not_ready", "the served simulation ended")
        model = runner.session.model
        return served_files.served_files(live, model, self.main_thread)

    def recordings_dir(self) -> str:
        return self._recordings

    def uploads_dir(self) -> str:
        return self._uploads

    def import_model(self, path: str, staged: bool = False, job: bool = False) -> dict:
        """MuJoCo's guarded load here, on the bridge's thread (the probe process and its
        limits: a hostile file never reaches Blender's main thread); then, on the main
        thread, the import into the scene and its recompile (`_import_into_scene`). An
        upload's folder stays: the imported meshes and textures refer to its files."""
        loaded = guarded_load(path, self.import_limits)
        if job:  # URLab's import_xml: op_started, the client follows it with op_status
            return {"job_id": self.main_thread.start(
                lambda: import_xml_reply(self._import_into_scene(loaded, staged)), "import_xml")}
        return run_call(self.main_thread, lambda: self._import_into_scene(loaded, staged), "an import",
                        IMPORT_TAKEN)

    def _import_into_scene(self, loaded, staged: bool) -> dict:
        """(Main thread) A finished load imported into the scene as a model root of its own,
        and the scene's simulation recompiled with it (its sessions then expire); if the
        scene does not compile with it, every datablock the import made is removed and the
        simulation goes on with its model."""
        live = self.live
        if live is None or live.runner is None:
            raise ProtocolError("not_ready", "the scene's simulation ended before the import")
        error_before = (live.error, list(live.error_objects))
        try:
            with build.transaction(), warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")  # (MuJoCo's attach conflicts: the scene's options win)
                result = build.import_loaded(loaded, self.scene)
                if not live.compile(edited=True) or live.error:
                    message = live.error or "it did not compile"
                    live.error, live.error_objects = error_before
                    raise ProtocolError("import_failed", f"the scene does not compile with "
                                        f"{result.root.name}: {message}")
        except build.ImportFailed as error:
            raise ProtocolError("import_failed", str(error)) from None
        roots = scene_scan.model_roots(self.scene)
        prefixes = live.served_prefixes[0][1] if live.served_prefixes else []
        entity = prefixes[roots.index(result.root)] if result.root in roots and len(prefixes) == len(roots) \
            else prefix_of(result.root.name)
        told = [*result.warnings, *live.warnings, *(" ".join(str(w.message).split()) for w in said)]
        return {"model_root": result.root.name, "entity": entity, "imported_now": True,
                "warnings": list(dict.fromkeys(told)), "keep_folder": staged, **model_fields(live.model)}

    def camera_settings(self) -> dict:
        return self._cameras

    def camera_renderer(self) -> str:
        return self.renderer


def recordings_folder() -> str:
    """(Main thread) Where a client's recordings go: next to the .blend, else in the
    temporary folder."""
    if bpy.data.filepath:
        stem = os.path.splitext(os.path.basename(bpy.data.filepath))[0]
        return os.path.join(os.path.dirname(bpy.data.filepath), f"{stem}_recordings")
    return os.path.join(tempfile.gettempdir(), "mjblend_recordings")


def guarded_load(path: str, limits: mujoco_load.Limits) -> mujoco_load.Load:
    """MuJoCo's load of `path` as File > Import does it (importer/mujoco_load.py): first in
    a child process within `limits` (a hostile file is stopped there), then in this one;
    the finished Load, for build.import_loaded. Bpy-free: a bridge thread runs it. An
    import_failed ProtocolError with the reason when MuJoCo refuses it or a limit stops it."""
    label = os.path.basename(path)
    try:
        loaded = mujoco_load.Load(mujoco_load.read_source(path), limits, threaded=False)
        loaded.run()
        loaded.outcome()
    except mujoco_load.LoadError as error:
        message = str(error)
        raise ProtocolError("import_failed", message if message.startswith(label) else
                            f"{label}: {message}") from None
    return loaded


def uploads_folder() -> str:
    """(Main thread) Where uploaded models are staged and, once imported, kept (the scene's
    meshes refer to their files): next to the .blend, else in the temporary folder."""
    if bpy.data.filepath:
        stem = os.path.splitext(os.path.basename(bpy.data.filepath))[0]
        return os.path.join(os.path.dirname(bpy.data.filepath), f"{stem}_uploads")
    return os.path.join(tempfile.gettempdir(), "mjblend_uploads")


def entity_prefixes(roots) -> list[str]:
    """Each model root's entity prefix on the bridge (bridge.host.prefix_of its name),
    numbered where two would be the same ("arm.001" and "arm_001")."""
    found: list[str] = []
    for root in roots:
        found.append(first_free(found, numbered(prefix_of(root.name), "_")))
    return found


def served_simulation(scene, prefs: preferences.Settings | None = None) -> simulation.LiveSimulation:
    """(Main thread) The scene's simulation, made ready for the bridge: on a physics
    thread (an inline one, as in --background and the bpy module, is restarted
    threaded) and compiled with entity prefixes (the state carried over). Raises
    SimulationError if the scene does not simulate."""
    live = scene_session.simulation(scene)
    if live is not None and not live.threaded_runner:
        scene_session.end_simulation(live, restore=True)  # (the bridge never applies commands inline)
        live = None
    if live is None:
        return scene_session.start_simulation(scene, prefs, threaded=True, for_bridge=True,
                                              entity_prefixes=entity_prefixes)
    live.serve_bridge(entity_prefixes)
    return live


# ------------------------------------------------------------ the one bridge


@dataclass
class Served:
    bridge: object  # bridge.server.Bridge
    host: SceneHost
    requests_seen: int = 0  # (the watch redraws the panel when clients were served)


def transports_of(choice: str) -> tuple[str, ...]:
    """The preferences' transport choice as bridge.server.Bridge takes it."""
    return ("zmq", "shm") if choice == "ZMQ_SHM" else ("zmq",)


def start(scene, address: str = "127.0.0.1", request_port: int = 5559, state_port: int = 5555,
          transports=("zmq",), remote_stop: bool = False, stream_rate: float | None = None,
          prefs: preferences.Settings | None = None, camera_port: int = 5558, cameras: dict | None = None
          ) -> Served:
    """(Main thread) Serve `scene`'s simulation (started if none runs), replacing any
    bridge already running. BridgeError if it cannot (the message says why).
    `camera_port`: the first port a streaming camera's PUB tries (URLab's 5558, up to 9 more);
    `cameras`: {camera name: {"mode", "resolution", "renderer"}} where a camera is served
    otherwise than its MJCF and the scene's Bridge setting say (scripts)."""
    stop()
    try:  # (pyzmq and msgpack are bundled with the extension; a development checkout may lack them)
        from ..bridge.server import Bridge
        from ..bridge.zmq_transport import PortInUse
        if "shm" in transports:
            from ..bridge import shm_transport  # noqa: F401  (Linux and macOS only)
    except ImportError as error:
        raise BridgeError(f"The bridge needs {error.name or 'a package'} ({error}): install the MJBlend "
                          "extension zip, which bundles pyzmq and msgpack") from None
    made = scene_session.simulation(scene) is None
    try:
        live = served_simulation(scene, prefs)
    except simulation.SimulationError as error:
        raise BridgeError(str(error), error.objects) from None
    host = SceneHost(scene, live, remote_stop, cameras)
    try:
        bridge = Bridge(host, address, request_port, state_port, transports, stream_rate=stream_rate,
                        camera_port=camera_port)
    except Exception as error:  # (a bad address, a shared-memory folder it cannot make)
        raise BridgeError(f"The bridge cannot start: {error}") from None
    try:
        bridge.start()
    except (PortInUse, OSError, ValueError) as error:
        bridge.stop()  # (its sockets and ZMQ context: nothing left open)
        if made:
            scene_session.end_simulation(live, restore=True)
        message = str(error) if isinstance(error, PortInUse) else f"The bridge cannot start: {error}"
        raise BridgeError(message) from None
    except BaseException:
        bridge.stop()
        raise
    served = live.owner.bridge = Served(bridge, host)
    if not bpy.app.timers.is_registered(watch) and not bpy.app.background:
        bpy.app.timers.register(watch, first_interval=WATCH_INTERVAL)
    return served


def _serving():
    """The scene session a bridge serves, or None."""
    return next((owner for owner in scene_session.all_sessions() if owner.bridge is not None), None)


def stop() -> bool:
    """(Main thread) Stop the bridge, if one runs: every socket closed, every thread
    joined (the simulation goes on). True if one was running."""
    owner = _serving()
    if owner is not None:
        owner.bridge.host.viewport.tracking.stop()  # (a client's track_actor ends with its bridge)
    return owner is not None and owner.end_bridge()


def current() -> Served | None:
    owner = _serving()
    return owner.bridge if owner is not None else None


def status() -> dict | None:
    """What the Bridge panel shows, or None when no bridge runs."""
    served = current()
    if served is None:
        return None
    bridge, state = served.bridge, served.bridge.dispatcher.status
    zmq, markers = bridge.zmq, bridge.dispatcher.debug.markers
    return {"scene": served.host.name, "address": bridge.address, "local": bridge.local_only,
            "request_port": zmq.request_port, "state_port": zmq.state_port,
            "shm": bridge.shm is not None, "mode": state.mode, "sessions": state.sessions,
            "requests": state.requests, "errors": state.errors, "last_op": state.last_op,
            "last_error": state.last_error, "published": bridge.stream.published,
            "dropped": bridge.stream.dropped, "stop_requested": bridge.dispatcher.stop_requested.is_set(),
            "camera_problem": served.host.camera_problem,
            "simulating": served.host.live is not None,  # (False: a client's stop_pie; begin_pie or Play)
            "markers": len(markers), "markers_evicted": markers.evicted,
            "leased": bridge.dispatcher.leases.busy(),
            "registry": bridge.registry.path if bridge.registry is not None else ""}


def is_local(address: str) -> bool:
    """bridge.server.is_local, for the panel (which draws without pyzmq too)."""
    try:
        from ..bridge.server import is_local as local
    except ImportError:
        return address in ("127.0.0.1", "localhost", "::1")
    return local(address)


def watch() -> float | None:
    """(Main thread, on a timer in a window; the headless loop calls it) Stop a bridge
    whose scene is gone; follow the scene's simulation if it was restarted; redraw the
    panel when clients were served. The next interval, or None once no bridge runs."""
    owner = _serving()
    if owner is None:
        return None
    served, host = owner.bridge, owner.bridge.host
    try:
        scene = host.scene
        scene.name  # noqa: B018  (a deleted scene raises here)
    except ReferenceError:
        stop()
        return None
    live = scene_session.simulation(scene)
    if (live is None or live.runner is None) and host.scene_edits.stopped:
        # a client stopped the simulation (stop_pie): serve on without one, for its begin_pie
        host.read_settings()
        host.main_thread.run()
        return 0.0 if host.main_thread.waiting else CAMERA_INTERVAL if host.main_thread.busy() \
            else WATCH_INTERVAL
    if live is None or live.runner is None:
        stop()
        return None
    if live is not host.live:  # restarted without an end of the served one
        try:
            if not live.threaded_runner:
                raise simulation.SimulationError("the scene's new simulation runs inline")
            live.serve_bridge(entity_prefixes)
        except simulation.SimulationError as error:
            print(f"MJBlend: the bridge stopped: {error}")
            stop()
            return None
        host.follow(live)
        served.bridge.follow(live.runner)
    host.read_settings()
    host.main_thread.run()  # (the scene, outliner, viewport, debug ops clients asked for)
    wait = serve_cameras(served)
    if host.main_thread.waiting:
        return 0.0
    requests = served.bridge.dispatcher.status.requests
    if requests != served.requests_seen and not bpy.app.background:
        served.requests_seen = requests
        views.redraw()
    if wait is not None:
        return min(WATCH_INTERVAL, max(wait, 0.001))
    if host.renderer == "blender" or host.blender_frames.asked or host.main_thread.busy():
        return CAMERA_INTERVAL  # (clients use Blender's frames: an ask waits for the next look)
    return WATCH_INTERVAL


# ------------------------------------------------------------ Blender's frames


def serve_cameras(served: Served | None = None) -> float | None:
    """(Main thread; `watch` calls it) Blender's frames for the bridge: the oldest ask
    a bridge thread waits on, else the newest snapshot for the streaming Blender
    cameras that are due (their max_fps); one batch a call, within the main thread's
    share (blender_frames.SHARE). Seconds until it has more to do (None: nothing)."""
    served = served or current()
    if served is None:
        return None
    host, streams = served.host, served.bridge.cameras
    frames = host.blender_frames
    if not frames.waiting and not streams.blender_streaming:
        return None
    left = frames.wait_left()
    if left > 0:
        return left
    started = time.perf_counter()
    ask = frames.take()
    if ask is not None:
        try:
            rendered, _shot = _render(host, ask.cameras, ask.snapshot)
        except BaseException as problem:  # noqa: BLE001 -- the waiting bridge thread reports it
            ask.future.set_exception(problem)
        else:
            ask.future.set_result(rendered)
        frames.rendered(time.perf_counter() - started)
        return 0.0
    due = streams.blender_due()
    live = host.live
    shot = live.runner.latest if live is not None and live.runner is not None else None
    if not due or shot is None or shot.frame <= streams.blender_last_frame or shot.model is not streams.model:
        return CAMERA_INTERVAL
    try:
        rendered, shot = _render(host, due, shot)
    except engine_cameras.CameraError as problem:  # (the client was told at set_camera_streaming)
        streams.blender_last_frame = shot.frame  # (not this state again)
        if str(problem) != host.camera_problem:
            print(f"MJBlend bridge: a camera frame was not rendered: {problem}")
        host.camera_problem = str(problem)
    else:
        host.camera_problem = ""
        streams.deliver(rendered, shot.frame, shot.time)
    frames.rendered(time.perf_counter() - started)
    return CAMERA_INTERVAL


def _render(host: SceneHost, cameras, shot) -> tuple[dict, object]:
    """({name: Frame}, the snapshot shown) of `cameras` (bridge ServedCameras) by
    Blender, the scene showing snapshot `shot` (None: the newest)."""
    live = host.live
    if live is None or live.runner is None:
        raise engine_cameras.CameraError("The served simulation ended before its cameras were rendered")
    shot = shot if shot is not None else live.runner.latest
    if not live.show_snapshot(shot):
        raise engine_cameras.CameraError("The simulation recompiled (an edit in Blender) before its cameras "
                                         "were rendered: ask again")
    if live.display.fast_now:
        raise engine_cameras.CameraError(
            "Blender's renderer draws the scene's objects, which the Fast display hides while the simulation "
            "plays: set the scene's simulation Display to Objects (Simulation panel), or pause")
    out = {}
    for camera in cameras:
        try:
            frame = blender_camera.render(host.scene, camera.name, (KINDS[camera.mode],), camera.width,
                                          camera.height, host.engine, host.samples)
        except blender_camera.BlenderRenderError as problem:  # (the bridge says renderer_unavailable)
            raise engine_cameras.RendererUnavailable(str(problem)) from None
        out[camera.name] = dataclasses.replace(frame, frame_id=int(shot.frame), sim_time=float(shot.time))
    return out, shot


def unregister():
    stop()
    if bpy.app.timers.is_registered(watch):
        bpy.app.timers.unregister(watch)

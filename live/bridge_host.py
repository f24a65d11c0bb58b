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
whenever its simulation ends (stop, a bake that keeps a recording, ...).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import bpy

from ..bridge.host import Host, prefix_of
from ..scene import preferences
from ..scene.names import first_free, numbered
from ..scene.errors import MJBlendError
from ..sync import views
from . import scene_session, simulation

WATCH_INTERVAL = 0.25  # seconds between the main thread's looks at a served simulation


class BridgeError(MJBlendError):
    """The bridge cannot start (a taken port, a missing package, a scene that does not
    compile): the message is for the user, `objects` the objects at fault."""


class SceneHost(Host):
    """One scene's simulation as the bridge serves it."""

    def __init__(self, scene, live: simulation.LiveSimulation, remote_stop: bool = False):
        self.scene = scene  # (main thread only)
        self.name = scene.name
        self.remote_stop = remote_stop  # headless serving only: a client may stop it
        self.live = live
        self._recordings = recordings_folder()

    def follow(self, live: simulation.LiveSimulation) -> None:
        """(Main thread) Serve `live` from now on (the scene's simulation restarted)."""
        self.live = live

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
        # Writing the scene as MJCF with its assets is the exporter's job on the main
        # thread (it reads Blender data); not served: `include_assets` gets a clear error.
        return None

    def recordings_dir(self) -> str:
        return self._recordings


def recordings_folder() -> str:
    """(Main thread) Where a client's recordings go: next to the .blend, else in the
    temporary folder."""
    if bpy.data.filepath:
        stem = os.path.splitext(os.path.basename(bpy.data.filepath))[0]
        return os.path.join(os.path.dirname(bpy.data.filepath), f"{stem}_recordings")
    return os.path.join(tempfile.gettempdir(), "mjblend_recordings")


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
          prefs: preferences.Settings | None = None, camera_port: int = 5558) -> Served:
    """(Main thread) Serve `scene`'s simulation (started if none runs), replacing any
    bridge already running. BridgeError if it cannot (the message says why).
    `camera_port`: the first port a streaming camera's PUB tries (URLab's 5558, up to 9 more)."""
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
    host = SceneHost(scene, live, remote_stop)
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
    zmq = bridge.zmq
    return {"scene": served.host.name, "address": bridge.address, "local": bridge.local_only,
            "request_port": zmq.request_port, "state_port": zmq.state_port,
            "shm": bridge.shm is not None, "mode": state.mode, "sessions": state.sessions,
            "requests": state.requests, "errors": state.errors, "last_op": state.last_op,
            "last_error": state.last_error, "published": bridge.stream.published,
            "dropped": bridge.stream.dropped, "stop_requested": bridge.dispatcher.stop_requested.is_set()}


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
    requests = served.bridge.dispatcher.status.requests
    if requests != served.requests_seen and not bpy.app.background:
        served.requests_seen = requests
        views.redraw()
    return WATCH_INTERVAL


def unregister():
    stop()
    if bpy.app.timers.is_registered(watch):
        bpy.app.timers.unregister(watch)

"""A running bridge: the dispatcher, its transports and the state stream, started
and stopped together.

    bridge = Bridge(host, address="127.0.0.1", transports=("zmq",))
    bridge.start()       # PortInUse (an OSError) if a port is taken
    ...
    bridge.stop()        # every socket closed, every thread joined

It also keeps the entry URLab's pool discovers it by (bridge/registry.py) while it
runs: `registry_dir` moves it (None: URLab's folder, $URLAB_REGISTRY_DIR or the
cache's URLab/registry; False: no entry).
"""

from __future__ import annotations

import ipaddress
import os

from ..engine import commands
from ..engine.runner import PUBLISH_RATE
from .camera_streams import BASE_PORT as CAMERA_PORT
from .camera_streams import CameraStreams
from .dispatcher import Dispatcher
from .hold import Hold
from .registry import Registry
from .stream import StateStream
from .wire import MAX_REQUEST_BYTES
from .zmq_transport import ZmqTransport

DEFAULT_ADDRESS = "127.0.0.1"
REQUEST_PORT, STATE_PORT = 5559, 5555


def is_local(address: str) -> bool:
    """Whether `address` only accepts connections from this machine."""
    if address in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class Bridge:
    def __init__(self, host, address: str = DEFAULT_ADDRESS, request_port: int = REQUEST_PORT,
                 state_port: int = STATE_PORT, transports=("zmq",), limit: int = MAX_REQUEST_BYTES,
                 shm_dir: str | None = None, stream_rate: float | None = None,
                 camera_port: int = CAMERA_PORT, registry_dir: str | None | bool = None):
        """`stream_rate`: snapshots per second the simulation publishes while it plays
        live (the state stream's rate; None: the runner's own, twice the display's).
        `camera_port`: the first port a streaming camera's PUB socket tries (URLab's 5558)."""
        self.host = host
        self.address = address
        self.cameras = CameraStreams(address, camera_port, lambda: self.shm.directory if self.shm else None,
                                     host.camera_settings, blender=host.blender_frames,
                                     default_renderer=host.camera_renderer)
        self.dispatcher = Dispatcher(host, cameras=self.cameras)
        # (an instance id per port: the registry entry is named by it and the process id,
        # and one process may serve several scenes)
        self.dispatcher.instance = {"instance_id": f"mjblend-{request_port}", "index": 0, "pid": os.getpid(),
                                    "step_port": request_port, "state_port": state_port,
                                    "cam_base_port": camera_port}
        self.stream = StateStream(self.dispatcher.scene)
        self.stream.extra = lambda: self.dispatcher.controllers.extra  # (a dict swapped whole: any thread)
        self.zmq = ZmqTransport(self.dispatcher, address, request_port, state_port, limit)
        self.shm = None
        if "shm" in transports:
            from .shm_transport import ShmTransport  # (Linux and macOS only)
            self.shm = self.dispatcher.shm = ShmTransport(self.dispatcher, shm_dir, limit)
        self.stream_rate = stream_rate
        # one hold for all of the bridge's threads (see `parked`)
        self.hold = self.zmq.hold = self.stream.hold = Hold()
        if self.shm is not None:
            self.shm.hold = self.hold
        self._runner = None  # the runner this bridge is a companion of
        self.running = False
        self.registry = (None if registry_dir is False
                         else Registry(self.dispatcher, address, registry_dir or None))

    @property
    def local_only(self) -> bool:
        return is_local(self.address)

    def start(self) -> None:
        self.zmq.start()
        try:
            if self.shm is not None:
                self.shm.start()
        except Exception:
            self.zmq.stop()
            raise
        self.stream.sinks.append(lambda topic, message, shot: self.zmq.publish(topic, message))
        self.stream.wanted.append(self.zmq.has_subscribers)
        if self.shm is not None:
            self.stream.sinks.append(self.shm.publish)
            # (the state ring: once a client has used shared memory, it may poll it any time)
            self.stream.wanted.append(lambda: self.shm.served > 0)
        self.dispatcher.on_state = self.stream.push  # (states the bridge steps itself, one message each)
        self.follow(self.host.runner())
        self.stream.start()
        if self.registry is not None:
            self.registry.start()
        self.running = True

    def follow(self, runner) -> None:
        """Stream `runner`'s snapshots (the host's simulation, or the one it restarted),
        and be parked with it (Runner.parked holds its companions' threads too)."""
        self._leave()
        if runner is not None:
            runner.companions.append(self)
            self._runner = runner
        self.stream.attach(runner)
        self.cameras.attach(runner)
        if runner is not None and self.stream_rate:
            runner.send(commands.SetPublishRate(self.stream_rate))

    def _leave(self) -> None:
        if self._runner is not None and self in self._runner.companions:
            self._runner.companions.remove(self)
        self._runner = None

    def parked(self, timeout: float = 5.0):
        """Hold every thread of the bridge where it holds no GIL while the body runs
        (Runner.parked does, for Blender's sake): requests and the stream wait."""
        threads = [t for t in (self.zmq, self.stream, self.shm) if t is not None]
        return self.hold.parked(lambda: sum(t.alive for t in threads), self.stream.wake, timeout)

    def stop(self) -> None:
        if self.cameras.blender is not None:  # (a request waiting for Blender's main thread, which
            self.cameras.blender.close()      # is the one stopping us, fails now: no deadlock)
        if self.host.main_thread is not None:
            self.host.main_thread.close()
        self._leave()
        self.running = False
        if self.registry is not None:
            self.registry.stop()
        runner = self.host.runner()
        if runner is not None and self.stream_rate:  # (the simulation goes on at its own rate)
            runner.send(commands.SetPublishRate(PUBLISH_RATE))
        self.stream.stop()
        self.dispatcher.close()
        if self.shm is not None:
            self.shm.stop()
        self.zmq.stop()

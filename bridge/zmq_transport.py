"""The ZMQ transport, as URLab serves it: REQ/REP for requests (port 5559) and a
PUB socket for the state stream (port 5555).

One thread answers requests (the dispatcher does the work, under its lock);
another publishes each state snapshot the stream hands it. A PUB socket never
blocks: a subscriber that does not read loses messages beyond its queue
(`STREAM_QUEUE`), the server goes on.
"""

from __future__ import annotations

import threading

import zmq

from ..engine.errors import MJBlendError
from .hold import Hold
from .wire import MAX_REQUEST_BYTES

POLL_MS = 100  # how often the request thread looks at its stop flag
LENT_POLL_MS = 5  # ... and, while the bridge owns the simulation, at what Blender sent it
STREAM_QUEUE = 1000  # state messages queued per subscriber before they are dropped


class PortInUse(MJBlendError, OSError):
    pass


def bind(socket, address: str, port: int, what: str) -> str:
    endpoint = f"tcp://{address}:{port}"
    try:
        socket.bind(endpoint)
    except zmq.ZMQError as error:
        socket.close(linger=0)
        raise PortInUse(f"cannot listen for {what} on {endpoint}: {error.strerror} "
                        "(another server on that port? pick another in the Bridge panel)") from None
    return endpoint


class ZmqTransport:
    name = "zmq"

    def __init__(self, dispatcher, address: str = "127.0.0.1", request_port: int = 5559,
                 state_port: int = 5555, limit: int = MAX_REQUEST_BYTES):
        self.dispatcher = dispatcher
        self.address, self.request_port, self.state_port = address, request_port, state_port
        self.limit = limit
        self._context = zmq.Context()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._rep = self._pub = None
        self._pub_lock = threading.Lock()
        self._subscriptions = 0
        self.hold = Hold()  # (the Bridge's: its threads stop together)

    def start(self) -> None:
        context = self._context
        rep = context.socket(zmq.REP)
        rep.setsockopt(zmq.LINGER, 0)
        # ZMQ drops a peer whose frame is far over the limit before it is read whole;
        # up to 4x it is read and answered with a clear error
        rep.setsockopt(zmq.MAXMSGSIZE, 4 * self.limit)
        self.request_endpoint = bind(rep, self.address, self.request_port, "requests")
        # XPUB: a PUB that also hears subscriptions, so the stream is not even
        # encoded while no one subscribes
        pub = context.socket(zmq.XPUB)
        pub.setsockopt(zmq.LINGER, 0)
        pub.setsockopt(zmq.SNDHWM, STREAM_QUEUE)
        try:
            self.state_endpoint = bind(pub, self.address, self.state_port, "the state stream")
        except PortInUse:
            rep.close(linger=0)
            raise
        self._rep, self._pub = rep, pub
        self._thread = threading.Thread(target=self._serve, name="MJBlend bridge (ZMQ)", daemon=True)
        self._thread.start()

    def has_subscribers(self) -> bool:
        """Whether any subscriber listens (reads the subscriptions that came in;
        called by the stream's thread, the only one that sends on the socket)."""
        with self._pub_lock:
            while self._pub is not None:
                try:
                    event = self._pub.recv(flags=zmq.NOBLOCK)
                except zmq.ZMQError:
                    break
                if event[:1] == b"\x01":
                    self._subscriptions += 1
                elif event[:1] == b"\x00":
                    self._subscriptions = max(0, self._subscriptions - 1)
        return self._subscriptions > 0

    def publish(self, topic: bytes, message: bytes) -> None:
        """One state message to every subscriber (never blocks; called by the stream's thread)."""
        with self._pub_lock:
            if self._pub is not None:
                try:
                    self._pub.send_multipart((topic, message), flags=zmq.NOBLOCK)
                except zmq.Again:  # (PUB drops rather than blocks; this is belt and braces)
                    pass

    def _serve(self) -> None:
        rep = self._rep
        poller = zmq.Poller()
        poller.register(rep, zmq.POLLIN)
        while not self._stopping.is_set():
            self.hold.point()
            lent = self.dispatcher.lent
            if not poller.poll(LENT_POLL_MS if lent else POLL_MS):
                if lent:
                    self.dispatcher.idle()
                continue
            try:
                parts = rep.recv_multipart()
            except zmq.ZMQError:
                continue
            frame = parts[0] if len(parts) == 1 else None
            reply = self.dispatcher.handle_frame(frame, transport=self.name, limit=self.limit)
            try:
                rep.send(reply)
            except zmq.ZMQError:  # (the client went away: REP drops its reply)
                pass
        rep.close(linger=0)

    def stop(self, timeout: float = 2.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
        with self._pub_lock:
            if self._pub is not None:
                self._pub.close(linger=0)
                self._pub = None
        if self._thread is None and self._rep is not None:
            self._rep.close(linger=0)
        self._context.term()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

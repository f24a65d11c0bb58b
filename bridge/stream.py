"""The state stream: every snapshot the runner publishes, as one message.

The runner calls `StateStream.offer` with each snapshot (on its thread: a
deque append, nothing more); the stream's own thread encodes each one as a
`state_full` map, the op URLab's newest server sends (observations at the
stream's level, `frame_id` increasing by one per snapshot) and hands it to
every sink: the ZMQ PUB socket (topic
`state/full`, as URLab publishes it), the shared-memory state ring.
"""

from __future__ import annotations

import collections
import threading

from . import observations
from .hold import Hold
from .wire import encode

TOPIC = b"state/full"
LOOK = 0.05  # seconds between looks for subscribers while the stream is idle
QUEUE = 4096  # snapshots waiting to be encoded before the oldest are dropped


class StateStream:
    def __init__(self, entities, level: str = "standard"):
        self.entities = entities  # entities.SceneEntities of the models streamed
        self.level = level
        self.extra = lambda: None  # () -> what entity blocks add, by prefix (the controllers' twists)
        self.sinks: list = []  # callables (topic, message bytes, snapshot)
        self.wanted: list = []  # callables () -> bool: does anyone read that sink now?
        self.published = 0
        self.dropped = 0
        self._queue: collections.deque = collections.deque()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._runner = None
        self.listening = False  # whether a sink is read (looked at every LOOK seconds by the stream's thread)
        self._sent_frame = -1  # the newest frame id sent (a state pushed and its snapshot go once)
        self._send_lock = threading.Lock()
        self.hold = Hold()  # (the Bridge's: its threads stop together)
        self._thread: threading.Thread | None = None

    def attach(self, runner) -> None:
        """Stream `runner`'s snapshots (instead of any earlier runner's)."""
        if self._runner is runner:
            return
        if self._runner is not None:
            self._runner.unlisten(self.offer)
        self._runner = runner
        if runner is not None:
            runner.listen(self.offer)

    def wake(self) -> None:
        self._wake.set()

    def offer(self, shot) -> None:
        if not self.listening:
            return  # (no one reads: the physics thread does not even wake the stream's)
        if len(self._queue) >= QUEUE:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append(shot)
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="MJBlend bridge stream", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self.attach(None)
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self.hold.point()
            self._wake.wait(LOOK)
            self._wake.clear()
            self.listening = bool(self.sinks) and any(wanted() for wanted in self.wanted)
            while self._queue and not self._stopping.is_set():
                self.hold.point()
                shot = self._queue.popleft()
                if not self.listening or shot.frame <= self._sent_frame:
                    continue  # (no one listens: not even encoded; or it was pushed already)
                self._emit(shot.frame, self._message(shot), shot)

    def push(self, state) -> None:
        """A state the bridge stepped on its own thread (the simulation lent to it:
        observations.LiveState), sent now, from that thread: one message per step
        without a snapshot copy or a thread switch."""
        if self.listening:
            self._emit(state.frame, self._message(state), None)

    def _message(self, state) -> bytes:
        entities = self.entities.of(state.model)
        return encode(observations.observation("state_full", state, entities, self.level, self.extra()))

    def _emit(self, frame: int, message: bytes, shot) -> None:
        with self._send_lock:
            if frame <= self._sent_frame:
                return
            self._sent_frame = frame
            for sink in list(self.sinks):
                sink(TOPIC, message, shot)
            self.published += 1

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

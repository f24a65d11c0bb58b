"""Frames Blender renders on its main thread, asked for from the bridge's threads.

Blender's renderer (live/blender_camera.py) runs only on Blender's main thread, and
the bridge's threads never touch bpy. So a bridge thread that needs Blender's frames
(a step's `include_cameras`, or a camera switched on, rendered once to find a
renderer that cannot start) puts an `Ask` here and waits for it; the main thread
(live/bridge_host.watch: a timer in a window, the headless loop of
`blender --command mjblend_serve`) takes it, renders and answers. Streaming cameras
need no ask: the main thread renders the newest state for them when it looks
(bridge/camera_streams.CameraStreams.blender_due / deliver).

The main thread's share is capped: after a render that took t seconds it renders
nothing more for t (1 / SHARE - 1) seconds, so the UI keeps at least the rest of its
time whatever clients ask. An ask not answered in time (Blender busy, or nothing
serving the main thread: the bpy module, a script that never calls watch) fails
with a message that says so, and is dropped.

Nothing here imports bpy.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout

from ..engine import cameras as engine_cameras
from ..engine.errors import MJBlendError
from .wire import ProtocolError

SHARE = 0.5  # the most of the main thread's time the bridge's Blender renders take
TIMEOUT = 60.0  # seconds a bridge thread waits for the main thread's frames (Cycles takes seconds)


@dataclasses.dataclass(eq=False)
class Ask:
    """Frames of `cameras` (bridge ServedCameras) of `snapshot` (None: the newest)."""

    cameras: list
    snapshot: object
    future: Future = dataclasses.field(default_factory=Future)


class BlenderFrames:
    def __init__(self, share: float = SHARE, timeout: float = TIMEOUT):
        self.share, self.timeout = share, timeout
        self._asks: list[Ask] = []
        self._lock = threading.Lock()
        self.wake = threading.Event()  # set while an ask waits (the headless loop waits on it)
        self._free_at = 0.0  # monotonic time from which the main thread may render again
        self.last_seconds = 0.0  # the last render's wall time
        self._closed = False
        self.asked = 0  # asks made (the main thread looks more often once clients use Blender's frames)

    # ------------------------------------------------------- bridge threads

    def ask(self, cameras, snapshot=None, timeout: float | None = None) -> dict:
        """{camera name: engine Frame} rendered by Blender on its main thread; waits for
        them. ProtocolError (changing nothing) if they cannot be rendered in time."""
        timeout = self.timeout if timeout is None else timeout
        ask = Ask(list(cameras), snapshot)
        with self._lock:
            if self._closed:
                raise ProtocolError("camera_error", "the bridge is stopping")
            self._asks.append(ask)
            self.asked += 1
            self.wake.set()
        names = ", ".join(repr(c.name) for c in ask.cameras)
        try:
            return ask.future.result(timeout)
        except FutureTimeout:
            with self._lock:
                if ask in self._asks:
                    self._asks.remove(ask)
            ask.future.cancel()
            raise ProtocolError(
                "camera_timeout",
                f"Blender's renderer did not render camera {names} within {timeout:g} s: Blender's main "
                "thread is busy, or nothing serves it (a window and `blender --command mjblend_serve` do; "
                "a script in the bpy module must call mjblend.live.bridge_host.watch() often)") from None
        except CancelledError:
            raise ProtocolError("camera_error",
                                "the bridge stopped before Blender rendered the cameras") from None
        except engine_cameras.RendererUnavailable as problem:
            raise ProtocolError("renderer_unavailable", str(problem)) from None
        except MJBlendError as problem:
            raise ProtocolError("camera_error", str(problem)) from None

    # ---------------------------------------------------------- main thread

    def wait_left(self, now: float | None = None) -> float:
        """Seconds until the main thread may render again (0: now)."""
        now = time.monotonic() if now is None else now
        return max(0.0, self._free_at - now)

    def take(self) -> Ask | None:
        """The oldest ask still waited for, or None."""
        with self._lock:
            while self._asks:
                ask = self._asks.pop(0)
                if ask.future.set_running_or_notify_cancel():
                    return ask
            self.wake.clear()
            return None

    @property
    def waiting(self) -> bool:
        return bool(self._asks)

    def rendered(self, seconds: float, now: float | None = None) -> None:
        """A render took `seconds` of the main thread: none more before the cap allows."""
        now = time.monotonic() if now is None else now
        self.last_seconds = seconds
        self._free_at = now + seconds * (1.0 / self.share - 1.0)

    def close(self) -> None:
        """Every waiting ask fails now (the bridge stops: no thread stays waiting)."""
        with self._lock:
            self._closed = True
            asks, self._asks = self._asks, []
            self.wake.set()
        for ask in asks:
            ask.future.cancel()

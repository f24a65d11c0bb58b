"""Holding the bridge's threads where they hold nothing, while Blender's main thread
does something that must not meet another Python thread (Runner.parked: Blender
4.2 - 5.0, on Python 3.11, resolve a context override without the GIL and can
crash if another thread holds it then; tests/blender/test_context_override.py).

Each thread calls `Hold.point()` once per turn of its loop, where it holds no lock;
`Hold.parked(threads, wake)` stops them there until the body has run.
"""

from __future__ import annotations

import contextlib
import threading


class Hold:
    def __init__(self):
        self._go = threading.Event()
        self._go.set()
        self._waiting = 0
        self._changed = threading.Condition()

    def point(self) -> None:
        """(Each held thread, at a safe point of its loop) Wait here while held."""
        if self._go.is_set():
            return
        with self._changed:
            self._waiting += 1
            self._changed.notify_all()
        self._go.wait()  # (a blocked lock wait: no GIL held)
        with self._changed:
            self._waiting -= 1

    @contextlib.contextmanager
    def parked(self, threads, wake, timeout: float = 5.0):
        """Hold `threads` (a callable giving how many run now) at their point while the
        body runs; `wake` hurries them there. TimeoutError if they do not all come."""
        self._go.clear()
        try:
            wake()
            with self._changed:
                if not self._changed.wait_for(lambda: self._waiting >= threads(), timeout):
                    raise TimeoutError(f"the bridge's threads did not stop within {timeout:g} s")
            yield
        finally:
            self._go.set()

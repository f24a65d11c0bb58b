"""The profiler line: what a running simulation costs per display frame.

- step: wall time the runner spent stepping (each snapshot says how much since
  the one before, `Snapshot.step_seconds`; a listener adds them up on the
  publishing thread, so none is missed when the viewport skips a snapshot);
- sync: the main thread's work for the simulation each frame (the play
  operator's timer tick: edits, mocap, showing the snapshot in the viewport);
- draw: MJBlend's viewport drawing (overlays and plots) since the frame before.

A frame is one tick of the play operator's timer (`ticked`); the line shows the
means over the last second. Main thread, except the listener (which only ever
adds to one number the main thread reads).

    profile.drew(scene, seconds)   # a draw callback's wall time (ui/overlays, ui/plots)
"""

from __future__ import annotations

import collections
import time

from . import scene_session

WINDOW = 1.0  # seconds of frames the means cover


class Profile:
    def __init__(self, runner):
        self.stepped = 0.0  # wall seconds stepped since the runner started (the listener adds)
        self._counted = 0.0  # `stepped` at the last frame
        self._drawn = 0.0  # draw seconds since the last frame
        self.frames: collections.deque = collections.deque()  # (wall time, step, sync, draw) seconds
        runner.listen(self._published)

    def _published(self, shot) -> None:  # (the runner's thread: one writer of `stepped`)
        self.stepped += shot.step_seconds

    def drew(self, seconds: float) -> None:
        self._drawn += seconds

    def ticked(self, sync_seconds: float, now: float | None = None) -> None:
        """One display frame: its sync took `sync_seconds`."""
        now = time.perf_counter() if now is None else now
        stepped = self.stepped
        self.frames.append((now, stepped - self._counted, sync_seconds, self._drawn))
        self._counted, self._drawn = stepped, 0.0
        while self.frames and self.frames[0][0] < now - WINDOW:
            self.frames.popleft()

    def means(self) -> tuple[float, float, float, float] | None:
        """(step, sync, draw seconds per frame, frames per second) over the last WINDOW
        seconds, or None before two frames."""
        if len(self.frames) < 2:
            return None
        count = len(self.frames)
        step, sync, draw = (sum(frame[i] for frame in self.frames) / count for i in (1, 2, 3))
        span = self.frames[-1][0] - self.frames[0][0]
        return step, sync, draw, (count - 1) / span if span > 0 else 0.0

    def line(self, shot) -> str:
        """The profiler's text for snapshot `shot` (the speed it reached)."""
        if shot.fast_forward and shot.playing:
            speed = f"fast-forward {shot.achieved:.1f}x"
        elif shot.playing:
            speed = f"{shot.achieved:.2f}x real time" + (" (behind)" if shot.behind else "")
        else:
            speed = "paused"
        means = self.means()
        if means is None:
            return f"step - sync - draw - ms per frame   {speed}"
        step, sync, draw, fps = means
        return (f"step {step * 1e3:.2f}  sync {sync * 1e3:.2f}  draw {draw * 1e3:.2f} ms per frame   "
                f"{fps:.0f} fps   {speed}")


def of(running) -> Profile:
    """The profile of LiveSimulation `running` (made, and listening, on first use; it
    ends with the simulation)."""
    if running.profile is None:
        running.profile = Profile(running.runner)
    return running.profile


def drew(scene, seconds: float) -> None:
    """A viewport draw callback of MJBlend took `seconds` (nothing while `scene` does
    not simulate)."""
    running = scene_session.simulation(scene)
    if running is not None:
        of(running).drew(seconds)

"""Waiting in a window for a long command on the physics thread (Simulate Duration,
Bake): progress in the status bar, the state shown as it goes, Esc or right-click
cancelling at the next step boundary. Operators mix it in."""

from __future__ import annotations

from ..live import scene_session, simulation
from ..scene.errors import report_error
from ..sync import views

PROGRESS_INTERVAL = 0.1  # seconds between two looks at the progress (and the state shown): the
# main thread's redraws share the machine with the stepping


class RunnerWait:
    """Mixed into an operator: `wait_for(context, live, seq, count)` from invoke, then
    Blender calls `modal`; the operator says what it does (`status`) and what it made
    of the finished command (`finished`)."""

    def status(self, shot, done: int, percent: int) -> str:
        raise NotImplementedError

    def finished(self, context, shot, done: int) -> set:
        """The command was applied (`done` of its steps ran; fewer if cancelled or it diverged)."""
        raise NotImplementedError

    def wait_for(self, context, live, seq: int, count: int) -> set:
        self._live, self._seq, self._count = live, seq, count
        self.cancelled = False
        manager = context.window_manager
        self._timer = manager.event_timer_add(PROGRESS_INTERVAL, window=context.window)
        manager.progress_begin(0, 100)
        manager.modal_handler_add(self)
        self._status(context, live.latest, 0)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        live = self._live
        if not scene_session.is_current(live):  # stopped, reloaded or its scene deleted
            self.end_wait(context)
            self.report({"WARNING"}, f"The simulation was stopped before its {self._count:,} steps were done")
            return {"CANCELLED"}
        if event.type in {"ESC", "RIGHTMOUSE"} and event.value == "PRESS":
            live.cancel(self._seq)  # (it stops at the next step boundary)
            self.cancelled = True
            return {"RUNNING_MODAL"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}  # the viewport stays usable meanwhile
        shot = live.latest
        try:
            if live.show():  # (the state it has reached)
                redraw(context, properties=False)
        except simulation.SimulationError as error:  # it ended itself (objects deleted)
            self.end_wait(context)
            report_error(self, context, error)
            return {"CANCELLED"}
        if shot.applied < self._seq:
            self._status(context, shot, shot.progress[0] if shot.progress[1] == self._count else 0)
            return {"PASS_THROUGH"}
        self.end_wait(context)
        return self.finished(context, shot, shot.progress[0])

    def cancel(self, context):
        """Blender ends the operator (a window closed, a file loaded)."""
        if scene_session.is_current(self._live):
            self._live.cancel(self._seq)
        self.end_wait(context)

    def _status(self, context, shot, done: int) -> None:
        percent = 100 * done // max(self._count, 1)
        context.window_manager.progress_update(percent)
        if context.workspace is not None:
            text = self.status(shot, done, percent)
            context.workspace.status_text_set(f"{text}. Esc or right-click cancels")

    def end_wait(self, context) -> None:
        end_progress(context, self._timer)


def end_progress(context, timer) -> None:
    """A modal job's end in the window: its timer, progress and status text gone."""
    manager = context.window_manager
    manager.event_timer_remove(timer)
    manager.progress_end()
    if context.workspace is not None:
        context.workspace.status_text_set(None)
    redraw(context)


def redraw(context, properties: bool = True):
    """Redraw the 3D views (the sidebar is theirs), and the Properties editor
    (actuator controls) with `properties`."""
    views.redraw(("VIEW_3D", "PROPERTIES") if properties else ("VIEW_3D",))

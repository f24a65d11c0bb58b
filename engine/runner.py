"""The runner: the one owner of a simulation's MjData while it runs.

Commands come in through `send` (from any thread); the runner applies them
between steps, in order, paces the stepping (real time times a speed, or
fast-forward), keeps the history, and publishes an immutable `Snapshot` after
each batch of steps, which every view reads (`latest`). A snapshot carries the
wall seconds spent stepping since the one before (the profiler's) and the plots
the views asked for (commands.Plot), built from the history on this thread.

Two ways to run, through the same code:

- threaded (a Blender window): a physics thread loops apply commands -> step a
  batch -> publish -> sleep until the next display frame. `mj_step` releases
  the GIL, so Blender's UI keeps its frames while MuJoCo steps, and a slow or
  runaway model never freezes it;
- inline (`--background`, the bpy module, tests): `send` applies a command at
  once on the caller's thread and `tick(now)` steps; deterministic.

    runner = Runner(session, threaded=True)
    runner.start()
    runner.send(commands.Play())
    snapshot = runner.latest
    runner.stop()            # joins the thread (False if MuJoCo is stuck in a step)
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time

from . import commands, info as infos, plots, snapshot as snapshots, watch as watches
from .history import History
from .session import EngineSession

DISPLAY_RATE = 60.0  # the viewport's frames per second
PUBLISH_RATE = 120.0  # snapshots per wall second while playing in real time: twice the
# display's, so every display frame finds a new one (its timer and the runner's beat)
IDLE_WAIT = 0.25  # seconds a paused runner sleeps between looks at its queue


class Runner:
    def __init__(self, session: EngineSession, threaded: bool = False, publish_rate: float = PUBLISH_RATE,
                 history_seconds: float = 10.0, history_bytes: int = 256 << 20, clock=time.perf_counter,
                 name: str = "MJBlend physics"):
        self.session = session
        self.threaded = threaded
        self.clock = clock
        self.name = name
        self.interval = 1.0 / publish_rate  # real time: a batch and a snapshot this often
        self.batch_seconds = 1.0 / DISPLAY_RATE  # fast-forward: stepping between two snapshots
        self._history_size = (history_seconds, history_bytes)
        self.history = History(session.model, *self._history_size)
        self.showing_history: int | None = None  # the kept state shown, None: the newest
        self._queue: collections.deque = collections.deque()  # (seq, command); deque ops are atomic
        self._lock = threading.Lock()  # numbers commands in the order they are queued
        self._sent = 0
        self._applied = 0
        self._applying = 0  # sequence number of the command being applied
        self._cancelled: set[int] = set()  # sequence numbers of Step commands to stop
        self._progress = (0, 0)  # (steps done, steps asked) of the current or last Step
        self._wake = threading.Event()
        self._published = threading.Condition()
        self._frame = 0
        self._latest: snapshots.Snapshot | None = None
        self._dirty = True
        self._published_at = -1e9
        self._beat = 0.0  # when the playing loop publishes next
        self._message, self._message_id = "", 0
        self._wanted_playing = session.playing
        self._pause_shown_at: int | None = None  # commands sent when it paused itself, until shown
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._listeners: list = []  # called with every snapshot, on the publishing thread
        # other threads that run Python beside this one, for `parked` (the bridge's): each
        # has a `parked(timeout)` context that holds its threads where they hold no GIL
        self.companions: list = []
        self._numbered = False  # the state now has a frame id (run_here) not yet published
        self._loan: threading.Event | None = None  # set while lent: the parked physics thread waits on it
        self._stepping = 0.0  # wall seconds spent stepping since the last snapshot
        self._plot_request = plots.Request()  # what the views plot (commands.Plot), and its
        self._plot_channels: tuple = ()  # channels in the model now (each published snapshot's plots)
        self._watch_request = watches.Request()  # the watched fields (commands.Watch)
        self._profiler: infos.Profiler | None = None  # the figures' rings while shown (commands.Profile)
        self._timer_prev: tuple | None = None  # MuJoCo's timers at the last snapshot (Info's deltas)
        self.record()
        self._publish()

    # ------------------------------------------------------- any thread

    def send(self, command) -> int:
        """Queue `command`; returns its sequence number. Inline, it is applied now
        (its errors raise here); threaded, between two steps (its errors become
        the snapshot's message)."""
        with self._lock:
            self._sent += 1
            seq = self._sent
            self._queue.append((seq, command))
        if isinstance(command, commands.Play):
            self._wanted_playing = True
        elif isinstance(command, (commands.Pause, commands.Step, commands.ShowHistory)):
            self._wanted_playing = False
        if self.threaded:
            self._wake.set()
        else:
            self._apply_queued()
        return seq

    def cancel(self, seq: int) -> None:
        """Stop Step command `seq` at its next step boundary (a chunk of ~2 ms of
        stepping), or before it starts; the snapshot after it shows how far it got."""
        if seq > self._applied:  # (one already done has nothing to stop)
            self._cancelled.add(seq)

    @property
    def latest(self) -> snapshots.Snapshot:
        """The newest snapshot (inline: of the state now)."""
        if not self.threaded and self._dirty:
            self._publish()
        return self._latest

    def listen(self, callback) -> None:
        """Call `callback(snapshot)` with every snapshot published from now on, on the
        thread that publishes it (keep it short: it holds up the physics)."""
        self._listeners = [*self._listeners, callback]

    def unlisten(self, callback) -> None:
        self._listeners = [c for c in self._listeners if c is not callback]

    def wait_frame(self, frame: int, timeout: float | None = None) -> snapshots.Snapshot | None:
        """Block until a snapshot with a frame id >= `frame` is published (threaded)
        and return the newest; None on timeout, once the runner has stopped, or
        inline (nothing publishes while the caller waits)."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        with self._published:
            while self._latest is None or self._latest.frame < frame:
                left = None if deadline is None else deadline - time.perf_counter()
                if not self.alive or (left is not None and left <= 0):
                    return None
                self._published.wait(0.05 if left is None else min(left, 0.05))
            return self._latest

    @property
    def playing(self) -> bool:
        """Whether the simulation plays or was last asked to (a Pause shows at once,
        before a slow step ends); False once it paused itself."""
        return self._wanted_playing

    def wait(self, seq: int, timeout: float | None = None) -> bool:
        """Block until command `seq` was applied and a snapshot after it published
        (threaded; inline this is already so). False on timeout."""
        if not self.threaded:
            return True
        deadline = None if timeout is None else time.perf_counter() + timeout
        with self._published:
            while self._latest is None or self._latest.applied < seq:
                if not self.alive:
                    return False
                left = None if deadline is None else deadline - time.perf_counter()
                if left is not None and left <= 0:
                    return False
                self._published.wait(0.05 if left is None else min(left, 0.05))
        return True

    @contextlib.contextmanager
    def parked(self, timeout: float = 5.0):
        """Hold the physics thread in a wait that holds no GIL (between two steps)
        while the body runs. Blender on Python 3.11 (4.2 LTS, 4.5 LTS, 5.0; 5.2 on
        3.13 does not) resolves a context override (`temp_override`) inside an operator
        called from Python without the GIL when another Python thread holds it, and
        crashes (tests/blender/test_context_override.py): a script calling operators
        with an override while a simulation plays does it inside this. Other threads
        that run Python beside it (`companions`: the bridge's) are held first, so
        none is left to take the GIL; while the simulation is lent (Runner.lend) the
        physics thread waits already and its borrower is one of them."""
        with contextlib.ExitStack() as held:
            for companion in list(self.companions):
                held.enter_context(companion.parked(timeout))
            if not self.alive or self.lent:
                yield
                return
            parked, release = threading.Event(), threading.Event()

            def park(_session):
                parked.set()
                release.wait(60.0)  # (a forgotten park lets go on its own)
            self.send(commands.Call(park, what="Parking the physics thread", changes=False))
            if not parked.wait(timeout):
                release.set()
                raise TimeoutError(f"the physics thread did not park within {timeout:g} s "
                                   "(inside a long step?)")
            try:
                yield
            finally:
                release.set()

    # -------------------------------------------------------- lifecycle

    def start(self) -> None:
        if not self.threaded or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 2.0) -> bool:
        """End the physics thread; True once it has. False if it is still inside a
        step after `timeout` (a daemon thread: it ends when that step returns)."""
        self._stopping = True
        self._wake.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # ------------------------------------------------------------ lending
    # A network client that steps the simulation itself (the bridge's direct and
    # puppet modes) would pay two thread switches per request if the physics
    # thread ran each step for it. So the physics thread lends the simulation:
    # it parks (touching nothing) and the borrower, one caller at a time under
    # its own lock, becomes the thread that owns MjData. The borrower applies
    # what others send (`serve_queue`) between its own commands (`run_here`).

    @property
    def lent(self) -> bool:
        return self._loan is not None

    def lend(self, timeout: float = 5.0) -> bool:
        """Park the physics thread until `give_back`; the caller then owns MjData.
        False if the thread did not get to it within `timeout` (inside a long step:
        try again later). Inline runners are owned by their caller already: True."""
        if self._loan is not None or not self.threaded:
            return True
        if not self.alive:
            return False
        parked, loan = threading.Event(), threading.Event()

        def park(_session):
            parked.set()
            while not loan.wait(IDLE_WAIT):  # (until given back, or the runner stops)
                if self._stopping:
                    break
        seq = self.send(commands.Call(park, what="Lending the simulation", changes=False))
        if not parked.wait(timeout):
            loan.set()
            self.cancel(seq)
            return False
        self._loan = loan
        return True

    def give_back(self) -> None:
        """The physics thread owns MjData again (commands queued meanwhile: it applies them)."""
        loan, self._loan = self._loan, None
        if loan is not None:
            loan.set()
            self._wake.set()

    def serve_queue(self) -> None:
        """The borrower: apply the commands others sent, then publish a snapshot if
        one is due (at the display's rate)."""
        if self._queue:
            self._apply_queued()
        if self._dirty and self.clock() - self._published_at >= self.interval:
            self._publish()

    def run_here(self, command) -> None:
        """The borrower (or an inline caller): apply `command` now, on this thread
        (its errors raise), after what others sent. The state it leaves is frame
        `frame` (one more for each call); a snapshot of it is published at the
        display's rate (the bridge streams every state itself)."""
        self.serve_queue()
        with self._lock:
            self._sent += 1
            seq = self._sent
        self._applying = seq
        try:
            command.apply(self)
        finally:
            self._applied = max(self._applied, seq)
            self._dirty = True
        self._after_batch(0)
        self._frame += 1  # (the state has a frame id of its own, published now or later)
        self._numbered = True
        if self.clock() - self._published_at >= self.interval:
            self._publish()

    def publish_now(self) -> snapshots.Snapshot:
        """The borrower (or an inline caller): the state now as the newest snapshot,
        published whatever the display's rate (Blender's renderer draws what the
        objects show, and they show snapshots). Nothing published if it is already."""
        if self._dirty or self._latest.frame != self._frame:
            self._publish()
        return self._latest

    @property
    def frame(self) -> int:
        """The id of the state now (the newest snapshot's, or past it while lent)."""
        return self._frame

    # ---------------------------------------------------- inline driving

    def tick(self, now: float | None = None, budget: float = 1 / 30) -> int:
        """Inline: step until simulated time catches up with `now` (at most
        `budget` seconds of work). Threaded runners step on their own: 0."""
        if self.threaded:
            return 0
        started = time.perf_counter()
        steps = self.session.advance(self.clock() if now is None else now, budget)
        self._stepping += time.perf_counter() - started
        self._after_batch(steps)
        return steps

    # ------------------------------------------- the owner's thread only

    def run_steps(self, count: int) -> int:
        """Exactly `count` steps (fewer if it diverges, the runner stops or the
        command is cancelled), recorded. Threaded, a long run publishes its progress."""
        def between() -> bool:  # (between two chunks of steps: True to stop)
            self._progress = (self.session.steps_taken - first, count)
            if self.threaded and self.clock() - self._published_at > self.interval:
                self._dirty = True
                self._stepped_since(started)
                self._publish()
                started[0] = time.perf_counter()
            return self._stopping or self._applying in self._cancelled

        first = self.session.steps_taken
        self._progress = (0, count)
        started = [time.perf_counter()]  # (a snapshot published mid-run takes the time so far)
        done = 0 if between() else self.session.step(count, stop=between)
        self._stepped_since(started)
        self._progress = (done, count)
        self._after_batch(done)
        return done

    def _stepped_since(self, started: list) -> None:
        self._stepping += time.perf_counter() - started[0]
        started[0] = time.perf_counter()

    def plot(self, request: plots.Request) -> None:
        """Publish `request`'s plots with every snapshot from now on (commands.Plot applies it)."""
        self._plot_request = request
        self._plot_channels = plots.resolve_all(self.session.model, request)

    def watch(self, request: watches.Request) -> None:
        """Publish `request`'s watched values with every snapshot from now on (commands.Watch)."""
        self._watch_request = request
        self._dirty = True

    def profile(self, request: infos.Request) -> None:
        """Publish the profiler figures with every snapshot while `request.on` (commands.Profile)."""
        if not request.on:
            self._profiler = None
        elif self._profiler is None:
            self._profiler = infos.Profiler()
        self._dirty = True

    def restart_timers(self) -> None:
        """MuJoCo zeroed the timers (a reset, a new MjData): Info's next deltas count from zero."""
        self._timer_prev = None

    def clear_message(self) -> None:
        """A new run (play, step, reset): the last one's message no longer applies."""
        if self._message:
            self._message = ""
            self._dirty = True

    def record(self) -> None:
        self.history.record(self.session.model, self.session.data)
        self.showing_history = None

    def new_history(self) -> None:
        """A recompiled model: its states have another layout."""
        self.history = History(self.session.model, *self._history_size)
        self.restart_timers()  # (a new MjData: MuJoCo's timers start from zero)
        self._plot_channels = plots.resolve_all(self.session.model, self._plot_request)  # (by name)
        self.record()

    def _after_batch(self, steps: int) -> None:
        if steps:
            self.record()
            self._dirty = True
        if self.session.message:  # it paused itself (diverged)
            self._say(self.session.take_message())
            self._paused_itself()

    def _paused_itself(self) -> None:
        """The simulation stopped playing on its own (its message said). Threaded, `playing`
        turns False when the snapshot with the message is out, so that whoever sees the
        pause finds its reason; unless a command was sent meanwhile (a Play wins)."""
        self._dirty = True
        if self.threaded:
            self._pause_shown_at = self._sent
        else:
            self._wanted_playing = False

    def _apply_queued(self) -> None:
        while self._queue:
            seq, command = self._queue.popleft()
            self._applying = seq
            changes = getattr(command, "changes", True)
            if changes:
                self._numbered = False  # (the state changes: it will be a frame of its own)
            try:
                command.apply(self)
            except Exception as error:  # noqa: BLE001 (a bad command never stops the runner)
                if not self.threaded:
                    raise
                what = getattr(command, "what", type(command).__name__)
                # (a ValueError says what is wrong in a user's words; anything else is a bug)
                self._say(f"{what} not applied: {error}" if isinstance(error, ValueError)
                          else f"{what} not applied ({type(error).__name__}: {error})")
            finally:
                # (max: a lent runner's park returns after the borrower applied newer commands)
                self._applied = max(self._applied, seq)
                self._cancelled.discard(seq)
                self._dirty = self._dirty or changes
            self._after_batch(0)

    def _say(self, message: str) -> None:
        self._message_id += 1
        self._message = message

    def _publish(self) -> None:
        self.session.kinematics()  # poses of the state now, not of one step earlier
        if not self._numbered:  # (a state run_here numbered keeps its frame id)
            self._frame += 1
        self._numbered = False
        history = (len(self.history),
                   self.showing_history if self.showing_history is not None else len(self.history) - 1)
        plotted = (plots.build(self.history, self._plot_request, self._plot_channels)
                   if self._plot_request.specs else None)
        model, data = self.session.model, self.session.data
        info = infos.take(model, data, self._timer_prev)
        self._timer_prev = infos.timers(data)
        figures = None if self._profiler is None else self._profiler.take(model, data, info)
        shot = snapshots.take(self.session, self._frame, self._applied, (self._message_id, self._message),
                              history, self._progress, step_seconds=self._stepping, plots=plotted, info=info,
                              watch=watches.read(data, self._watch_request),
                              figures=figures)
        self._stepping = 0.0
        with self._published:
            self._latest = shot
            self._published.notify_all()
        if self._pause_shown_at is not None:
            if self._pause_shown_at == self._sent:  # (else a command came after: it decides)
                self._wanted_playing = False
            self._pause_shown_at = None
        for listener in self._listeners:
            listener(shot)
        self._dirty = False
        self._published_at = self.clock()

    def _loop(self) -> None:
        """The physics thread: commands, a batch of steps, a snapshot, a sleep."""
        session = self.session  # (a recompile replaces its model and data, never the session)
        while not self._stopping:
            self._wake.clear()
            try:
                self._apply_queued()
                if session.playing:
                    budget = self.batch_seconds if session.fast_forward else self.interval
                    started = time.perf_counter()
                    steps = session.advance(self.clock(), budget=budget)
                    self._stepping += time.perf_counter() - started
                    self._after_batch(steps)
            except Exception as error:  # noqa: BLE001 (Blender stays up; the user is told)
                session.pause()
                self._say(f"The simulation stopped at t = {session.data.time:.4f} s: "
                          f"{type(error).__name__}: {error}")
                self._paused_itself()
            now = self.clock()
            period = self.batch_seconds if session.fast_forward else self.interval
            if self._dirty and (now >= self._beat or not session.playing):
                self._publish()
                # (the next one a period after this one was due, not after it came: a
                # sleep's overshoot would otherwise slow the rate down; far behind, from now)
                self._beat = self._beat + period if now - self._beat < period else now + period
                now = self.clock()
            if not session.playing:
                self._wake.wait(IDLE_WAIT)
            elif not session.fast_forward:
                # one batch per display frame (or later, if no step is owed by then)
                wait = max(self._beat - now, session.seconds_until_due(now))
                if wait > 0:
                    self._wake.wait(wait)
        self._published_at = self.clock()


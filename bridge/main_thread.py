"""Work the bridge's threads ask Blender's main thread to do.

Only Blender's main thread touches bpy, and the bridge answers on threads of its
own. So a request that reads or edits the scene (URLab's scene, outliner, viewport,
sim and debug ops, `include_assets`, an upload's import) is a *job*: the bridge's
thread queues a function here and waits for its result (`call`), or, for a long
op, gets a job id at once and the client follows it with `op_status` (`start`,
`status`). The main thread runs queued jobs when it looks (live/bridge_host.watch:
a timer in a window, the headless loop of `blender --command mjblend_serve`; a
script in the bpy module calls `watch()` itself), at most `BUDGET` seconds of
them a look, so the UI keeps its frames whatever clients ask.

A job is a plain function of no arguments run on the main thread; what it returns
is the reply (or the job's result). It raises `ProtocolError` for an answer with a
code; any other exception becomes `internal_error` with its message.

Nothing here imports bpy.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections import OrderedDict
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout

from ..engine.errors import MJBlendError
from .wire import ProtocolError

TIMEOUT = 10.0  # seconds a bridge thread waits for a short job
BUDGET = 0.008  # seconds of jobs the main thread runs a look (then it draws a frame first)
KEPT_JOBS = 64  # finished long jobs whose status a client may still ask for


@dataclasses.dataclass(eq=False)
class Job:
    what: str  # the op, for messages
    function: object
    future: Future = dataclasses.field(default_factory=Future)
    id: str = ""  # long jobs only
    progress: float = 0.0  # 0..1, set by a long job that knows


class MainThread:
    def __init__(self, wake: threading.Event | None = None, timeout: float = TIMEOUT):
        self.timeout = timeout
        self.wake = wake or threading.Event()  # set while a job waits (the headless loop waits on it)
        self._queue: list[Job] = []
        self._long: OrderedDict[str, Job] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._closed = False
        self.ran = 0  # jobs run (the panel's count)
        self.seconds: dict[str, float] = {}  # each op's last job: seconds of the main thread it took
        self.asked_at = -1e9  # monotonic time of the last job queued (the main thread looks often after)

    # ------------------------------------------------------- bridge threads

    def call(self, function, what: str, timeout: float | None = None):
        """`function()` run on Blender's main thread; its result. ProtocolError if it is
        not run in time (nothing serves the main thread) or the bridge stops."""
        job = self._queue_job(Job(what, function))
        timeout = self.timeout if timeout is None else timeout
        try:
            return job.future.result(timeout)
        except FutureTimeout:
            with self._lock:
                if job in self._queue:
                    self._queue.remove(job)
            if job.future.cancel():
                raise ProtocolError(
                    "main_thread_timeout",
                    f"'{what}' needs Blender's main thread, which did not take it within {timeout:g} s: "
                    "Blender is busy, or nothing serves it (a window and `blender --command mjblend_serve` "
                    "do; a script in the bpy module must call mjblend.live.bridge_host.watch() often)"
                ) from None
            return job.future.result()  # (it started just now: its result)
        except CancelledError:
            raise ProtocolError("not_ready", f"the bridge stopped before '{what}' ran") from None

    def start(self, function, what: str) -> str:
        """A long job: queued, its id returned at once (URLab's `op_started`)."""
        with self._lock:
            job = Job(what, function, id=f"job-{next(self._ids)}")
            self._long[job.id] = job
            while len(self._long) > KEPT_JOBS:
                self._long.popitem(last=False)
        self._queue_job(job)
        return job.id

    def status(self, job_id: str) -> dict:
        """URLab's op_status fields of a long job: state queued | running | done | failed,
        progress, and its result or error."""
        job = self._long.get(job_id)
        if job is None:
            raise ProtocolError("unknown_job", f"no job {str(job_id)[:40]!r} (finished jobs are kept: the "
                                f"last {KEPT_JOBS})")
        future = job.future
        if future.cancelled():
            return {"job_id": job_id, "state": "failed", "progress": job.progress,
                    "error": "the bridge stopped before it ran", "code": "not_ready"}
        if not future.done():
            return {"job_id": job_id, "state": "running" if future.running() else "queued",
                    "progress": job.progress}
        problem = future.exception()
        if problem is None:
            return {"job_id": job_id, "state": "done", "progress": 1.0, "result": future.result()}
        code, message = _code(problem)
        return {"job_id": job_id, "state": "failed", "progress": job.progress, "error": message, "code": code}

    def _queue_job(self, job: Job) -> Job:
        with self._lock:
            if self._closed:
                raise ProtocolError("not_ready", "the bridge is stopping")
            self._queue.append(job)
            self.asked_at = time.monotonic()
            self.wake.set()
        return job

    # ---------------------------------------------------------- main thread

    @property
    def waiting(self) -> bool:
        return bool(self._queue)

    def busy(self, within: float = 2.0) -> bool:
        """Whether a client queued a job in the last `within` seconds (one that asks once
        asks again: the main thread then looks every few milliseconds, not every quarter second)."""
        return time.monotonic() - self.asked_at < within

    def run(self, budget: float = BUDGET) -> int:
        """(Main thread) Run queued jobs, oldest first, until none is left or `budget`
        seconds have gone (one job at least). How many ran."""
        started, ran = time.perf_counter(), 0
        while ran == 0 or time.perf_counter() - started < budget:
            with self._lock:
                job = self._queue.pop(0) if self._queue else None
            if job is None:
                break
            if not job.future.set_running_or_notify_cancel():
                continue  # (its caller gave up waiting)
            began = time.perf_counter()
            try:
                result = job.function()
            except BaseException as problem:  # noqa: BLE001 -- the waiting bridge thread reports it
                job.future.set_exception(problem)
            else:
                job.future.set_result(result)
            self.seconds[job.what] = time.perf_counter() - began
            ran += 1
            self.ran += 1
        return ran

    def close(self) -> None:
        """Every queued job fails now (the bridge stops: no bridge thread stays waiting)."""
        with self._lock:
            self._closed = True
            jobs, self._queue = self._queue, []
            self.wake.set()
        for job in jobs:
            job.future.cancel()


def _code(problem: BaseException) -> tuple[str, str]:
    if isinstance(problem, ProtocolError):
        return problem.code, problem.message
    if isinstance(problem, MJBlendError):
        return "op_failed", str(problem)
    return "internal_error", f"{type(problem).__name__}: {problem}"


def run_call(main: MainThread | None, function, what: str, timeout: float | None = None):
    """`main.call(function, what)` with errors as ProtocolError; `unsupported` when the
    host has no Blender (ModelHost: no scene, no 3D view)."""
    if main is None:
        raise ProtocolError("unsupported", f"'{what}' needs a Blender scene: this server serves a model "
                            "without Blender (serve the scene from Blender, or with "
                            "`blender --command mjblend_serve`)")
    try:
        return main.call(function, what, timeout)
    except ProtocolError:
        raise
    except BaseException as problem:  # noqa: BLE001
        code, message = _code(problem)
        raise ProtocolError(code, message) from None

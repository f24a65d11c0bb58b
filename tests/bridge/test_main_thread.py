"""Jobs the bridge's threads hand to Blender's main thread (bridge/main_thread.py):
real threads, the main thread played by the test."""

import threading
import time

import pytest
from mjblend.bridge.main_thread import MainThread, run_call
from mjblend.bridge.wire import ProtocolError
from mjblend.engine.errors import MJBlendError


def _in_thread(function):
    out = {}

    def run():
        try:
            out["value"] = function()
        except BaseException as problem:  # noqa: BLE001
            out["error"] = problem
    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def _serve_until(main, thread, seconds=5.0):
    end = time.monotonic() + seconds
    while thread.is_alive() and time.monotonic() < end:
        main.run()
        time.sleep(0.001)
    thread.join(1)


def test_a_call_runs_on_the_thread_that_serves_and_returns_its_result():
    main = MainThread()
    ran_on = []
    thread, out = _in_thread(lambda: main.call(lambda: ran_on.append(threading.current_thread()) or 42, "x"))
    _serve_until(main, thread)
    assert out == {"value": 42}
    assert ran_on == [threading.current_thread()]
    assert not main.waiting
    assert list(main.seconds) == ["x"] and main.seconds["x"] >= 0.0  # (the main thread's time, per op)


def test_errors_come_back_with_their_codes():
    main = MainThread()

    def refuse():
        raise ProtocolError("unknown_actor", "no actor 'ghost'")

    def fail():
        raise MJBlendError("the scene cannot compile")

    def bug():
        raise KeyError("k")
    outs = []
    for function in (refuse, fail, bug):
        thread, out = _in_thread(lambda function=function: run_call(main, function, "op"))
        _serve_until(main, thread)
        outs.append(out["error"])
    assert [(e.code, e.message) for e in outs] == [
        ("unknown_actor", "no actor 'ghost'"), ("op_failed", "the scene cannot compile"),
        ("internal_error", "KeyError: 'k'")]


def test_nothing_serving_the_main_thread_times_out_clearly_and_the_job_never_runs_later():
    main = MainThread(timeout=0.05)
    ran = []
    with pytest.raises(ProtocolError) as failed:
        main.call(lambda: ran.append(1), "list_actors")
    assert failed.value.code == "main_thread_timeout"
    assert "list_actors" in failed.value.message and "watch()" in failed.value.message
    assert main.run() == 0 and ran == []


def test_a_host_without_blender_answers_unsupported():
    with pytest.raises(ProtocolError) as failed:
        run_call(None, lambda: 1, "get_camera")
    assert failed.value.code == "unsupported" and "Blender scene" in failed.value.message


def test_long_jobs_are_followed_by_status():
    main = MainThread()
    job = main.start(lambda: {"imported": True}, "import_xml")
    assert main.status(job) == {"job_id": job, "state": "queued", "progress": 0.0}
    assert main.run() == 1
    assert main.status(job) == {"job_id": job, "state": "done", "progress": 1.0, "result": {"imported": True}}

    def fail():
        raise ProtocolError("compile_error", "XML Error: bad")
    failing = main.start(fail, "import_xml")
    main.run()
    status = main.status(failing)
    assert (status["state"], status["code"], status["error"]) == ("failed", "compile_error", "XML Error: bad")
    with pytest.raises(ProtocolError) as unknown:
        main.status("job-999")
    assert unknown.value.code == "unknown_job"


def test_the_main_thread_runs_jobs_within_its_budget():
    main = MainThread()
    for _ in range(20):
        main.start(lambda: time.sleep(0.004), "slow")
    assert main.run(budget=0.01) < 20  # (it stops to draw a frame; the rest wait for the next look)
    assert main.waiting


def test_closing_fails_every_waiting_call_at_once():
    main = MainThread()
    thread, out = _in_thread(lambda: main.call(lambda: 1, "snapshot", timeout=30))
    while not main.waiting:
        time.sleep(0.001)
    main.close()
    thread.join(2)
    assert not thread.is_alive() and out["error"].code == "not_ready"
    with pytest.raises(ProtocolError):
        main.call(lambda: 1, "x")

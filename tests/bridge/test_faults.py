"""Whatever a client sends or does, the server answers with an error (or goes on),
changes nothing, and leaves no thread or socket behind when it stops."""

import json
import os
import subprocess
import sys
import threading
import time

import msgpack
import numpy as np
import pytest
import zmq
from bridge_fixtures import Served, free_port, humanoid_path
from wire_client import WireClient

from mjblend.bridge.host import ModelHost
from mjblend.bridge.server import Bridge
from mjblend.bridge.zmq_transport import PortInUse


@pytest.fixture
def direct(serve):
    """(served, client) in direct mode, and the state before any fault."""
    served = serve(humanoid_path())
    client = served.client()
    client.call("set_mode", mode="direct")
    client.call("step", n_steps=3)
    return served, client


def unchanged(client, before):
    """The server still answers, and the state is what it was."""
    now = client.call("get_state")
    assert now["op"] == "get_state_ok"
    assert now["step"] == before["step"]
    assert now["arts"]["Humanoid"]["qpos"] == before["arts"]["Humanoid"]["qpos"]


def test_malformed_msgpack(direct):
    served, client = direct
    before = client.call("get_state")
    for frame in (b"\xc1", b"\x93\x01\x02", b"\x81\xa2op", b"\xdf\xff\xff\xff\xff", b""):
        reply = client.raw(frame)
        assert reply["op"] == "error" and reply["code"] == "bad_request", (frame, reply)
    unchanged(client, before)


def test_unknown_and_missing_ops(direct):
    served, client = direct
    before = client.call("get_state")
    assert client.call("teleport")["code"] == "unknown_op"
    reply = client.call("spawn_actor")
    assert reply["code"] == "unsupported" and "MJBlend" in reply["message"]
    assert client.raw(msgpack.packb({"session_id": client.session_id}))["code"] == "missing_op"
    assert client.raw(msgpack.packb({"op": 7}))["code"] == "bad_request"
    unchanged(client, before)


def test_wrong_types(direct):
    served, client = direct
    before = client.call("get_state")
    for fields in ({"n_steps": "ten"}, {"n_steps": 1.5}, {"n_steps": -1}, {"n_steps": True},
                   {"per_articulation": [1, 2]}, {"per_articulation": {"Humanoid": {"ctrl": "fast"}}},
                   {"per_articulation": {"Humanoid": {"ctrl": [None] * 21}}},
                   {"observations": 3}):
        reply = client.call("step", **fields)
        assert reply["op"] == "error" and reply["code"] == "bad_value", (fields, reply)
    assert client.call("set_paused", paused="yes")["code"] == "bad_value"
    assert client.call("set_mode", mode=["direct"])["code"] == "bad_value"
    assert client.call("set_mode", mode="warp")["code"] == "bad_mode"
    unchanged(client, before)


def test_wrong_lengths(direct):
    served, client = direct
    before = client.call("get_state")
    reply = client.call("step", per_articulation={"Humanoid": {"ctrl": [0.1] * 20}})
    assert reply["code"] == "dim_mismatch" and "21" in reply["message"]
    reply = client.call("step", per_articulation={"Humanoid": {"xfrc_applied": {"torso": [1, 2, 3]}}})
    assert reply["code"] == "dim_mismatch"
    assert client.call("step", per_articulation={"Nobody": {"ctrl": []}})["code"] == "unknown_articulation"
    client.call("set_mode", mode="puppet")
    assert client.call("step", qpos=[0.0] * 27)["code"] == "dim_mismatch"
    client.call("set_mode", mode="direct")
    unchanged(client, before)


def test_nans_change_nothing(direct):
    served, client = direct
    before = client.call("get_state")
    nan_ctrl = [0.0] * 21
    nan_ctrl[4] = float("nan")
    reply = client.call("step", per_articulation={"Humanoid": {"ctrl": nan_ctrl}})
    assert reply["code"] == "bad_value" and "NaN" in reply["message"]
    assert client.call("set_sim_speed", percent=float("inf"))["code"] == "bad_value"
    client.call("set_mode", mode="puppet")
    qpos = before["arts"]["Humanoid"]["qpos"][:]
    qpos[0] = float("nan")
    assert client.call("step", qpos=qpos)["code"] == "bad_value"
    client.call("set_mode", mode="direct")
    unchanged(client, before)


def test_stale_session_ids(direct):
    served, client = direct
    before = client.call("get_state")
    assert client.call("step", session_id="0123")["code"] == "session_expired"
    assert client.call("step", session_id=None)["code"] == "session_expired"
    assert client.call("step", session_id=12)["code"] == "session_expired"
    # the oldest of more sessions than the server keeps expires
    old = client.session_id
    for _ in range(40):
        served.client()
    assert client.call("get_state", session_id=old)["code"] == "session_expired"
    client.hello()
    unchanged(client, before)


def test_oversized_message_is_refused(serve):
    served = serve(humanoid_path(), limit=4096)
    client = served.client()
    reply = client.call("step", padding="x" * 10000)
    assert reply["code"] == "message_too_large"
    assert client.call("get_state")["op"] == "get_state_ok"


def test_json_sessions(serve):
    served = serve(humanoid_path())
    client = served.client(hello=False)
    client.socket.send(json.dumps({"op": "hello", "encoding": "json"}).encode())
    hello = json.loads(client.socket.recv())
    assert hello["op"] == "hello_ok" and hello["mjb_size"] > 0 and "mjb_base64" in hello
    client.socket.send(json.dumps({"op": "step", "session_id": hello["session_id"]}).encode())
    reply = json.loads(client.socket.recv())
    assert reply["op"] == "step_ok" or reply["op"] == "error"  # (live mode: paused or playing)
    client.socket.send(b"{not json")
    assert json.loads(client.socket.recv())["code"] == "bad_request"


KILLED_CLIENT = """
import sys, msgpack, zmq
socket = zmq.Context().socket(zmq.REQ)
socket.connect("tcp://127.0.0.1:" + sys.argv[1])
socket.send(msgpack.packb({"op": "hello"}))
sid = msgpack.unpackb(socket.recv())["session_id"]
socket.send(msgpack.packb({"op": "set_mode", "mode": "direct", "session_id": sid}))
socket.recv()
socket.send(msgpack.packb({"op": "step", "n_steps": 200000, "session_id": sid}))
print("sent", flush=True)
socket.recv()
"""


def test_client_killed_mid_request(serve):
    served = serve(humanoid_path())
    child = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, str(served.request_port)],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "sent"
    time.sleep(0.2)
    child.kill()
    child.wait(10)
    child.stdout.close()
    # The long step may still be running (step_timeout, then served): 200000 humanoid
    # steps take ~4 s alone, three times that on a machine busy with other suites.
    other = served.client(timeout_ms=60000)
    deadline = time.perf_counter() + 30
    while other.call("get_state")["op"] != "get_state_ok" and time.perf_counter() < deadline:
        time.sleep(0.1)
    assert other.call("get_state")["op"] == "get_state_ok"


def test_ten_clients_at_once(serve):
    served = serve(humanoid_path())
    served.client().call("set_mode", mode="direct")
    results, errors = [], []

    def drive(k):
        try:
            client = WireClient(served.request_port)
            client.hello()
            replies = [client.call("step", n_steps=1) for _ in range(30)]
            results.append(all(r["op"] == "step_ok" for r in replies))
            client.close()
        except Exception as error:  # noqa: BLE001
            errors.append(error)
    threads = [threading.Thread(target=drive, args=(k,)) for k in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and results == [True] * 10
    assert served.client().call("get_state")["step"] == 300


def test_subscriber_that_never_reads(serve):
    served = serve(humanoid_path())
    context = zmq.Context()
    lazy = context.socket(zmq.SUB)
    lazy.setsockopt(zmq.RCVHWM, 10)
    lazy.setsockopt(zmq.RCVBUF, 4096)
    lazy.connect(f"tcp://127.0.0.1:{served.state_port}")
    lazy.setsockopt(zmq.SUBSCRIBE, b"")
    client = served.client()
    client.call("set_mode", mode="direct")
    time.sleep(0.2)
    start = time.perf_counter()
    for _ in range(2000):
        assert client.call("step", n_steps=1, observations="minimal")["op"] == "step_ok"
    assert time.perf_counter() - start < 60
    assert served.bridge.stream.alive
    lazy.close(linger=0)
    context.term()


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_stop_closes_every_socket_and_thread():
    path = humanoid_path()
    threads, fds = threading.active_count(), open_fds()
    request_port, state_port = free_port(), free_port()
    for _ in range(2):  # (the same ports again: the first server let go of them)
        host = ModelHost.from_file(path)
        bridge = Bridge(host, request_port=request_port, state_port=state_port)
        bridge.start()
        client = WireClient(request_port)
        client.hello()
        client.close()
        bridge.stop()
        assert host.close()
    assert threading.active_count() == threads
    assert open_fds() <= fds + 2  # (pyzmq may keep one context's eventfds until collected)


def test_a_taken_port_is_a_clear_error():
    served = Served(humanoid_path())
    try:
        host = ModelHost.from_file(humanoid_path())
        with pytest.raises(PortInUse, match="5559|another server|" + str(served.request_port)):
            Bridge(host, request_port=served.request_port, state_port=free_port()).start()
        assert host.close()
    finally:
        served.close()


def test_results_stay_with_their_request(direct):
    """Requests are answered in order, each with its own state."""
    served, client = direct
    a = client.call("step", n_steps=1)
    b = client.call("step", n_steps=1)
    assert b["step"] == a["step"] + 1 and not np.array_equal(a["arts"]["Humanoid"]["qpos"],
                                                             b["arts"]["Humanoid"]["qpos"])


def test_parking_holds_the_bridges_threads_too(serve):
    """Runner.parked (what a Blender script wraps a context override in) also holds
    the bridge's threads where they hold no GIL: no request is answered and no
    snapshot streamed meanwhile, in live and in direct mode (the simulation lent),
    and everything goes on afterwards; parking publishes nothing."""
    served = serve(humanoid_path(), transports=("zmq", "shm"))
    runner, bridge = served.host.runner(), served.bridge
    client = served.client()
    for mode in ("live", "direct"):
        client.call("set_mode", mode=mode)
        frame = runner.frame
        with runner.parked(timeout=5):
            assert bridge.hold._waiting == 3  # (requests, shared memory, the stream)
            late = WireClient(served.request_port, timeout_ms=300)
            late.socket.send(msgpack.packb({"op": "meta"}))
            assert late.socket.poll(300) == 0  # (not answered while parked)
        assert late.socket.poll(5000) and msgpack.unpackb(late.socket.recv())["op"] == "meta_ok"
        late.close()
        if mode == "direct":
            assert runner.frame == frame  # (parking changed nothing: no new frame)
        assert client.call("get_state")["op"] == "get_state_ok"

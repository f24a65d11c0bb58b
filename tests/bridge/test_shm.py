"""The shared-memory transport against a client of its own that speaks URLab's
region layout (written here from the documented header, not URLab's code): the
handshake's fields, direct steps bit for bit as over ZMQ, the state ring,
oversize replies falling back to ZMQ, and a stop that leaves nothing behind."""

import mmap
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import msgpack
import mujoco
import numpy as np
import pytest
from bridge_fixtures import humanoid_path

from mjblend.bridge.shm_transport import ShmTransport

MAGIC, HEADER_SIZE = 0x424C5255, 64  # 'URLB'; slots start after the 64-byte header

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_yield"), reason="shared memory is served on POSIX")


class Region:
    """One region as a client maps it: magic u32@0, version u32@4, buffer_stride u32@8,
    n_buffers u32@12, sequence u64@16, latest_idx u32@24; slots of [u32 size][frame]."""

    def __init__(self, path):
        with open(path, "r+b") as file:
            self.map = mmap.mmap(file.fileno(), 0)
        self.magic, self.version, self.stride, self.n_buffers = struct.unpack_from("<IIII", self.map, 0)

    def sequence(self):
        return struct.unpack_from("<Q", self.map, 16)[0]

    def read(self):
        index = struct.unpack_from("<I", self.map, 24)[0]
        start = HEADER_SIZE + index * self.stride
        size = struct.unpack_from("<I", self.map, start)[0]
        return self.map[start + 4:start + 4 + size]

    def write(self, frame, size=None):
        index = (struct.unpack_from("<I", self.map, 24)[0] + 1) % self.n_buffers
        start = HEADER_SIZE + index * self.stride
        struct.pack_into("<I", self.map, start, len(frame) if size is None else size)
        self.map[start + 4:start + 4 + len(frame)] = frame
        struct.pack_into("<I", self.map, 24, index)
        struct.pack_into("<Q", self.map, 16, self.sequence() + 1)

    def close(self):
        self.map.close()


class ShmClient:
    """Requests through req.shm, replies from rep.shm; a `reply_too_large` error
    sends the same request again over ZMQ (`fallback`), as URLab's client does."""

    def __init__(self, contract, session_id, fallback=None):
        self.requests, self.replies = Region(contract["req_path"]), Region(contract["rep_path"])
        self.session_id, self.fallback = session_id, fallback
        self.fell_back = []

    def raw(self, frame, timeout=10.0, size=None):
        seen = self.replies.sequence()
        self.requests.write(frame, size)
        deadline = time.perf_counter() + timeout
        while self.replies.sequence() == seen:
            assert time.perf_counter() < deadline, "no reply over shared memory"
            os.sched_yield()
        return msgpack.unpackb(self.replies.read(), raw=False)

    def call(self, op, **fields):
        request = {"op": op, **fields}
        if self.session_id is not None and "session_id" not in fields:
            request["session_id"] = self.session_id
        reply = self.raw(msgpack.packb(request, use_bin_type=True))
        if reply.get("op") == "error" and reply.get("code") == "reply_too_large" and self.fallback:
            self.fell_back.append(op)
            reply = self.fallback.call(op, **fields)
        return reply

    def close(self):
        self.requests.close()
        self.replies.close()


@pytest.fixture
def shm_client():
    made = []

    def make(*args, **kwargs):
        made.append(ShmClient(*args, **kwargs))
        return made[-1]
    yield make
    for client in made:
        client.close()


def load_mjb(blob):
    return mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": blob})


def test_hello_names_the_regions(serve, tmp_path):
    served = serve(humanoid_path(), transports=("zmq", "shm"), shm_dir=str(tmp_path))
    reply = served.client().hello()
    folder = reply["shm_session_dir"]
    assert os.path.dirname(folder) == str(tmp_path) and os.path.isdir(folder)
    contract = reply["shm_rpc"]
    assert contract["req_path"] == os.path.join(folder, "req.shm")
    assert contract["rep_path"] == os.path.join(folder, "rep.shm")
    assert contract["session"] == os.path.basename(folder) and contract["header_size"] == HEADER_SIZE
    assert contract["req_event"] == f"Local\\URLab_{contract['session']}_req_ready"
    assert reply["instance"]["host"] == socket.gethostname()  # (transport "auto" compares it with its own)
    for name, stride, n_buffers in (("req", contract["req_stride"], contract["n_buffers"]),
                                    ("rep", contract["rep_stride"], contract["n_buffers"]),
                                    ("state", None, None)):
        path = os.path.join(folder, f"{name}.shm")
        region = Region(path)
        assert (region.magic, region.version) == (MAGIC, 1)
        assert (region.stride, region.n_buffers) == (stride or region.stride, n_buffers or region.n_buffers)
        assert region.sequence() == 0
        assert os.path.getsize(path) == HEADER_SIZE + region.stride * region.n_buffers
        region.close()
    assert (os.stat(folder).st_mode & 0o777) == 0o700  # (another user can neither read nor drive it)


def test_handshake_fields_only_while_serving():
    transport = ShmTransport(None)
    assert transport.handshake_fields() == {}  # (not started: a client must not switch to it)


def test_direct_steps_bit_for_bit_as_over_zmq(serve, shm_client):
    served = serve(humanoid_path(), transports=("zmq", "shm"))
    zmq_client = served.client()
    hello = zmq_client.hello()
    model = load_mjb(hello["mjb"])
    shm = shm_client(hello["shm_rpc"], hello["session_id"])
    assert shm.call("set_mode", mode="direct")["current_mode"] == "direct"
    controls = np.random.default_rng(7).uniform(-1, 1, (1000, model.nu))
    finals = {}
    for name, client in (("shm", shm), ("zmq", zmq_client)):
        start = client.call("reset")["step"]
        data = mujoco.MjData(model)
        for row in controls:
            reply = client.call("step", n_steps=1, per_articulation={"Humanoid": {"ctrl": row.tolist()}})
            data.ctrl[:] = row
            mujoco.mj_step(model, data)
        assert reply["op"] == "step_ok" and reply["step"] - start == 1000, reply
        block = reply["arts"]["Humanoid"]
        assert np.array_equal(block["qpos"], data.qpos) and np.array_equal(block["qvel"], data.qvel)
        finals[name] = block["qpos"]
    assert finals["shm"] == finals["zmq"]
    assert served.bridge.shm.served >= 1001


def test_state_ring_delivers_increasing_frames(serve, shm_client):
    served = serve(humanoid_path(), transports=("zmq", "shm"))
    hello = served.client().hello()
    shm = shm_client(hello["shm_rpc"], hello["session_id"])
    shm.call("set_mode", mode="direct")
    ring = Region(os.path.join(hello["shm_session_dir"], "state.shm"))
    deadline = time.perf_counter() + 2.0
    while not served.bridge.stream.listening and time.perf_counter() < deadline:
        time.sleep(0.005)  # (the stream looks for readers a moment after it starts)
    try:
        assert (ring.magic, ring.version) == (MAGIC, 1)
        seen, frames = ring.sequence(), []
        for _ in range(40):
            reply = shm.call("step", n_steps=1)
            deadline = time.perf_counter() + 2.0
            while time.perf_counter() < deadline:
                if ring.sequence() == seen:
                    time.sleep(0.0005)
                    continue
                seen = ring.sequence()
                state = msgpack.unpackb(ring.read(), raw=False)
                assert state["op"] == "state_full" and "Humanoid" in state["arts"]
                frames.append(state["frame_id"])
                if state["frame_id"] >= reply["frame_id"]:
                    break
            assert frames and frames[-1] == reply["frame_id"]  # (the ring shows this step's state)
        assert len(frames) >= 40 and all(b > a for a, b in zip(frames, frames[1:], strict=False)), frames
    finally:
        ring.close()


def test_oversize_reply_falls_back_to_zmq(serve, shm_client):
    served = serve(humanoid_path())  # (ZMQ only; a transport with a small reply slot beside it)
    zmq_client = served.client()
    transport = ShmTransport(served.bridge.dispatcher, reply_stride=64 << 10)
    transport.start()
    try:
        served.bridge.dispatcher.shm = transport
        hello = zmq_client.hello()
        shm = shm_client(hello["shm_rpc"], None)
        raw = shm.raw(msgpack.packb({"op": "hello"}))  # (its model is over 1 MB)
        assert raw["op"] == "error" and raw["code"] == "reply_too_large", raw
        shm.fallback = zmq_client
        reply = shm.call("hello")
        assert reply["op"] == "hello_ok" and len(reply["mjb"]) > 64 << 10 and shm.fell_back == ["hello"]
        shm.session_id = reply["session_id"]
        assert shm.call("set_mode", mode="direct")["op"] == "set_mode_ok"
        assert shm.call("step", n_steps=2)["step"] == 2 and shm.fell_back == ["hello"]
        assert transport.too_large == 2
    finally:
        transport.stop()
        served.bridge.dispatcher.shm = None


def test_bad_slots_get_an_error_and_serving_goes_on(serve, shm_client):
    served = serve(humanoid_path(), transports=("zmq", "shm"))
    hello = served.client().hello()
    shm = shm_client(hello["shm_rpc"], hello["session_id"])
    assert shm.raw(b"\x93garbage")["code"] == "bad_request"
    assert shm.raw(b"", size=0)["code"] == "bad_request"
    assert shm.raw(b"x", size=1 << 30)["code"] == "bad_request"  # (a size over the slot is never read)
    assert shm.call("step", session_id="stale")["code"] == "session_expired"
    assert shm.call("list_keyframes")["op"] == "list_keyframes_ok"


class Canned:
    def handle_frame(self, frame, transport="", limit=None):
        return msgpack.packb({"op": "echo_ok", "transport": transport})


def test_stop_removes_the_files_and_the_thread(tmp_path):
    before = set(threading.enumerate())
    transport = ShmTransport(Canned(), str(tmp_path))
    transport.start()
    fields = transport.handshake_fields()
    folder = fields["shm_session_dir"]
    assert sorted(os.listdir(folder)) == ["owner.pid", "rep.shm", "req.shm", "state.shm"]
    client = ShmClient(fields["shm_rpc"], None)
    assert client.call("anything") == {"op": "echo_ok", "transport": "shm"}
    transport.publish(b"state/full", msgpack.packb({"op": "state_full", "frame_id": 1}), None)
    transport.stop()
    assert not os.path.exists(folder) and os.listdir(tmp_path) == []
    assert set(threading.enumerate()) <= before and not transport.alive
    assert transport.handshake_fields() == {}
    transport.publish(b"state/full", b"late", None)  # (the stream may still hand one over: ignored)
    client.close()  # (a client's mapping outlived the files)


def test_orphaned_sessions_are_removed(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    orphan, alive, foreign = tmp_path / "orphan", tmp_path / "alive", tmp_path / "foreign"
    for folder, pid in ((orphan, gone.stdout.strip()), (alive, str(os.getpid())), (foreign, None)):
        folder.mkdir()
        if pid:
            (folder / "owner.pid").write_text(pid)
    transport = ShmTransport(Canned(), str(tmp_path))
    transport.start()
    transport.stop()
    assert not orphan.exists() and alive.exists() and foreign.exists()

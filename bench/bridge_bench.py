"""The bridge: a client's `step` round trip over ZMQ and shared memory, against a bare ZMQ echo
and `mj_step` itself in the same run, and the state stream's rate.

    .venv/bin/python bench/bridge_bench.py [--steps N] [--repeat R] [--seconds S] [--quick]

The corpus humanoid (else examples/desk_toys.xml) served by `bridge.host.ModelHost`
+ `bridge.server.Bridge` (its own physics thread, the state stream on), in direct
mode, standard observations. The client runs in a child process, as URLab's
client would, and sends what that client sends for a step (msgpack of `{op:
step, session_id, n_steps: 1, observations: standard, per_articulation:
{prefix: {ctrl: [...]}}}`); a round trip is from building that request to the
reply unpacked. In the same run, interleaved per repeat:

1. `mj_step`: one step of the same model from the same start with the same
   controls, in this process (the median step; the client's final qpos is
   checked bit for bit against it);
2. echo: a bare ZMQ REQ/REP echo thread answering a request of the step
   request's size with a reply of the step reply's size (bytes only);
3. ZMQ: the step round trip over REQ/REP;
4. SHM: the same over the shared-memory request / reply regions (URLab's
   layout: a 64-byte header, slots of `[u32 size][msgpack]`, a sequence
   counter the client polls), when `transports=("zmq", "shm")` serves;

targets (issue 18): ZMQ <= 1.5 x (echo + step), SHM <= 50 us + step. Then

5. the state stream: a subscriber in another process counts frame ids (drops
   are gaps) while the client steps as fast as it can (direct mode), and while
   the scene plays live with the runner publishing 1000 snapshots per second
   (real time at a 0.5 ms timestep; `commands.SetPublishRate`, what
   `Bridge(stream_rate=1000)` and `--stream-rate 1000` send); target 1000
   snapshots/s, no drops;
6. where a ZMQ round trip goes: the server's functions timed in-process by
   wrapping them (decode, the request's controls checked, the dispatch waiting
   for the runner's command and snapshot, and within it the runner's own work,
   the observation build, the encode; socket = the client's send-to-receive
   minus the server's handle_frame), in a separate instrumented run.

Each figure is the median of R repeats (each the median of N steps); the
machine is noisy (about one core of real throughput), so run it a few times.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import mmap
import multiprocessing
import os
import shutil
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time

import msgpack
import numpy as np
import zmq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HUMANOID = os.path.join(ROOT, "..", "shared", "corpus", "mujoco_model", "model", "humanoid", "humanoid.xml")
DESK = os.path.join(ROOT, "examples", "desk_toys.xml")
ECHO_FACTOR, SHM_BUDGET_US, STREAM_RATE = 1.5, 50.0, 1000.0

# URLab's shared-memory region header (its client's transports/shm.py documents it)
SHM_MAGIC, SHM_HEADER, SHM_SEQUENCE, SHM_LATEST = 0x424C5255, 64, 16, 24


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pack(request: dict) -> bytes:
    return msgpack.packb(request, use_bin_type=True)  # (as URLab's client packs)


def step_request(session_id: str, prefix: str, ctrl) -> dict:
    """The map URLab's client sends for `step(1)` in direct mode."""
    return {"op": "step", "session_id": session_id, "n_steps": 1, "observations": "standard",
            "per_articulation": {prefix: {"ctrl": ctrl.tolist()}}}


def round_trip(result: dict) -> list:
    """Seconds per step as the client sees it: build + pack, send -> reply, unpack."""
    return [a + b + c for a, b, c in zip(result["pack"], result["wire"], result["unpack"], strict=True)]


def median_us(seconds) -> float:
    return statistics.median(seconds) * 1e6


# ------------------------------------------------------------ the client process

class ShmClient:
    """Request / reply over two shared-memory regions: write the request into the
    next slot of req, publish that slot and bump req's sequence; poll rep's
    sequence, read the slot it names.

    The header's words are read and written through memoryviews of their own
    width: one aligned load or store each, never seen half-written by the other
    process (`struct.pack_into` zero-fills its bytes before it writes them, so a
    reader polling a sequence written that way can see 0 in between)."""

    def __init__(self, req_path: str, rep_path: str, timeout: float = 5.0):
        self.timeout = timeout
        self.req, self.req_q, self.req_i = self._open(req_path)
        self.rep, self.rep_q, self.rep_i = self._open(rep_path)
        self.req_stride, self.req_slots = self.req_i[2], self.req_i[3]
        self.rep_stride = self.rep_i[2]
        self.last = self.rep_q[SHM_SEQUENCE // 8]
        self.backwards = 0  # reads of rep's sequence below the last one seen (a torn write)

    @staticmethod
    def _open(path: str):
        deadline = time.monotonic() + 5.0
        while not os.path.isfile(path) or os.path.getsize(path) < SHM_HEADER:
            if time.monotonic() > deadline:
                raise FileNotFoundError(f"{path} did not appear")
            time.sleep(0.01)
        with open(path, "r+b") as fh:
            region = mmap.mmap(fh.fileno(), 0)
        words = memoryview(region)[:SHM_HEADER]
        u64, u32 = words.cast("Q"), words.cast("I")
        if u32[0] != SHM_MAGIC:
            raise ValueError(f"{path}: magic {u32[0]:#x}, not URLab's {SHM_MAGIC:#x}")
        return region, u64, u32

    def call(self, frame: bytes) -> bytes:
        req, seq, latest = self.req, SHM_SEQUENCE // 8, SHM_LATEST // 4
        if len(frame) + 4 > self.req_stride:
            raise ValueError(f"a {len(frame)}-byte request does not fit a {self.req_stride}-byte slot")
        slot = (self.req_i[latest] + 1) % max(1, self.req_slots)
        at = SHM_HEADER + slot * self.req_stride
        struct.pack_into("<I", req, at, len(frame))
        req[at + 4:at + 4 + len(frame)] = frame
        self.req_i[latest] = slot
        self.req_q[seq] = self.req_q[seq] + 1
        rep_q, spins, deadline = self.rep_q, 0, None
        while True:
            sequence = rep_q[seq]
            if sequence > self.last:
                break
            if sequence < self.last:
                self.backwards += 1
            spins += 1
            if spins % 4096 == 0:  # (the clock only now and then: the spin is the latency)
                now = time.monotonic()
                deadline = deadline or now + self.timeout
                if now > deadline:
                    raise TimeoutError(f"no reply on the reply region within {self.timeout:g} s")
            os.sched_yield()  # (one core: let the server run)
        self.last = sequence
        at = SHM_HEADER + self.rep_i[latest] * self.rep_stride
        size = struct.unpack_from("<I", self.rep, at)[0]
        return self.rep[at + 4:at + 4 + size]

    def close(self):
        for view in (self.req_q, self.req_i, self.rep_q, self.rep_i):
            view.release()
        self.req.close()
        self.rep.close()


def run_steps(call, session_id, prefix, ctrls):
    """Step once per row of `ctrls` through `call(frame) -> frame`: seconds per
    step to build + pack the request, from send to reply, to unpack; last reply."""
    packing, wire, unpacking = [], [], []
    reply = None
    for ctrl in ctrls:
        t0 = time.perf_counter()
        frame = pack(step_request(session_id, prefix, ctrl))
        t1 = time.perf_counter()
        raw = call(frame)
        t2 = time.perf_counter()
        reply = msgpack.unpackb(raw, raw=False)
        t3 = time.perf_counter()
        packing.append(t1 - t0)
        wire.append(t2 - t1)
        unpacking.append(t3 - t2)
    if reply.get("op") != "step_ok":
        raise RuntimeError(f"step failed: {reply}")
    return packing, wire, unpacking, reply


def zmq_caller(port: int):
    context = zmq.Context.instance()
    req = context.socket(zmq.REQ)
    req.setsockopt(zmq.LINGER, 0)
    req.setsockopt(zmq.RCVTIMEO, 10000)
    req.connect(f"tcp://127.0.0.1:{port}")

    def call(frame):
        req.send(frame)
        return req.recv()
    return req, call


def client_job(job: dict):
    kind = job["kind"]
    if kind == "echo":  # bytes only: the transport's own cost
        req, call = zmq_caller(job["port"])
        frames, times = job["frames"], []
        for frame in frames:
            t0 = time.perf_counter()
            call(frame)
            times.append(time.perf_counter() - t0)
        req.close()
        return {"times": times}
    if kind in ("zmq", "shm"):
        if kind == "zmq":
            req, call = zmq_caller(job["port"])
            close = req.close
        else:
            shm = ShmClient(job["req_path"], job["rep_path"])
            call, close = shm.call, shm.close
        try:
            packing, wire, unpacking, reply = run_steps(call, job["session_id"], job["prefix"], job["ctrls"])
        finally:
            close()
        qpos = reply["arts"][job["prefix"]]["qpos"]
        return {"pack": packing, "wire": wire, "unpack": unpacking, "qpos": qpos, "frame": reply["frame_id"],
                "backwards": shm.backwards if kind == "shm" else 0}
    if kind == "flood":  # step as fast as possible for `seconds`
        req, call = zmq_caller(job["port"])
        ctrls, count = job["ctrls"], 0
        start = time.perf_counter()
        while time.perf_counter() - start < job["seconds"]:
            reply = msgpack.unpackb(call(pack(step_request(job["session_id"], job["prefix"],
                                                            ctrls[count % len(ctrls)]))), raw=False)
            if reply.get("op") != "step_ok":
                raise RuntimeError(f"step failed: {reply}")
            count += 1
        seconds = time.perf_counter() - start
        req.close()
        return {"steps": count, "seconds": seconds}
    raise ValueError(kind)


def subscribe_job(job: dict, conn):
    """Count the state stream's frame ids until it has been quiet for `quiet` s
    (or `limit` s in all)."""
    context = zmq.Context.instance()
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.RCVHWM, 1_000_000)
    sub.connect(f"tcp://127.0.0.1:{job['port']}")
    sub.setsockopt(zmq.SUBSCRIBE, b"state/full")
    time.sleep(0.2)  # (a PUB drops what it sends before the subscription has reached it)
    conn.send("ready")
    frames, stamps = [], []
    start = time.perf_counter()
    while time.perf_counter() - start < job["limit"]:
        if not sub.poll(int(job["quiet"] * 1000)):
            if frames:
                break
            continue
        _topic, message = sub.recv_multipart()
        frames.append(msgpack.unpackb(message, raw=False)["frame_id"])
        stamps.append(time.perf_counter())
    sub.close()
    return {"frames": frames, "seconds": (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0}


def child_main(conn):
    """A client process: runs the jobs the bench sends until told to stop."""
    while True:
        job = conn.recv()
        if job is None:
            return
        try:
            result = subscribe_job(job, conn) if job["kind"] == "subscribe" else client_job(job)
        except Exception as error:  # noqa: BLE001 (reported by the bench)
            result = {"error": f"{type(error).__name__}: {error}"}
        conn.send(result)


class Child:
    def __init__(self):
        context = multiprocessing.get_context("spawn")
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=child_main, args=(theirs,), daemon=True)
        self.process.start()

    def send(self, **job):
        self.conn.send(job)

    def result(self, timeout: float = 120.0) -> dict:
        if not self.conn.poll(timeout):
            raise TimeoutError("the client process did not answer")
        result = self.conn.recv()
        if isinstance(result, dict) and "error" in result:
            raise RuntimeError(result["error"])
        return result

    def run(self, **job) -> dict:
        self.send(**job)
        return self.result()

    def close(self):
        self.conn.send(None)
        self.process.join(5)


# ------------------------------------------------------------------ the bench

class Served:
    """A model served by a real Bridge on free ports; a REQ socket of the bench's own."""

    def __init__(self, mj, path, transports=("zmq",)):
        self.host = mj.ModelHost.from_file(path)
        self.shm_dir = tempfile.mkdtemp(prefix="mjblend-bench-shm-") if "shm" in transports else None
        self.request_port, self.state_port = free_port(), free_port()
        try:
            self.bridge = mj.Bridge(self.host, request_port=self.request_port, state_port=self.state_port,
                                    transports=transports, shm_dir=self.shm_dir)
            self.bridge.start()
        except BaseException:
            self.host.close()
            raise
        self.req, self._call = zmq_caller(self.request_port)
        self.hello = self.call("hello")
        self.session_id = self.hello["session_id"]
        self.prefix = self.hello["entities"][0]["prefix"]

    def call(self, op, **fields) -> dict:
        request = {"op": op, **fields}
        if op != "hello":
            request["session_id"] = self.session_id
        reply = msgpack.unpackb(self._call(pack(request)), raw=False)
        if reply.get("op") == "error":
            raise RuntimeError(f"{op}: {reply['code']}: {reply['message']}")
        return reply

    def shm_paths(self) -> tuple[str, str]:
        """The request / reply regions, as the handshake names them (URLab's
        `shm_rpc` contract, else `shm_session_dir`), else in the folder given."""
        contract = self.hello.get("shm_rpc") or {}
        folder = self.hello.get("shm_session_dir") or self.shm_dir
        return (contract.get("req_path") or os.path.join(folder, "req.shm"),
                contract.get("rep_path") or os.path.join(folder, "rep.shm"))

    def close(self):
        self.req.close()
        self.bridge.stop()
        self.host.close()
        if self.shm_dir is not None:
            shutil.rmtree(self.shm_dir, ignore_errors=True)


class EchoServer:
    """A bare REP socket on its own thread: every request answered with `reply` (bytes)."""

    def __init__(self, reply: bytes):
        self.reply = reply
        self.port = free_port()
        self._rep = zmq.Context.instance().socket(zmq.REP)
        self._rep.setsockopt(zmq.LINGER, 0)
        self._rep.bind(f"tcp://127.0.0.1:{self.port}")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="bench echo", daemon=True)
        self._thread.start()

    def _serve(self):
        rep, poller = self._rep, zmq.Poller()
        poller.register(rep, zmq.POLLIN)
        while not self._stop.is_set():
            if poller.poll(100):
                rep.recv()
                rep.send(self.reply)
        rep.close()

    def close(self):
        self._stop.set()
        self._thread.join(2)


class Timed:
    """Seconds per call of wrapped functions, by label (and thread: the stream
    thread's calls are kept apart from the request's)."""

    def __init__(self):
        self.seconds: dict[str, list] = {}
        self._undo = []

    def wrap(self, owner, name: str, label: str, stream_label: str | None = None):
        inner = getattr(owner, name)
        had_own = name in vars(owner)  # (else an instance's wrapper hides its class's method)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                key = label
                if stream_label and threading.current_thread().name == "MJBlend bridge stream":
                    key = stream_label
                self.seconds.setdefault(key, []).append(time.perf_counter() - start)

        setattr(owner, name, timed)
        self._undo.append((owner, name, inner if had_own else None))

    def restore(self):
        for owner, name, inner in reversed(self._undo):
            if inner is None:
                delattr(owner, name)
            else:
                setattr(owner, name, inner)
        self._undo.clear()


class Bench:
    def __init__(self, args):
        self.args = args
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import addon_loader  # noqa: F401  (links the add-on as `mjblend`, as the tests do)
        import mujoco

        from mjblend.bridge import dispatcher, host, observations, server, stream, wire
        from mjblend.engine import commands, snapshot
        self.mujoco, self.commands = mujoco, commands
        self.ModelHost, self.Bridge = host.ModelHost, server.Bridge
        self.modules = {"dispatcher": dispatcher, "observations": observations, "stream": stream,
                        "wire": wire, "snapshot": snapshot}
        self.path = HUMANOID if os.path.exists(HUMANOID) else DESK
        spec = mujoco.MjSpec.from_file(self.path)
        self.model = host.prefixed_spec(spec, host.prefix_of(spec.modelname or "model")).compile()
        rng = np.random.default_rng(0)
        self.ctrls = rng.uniform(-1, 1, (args.steps, self.model.nu))

    # -------------------------------------------------------------- parts

    def mj_step(self):
        """Seconds of each `mj_step` of the same model, start and controls as the
        client's; the final qpos."""
        mujoco, model = self.mujoco, self.model
        data = mujoco.MjData(model)
        times = []
        for ctrl in self.ctrls:
            data.ctrl[:] = ctrl
            t0 = time.perf_counter()
            mujoco.mj_step(model, data)
            times.append(time.perf_counter() - t0)
        return times, data.qpos.copy()

    def client_steps(self, client, served, kind):
        """A client's steps; the server's own mj_step calls are timed meanwhile (the
        session calls `mujoco.mj_step` through the module: wrapped for the run)."""
        mujoco = self.mujoco
        bare, times = mujoco.mj_step, []

        def timed(model, data, nstep=1):
            start = time.perf_counter()
            bare(model, data, nstep=nstep)
            times.append(time.perf_counter() - start)
        mujoco.mj_step = timed
        try:
            result = self._client_steps(client, served, kind)
        finally:
            mujoco.mj_step = bare
        result["server step"] = times
        return result

    def _client_steps(self, client, served, kind):
        served.call("reset")
        job = dict(kind=kind, session_id=served.session_id, prefix=served.prefix, ctrls=self.ctrls)
        if kind == "zmq":
            job["port"] = served.request_port
        else:
            job["req_path"], job["rep_path"] = served.shm_paths()
        return client.run(**job)

    def round_trips(self, client, zmq_served, shm_served):
        """Parts 1-4 (the ZMQ server's or the shared-memory one's), the baselines
        measured between repeats."""
        args = self.args
        served = zmq_served or shm_served
        request = pack(step_request(served.session_id, served.prefix, self.ctrls[0]))
        served.call("reset")
        reply = served._call(request)
        echo = EchoServer(reply)
        frames = [pack(step_request(served.session_id, served.prefix, c)) for c in self.ctrls]
        figures = {"step": [], "echo": [], "zmq": [], "zmq wire": [], "pack": [], "unpack": [], "shm": [],
                   "server step": []}
        same, torn = True, 0
        shm_error = None
        try:
            for _ in range(args.repeat):
                steps, qpos = self.mj_step()
                figures["step"].append(median_us(steps))
                echoed = client.run(kind="echo", port=echo.port, frames=frames)
                figures["echo"].append(median_us(echoed["times"]))
                if zmq_served is not None:
                    result = self.client_steps(client, zmq_served, "zmq")
                    figures["zmq"].append(median_us(round_trip(result)))
                    figures["server step"].append(median_us(result["server step"]))
                    figures["zmq wire"].append(median_us(result["wire"]))
                    figures["pack"].append(median_us(result["pack"]))
                    figures["unpack"].append(median_us(result["unpack"]))
                    same &= bool(np.array_equal(np.asarray(result["qpos"]), qpos))
                if shm_served is not None and shm_error is None:
                    try:
                        result = self.client_steps(client, shm_served, "shm")
                    except Exception as error:  # noqa: BLE001 (reported as "not available")
                        shm_error = f"{type(error).__name__}: {error}"
                        continue
                    figures["shm"].append(median_us(round_trip(result)))
                    torn += result["backwards"]
                    same &= bool(np.array_equal(np.asarray(result["qpos"]), qpos))
        finally:
            echo.close()
        medians = {key: statistics.median(values) for key, values in figures.items() if values}
        return medians, same, torn, (len(request), len(reply)), shm_error

    def stream_direct(self, client, viewer, served):
        """Part 5a: the client steps as fast as it can; the viewer counts frames."""
        served.call("reset")
        stream = served.bridge.stream
        before = (stream.published, stream.dropped)
        viewer.send(kind="subscribe", port=served.state_port, quiet=0.5, limit=self.args.seconds + 30)
        viewer.result(30)  # "ready"
        time.sleep(0.3)
        flood = client.run(kind="flood", port=served.request_port, session_id=served.session_id,
                           prefix=served.prefix, ctrls=self.ctrls[:200], seconds=self.args.seconds)
        seen = viewer.result(60)
        counters = (stream.published - before[0], stream.dropped - before[1])
        return flood["steps"] / flood["seconds"], seen, counters

    def stream_live(self, viewer, served):
        """Part 5b: the scene plays live in real time at a 0.5 ms timestep, the
        runner asked for 1000 snapshots a second (SetPublishRate)."""
        runner = served.host.runner()
        interval, timestep = runner.interval, self.model.opt.timestep
        served.call("set_sim_options", options={"timestep": 0.5 / STREAM_RATE})
        served.call("reset")
        runner.send(self.commands.SetPublishRate(STREAM_RATE))  # (what Bridge(stream_rate=...) sends)
        try:
            stream = served.bridge.stream
            viewer.send(kind="subscribe", port=served.state_port, quiet=0.5, limit=self.args.seconds + 30)
            viewer.result(30)
            time.sleep(0.3)
            before = (stream.published, stream.dropped)
            first = runner.latest.frame
            start = time.perf_counter()
            served.call("set_mode", mode="live")
            time.sleep(self.args.seconds)
            served.call("set_mode", mode="direct")
            published = (runner.latest.frame - first) / (time.perf_counter() - start)
            seen = viewer.result(60)
        finally:
            runner.send(self.commands.SetPublishRate(1.0 / interval))
            served.call("set_sim_options", options={"timestep": timestep})
        return published, seen, (stream.published - before[0], stream.dropped - before[1])

    def breakdown(self, client, served):
        """Part 6: the server's functions timed in-process during one more run."""
        m = self.modules
        timed = Timed()
        dispatcher = served.bridge.dispatcher
        session, runner = served.host.session, served.host.runner()
        timed.wrap(dispatcher, "handle_frame", "handle_frame")
        timed.wrap(m["dispatcher"], "decode", "decode")
        timed.wrap(dispatcher, "_controls", "controls")
        timed.wrap(dispatcher, "_send", "dispatch")
        timed.wrap(session, "_run", "mj_step")
        timed.wrap(runner, "record", "history")
        timed.wrap(m["observations"], "LiveState", "read back")
        timed.wrap(m["snapshot"], "take", "snapshot")
        timed.wrap(m["observations"], "observation", "observation", "stream observation")
        timed.wrap(m["dispatcher"], "encode", "encode")
        timed.wrap(m["stream"], "encode", "stream encode")
        try:
            result = self.client_steps(client, served, "zmq")
        finally:
            timed.restore()
        t = {key: median_us(values) for key, values in timed.seconds.items()}
        # (the viewport's snapshots come at the display's rate, not per step: their cost per step)
        requests = len(timed.seconds["handle_frame"])
        t["snapshot"] = 1e6 * sum(timed.seconds.get("snapshot", ())) / max(1, requests)
        return t, median_us(result["wire"]), median_us(result["pack"]), median_us(result["unpack"])


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_breakdown(t, wire, packing, unpacking):
    known = t["mj_step"] + t["history"] + t["read back"] + t["snapshot"]
    inside = t["decode"] + t["controls"] + t["dispatch"] + t["observation"] + t["encode"]
    rows = [
        ("client: build + pack the request", packing, 0),
        ("socket (client send -> reply, less the server's handle_frame)", wire - t["handle_frame"], 0),
        ("server handle_frame", t["handle_frame"], 0),
        ("decode (wire.decode)", t["decode"], 1),
        ("controls checked (Dispatcher._controls)", t["controls"], 1),
        ("dispatch: the step on the bridge's thread (Dispatcher._send)", t["dispatch"], 1),
        ("mj_step (EngineSession._run)", t["mj_step"], 2),
        ("history record (Runner.record)", t["history"], 2),
        ("state read back, kinematics included (LiveState)", t["read back"], 2),
        ("viewport snapshots at 120 Hz, per step (snapshot.take)", t["snapshot"], 2),
        ("rest: Blender's queue, divergence checks, frame ids", t["dispatch"] - known, 2),
        ("observation build (observations.observation)", t["observation"], 1),
        ("encode (wire.encode)", t["encode"], 1),
        ("rest of handle_frame (lock, op lookup, session)", t["handle_frame"] - inside, 1),
        ("client: unpack the reply", unpacking, 0),
    ]
    print("6. where a ZMQ round trip goes (medians per step, functions timed in-process; instrumented run):")
    for label, us, indent in rows:
        print(f"   {'  ' * indent}{label:{64 - 2 * indent}s} {us:8.1f} us")
    if "stream observation" in t:
        print(f"   (concurrently, the stream thread per snapshot: observation {t['stream observation']:.1f} "
              f"us + encode {t.get('stream encode', 0.0):.1f} us, competing for the one core and the GIL)")


def stream_line(label, seen, counters):
    """One row of part 5: what the subscriber got (a rate at least 98% of the
    target, no gap in the frame ids, none out of order, none dropped by the stream)."""
    frames = np.asarray(seen["frames"])
    steps = np.diff(frames)
    gaps, backwards = int((steps[steps > 1] - 1).sum()), int((steps < 1).sum())
    rate = (len(frames) - 1) / seen["seconds"] if seen["seconds"] else 0.0
    ok = rate >= STREAM_RATE * 0.98 and gaps == 0 and backwards == 0 and counters[1] == 0
    print(f"   {label:36s} {len(frames):6d} received at {rate:5.0f}/s, drops {gaps}, "
          f"out of order {backwards} (stream: {counters[0]} published, {counters[1]} dropped)  {verdict(ok)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="steps per round-trip run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per stream measurement")
    parser.add_argument("--quick", action="store_true", help="300 steps, 2 repeats, 1 s streams")
    parser.add_argument("--skip", default="", help="parts to skip: '5', '6'")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeat, args.seconds = 300, 2, 1.0
    bench = Bench(args)
    print(f"{os.path.relpath(bench.path, ROOT)}: nq {bench.model.nq}, nu {bench.model.nu}; "
          f"{args.steps} steps x {args.repeat} repeats; client in its own process")
    with contextlib.ExitStack() as stack:
        client, viewer = Child(), Child()
        stack.callback(viewer.close)
        stack.callback(client.close)
        # one server at a time: a second one's threads (its shared-memory poller, its
        # parked physics thread) would take the one core from the server measured
        shm_served, shm_error = None, None
        try:
            shm_served = Served(bench, bench.path, transports=("zmq", "shm"))
            shm_served.call("set_mode", mode="direct")
            shm_figures, shm_same, torn, _sizes, shm_error = bench.round_trips(client, None, shm_served)
        except Exception as error:  # noqa: BLE001 (reported as "not available")
            shm_error, shm_figures, shm_same, torn = f"{type(error).__name__}: {error}", {}, True, 0
        finally:
            if shm_served is not None:
                shm_served.close()
        zmq_served = Served(bench, bench.path)
        stack.callback(zmq_served.close)
        zmq_served.call("set_mode", mode="direct")
        figures, same, _torn, sizes, _error = bench.round_trips(client, zmq_served, None)
        figures.update({key: value for key, value in shm_figures.items() if key == "shm"})
        same &= shm_same
        step, echo, rt = figures["step"], figures["echo"], figures["zmq"]
        print(f"   request {sizes[0]} bytes, reply {sizes[1]} bytes (standard observations)")
        zmq_target, shm_target = ECHO_FACTOR * (echo + step), SHM_BUDGET_US + step
        print(f"1. mj_step (this process)                {step:8.1f} us")
        print(f"2. bare ZMQ REQ/REP echo, same sizes      {echo:8.1f} us")
        print(f"3. ZMQ step round trip                    {rt:8.1f} us = {rt / (echo + step):.2f} x "
              f"(echo + step); target <= {ECHO_FACTOR} x = {zmq_target:.1f} us  {verdict(rt <= zmq_target)}")
        print(f"   (send -> reply {figures['zmq wire']:.1f}, client pack {figures['pack']:.1f}, "
              f"unpack {figures['unpack']:.1f})")
        print(f"   the same mj_step inside the server during the round trips: "
              f"{figures['server step']:.1f} us "
              f"({figures['server step'] / step:.2f} x line 1: client and server take turns on the one core, "
              "each finds the caches cold)")
        if "shm" in figures:
            shm = figures["shm"]
            print(f"4. SHM step round trip                    {shm:8.1f} us = step + {shm - step:.1f} us; "
                  f"target <= step + {SHM_BUDGET_US:.0f} us = {shm_target:.1f} us  "
                  f"{verdict(shm <= shm_target)}")
            if torn:
                print(f"   WARNING: the reply region's sequence read lower than before {torn} times (a write "
                      "that is not one store: a client acting on it reads a stale reply)")
        else:
            print(f"4. shm: not available ({shm_error})")
        print(f"   final qpos bit for bit equal to mj_step's: {'yes' if same else 'NO'}")
        if "5" not in args.skip:
            print(f"5. the state stream, a subscriber in another process (target {STREAM_RATE:.0f} "
                  "snapshots/s, no drops = gaps in frame ids):")
            rate, seen, counters = bench.stream_direct(client, viewer, zmq_served)
            stream_line(f"direct, client stepping at {rate:.0f} Hz:", seen, counters)
            rate, seen, counters = bench.stream_live(viewer, zmq_served)
            stream_line(f"live, runner publishing {rate:.0f}/s:", seen, counters)
        if "6" not in args.skip:
            print_breakdown(*bench.breakdown(client, zmq_served))


if __name__ == "__main__":
    main()

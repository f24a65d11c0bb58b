"""The shared-memory transport, laid out as URLab lays it out (one host only).

Three files in a fresh per-server directory (the `shm_session_dir` the
handshake advertises): `req.shm` and `rep.shm` carry requests and replies,
`state.shm` is the state ring. Each is a region URLab's client opens by path
and checks by its header:

    offset  0  u32 magic 'URLB' (0x424C5255)    8  u32 buffer_stride
            4  u32 protocol version 1          12  u32 n_buffers
           16  u64 sequence (bumped per write) 24  u32 latest_idx
    64 (header_size): n_buffers slots of buffer_stride bytes, each [u32 size][frame]

A writer fills the slot after `latest_idx`, then sets `latest_idx`, then bumps
`sequence`; a reader polls `sequence` and reads the slot `latest_idx` names.
(Stores reach another process in program order on x86-64; Python has no fence
to offer beyond that.)

The client writes one request at a time into `req.shm`; this transport's thread
polls its sequence, hands the frame to the dispatcher (the same lock serialises
ZMQ and shared memory) and writes the reply into `rep.shm`. A reply larger than
a slot becomes URLab's `reply_too_large` error: the op ran, and URLab's client
sends that request again over ZMQ (and every later one of that op). The
handshake itself goes over ZMQ; `handshake_fields` is what its reply carries
so that URLab's client (transport "shm", or "auto" on the same host) moves
over. Only one client at a time may use the request region: a second one
would take the first one's replies (URLab's single-flight design); others
use ZMQ.

Polling, because URLab's client signals nothing on Linux: the thread spins
(yielding the processor) for a moment after each request, as a client in a
step loop sends its next one soon, then sleeps in steps that grow the longer
no request comes, so an idle bridge costs almost nothing.
"""

from __future__ import annotations

import mmap
import os
import shutil
import socket
import stat
import struct
import tempfile
import threading
import time
import uuid

from .hold import Hold
from .wire import MAX_REQUEST_BYTES, encode, encoding_of, error

MAGIC = 0x424C5255  # 'URLB', little-endian
PROTOCOL = 1
HEADER_SIZE = 64
OFF_SEQUENCE, OFF_LATEST = 16, 24
HEADER = struct.Struct("<IIII")  # magic, protocol, buffer_stride, n_buffers (offset 0)
U32 = struct.Struct("<I")  # (a slot's frame size)

# URLab's sizes (its handshake's shm_rpc): files are sparse, only pages written use memory
REQUEST_STRIDE = 1 << 20
REPLY_STRIDE = 16 << 20
RPC_BUFFERS = 2
STATE_STRIDE = 4 << 20
STATE_BUFFERS = 4  # a reader copying a slot is safe until the writer comes round to it again

SPIN = 0.0005  # seconds spent spinning after a request (a client in a step loop is back by then)
# (seconds without a request, sleep between two looks): a sleep grows as the bridge idles
BACKOFF = ((0.25, 50e-6), (5.0, 0.001), (float("inf"), 0.005))

_yield = getattr(os, "sched_yield", lambda: time.sleep(0))  # (gives up the GIL and the processor)


def session_root() -> str:
    return os.path.join(tempfile.gettempdir(), "mjblend_shm")


class Region:
    """One region file mapped: a header and `n_buffers` slots of `stride` bytes."""

    def __init__(self, path: str, stride: int, n_buffers: int):
        self.path, self.stride, self.n_buffers = path, stride, n_buffers
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, HEADER_SIZE + stride * n_buffers)
            self.map = mmap.mmap(fd, HEADER_SIZE + stride * n_buffers, access=mmap.ACCESS_WRITE)
        finally:
            os.close(fd)  # (the mapping keeps the file)
        # Header words through width-cast views: one aligned store (or load) each.
        # struct.pack_into writes a word byte by byte, so a reader polling it could
        # see a sequence that went down (measured: thousands of times in 3 M writes).
        header = memoryview(self.map)[:HEADER_SIZE]
        self._u32, self._u64 = header.cast("I"), header.cast("Q")
        # the magic last: a reader that sees it sees the whole header
        HEADER.pack_into(self.map, 0, 0, PROTOCOL, stride, n_buffers)
        self._u64[OFF_SEQUENCE // 8] = 0
        self._u32[OFF_LATEST // 4] = 0
        self._u32[0] = MAGIC

    def sequence(self) -> int:
        return self._u64[OFF_SEQUENCE // 8]

    def read(self) -> bytes | None:
        """The frame in the latest slot, None if the slot holds none."""
        index = self._u32[OFF_LATEST // 4]
        if index >= self.n_buffers:
            return None
        start = HEADER_SIZE + index * self.stride
        size = U32.unpack_from(self.map, start)[0]
        if size == 0 or size + 4 > self.stride:
            return None
        return self.map[start + 4:start + 4 + size]

    def write(self, frame: bytes) -> None:
        """`frame` into the next slot, then latest_idx, then the sequence (in that order)."""
        index = (self._u32[OFF_LATEST // 4] + 1) % self.n_buffers
        start = HEADER_SIZE + index * self.stride
        U32.pack_into(self.map, start, len(frame))
        self.map[start + 4:start + 4 + len(frame)] = frame
        self._u32[OFF_LATEST // 4] = index
        self._u64[OFF_SEQUENCE // 8] = self._u64[OFF_SEQUENCE // 8] + 1

    def fits(self, frame: bytes) -> bool:
        return len(frame) + 4 <= self.stride

    def close(self) -> None:
        self._u32.release()
        self._u64.release()
        self.map.close()


class ShmTransport:
    name = "shm"

    def __init__(self, dispatcher, shm_dir: str | None = None, limit: int = MAX_REQUEST_BYTES,
                 request_stride: int = REQUEST_STRIDE, reply_stride: int = REPLY_STRIDE,
                 state_stride: int = STATE_STRIDE):
        self.dispatcher = dispatcher
        self.root = shm_dir or session_root()  # the session directory is made inside it
        self.limit = limit
        self.session = uuid.uuid4().hex
        self.directory = os.path.join(self.root, self.session)
        self._strides = (request_stride, reply_stride, state_stride)
        self._requests = self._replies = self._state = None
        self._state_lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.hold = Hold()  # (the Bridge's: its threads stop together)
        self.served = 0  # requests answered over shared memory
        self.too_large = 0  # replies refused as reply_too_large
        self.state_skipped = 0  # state messages larger than a slot (ZMQ still carries them)

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        _make_root(self.root)
        _remove_orphans(self.root)
        os.mkdir(self.directory, 0o700)
        try:
            with open(os.path.join(self.directory, "owner.pid"), "w") as owner:
                owner.write(str(os.getpid()))
            request_stride, reply_stride, state_stride = self._strides
            self._requests = Region(os.path.join(self.directory, "req.shm"), request_stride, RPC_BUFFERS)
            self._replies = Region(os.path.join(self.directory, "rep.shm"), reply_stride, RPC_BUFFERS)
            self._state = Region(os.path.join(self.directory, "state.shm"), state_stride, STATE_BUFFERS)
        except BaseException:
            self._close_regions()
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        self._stopping.clear()
        self._thread = threading.Thread(target=self._serve, name="MJBlend bridge (shared memory)",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
        with self._state_lock:
            if self._state is not None:
                self._state.close()
                self._state = None
        if self._thread is None or not self._thread.is_alive():
            # (else the thread is inside a request still: it closes its regions as it ends)
            self._close_rpc()
        self._thread = None
        # (removing the files a client still maps is fine: its mapping stays valid)
        shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _close_rpc(self) -> None:
        for region in (self._requests, self._replies):
            if region is not None:
                region.close()
        self._requests = self._replies = None

    def _close_regions(self) -> None:
        self._close_rpc()
        if self._state is not None:
            self._state.close()
            self._state = None

    # ------------------------------------------------------------ handshake

    def handshake_fields(self) -> dict:
        """What `hello_ok` carries so that URLab's client moves to shared memory:
        nothing unless this transport is serving (else a client would switch to
        files nobody answers)."""
        if not self.alive:
            return {}
        requests, replies = self._requests, self._replies
        return {
            "shm_session_dir": self.directory,
            "shm_rpc": {
                "session": self.session,
                "req_path": requests.path, "rep_path": replies.path,
                # (URLab's Windows event names; its client polls without them elsewhere)
                "req_event": f"Local\\URLab_{self.session}_req_ready",
                "rep_event": f"Local\\URLab_{self.session}_rep_ready",
                "req_stride": requests.stride, "rep_stride": replies.stride,
                "n_buffers": RPC_BUFFERS, "header_size": HEADER_SIZE,
            },
            # transport "auto" moves over when this host is the client's own
            "instance": {"host": socket.gethostname(), "pid": os.getpid(), "transports": ["zmq", "shm"]},
        }

    # ---------------------------------------------------------------- state

    def publish(self, topic: bytes, message: bytes, snapshot=None) -> None:
        """One state message into the ring (the stream's thread; never blocks on a reader)."""
        with self._state_lock:
            ring = self._state
            if ring is None:
                return
            if not ring.fits(message):
                self.state_skipped += 1
                return
            ring.write(message)

    # -------------------------------------------------------------- requests

    def _serve(self) -> None:
        requests, replies = self._requests, self._replies
        seen = requests.sequence()
        last = time.perf_counter()
        stopping = self._stopping.is_set
        try:
            while not stopping():
                self.hold.point()
                sequence = requests.sequence()
                # (only a sequence that went up: URLab's client writes it with struct.pack_into,
                # byte by byte, so a read in the middle of its write can be lower)
                if sequence <= seen:
                    idle = time.perf_counter() - last
                    if idle < SPIN:
                        _yield()
                    else:
                        time.sleep(next(pause for after, pause in BACKOFF if idle < after))
                    continue
                seen = sequence
                replies.write(self._answer(requests.read(), requests.stride, replies.stride))
                self.served += 1
                last = time.perf_counter()
        finally:
            if stopping():
                self._close_rpc()

    def _answer(self, frame: bytes | None, request_stride: int, reply_stride: int) -> bytes:
        """The reply frame to a request frame, one that fits a reply slot."""
        if frame is None:  # (a client always answers a request: it waits for one)
            return encode(error("bad_request", "the request slot holds no frame (its size is 0 or over "
                                f"the slot of {request_stride - 4:,} bytes)"))
        reply = self.dispatcher.handle_frame(frame, transport=self.name, limit=self.limit)
        if len(reply) + 4 <= reply_stride:
            return reply
        self.too_large += 1
        return encode(error("reply_too_large", f"the reply is {len(reply):,} bytes, over the shared-memory "
                            f"slot of {reply_stride - 4:,}: send the request over ZMQ (the op has run)"),
                      encoding_of(reply))


def _make_root(root: str) -> None:
    """The folder of session folders; one made here is open to every user (with
    the sticky bit, as /tmp) since each session folder is its owner's alone."""
    if os.path.isdir(root):
        return
    os.makedirs(root, exist_ok=True)
    if os.path.dirname(root.rstrip(os.sep)) == tempfile.gettempdir().rstrip(os.sep):
        try:
            os.chmod(root, 0o777 | stat.S_ISVTX)
        except OSError:
            pass


def _remove_orphans(root: str) -> None:
    """Session folders left by a server of this host that died without stop()."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        folder = os.path.join(root, name)
        try:
            with open(os.path.join(folder, "owner.pid")) as owner:
                pid = int(owner.read().strip())
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # (alive, another user's)
            pass

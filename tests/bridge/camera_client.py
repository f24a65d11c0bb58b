"""How URLab's Python client reads a streamed camera, written here for the tests
from URLab's documented layouts (not its code): the frame header v2 (`UCM1`), a
ZMQ SUB that keeps only the newest frame, and a shared-memory ring reader that
picks the slot `latest_idx` names once `sequence` moves and drops a read the
writer lapped."""

import mmap
import os
import struct
import time

import numpy as np
import zmq

FRAME_MAGIC = 0x314D4355  # 'UCM1'
HEADER_V1 = struct.Struct("<IIQdII")  # magic, version, frame_id, sim_time, width, height (32 bytes)
HEADER_V2 = struct.Struct("<IIQdIId")  # ... + capture_unix_time (40 bytes)
REGION_MAGIC, REGION_PROTOCOL, REGION_HEADER = 0x424C5255, 1, 64
OFF_SEQUENCE, OFF_LATEST = 16, 24


def parse(payload: bytes):
    """(pixels, frame_id, sim_time, capture_time); metadata None without the header."""
    if len(payload) >= HEADER_V1.size:
        magic, version, frame_id, sim_time, _w, _h = HEADER_V1.unpack_from(payload, 0)
        if magic == FRAME_MAGIC:
            if version >= 2 and len(payload) >= HEADER_V2.size:
                capture = HEADER_V2.unpack_from(payload, 0)[6]
                return payload[HEADER_V2.size:], frame_id, sim_time, capture
            return payload[HEADER_V1.size:], frame_id, sim_time, None
    return payload, None, None, None


def decode(pixels: bytes, mode: str, width: int, height: int) -> np.ndarray:
    """As URLab's client decodes: depth float32 (H, W); real BGRA8 turned RGBA;
    segmentation modes the BGRA8 bytes as they came (H, W, 4)."""
    if mode == "depth":
        return np.frombuffer(pixels, np.float32).reshape(height, width)
    bgra = np.frombuffer(pixels, np.uint8).reshape(height, width, 4)
    return bgra[..., [2, 1, 0, 3]] if mode == "real" else bgra


class ZmqCamera:
    """A SUB on one camera's endpoint and topic (receive queue 4, as URLab's)."""

    def __init__(self, endpoint: str, topic: str, hwm: int = 4):
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.SUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, hwm)
        self.socket.connect(endpoint)
        self.socket.setsockopt(zmq.SUBSCRIBE, topic.encode())

    def newest(self, timeout: float = 5.0):
        """The newest frame (pixels, frame_id, sim_time, capture), the backlog dropped; None on timeout."""
        if not self.socket.poll(int(timeout * 1000)):
            return None
        self.socket.recv()
        payload = self.socket.recv()
        while True:
            try:
                self.socket.recv(flags=zmq.NOBLOCK)
                payload = self.socket.recv(flags=zmq.NOBLOCK)
            except zmq.Again:
                break
        return parse(payload)

    def until(self, frame_id: int, timeout: float = 5.0):
        """The newest frame once one of id >= frame_id came (None on timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.newest(deadline - time.monotonic())
            if got is not None and got[1] is not None and got[1] >= frame_id:
                return got
        return None

    def close(self):
        self.socket.close(linger=0)
        self.context.term()


class ShmCamera:
    """`cam_<prefix>_<name>.shm` in the handshake's shm_session_dir, read as URLab's client reads it."""

    def __init__(self, folder: str, prefix: str, name: str, timeout: float = 5.0):
        self.path = os.path.join(folder, f"cam_{prefix}_{name}.shm")
        deadline = time.monotonic() + timeout
        while not os.path.isfile(self.path):
            assert time.monotonic() < deadline, f"no {self.path}"
            time.sleep(0.001)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            self.map = mmap.mmap(fd, os.fstat(fd).st_size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        magic, protocol, self.stride, self.n_buffers = struct.unpack_from("<IIII", self.map, 0)
        assert (magic, protocol) == (REGION_MAGIC, REGION_PROTOCOL)
        self.last_sequence = 0

    def poll(self):
        """A frame written since the last one read, or None."""
        sequence = struct.unpack_from("<Q", self.map, OFF_SEQUENCE)[0]
        if sequence == self.last_sequence:
            return None
        index = struct.unpack_from("<I", self.map, OFF_LATEST)[0]
        if index >= self.n_buffers:
            self.last_sequence = sequence
            return None
        start = REGION_HEADER + index * self.stride
        size = struct.unpack_from("<I", self.map, start)[0]
        if size == 0 or size + 4 > self.stride:
            self.last_sequence = sequence
            return None
        payload = bytes(self.map[start + 4:start + 4 + size])
        after = struct.unpack_from("<Q", self.map, OFF_SEQUENCE)[0]
        if after - sequence > self.n_buffers:  # (the writer lapped this slot while it was copied)
            self.last_sequence = after
            return None
        self.last_sequence = sequence
        return parse(payload)

    def until(self, frame_id: int, timeout: float = 5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.poll()
            if got is not None and got[1] >= frame_id:
                return got
            time.sleep(0.001)
        return None

    def close(self):
        self.map.close()

"""A small client of the documented protocol (URLab's docs/reference/protocol.md),
written for the tests: msgpack maps over ZMQ REQ, a SUB on the state stream."""

import msgpack
import zmq


class WireClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout_ms: int = 10000):
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.REQ)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVTIMEO, timeout_ms)
        self.socket.connect(f"tcp://{host}:{port}")
        self.session_id = None

    def raw(self, frame: bytes) -> dict:
        self.socket.send(frame)
        return msgpack.unpackb(self.socket.recv(), raw=False)

    def call(self, op: str, **fields) -> dict:
        request = {"op": op, **fields}
        if self.session_id is not None and "session_id" not in fields:
            request["session_id"] = self.session_id
        return self.raw(msgpack.packb(request, use_bin_type=True))

    def hello(self, **fields) -> dict:
        reply = self.call("hello", **fields)
        self.session_id = reply.get("session_id")
        return reply

    def close(self):
        self.socket.close(linger=0)
        self.context.term()


class StateSubscriber:
    def __init__(self, port: int, host: str = "127.0.0.1"):
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.SUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, 100000)
        self.socket.connect(f"tcp://{host}:{port}")
        self.socket.setsockopt(zmq.SUBSCRIBE, b"state/full")

    def receive(self, timeout_ms: int = 2000):
        if not self.socket.poll(timeout_ms):
            return None
        topic, payload = self.socket.recv_multipart()
        return topic, msgpack.unpackb(payload, raw=False)

    def close(self):
        self.socket.close(linger=0)
        self.context.term()

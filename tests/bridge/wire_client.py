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


# ------------------------------------------------------------------ model upload
# URLab's upload, in our own words: the MJCF made self-contained (every asset's file
# attribute its bare file name, the asset folders dropped), each blob announced by
# sha256 and size, sent in chunks, then committed.


def flat_model(path: str) -> tuple[bytes, dict]:
    """(MJCF bytes whose assets are named by bare file name, {bare name: bytes})."""
    import os
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    folder = os.path.dirname(os.path.abspath(path))
    compiler = root.find("compiler")
    dirs = dict(compiler.attrib) if compiler is not None else {}
    assets = {}
    for element in root.iter():
        name = element.get("file")
        if name is None or element.tag in ("include", "compiler"):
            continue
        sub = dirs.get("texturedir" if element.tag == "texture" else "meshdir", dirs.get("assetdir", ""))
        with open(os.path.join(folder, sub, name), "rb") as handle:
            assets[os.path.basename(name)] = handle.read()
        element.set("file", os.path.basename(name))
    if compiler is not None:
        for key in ("meshdir", "texturedir", "assetdir"):
            compiler.attrib.pop(key, None)
    return ET.tostring(root), assets


def sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def manifest(client: WireClient, xml: bytes, assets: dict, **overrides) -> dict:
    listed = [{"name": name, "sha256": sha256(data), "size": len(data)} for name, data in assets.items()]
    fields = {"xml_sha256": sha256(xml), "assets": listed,
              "total_bytes": len(xml) + sum(len(d) for d in assets.values()), **overrides}
    return client.call("upload_model_manifest", **fields)


def send_blob(client: WireClient, upload_id: str, kind: str, name: str, data: bytes,
              chunk_bytes: int = 1 << 20, **overrides) -> dict:
    """Every chunk of one blob; the last reply (or the first refusal)."""
    reply = {}
    for offset in range(0, max(len(data), 1), chunk_bytes):
        reply = client.call("upload_model_chunk", upload_id=upload_id, kind=kind, name=name,
                            sha256=sha256(data), offset=offset, total=len(data),
                            data=data[offset:offset + chunk_bytes], **overrides)
        if reply.get("op") != "upload_model_chunk_ok":
            break
    return reply


def upload_model(client: WireClient, path: str, chunk_bytes: int = 1 << 20,
                 step_mode: str = "stepped") -> dict:
    """The whole upload of an MJCF file; the commit's reply (or the first refusal)."""
    xml, assets = flat_model(path)
    opened = manifest(client, xml, assets, step_mode=step_mode)
    if opened.get("op") != "upload_model_manifest_ok":
        return opened
    upload_id = opened["upload_id"]
    if opened["need_xml"]:
        reply = send_blob(client, upload_id, "xml", "model.xml", xml, chunk_bytes)
        if reply.get("op") != "upload_model_chunk_ok":
            return reply
    for name in opened["need_assets"]:
        reply = send_blob(client, upload_id, "asset", name, assets[name], chunk_bytes)
        if reply.get("op") != "upload_model_chunk_ok":
            return reply
    return client.call("upload_model_commit", upload_id=upload_id)

"""One frame on the wire <-> one request or reply map (URLab's encoding).

Frames are msgpack maps by default; a session that said `"encoding": "json"` in
its `hello` gets JSON (binary fields then travel as base64 companions, e.g.
`mjb_base64`). A request's own encoding is told from its first byte: JSON
starts with `{`, which msgpack never uses for a map.

Everything that can go wrong with a frame is a `ProtocolError` carrying URLab's
error code, which the dispatcher turns into `{op: "error", code, message}`.
"""

from __future__ import annotations

import base64
import json
import math

import msgpack
import numpy as np

from ..engine.errors import MJBlendError

MSGPACK, JSON = "msgpack", "json"
MAX_REQUEST_BYTES = 64 << 20  # a request larger than this is refused (a model upload is the largest)


class ProtocolError(MJBlendError):
    """A request the server refuses: `code` is URLab's error code, the message says why;
    `fields` go into the error reply beside them (URLab's `busy` names the lease held,
    `not_control_owner` the owner)."""

    def __init__(self, code: str, message: str, fields: dict | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields = fields or {}


def encoding_of(frame: bytes) -> str:
    """JSON if the frame starts (after blanks) with `{`, else msgpack."""
    head = frame[:64].lstrip()
    return JSON if head[:1] == b"{" else MSGPACK


def decode(frame: bytes, limit: int = MAX_REQUEST_BYTES) -> tuple[dict, str]:
    """(request map, its encoding); ProtocolError for anything that is not one map."""
    if len(frame) > limit:
        raise ProtocolError("message_too_large",
                            f"the request is {len(frame):,} bytes, over the server's limit of {limit:,}")
    encoding = encoding_of(frame)
    try:
        if encoding == JSON:
            request = json.loads(frame.decode("utf-8"))
        else:
            # (strict: one object, string keys; the frame's own length bounds what
            # its headers may claim, so a hostile one cannot ask for a huge array)
            request = msgpack.unpackb(frame, raw=False, strict_map_key=True)
    except (ValueError, TypeError, UnicodeDecodeError, msgpack.ExtraData,
            msgpack.FormatError, msgpack.StackError) as error:
        raise ProtocolError("bad_request", f"the frame is not valid {encoding}: {error}") from None
    if not isinstance(request, dict):
        raise ProtocolError("bad_request", f"a request must be a map, not {type(request).__name__}")
    if "op" not in request:
        raise ProtocolError("missing_op", "the request has no 'op' field")
    if not isinstance(request["op"], str):
        raise ProtocolError("bad_request", f"'op' must be a string, not {type(request['op']).__name__}")
    return request, encoding


def _plain(value):
    """msgpack / JSON have no numpy types: arrays become lists, scalars Python numbers."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot send a {type(value).__name__}")


def encode(reply: dict, encoding: str = MSGPACK) -> bytes:
    if encoding == JSON:
        return json.dumps(_json_ready(reply), default=_plain, allow_nan=False,
                          separators=(",", ":")).encode("utf-8")
    return msgpack.packb(reply, default=_plain, use_bin_type=True)


def _json_ready(value):
    """Bytes as base64 (with a `<key>_base64` companion, as URLab's JSON mode has),
    non-finite floats as null (JSON has none)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(item, (bytes, bytearray, memoryview)):
                out[f"{key}_base64"] = base64.b64encode(bytes(item)).decode("ascii")
                out[f"{key}_size"] = len(item)
            else:
                out[key] = _json_ready(item)
        return out
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, np.ndarray):
        return _json_ready(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def error(code: str, message: str, fields: dict | None = None) -> dict:
    return {**(fields or {}), "op": "error", "code": code, "message": message}

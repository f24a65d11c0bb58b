"""PNG files of camera images, bpy-free and without an imaging library (none is bundled):
8-bit RGB (a camera's colour image) and 16-bit grey (a segmentation's ids), written and
read back exactly. Only what MJBlend writes is read: no interlace, filter 0 per row."""

from __future__ import annotations

import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_RGB, _GREY, _RGBA = 2, 0, 6  # PNG colour types


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def encode(image: np.ndarray, level: int = 6) -> bytes:
    """(H, W, 3) or (H, W, 4) uint8 -> an 8-bit RGB / RGBA PNG file's bytes; (H, W)
    uint16 -> a 16-bit grey one. Row 0 is the top row."""
    image = np.asarray(image)
    if image.ndim == 3 and image.shape[2] in (3, 4) and image.dtype == np.uint8:
        depth, colour, pixels = 8, _RGB if image.shape[2] == 3 else _RGBA, image
    elif image.ndim == 2 and image.dtype == np.uint16:
        depth, colour, pixels = 16, _GREY, image.astype(">u2")  # (PNG is big-endian)
    else:
        raise ValueError(
            f"a PNG is made of (H, W, 3 or 4) uint8 or (H, W) uint16, not {image.dtype} {image.shape}"
        )
    height, width = image.shape[:2]
    rows = np.ascontiguousarray(pixels).reshape(height, -1).view(np.uint8)
    raw = np.zeros((height, rows.shape[1] + 1), np.uint8)  # each row: filter byte 0, then the row
    raw[:, 1:] = rows
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    return (SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw.tobytes(), level))
            + _chunk(b"IEND", b""))


def write(path: str, image: np.ndarray, level: int = 6) -> None:
    """`encode(image)` written to `path`."""
    data = encode(image, level)
    with open(path, "wb") as out:
        out.write(data)


def read(path: str) -> np.ndarray:
    """A PNG `write` made, as the array it was written from."""
    with open(path, "rb") as source:
        data = source.read()
    if not data.startswith(SIGNATURE):
        raise ValueError(f"{path}: not a PNG file")
    at, header, compressed = len(SIGNATURE), None, []
    while at < len(data):
        (length,), kind = struct.unpack(">I", data[at : at + 4]), data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            compressed.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if (depth, colour, interlace) not in ((8, _RGB, 0), (8, _RGBA, 0), (16, _GREY, 0)):
        raise ValueError(f"{path}: only MJBlend's own PNGs are read (8-bit RGB or RGBA, 16-bit grey)")
    raw = np.frombuffer(zlib.decompress(b"".join(compressed)), np.uint8).reshape(height, -1)
    if raw[:, 0].any():
        raise ValueError(f"{path}: a row is filtered (only MJBlend's own PNGs are read)")
    rows = raw[:, 1:]
    if colour in (_RGB, _RGBA):
        return rows.reshape(height, width, 3 if colour == _RGB else 4).copy()
    return rows.copy().view(">u2").reshape(height, width).astype(np.uint16)

"""PNG files of camera images and imported textures, bpy-free and without an imaging
library (none is bundled): 8-bit grey, grey + alpha, RGB and RGBA (a camera's colour
image, MuJoCo's texture pixels) and 16-bit grey (a segmentation's ids), written and read
back exactly. Only what MJBlend writes is read: no interlace, filter 0 per row."""

from __future__ import annotations

import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_RGB, _GREY, _RGBA, _GREY_ALPHA = 2, 0, 6, 4  # PNG colour types
_COLOUR_OF_CHANNELS = {1: _GREY, 2: _GREY_ALPHA, 3: _RGB, 4: _RGBA}
_CHANNELS_OF_COLOUR = {colour: channels for channels, colour in _COLOUR_OF_CHANNELS.items()}


def _chunk(kind: bytes, body) -> bytes:
    crc = zlib.crc32(body, zlib.crc32(kind))  # (no copy of a large body to checksum it)
    return b"".join((struct.pack(">I", len(body)), kind, body, struct.pack(">I", crc)))


def encode(image: np.ndarray, level: int = 6) -> bytes:
    """(H, W, 1 to 4) uint8 -> an 8-bit grey / grey + alpha / RGB / RGBA PNG file's
    bytes; (H, W) uint16 -> a 16-bit grey one. Row 0 is the top row. `level` 0 stores
    the rows uncompressed (a PNG made at memory speed, ~4 bytes more per 64 KiB)."""
    image = np.asarray(image)
    if image.ndim == 3 and image.shape[2] in _COLOUR_OF_CHANNELS and image.dtype == np.uint8:
        depth, colour, pixels = 8, _COLOUR_OF_CHANNELS[image.shape[2]], image
    elif image.ndim == 2 and image.dtype == np.uint16:
        depth, colour, pixels = 16, _GREY, image.astype(">u2")  # (PNG is big-endian)
    else:
        raise ValueError(
            f"a PNG is made of (H, W, 1 to 4) uint8 or (H, W) uint16, not {image.dtype} {image.shape}"
        )
    height, width = image.shape[:2]
    rows = np.ascontiguousarray(pixels).reshape(height, -1).view(np.uint8)
    raw = np.empty((height, rows.shape[1] + 1), np.uint8)  # each row: filter byte 0, then the row
    raw[:, 0] = 0
    raw[:, 1:] = rows
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    return b"".join((SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", zlib.compress(raw, level)),
                     _chunk(b"IEND", b"")))


def recompress(data: bytes, level: int = 6) -> bytes:
    """A PNG `encode` made (any level), its rows compressed at `level`: the same pixels."""
    header, compressed = _chunks(data, "the PNG")
    raw = zlib.decompress(b"".join(compressed))
    return b"".join((SIGNATURE, _chunk(b"IHDR", struct.pack(">IIBBBBB", *header)),
                     _chunk(b"IDAT", zlib.compress(raw, level)), _chunk(b"IEND", b"")))


def _chunks(data: bytes, what) -> tuple[tuple, list]:
    """(IHDR's fields, the IDAT chunks' bodies) of a PNG file's bytes."""
    if not data.startswith(SIGNATURE):
        raise ValueError(f"{what}: not a PNG file")
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
    if header is None:
        raise ValueError(f"{what}: no IHDR chunk")
    return header, compressed


def write(path: str, image: np.ndarray, level: int = 6) -> None:
    """`encode(image)` written to `path`."""
    data = encode(image, level)
    with open(path, "wb") as out:
        out.write(data)


def read(path: str) -> np.ndarray:
    """A PNG `write` made, as the array it was written from."""
    with open(path, "rb") as source:
        return decode(source.read(), path)


def decode(data: bytes, what="the PNG") -> np.ndarray:
    """The bytes of a PNG `encode` made, as the array it was made from."""
    (width, height, depth, colour, _, _, interlace), compressed = _chunks(data, what)
    if interlace or not (depth == 8 and colour in _CHANNELS_OF_COLOUR or (depth, colour) == (16, _GREY)):
        raise ValueError(f"{what}: only MJBlend's own PNGs are read (8-bit, or 16-bit grey)")
    raw = np.frombuffer(zlib.decompress(b"".join(compressed)), np.uint8).reshape(height, -1)
    if raw[:, 0].any():
        raise ValueError(f"{what}: a row is filtered (only MJBlend's own PNGs are read)")
    rows = raw[:, 1:]
    if depth == 8:
        return rows.reshape(height, width, _CHANNELS_OF_COLOUR[colour]).copy()
    return rows.copy().view(">u2").reshape(height, width).astype(np.uint16)

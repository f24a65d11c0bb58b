"""Screenshots read from the X server, inside Blender's user interface.

Blender 5.2 on X11 (EGL) takes `screen.screenshot` and `screen.screenshot_area`
from its window's front buffer (WM_window_pixels_read), which Mesa's llvmpipe
under Xvfb leaves black: every such picture is one black frame. What Blender
showed is on the X server (its buffer swaps are drawn into the window there),
so a picture is read back with Xlib's XGetImage (ctypes: no tool beyond
libX11, which Blender itself loads) and written as a PNG here.
"""

import ctypes
import struct
import subprocess
import zlib

import numpy as np

Z_PIXMAP, ALL_PLANES = 2, 0xFFFFFFFF
RIM = 6  # pixels at a region's edges: the screen draws the area's outline and round corners over them


class _XImage(ctypes.Structure):
    """Xlib's XImage, up to its destroy function (XDestroyImage is a macro calling it)."""
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("xoffset", ctypes.c_int),
                ("format", ctypes.c_int), ("data", ctypes.POINTER(ctypes.c_uint8)),
                ("byte_order", ctypes.c_int), ("bitmap_unit", ctypes.c_int),
                ("bitmap_bit_order", ctypes.c_int), ("bitmap_pad", ctypes.c_int), ("depth", ctypes.c_int),
                ("bytes_per_line", ctypes.c_int), ("bits_per_pixel", ctypes.c_int),
                ("red_mask", ctypes.c_ulong), ("green_mask", ctypes.c_ulong), ("blue_mask", ctypes.c_ulong),
                ("obdata", ctypes.c_void_p), ("create_image", ctypes.c_void_p),
                ("destroy_image", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p))]


def _xlib():
    x11 = ctypes.CDLL("libX11.so.6")
    x11.XOpenDisplay.restype, x11.XOpenDisplay.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    x11.XGetImage.restype = ctypes.POINTER(_XImage)
    x11.XGetImage.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int, ctypes.c_uint,
                              ctypes.c_uint, ctypes.c_ulong, ctypes.c_int]
    return x11


def blender_x_window() -> int:
    """The X11 id of Blender's (only) window."""
    ids = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "Blender"],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(ids[-1])


def grab(x_window: int, x: int, y: int, width: int, height: int) -> np.ndarray:
    """(height, width, 3) uint8 RGB of the rectangle at (x, y) (top left, X11 y grows
    downwards) of X window `x_window`, top row first."""
    x11 = _xlib()
    display = x11.XOpenDisplay(None)
    if not display:
        raise RuntimeError("cannot open the X display")
    try:
        pointer = x11.XGetImage(display, x_window, x, y, width, height, ALL_PLANES, Z_PIXMAP)
        if not pointer:
            raise RuntimeError(f"XGetImage of {width}x{height} at ({x}, {y}) failed")
        image = pointer.contents
        try:
            # 24-bit TrueColor in 32-bit pixels, least significant byte first: B, G, R, unused
            if (image.bits_per_pixel, image.byte_order, image.red_mask, image.blue_mask) != \
                    (32, 0, 0xFF0000, 0xFF):
                raise RuntimeError(f"unexpected X image format: {image.bits_per_pixel} bits per pixel, "
                                   f"byte order {image.byte_order}, red mask {image.red_mask:#x}")
            rows = np.ctypeslib.as_array(image.data, shape=(height, image.bytes_per_line))
            return rows[:, :4 * width].reshape(height, width, 4)[:, :, 2::-1].copy()
        finally:
            image.destroy_image(ctypes.cast(pointer, ctypes.c_void_p))
    finally:
        x11.XCloseDisplay(display)


def save_png(path, rgb: np.ndarray) -> None:
    """Write (height, width, 3) uint8 RGB, top row first, as an 8-bit RGB PNG."""
    height, width, _ = rgb.shape
    rows = np.concatenate((np.zeros((height, 1), np.uint8), rgb.reshape(height, 3 * width)), axis=1)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    with open(path, "wb") as fh:
        fh.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                 + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def screenshot_area(path, window, area) -> None:
    """A PNG of `area` of Blender's `window` as the X server shows it now (the
    picture `screen.screenshot_area` would take)."""
    top = window.height - (area.y + area.height)  # X11 y grows downwards
    save_png(path, grab(blender_x_window(), area.x, top, area.width, area.height))


def laid_over(area, region, unit: int) -> list:
    """[x, y, width, height] boxes (from the top left of `region`'s picture) of what
    Blender draws over a 3D view's region after the region itself: the regions laid
    over it (header, toolbar...) and, while the sidebar is hidden, its toggle arrow at
    the top right under the headers (a box 2 x 3 UI units; `unit`: one in pixels)."""
    top_of = region.y + region.height
    boxes = [[r.x - region.x, top_of - (r.y + r.height), r.width, r.height]
             for r in area.regions if r.type != "WINDOW" and r.width > 1 and r.height > 1]
    if not any(r.type == "UI" and r.width > 1 for r in area.regions):
        below = max((y + h for _x, y, w, h in boxes if w >= region.width // 2), default=0)
        boxes.append([region.width - 2 * unit, below, 2 * unit, 3 * unit])
    return boxes


def covered(shape, boxes) -> np.ndarray:
    """(height, width) bool of a region's picture: True under `boxes` (laid_over) and the rim."""
    mask = np.zeros(shape[:2], bool)
    for x, y, w, h in boxes:
        mask[max(y, 0):max(y + h, 0), max(x, 0):max(x + w, 0)] = True
    mask[:RIM], mask[-RIM:], mask[:, :RIM], mask[:, -RIM:] = True, True, True, True
    return mask

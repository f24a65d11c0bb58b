"""The viewport corner's text (plots, figures, the Info and profiler lines) as quads of
one texture: the printable ASCII characters are drawn once with blf into it, a row per
colour, and each frame draws a quad per character of every text in one draw call.

A blf.draw waits for the software renderer (llvmpipe) to finish what was queued
before it: the Info line's showed as ~4 ms of the draw callback, and the figures'
text textures (one per set of texts and colour, remade when a tick changes) drew a
quad as wide as the widest text for every text (bench/overlay_bench.py case 4).
Characters are placed at whole pixels by their advances (blf's own string layout puts
them the same within a pixel); a text with another character or in another colour is
drawn with blf, as before.
"""

from __future__ import annotations

import blf
import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader
from mathutils import Matrix

from ..drawing import builtin_shader, text_size

FIRST, LAST = 32, 126  # printable ASCII
PAD = 2  # pixels around a glyph in its cell
SAMPLE = 8  # characters measured at once for an advance (blf widths are whole pixels)


class Glyphs:
    """The glyphs of printable ASCII at `size`, one row of cells per colour of `colors`.
    Each texel holds its row's colour and the glyph's coverage in alpha (not colour times
    coverage: see overlays/labels.Atlas, Blender 5.2 reads image colours as sRGB)."""

    def __init__(self, size: float, colors: tuple):
        text_size(size)
        self.colors = {tuple(rgba): row for row, rgba in enumerate(colors)}
        chars = [chr(code) for code in range(FIRST, LAST + 1)]
        base = blf.dimensions(0, "xx")[0]
        self.advance = np.array([(blf.dimensions(0, "x" + c * SAMPLE + "x")[0] - base) / SAMPLE
                                 for c in chars])
        ink = np.array([blf.dimensions(0, c)[0] for c in chars])
        _width, tall = blf.dimensions(0, "Ag")  # (one line's height, descender included)
        self.descent = round(tall * 0.3)
        self.cell = (int(ink.max()) + 2 * PAD + 2, int(tall) + 2 * PAD + 1)
        self.size = (len(chars) * self.cell[0], len(colors) * self.cell[1])
        self.offscreen = gpu.types.GPUOffScreen(*self.size)
        width, height = self.size
        pixels = Matrix(((2 / width, 0, 0, -1), (0, 2 / height, 0, -1), (0, 0, 1, 0), (0, 0, 0, 1)))
        with self.offscreen.bind():
            framebuffer = gpu.state.active_framebuffer_get()
            with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
                gpu.matrix.load_matrix(Matrix.Identity(4))
                gpu.matrix.load_projection_matrix(pixels)
                framebuffer.clear(color=(0.0, 0.0, 0.0, 0.0))
                for row, rgba in enumerate(colors):
                    # (blf blends colour over colour: a row cleared to its colour keeps it)
                    gpu.state.scissor_test_set(True)
                    gpu.state.scissor_set(0, row * self.cell[1], width, self.cell[1])
                    framebuffer.clear(color=(*rgba[:3], 0.0))
                    gpu.state.scissor_test_set(False)
                    blf.color(0, *rgba)
                    baseline = row * self.cell[1] + PAD + self.descent
                    for column, c in enumerate(chars):
                        blf.position(0, column * self.cell[0] + PAD, baseline, 0)
                        blf.draw(0, c)
        self.box = self._ink(len(chars))

    def _ink(self, count: int) -> np.ndarray:
        """Each glyph's quad in its cell, (x, y, width, height): the box of the texels it
        covers (a software renderer's time goes with the pixels drawn; width 0: a space),
        the whole cell where the texture cannot be read back."""
        w, h = self.cell
        box = np.tile(np.array((0.0, 0.0, w, h)), (count, 1))
        try:
            texels = np.asarray(self.offscreen.texture_color.read())
        except (TypeError, ValueError, RuntimeError, SystemError):
            return box
        if texels.size != self.size[0] * self.size[1] * 4:
            return box
        covered = texels.reshape(self.size[1], self.size[0], 4)[:h, :, 3] > 0  # (the first row's cells)
        for code in range(count):
            cell = covered[:, code * w:(code + 1) * w]
            columns, rows = np.flatnonzero(cell.any(axis=0)), np.flatnonzero(cell.any(axis=1))
            if not len(columns):
                box[code] = 0.0
            else:
                box[code] = (columns[0], rows[0], columns[-1] + 1 - columns[0], rows[-1] + 1 - rows[0])
        return box

    def takes(self, text: str, rgba) -> bool:
        return tuple(rgba) in self.colors and text.isascii() and text.isprintable()

    def width(self, text: str) -> float:
        codes = np.frombuffer(text.encode("ascii"), np.uint8).astype(int) - FIRST
        return float(self.advance[codes].sum())

    def quads(self, items: list) -> tuple[np.ndarray, np.ndarray]:
        """(positions, texture coordinates) of two triangles per character of `items`:
        (text, x, y of its baseline's start, colour) each, every one `takes`."""
        texts = [text for text, _x, _y, _rgba in items]
        codes = np.frombuffer("".join(texts).encode("ascii"), np.uint8).astype(int) - FIRST
        lengths = np.array([len(text) for text in texts])
        owner = np.repeat(np.arange(len(items)), lengths)
        advance = self.advance[codes]
        pen = np.cumsum(advance) - advance  # (each character's start, from the first text's)
        starts = np.cumsum(lengths) - lengths
        pen -= np.repeat(pen[starts] if len(codes) else np.zeros(0), lengths)
        origin = np.array([(x, y) for _t, x, y, _c in items], float).reshape(-1, 2)
        rows = np.array([self.colors[tuple(rgba)] for _t, _x, _y, rgba in items], int)
        box = self.box[codes]
        drawn = box[:, 2] > 0  # (a space takes no quad)
        w, h = self.cell
        # whole pixels, texel on pixel (overlays/labels.Atlas: a fraction of a pixel blurs the strokes)
        start = origin[owner] + np.stack([pen, np.zeros_like(pen)], axis=1)
        corner = np.round(start) - (PAD, PAD + self.descent) + box[:, :2]
        cell = np.stack([codes * w, rows[owner] * h], axis=1) + box[:, :2]
        corner, cell, box = corner[drawn], cell[drawn], box[drawn]
        unit = np.array([(0, 0), (1, 0), (1, 1), (0, 0), (1, 1), (0, 1)], float)  # two triangles
        shape = unit[None] * box[:, None, 2:]
        pos = (corner[:, None] + shape).reshape(-1, 2)
        uv = ((cell[:, None] + shape) / np.array(self.size, float)).reshape(-1, 2)
        return pos.astype("f4"), uv.astype("f4")

    def draw(self, items: list) -> None:
        pos, uv = self.quads(items)
        if not len(pos):
            return
        shader = builtin_shader("IMAGE", "2D_IMAGE")
        batch = batch_for_shader(shader, "TRIS", {"pos": pos, "texCoord": uv})
        shader.bind()
        shader.uniform_sampler("image", self.offscreen.texture_color)
        gpu.state.blend_set("ALPHA")  # (straight alpha: see the class)
        batch.draw(shader)

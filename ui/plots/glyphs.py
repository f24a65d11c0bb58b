"""The viewport corner's text (plots, figures, the Info and profiler lines) as quads of
one texture: the printable ASCII characters are drawn once with blf into it, a row per
colour, and each frame draws a quad per character of every text in one draw call.

A blf.draw is a draw call per glyph outside Blender's own UI (no glyph batching from
Python), and each one waits for the software renderer (llvmpipe) to finish what was
queued before it: the Info line alone cost ~4 ms a frame that way, and the figures'
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
        self.quad_width = np.minimum(np.ceil(ink) + 2 * PAD + 1, self.cell[0])  # (its glyph's width)
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
        drawn = codes != 0  # (spaces take no quad)
        w, h = self.cell
        # whole pixels, texel on pixel (overlays/labels.Atlas: a fraction of a pixel blurs the strokes)
        start = origin[owner] + np.stack([pen, np.zeros_like(pen)], axis=1)
        corner = np.round(start) - (PAD, PAD + self.descent)
        cell = np.stack([codes * w, rows[owner] * h], axis=1).astype(float)
        corner, cell = corner[drawn], cell[drawn]
        unit = np.array([(0, 0), (1, 0), (1, 1), (0, 0), (1, 1), (0, 1)], float)  # two triangles
        sides = np.stack([self.quad_width[codes[drawn]], np.full(len(corner), h)], axis=1)
        shape = unit[None] * sides[:, None]
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

"""Labels as one textured batch: the texts are drawn once with blf into a texture
(one cell per text), then each frame draws a quad per label in one draw call.
A blf.draw per label per frame cost 0.2 ms each on this machine's software
OpenGL (8 ms for 40 bodies' names, bench/overlay_bench.py); the texture costs
one draw call whatever the count. Texts that do not fit one texture are drawn
one by one, as before."""

from __future__ import annotations

import blf
import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader
from mathutils import Matrix

from ..drawing import builtin_shader, text_size

MAX_SIDE = 4096  # pixels: a texture side every GPU takes
PAD = 2  # pixels around a text in its cell
_atlases: dict = {}  # (texts, size) -> Atlas


class Atlas:
    """`texts` drawn in `color` on transparent, one cell each, in a texture of its own.
    The texture holds `color` itself in every texel and the text's coverage in alpha
    (not colour times coverage): the image shader reads a texture's colour as sRGB and
    turns it linear when the view draws into an sRGB framebuffer (Blender 5.2 does),
    which darkens premultiplied edges; a constant colour reads the same either way."""

    def __init__(self, texts: tuple, size: float, color: tuple):
        text_size(size)
        widths = [blf.dimensions(0, text)[0] for text in texts]
        _width, tall = blf.dimensions(0, "Ag")  # (one line's height, descender included)
        self.descent = round(tall * 0.3)  # (whole pixels: see draw)
        self.cell = (int(max(widths, default=1)) + 2 * PAD + 1, int(tall) + 2 * PAD + 1)
        self.columns = max(1, min(len(texts), MAX_SIDE // self.cell[0]))
        rows = -(-len(texts) // self.columns)
        self.size = (self.columns * self.cell[0], rows * self.cell[1])
        if self.size[0] > MAX_SIDE or self.size[1] > MAX_SIDE:
            raise ValueError(f"{len(texts)} labels do not fit one {MAX_SIDE}-pixel texture")
        self.offscreen = gpu.types.GPUOffScreen(*self.size)
        width, height = self.size
        pixels = Matrix(((2 / width, 0, 0, -1), (0, 2 / height, 0, -1), (0, 0, 1, 0), (0, 0, 0, 1)))
        with self.offscreen.bind():
            # (blf blends colour over colour: the colour stays, the alpha is the coverage)
            gpu.state.active_framebuffer_get().clear(color=(*color[:3], 0.0))
            with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
                gpu.matrix.load_matrix(Matrix.Identity(4))
                gpu.matrix.load_projection_matrix(pixels)
                blf.color(0, *color)
                for index, text in enumerate(texts):
                    x, y = self._corner(index)
                    blf.position(0, x + PAD, y + PAD + self.descent, 0)
                    blf.draw(0, text)

    def _corner(self, index: int) -> tuple[int, int]:
        return (index % self.columns) * self.cell[0], (index // self.columns) * self.cell[1]

    def draw(self, at: np.ndarray, shown: np.ndarray) -> None:
        """Label i's text starting at region pixel `at[i]` (its baseline), for the shown ones."""
        index = np.flatnonzero(shown)
        if not len(index):
            return
        w, h = self.cell
        corners = np.array([(0, 0), (w, 0), (w, h), (0, 0), (w, h), (0, h)], float)  # two triangles
        cell = np.stack([(index % self.columns) * w, (index // self.columns) * h], axis=1).astype(float)
        # whole pixels, texel on pixel: at a fraction of a pixel the texture's filtering
        # blurs the text's one-pixel strokes grey (Blender 5.2 samples it linearly)
        origin = np.round(at[index]) - (PAD, PAD + self.descent)
        pos = (origin[:, None] + corners[None]).reshape(-1, 2)
        uv = ((cell[:, None] + corners[None]) / np.array(self.size, float)).reshape(-1, 2)
        shader = builtin_shader("IMAGE", "2D_IMAGE")
        batch = batch_for_shader(shader, "TRIS", {"pos": pos.astype("f4"), "texCoord": uv.astype("f4")})
        shader.bind()
        shader.uniform_sampler("image", self.offscreen.texture_color)
        gpu.state.blend_set("ALPHA")  # (straight alpha: see the class)
        batch.draw(shader)
        gpu.state.blend_set("NONE")


def atlas(texts: tuple, size: float, color: tuple) -> Atlas | None:
    """The texture of `texts` (made on first use), or None if they do not fit one."""
    key = (texts, size, color)
    if key not in _atlases:
        if len(_atlases) > 8:  # (old label sets: another model, another kind)
            _atlases.clear()
        try:
            _atlases[key] = Atlas(texts, size, color)
        except (ValueError, RuntimeError):
            _atlases[key] = None
    return _atlases[key]


def forget() -> None:
    _atlases.clear()

"""Draws the plots, MuJoCo's profiler figures, the Info line and the profiler line in
a bottom corner of the 3D viewport
(a POST_PIXEL handler: region pixels), with Blender's `gpu` and `blf` modules.

The runner builds the plots with each snapshot (engine/plots.py): this asks it
for the scene's channels when they change (`ask`), lays the figures out
(`layout`: pure geometry, tested without a GPU) and draws them. Nothing is
drawn while the scene does not simulate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import blf
import bpy
import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader

from ...engine import commands, info, plots
from ...live import profile, scene_session
from .. import readouts
from ..drawing import builtin_shader, text_size
from ..overlays import draw as overlay_draw
from . import glyphs

WIDTH, HEIGHT, MARGIN, GAP = 340, 110, 12, 6  # a figure, at UI scale 1
TITLE, BOTTOM, LEFT, RIGHT = 22, 16, 46, 8  # room around a figure's plotting area
TEXT_SIZE, LINE_WIDTH = 11, 2.0
PROFILER_HEIGHT = 18
PALETTE = ((1.0, 0.35, 0.75, 1.0), (1.0, 0.85, 0.2, 1.0), (0.3, 0.9, 1.0, 1.0), (0.55, 1.0, 0.35, 1.0),
           (1.0, 0.55, 0.25, 1.0), (0.7, 0.55, 1.0, 1.0), (0.95, 0.95, 0.95, 1.0))
BACKGROUND = (0.05, 0.05, 0.05, 0.8)
AXES, GRID = (0.6, 0.6, 0.6, 1.0), (0.35, 0.35, 0.35, 0.8)
TEXT, ERROR = (0.85, 0.85, 0.85, 1.0), (1.0, 0.4, 0.4, 1.0)
_handles: list = []
GLYPH_COLORS = (TEXT, ERROR, *PALETTE)  # (the colours the glyph texture has a row for)
_glyphs: dict = {}  # text size -> glyphs.Glyphs or None: the corner's text


def color(component: int) -> tuple:
    return PALETTE[component % len(PALETTE)]


@dataclass(frozen=True)
class Layout:
    """What the corner shows: (frame rectangle, engine.plots.Figure) per figure drawn,
    channels left out for room, the profiler line (text, x, y, "LEFT" or "RIGHT": the
    side of x it is drawn on) or None."""

    figures: tuple
    left_out: int
    profiler: tuple | None
    info: tuple | None = None  # simulate's Info on one line, as `profiler`


def ask(scene, running) -> plots.Request:
    """Send the scene's plot request to the simulation's runner if it has another
    (once: the next snapshots answer it). Returns the request."""
    request = scene.mujoco_plots.request()
    readouts.ask(scene, running)  # (the watched fields and the MuJoCo figures' switch)
    shot = running.latest
    current = shot.plots.request if shot.plots is not None else plots.Request()
    if request != current and running.plot_request != request:
        running.plot_request = request
        running.queue(commands.Plot(request))  # (never shown from a draw callback)
    elif request == current:
        running.plot_request = request
    return request


def layout(scene, width: float, height: float, scale: float = 1.0,
           insets: tuple = (0.0, 0.0)) -> Layout | None:
    """The corner of a `width` x `height` region (`insets`: what the toolbar and the
    sidebar cover on the left and the right) for the scene's simulation: None if it
    does not simulate."""
    running = scene_session.simulation(scene)
    settings = scene.mujoco_plots
    if running is None or not (settings.show_plots or settings.show_profiler or settings.show_info
                               or settings.show_figures):
        return None
    shot = running.latest
    w, h, margin = WIDTH * scale, HEIGHT * scale, MARGIN * scale
    left = insets[0] + margin if settings.side == "LEFT" else width - insets[1] - margin - w
    bottom = margin
    profiler = None
    if settings.show_profiler:  # (text, x, y, alignment: against the figures' outer edge)
        edge, align = (left, "LEFT") if settings.side == "LEFT" else (left + w, "RIGHT")
        profiler = (profile.of(running).line(shot), edge, bottom + 4 * scale, align)
        bottom += PROFILER_HEIGHT * scale
    info_line = None
    if settings.show_info and shot.info is not None:
        edge, align = (left, "LEFT") if settings.side == "LEFT" else (left + w, "RIGHT")
        info_line = (readouts.info_line(running), edge, bottom + 4 * scale, align)
        bottom += PROFILER_HEIGHT * scale
    figures = []
    wanted = []  # (a function of the plotting area -> Figure), top to bottom
    if settings.show_figures and shot.figures is not None:
        for (title, labels, xrange, yrange), lines in zip(info.FIGURES, info.figure_lines(shot.figures),
                                                          strict=True):
            wanted.append(lambda rect, t=title, la=labels, li=lines, xr=xrange, yr=yrange:
                          plots.figure_xy(t, la, li, rect, xr, yr))
    shown = shot.plots.series if settings.show_plots and shot.plots is not None else ()
    for index in range(len(shown)):
        wanted.append(lambda rect, i=index: plots.figure(str(shown[i].spec), shot.plots, i, rect))
    room = max(0, int((height - bottom - margin) // (h + GAP * scale)))
    for index in reversed(range(min(room, len(wanted)))):  # (the first one on top)
        frame = (left, bottom, w, h)
        rect = (left + LEFT * scale, bottom + BOTTOM * scale, w - (LEFT + RIGHT) * scale,
                h - (BOTTOM + TITLE) * scale)
        figures.append((frame, wanted[index](rect)))
        bottom += h + GAP * scale
    return Layout(tuple(reversed(figures)), max(0, len(wanted) - room), profiler, info_line)


# ------------------------------------------------------------------ drawing




def _text(text: str, x: float, y: float, rgba, align: str = "LEFT") -> None:
    if align != "LEFT":
        width = blf.dimensions(0, text)[0]
        x -= width if align == "RIGHT" else width / 2
    blf.color(0, *rgba)
    blf.position(0, x, y, 0)
    blf.draw(0, text)


class _Painter:
    """Flat rectangles in one colour and coloured lines, a batch (one draw call) each
    and per line width: a draw call costs more than its vertices, and on a software
    renderer each waits for the ones before it."""

    def __init__(self):
        self.flat = builtin_shader("UNIFORM_COLOR", "2D_UNIFORM_COLOR")
        self.line, self.wide, _dots = overlay_draw.shaders()

    def rects(self, rects, rgba) -> None:
        """Filled rectangles (x, y, width, height)."""
        corners = [c for x, y, w, h in rects for c in ((x, y), (x + w, y), (x + w, y + h), (x, y + h))]
        starts = range(0, len(corners), 4)
        indices = [(i, i + 1, i + 2) for i in starts] + [(i, i + 2, i + 3) for i in starts]
        self.flat.bind()
        self.flat.uniform_float("color", rgba)
        batch_for_shader(self.flat, "TRIS", {"pos": corners}, indices=indices).draw(self.flat)

    def lines(self, lines: list) -> None:
        """(segments: (2k, 3) float32 points, colour, width) each, a batch per width."""
        by_width: dict = {}
        for points, rgba, width in lines:
            if len(points):
                by_width.setdefault(width, []).append((points, rgba))
        batches = {}
        for width, found in by_width.items():
            pos = np.concatenate([points for points, _rgba in found])
            colors = np.concatenate([np.tile(np.asarray(rgba, "f4"), (len(points), 1))
                                     for points, rgba in found])
            batches[width] = batch_for_shader(self.line, "LINES", {"pos": pos, "color": colors})
        overlay_draw.draw_lines(self.line, self.wide, batches)


TICK = 4.0  # half the width of the short dash a one-point line draws (pixels)


def segments(line: np.ndarray) -> np.ndarray:
    """A polyline (n, 2) as line segments: (2 (n - 1), 3) float32 points, z 0; one point
    as a short horizontal dash (a solver that converged in one iteration still shows)."""
    if len(line) == 1:
        x, y = line[0]
        return np.array([(x - TICK, y, 0.0), (x + TICK, y, 0.0)], dtype="f4")
    out = np.zeros((2 * max(len(line) - 1, 0), 3), dtype="f4")
    out[0::2, :2] = line[:-1]
    out[1::2, :2] = line[1:]
    return out


def _flat(points: list) -> np.ndarray:
    """2D points as (n, 3) float32, z 0."""
    out = np.zeros((len(points), 3), dtype="f4")
    if points:
        out[:, :2] = points
    return out


def figure_parts(placed: tuple, scale: float) -> tuple[list, list]:
    """The figures' lines (segments, colour, width: grids, axes, then each curve) and
    texts (text, x, y, colour): drawn after their backgrounds, lines before texts."""
    grid, axes, lines, texts = [], [], [], []
    for frame, fig in placed:
        x, y, w, h = fig.rect
        grid += [p for v, _ in fig.yticks for p in ((x, v), (x + w, v))]
        axes += [(x, y), (x + w, y), (x, y), (x, y + h)]
        for component, line in enumerate(fig.lines):
            lines.append((segments(line), color(fig.colors[component] if fig.colors else component),
                          LINE_WIDTH * scale))
        texts += figure_text(frame, fig, scale)
    return [(_flat(grid), GRID, 1.0), (_flat(axes), AXES, 1.0), *lines], texts


def figure_text(frame, fig: plots.Figure, scale: float) -> list[tuple]:
    """A figure's texts: (text, x, y of its baseline's start, colour) each (the current blf size)."""
    x, y, w, h = fig.rect
    top = frame[1] + frame[3] - 13 * scale
    out = [(fig.title, frame[0] + 6 * scale, top, TEXT)]
    right = frame[0] + frame[2] - 6 * scale
    for component in reversed(range(len(fig.labels))):  # the legend, right-aligned
        right -= blf.dimensions(0, fig.labels[component])[0]
        out.append((fig.labels[component], right, top, color(component)))
        right -= 6 * scale
    if fig.error:
        out.append((fig.error[:80], x + 4 * scale, y + h / 2, ERROR))
    for value, label in fig.yticks:
        out.append((label, x - 4 * scale - blf.dimensions(0, label)[0], value - 4 * scale, TEXT))
    for at, label in fig.xticks:
        out.append((label, at - blf.dimensions(0, label)[0] / 2, frame[1] + 3 * scale, TEXT))
    return out


def glyphs_of(size: float) -> glyphs.Glyphs | None:
    """The corner's glyph texture at text size `size` (made on first use), None where
    it cannot be made."""
    if size not in _glyphs:
        if len(_glyphs) > 4:  # (old UI scales)
            _glyphs.clear()
        try:
            _glyphs[size] = glyphs.Glyphs(size, GLYPH_COLORS)
        except (ValueError, RuntimeError):
            _glyphs[size] = None
    return _glyphs[size]


def text_width(text: str, size: float) -> float:
    """The width `_draw_texts` gives `text` (the current blf size is `size`)."""
    atlas = glyphs_of(size)
    if atlas is not None and atlas.takes(text, TEXT):
        return atlas.width(text)
    return blf.dimensions(0, text)[0]


def _draw_texts(items: list, size: float) -> None:
    """Every text of the corner (text, x, y, colour): from the glyph texture in one draw
    call (glyphs.py), the few it has no glyphs or colour for with blf."""
    atlas = glyphs_of(size)
    taken = [item for item in items if atlas is not None and atlas.takes(item[0], item[3])]
    if taken:
        atlas.draw(taken)
    text_size(size)  # (a texture made now set its own)
    if len(taken) < len(items):
        for text, x, y, rgba in items:
            if atlas is None or not atlas.takes(text, rgba):
                _text(text, x, y, rgba)


def insets(area, region) -> tuple[float, float]:
    """(left, right) pixels of `region` the toolbar and the sidebar cover (with region
    overlap they draw over the 3D view's own region)."""
    left = right = 0.0
    if not bpy.context.preferences.system.use_region_overlap:
        return left, right
    for other in area.regions:
        if other.width <= 1 or other.height <= 1:
            continue
        if other.type == "UI" and other.x > region.x:
            right = max(right, region.x + region.width - other.x)
        elif other.type == "TOOLS" and other.x <= region.x:
            left = max(left, other.x + other.width - region.x)
    return left, right


def draw() -> None:
    context = bpy.context
    scene, region, area = context.scene, context.region, context.area
    if scene is None or region is None or area is None:
        return
    running = scene_session.simulation(scene)
    if running is None:
        return
    start = time.perf_counter()
    ask(scene, running)
    scale = context.preferences.system.ui_scale
    placed = layout(scene, region.width, region.height, scale, insets(area, region))
    if placed is None:
        return
    size = TEXT_SIZE * scale
    text_size(size)
    backgrounds = [frame for frame, _fig in placed.figures]
    lines, texts = figure_parts(placed.figures, scale) if placed.figures else ([], [])
    if placed.left_out and placed.figures:
        frame = placed.figures[0][0]
        texts.append((f"{placed.left_out} more plot{'s' if placed.left_out > 1 else ''}: a taller view shows "
                      "them", frame[0], frame[1] + frame[3] + 4 * scale, TEXT))
    for line in (placed.profiler, placed.info):
        if line is None:
            continue
        text, x, y, align = line
        width = text_width(text, size)
        x = x if align == "LEFT" else x - width
        backgrounds.append((x - 4 * scale, y - 5 * scale, width + 8 * scale, PROFILER_HEIGHT * scale))
        texts.append((text, x, y, TEXT))
    gpu.state.blend_set("ALPHA")
    paint = _Painter()
    paint.rects(backgrounds, BACKGROUND)
    paint.lines(lines)
    _draw_texts(texts, size)
    gpu.state.line_width_set(1.0)
    gpu.state.blend_set("NONE")
    profile.drew(scene, time.perf_counter() - start)


def register():
    _handles.append(bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_PIXEL"))


def unregister():
    _glyphs.clear()
    while _handles:
        bpy.types.SpaceView3D.draw_handler_remove(_handles.pop(), "WINDOW")

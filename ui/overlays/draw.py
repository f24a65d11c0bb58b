"""Viewport feedback while the mouse pulls a body: a line from the grab point to
the target and a dot at each end, drawn with Blender's `gpu` module."""

from __future__ import annotations

import bpy
import gpu
from gpu_extras.batch import batch_for_shader

from mathutils import Matrix, Quaternion, Vector

from ...engine import inertia
from ...live import scene_session
from ...scan import scene_scan
from ...authoring import validation

LINE_COLOR = (1.0, 0.55, 0.1, 1.0)
INERTIA_COLOR = (0.3, 0.8, 1.0, 1.0)
CORNERS = [(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
EDGES = [(a, b) for a in range(8) for b in range(a + 1, 8)
         if sum(p != q for p, q in zip(CORNERS[a], CORNERS[b], strict=True)) == 1]
_handle = None


def _shader(*names):
    for name in names:  # built-in shader names differ across Blender versions
        try:
            return gpu.shader.from_builtin(name)
        except (ValueError, SystemError):
            continue
    raise RuntimeError(f"no built-in shader among {names}")


def grab_segments():
    """[(grab point, target)] in Blender world space, one per active grab."""
    out = []
    for running in scene_session.all_live():
        if running.runner is None:
            continue
        grab = running.latest.grab
        if grab is not None:
            out.append((running.to_blender(grab.point), running.to_blender(grab.target)))
    return out


def inertia_boxes(scene):
    """([box edge end points], [centres of mass]) in Blender world space, of every
    body with mass: MuJoCo's equivalent inertia box (same mass and inertia), placed
    at the body's inertial frame, from the running or the last checked model."""
    lines, centres = [], []
    running = scene_session.get(scene)
    outcome = validation.result(scene)
    scans = scene_session.of(scene).scans
    for root in scene_scan.model_roots(scene):
        shot = running.latest if running is not None and running.runner is not None else None
        if shot is not None:
            model, bodies = running.model, running.by_id
        elif outcome is not None and root.name in outcome.models and scans.scanner_of(root):
            model = outcome.models[root.name]
            elements = scans.scanner_of(root).elements.values()
            bodies = {("body", e.id): o for o, k, e in elements if k == "body"}
        else:
            continue
        for (kind, body), obj in bodies.items():
            half = inertia.equivalent_box(model, body) if kind == "body" else None
            if half is None or scene_scan.model_of(obj) is not root:
                continue
            if shot is not None and shot.model is model:  # where the simulation has it
                pose = running.world @ _pose(shot.xpos[body], shot.xquat[body])
            else:
                pose = obj.matrix_world
            frame = pose @ _pose(model.body_ipos[body], model.body_iquat[body])
            corners = [frame @ Vector((c[0] * half[0], c[1] * half[1], c[2] * half[2])) for c in CORNERS]
            lines += [tuple(corners[i]) for edge in EDGES for i in edge]
            centres.append(tuple(frame.translation))
    return lines, centres


def _pose(pos, quat) -> Matrix:
    return Matrix.LocRotScale(Vector(pos), Quaternion(quat), None)


def _draw(lines, points, color, line_width: float, point_size: float) -> None:
    """Line segments (pairs of points) and dots, on top of everything."""
    line = _shader("UNIFORM_COLOR", "3D_UNIFORM_COLOR")
    dots = _shader("POINT_UNIFORM_COLOR", "UNIFORM_COLOR", "3D_UNIFORM_COLOR")
    gpu.state.depth_test_set("NONE")
    gpu.state.line_width_set(line_width)
    line.bind()
    line.uniform_float("color", color)
    batch_for_shader(line, "LINES", {"pos": lines}).draw(line)
    gpu.state.point_size_set(point_size)
    dots.bind()
    dots.uniform_float("color", color)
    batch_for_shader(dots, "POINTS", {"pos": points}).draw(dots)
    gpu.state.line_width_set(1.0)
    gpu.state.point_size_set(1.0)


def draw() -> None:
    scene = bpy.context.scene
    if scene is not None and scene.mujoco_simulation.show_inertia:
        lines, centres = inertia_boxes(scene)
        if lines:
            _draw(lines, centres, INERTIA_COLOR, 1.0, 7.0)
    segments = grab_segments()
    if segments:
        points = [tuple(p) for segment in segments for p in segment]
        _draw(points, points, LINE_COLOR, 2.0, 9.0)


def register():
    global _handle
    _handle = bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_VIEW")


def unregister():
    global _handle
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, "WINDOW")
        _handle = None

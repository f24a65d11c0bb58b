"""What the viewport's MuJoCo overlays draw this frame, in Blender's world: the
layers engine/overlays.py computes from the running simulation's latest snapshot
(playing or paused), moved by the model root's frame, plus the inertia boxes
(also from the last checked model when nothing runs) and the mouse spring.

No GPU here: draw.py hands these to it, and tests read them as they are.
The layers are cached per snapshot and switches, so a viewport that redraws
without a new snapshot (orbiting, a paused simulation) costs nothing to compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np
from mathutils import Matrix, Quaternion, Vector

from ...authoring import validation
from ...engine import inertia, overlays
from ...live import scene_session
from ...scan import scene_scan
from ...components import overlay_settings as settings

GRAB_COLOR = (1.0, 0.55, 0.1, 1.0)
INERTIA_COLOR = (0.3, 0.8, 1.0, 1.0)


@dataclass
class Drawn:
    """One frame's overlays: layers and labels [(text, position)], in Blender's world."""

    layers: list
    labels: list


def options(scene) -> overlays.Options:
    switches = settings.get(scene)
    return overlays.Options(
        **{name: getattr(switches, name) for name, _label, _text in settings.OVERLAYS
           if name != "perturbation"},
        joint_groups=tuple(switches.joint_groups), tendon_groups=tuple(switches.tendon_groups),
        actuator_groups=tuple(switches.actuator_groups), frame=switches.frame,
        geom_groups=tuple(switches.geom_groups), site_groups=tuple(switches.site_groups))


def _to_blender(world: np.ndarray, points: np.ndarray) -> np.ndarray:
    return points @ world[:3, :3].T + world[:3, 3] if len(points) else points


def of_scene(scene) -> Drawn:
    """The overlays of `scene` now (cached in the scene's session until the snapshot or
    a switch changes)."""
    owner = scene_session.of(scene)
    running = owner.simulation
    switches = settings.get(scene)
    shot = running.latest if running is not None else None
    selection = _selection(running, shot) if switches.labels in SELECTION_LABELS else None
    key = (shot, switches.labels, tuple(switches.geom_groups), tuple(switches.site_groups),
           tuple(switches.flex_groups), tuple(switches.skin_groups),
           switches.perturbation, scene.mujoco_simulation.show_inertia, options(scene),
           tuple(map(tuple, running.binding.world)) if running is not None else None,
           None if selection is None else (selection[0], tuple(selection[1])))
    cached = owner.overlay_layers
    if cached is not None and cached[0] == key and shot is not None:
        return cached[1]
    layers, labels = [], []
    if shot is not None:
        world = np.array(running.binding.world)
        for layer in overlays.layers(shot.model, shot, options(scene)):
            layer.lines, layer.points = _to_blender(world, layer.lines), _to_blender(world, layer.points)
            layers.append(layer)
        if switches.labels != "NONE":
            named = overlays.labels(shot.model, shot, switches.labels, _label_mask(shot.model, switches),
                                    selection)
            if named:
                moved = _to_blender(world, np.array([pos for _text, pos in named]))
                labels = [(text, pos) for (text, _pos), pos in zip(named, moved, strict=True)]
        if switches.perturbation and shot.grab is not None:
            ends = _to_blender(world, np.array([shot.grab.point, shot.grab.target]))
            layers.append(overlays.Layer("perturbation", GRAB_COLOR, lines=ends, points=ends,
                                         line_width=2.0, point_size=9.0))
        if scene.mujoco_simulation.show_inertia:
            lines, centres = overlays.inertia_boxes(shot.model, shot)
            layers.append(overlays.Layer("inertia", INERTIA_COLOR, lines=_to_blender(world, lines),
                                         points=_to_blender(world, centres), point_size=7.0))
    elif scene.mujoco_simulation.show_inertia:
        lines, centres = checked_inertia_boxes(scene)
        if lines:
            layers.append(overlays.Layer("inertia", INERTIA_COLOR, lines=np.array(lines),
                                         points=np.array(centres), point_size=7.0))
    drawn = Drawn(layers, labels)
    owner.overlay_layers = (key, drawn)
    return drawn


# label kind: (its elements' group switches, the model's group of each, as MuJoCo clamps them)
_GROUPED_LABELS = {"GEOM": ("geom_groups", "geom_group"), "SITE": ("site_groups", "site_group"),
                   "JOINT": ("joint_groups", "jnt_group"), "TENDON": ("tendon_groups", "tendon_group"),
                   "ACTUATOR": ("actuator_groups", "actuator_group"), "FLEX": ("flex_groups", "flex_group"),
                   "SKIN": ("skin_groups", "skin_group")}
SELECTION_LABELS = ("SELECTION", "SELPNT")
_COUNTS = {"flex_group": "nflex", "skin_group": "nskin"}  # (arrays the bindings size otherwise)


def _label_mask(model, switches):
    """Elements of hidden groups get no label (as MuJoCo's viewer); other kinds have no groups."""
    grouped = _GROUPED_LABELS.get(switches.labels)
    if grouped is None:
        return None
    switch, array = grouped
    ids = getattr(model, array)
    if array in _COUNTS:
        ids = ids[:getattr(model, _COUNTS[array])]
    return np.asarray(getattr(switches, switch), bool)[np.clip(ids, 0, 5)]


def _selection(running, shot):
    """(body id, point in its frame) MuJoCo's selection labels show: the grabbed body
    and point while the mouse spring holds one, else the active object's body and
    the object's origin; None when neither is a body."""
    if shot is None:
        return None
    if shot.grab is not None:
        body, point = shot.grab.body, np.asarray(shot.grab.point)
    else:
        active = bpy.context.view_layer.objects.active if bpy.context.view_layer is not None else None
        body = running.binding.body_of(active) if active is not None else None
        if body is None or body <= 0 or body >= shot.model.nbody:
            return None
        point = running.binding.to_mujoco(active.matrix_world.translation)
    local = shot.xmat[body].reshape(3, 3).T @ (point - shot.xpos[body])
    return int(body), local


def checked_inertia_boxes(scene):
    """([box edge end points], [centres of mass]) in Blender world space, of every
    body with mass of the last checked models, where its object is (no simulation
    runs): MuJoCo's equivalent inertia box (same mass and inertia) at the body's
    inertial frame."""
    lines, centres = [], []
    outcome = validation.result(scene)
    scans = scene_session.of(scene).scans
    for root in scene_scan.model_roots(scene):
        if outcome is None or root.name not in outcome.models or not scans.scanner_of(root):
            continue
        model = outcome.models[root.name]
        for obj, kind, element in scans.scanner_of(root).elements.values():
            half = inertia.equivalent_box(model, element.id) if kind == "body" else None
            if half is None or scene_scan.model_of(obj) is not root:
                continue
            frame = obj.matrix_world @ _pose(model.body_ipos[element.id], model.body_iquat[element.id])
            corners = [frame @ Vector(c * half) for c in overlays.CORNERS]
            lines += [tuple(corners[i]) for i in overlays.BOX_EDGES.reshape(-1)]
            centres.append(tuple(frame.translation))
    return lines, centres


def _pose(pos, quat) -> Matrix:
    return Matrix.LocRotScale(Vector(pos), Quaternion(quat), None)

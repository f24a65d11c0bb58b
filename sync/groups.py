"""Show and hide the objects of MuJoCo's element groups as the scene's switches say
(`scene.mujoco_overlays.geom_groups`, `site_groups`, `joint_groups`), as MuJoCo's
viewer shows and hides geom and site groups 0-5.

An object of a group switched off is hidden in the viewport (`hide_set`, in each of
the scene's view layers: not drawn, not picked) and in renders (`hide_render`);
switched on, it shows in both. Joint objects are empties: hidden in the viewport
too. Tendon and actuator groups have no objects to hide: the overlays read their
switches when they draw.

Joint objects and MJCF frame empties are helpers MuJoCo's viewer draws only when
asked (its joint and frame flags, off by default): they show only where their
overlay is on too, the Joints overlay AND the joint's group switch, the Body
Frames overlay for frames (scene/groups.py `visible`; the overlays' updates call
`apply` with "joint" and "frame").

Only the groups whose visibility changed are touched: an object the user shows or
hides by hand (H, Alt+H, the Outliner) keeps that until its own group's switch (or
overlay) is next turned. What was last applied is kept on the scene
(GROUPS_APPLIED: per kind, the six groups' effective visibility, switch AND
overlay; saved and undone with it); a scene without it has MuJoCo's defaults
applied, which is what an import does (importer/build.py hides what `visible`
hides).

Objects drawn through an instancer (a simulation's Fast display, the
randomization preview) are hidden behind it: the live stage passes `apply` a
context manager (`around`) that takes its instancer away while the objects
change and makes a new one for the objects shown after (live/groups.py).
"""

from __future__ import annotations

import contextlib

import bpy

from ..components.stored_keys import GROUPS_APPLIED
from ..scan.scene_scan import model_of
from ..scene import groups
from . import views

OBJECT_KINDS = ("geom", "site", "joint", "flex", "skin")  # kinds whose groups show or hide objects


def apply(scene, kind: str, around=None) -> int:
    """Show or hide the `kind` objects of every group whose visibility changed since
    the last call; returns how many objects it changed. (The update of the
    switches calls this, and of the Joints and Body Frames overlays with "joint" and
    "frame"; so does the group toggle operator.) What shows is scene/groups.py `visible`:
    the switch, and for joint and frame helpers their overlay too."""
    if kind not in OBJECT_KINDS and kind not in groups.HELPER_OVERLAYS:
        views.redraw()  # (tendon and actuator groups: what the overlays draw)
        return 0
    now = groups.visible(scene, kind)
    before = _applied(scene, kind)
    changed = {g for g in range(groups.NGROUP) if now[g] != before[g]}
    _remember(scene, kind, now)
    if not changed:
        return 0
    targets = [(obj, not now[group]) for obj, group in members(scene, kind) if group in changed]
    with around(scene) if around is not None and targets else contextlib.nullcontext():
        for obj, hidden in targets:
            set_hidden(obj, hidden, scene)
    views.redraw()
    return len(targets)


def members(scene, kind: str) -> list[tuple[bpy.types.Object, int]]:
    """(object, switch it follows: its MuJoCo group clamped into 0-5) of every `kind`
    element of the scene's models (MJCF frames, which have no group: 0)."""
    wanted = kind.upper()
    classes: dict = {}  # model root's pointer -> its classes by name
    found = []
    for obj in scene.objects:
        if obj.mujoco.kind != wanted:
            continue
        root = model_of(obj)
        if root is None:
            continue
        if kind == "frame":
            found.append((obj, 0))
            continue
        pointer = root.as_pointer()
        if pointer not in classes:
            classes[pointer] = groups.root_classes(root)
        found.append((obj, groups.clamp(groups.element_group(obj, classes[pointer]))))
    return found


def set_hidden(obj, hidden: bool, scene) -> None:
    """Hidden (or shown) in the viewport of each of the scene's view layers and in renders."""
    for layer in scene.view_layers:
        if obj.name in layer.objects:
            obj.hide_set(hidden, view_layer=layer)
    obj.hide_render = hidden


def _applied(scene, kind: str) -> tuple[bool, ...]:
    kept = scene.get(GROUPS_APPLIED, {}).get(kind)
    if kept is None or len(kept) != groups.NGROUP:
        return groups.default_visible(kind)
    return tuple(bool(on) for on in kept)


def _remember(scene, kind: str, now) -> None:
    kept = scene.get(GROUPS_APPLIED)
    if kept is None:
        scene[GROUPS_APPLIED] = {}
        kept = scene[GROUPS_APPLIED]
    kept[kind] = [int(on) for on in now]




"""MuJoCo's element groups: which of groups 0-5 a scene shows, and which group an
element object is in.

MuJoCo's viewer shows or hides whole groups of geoms, sites, joints, tendons and
actuators (`mjvOption.geomgroup`, ...; groups 0, 1 and 2 shown by default). A
scene keeps its switches in `scene.mujoco_overlays` (components/overlay_settings.py);
sync/groups.py shows and hides the objects, the importer asks the same question
of each new element, the overlays of each joint, tendon and actuator. Joint and
MJCF frame objects are helpers MuJoCo draws only when asked: they show only where
their overlay (Joints, Body Frames) is on as well (`visible`).
"""

from __future__ import annotations

from ..components.overlay_settings import DEFAULT_SHOWN, NGROUP


def clamp(group: int) -> int:
    """The switch a group follows: MuJoCo's visualizer clamps the group into 0-5
    (a geom of group -1 follows switch 0, one of group 7 switch 5)."""
    return max(0, min(NGROUP - 1, int(group)))


def switches(scene, kind: str) -> tuple[bool, ...]:
    """The scene's six switches of `kind` (MuJoCo's defaults where the add-on's
    properties are not registered)."""
    settings = getattr(scene, "mujoco_overlays", None)
    found = getattr(settings, f"{kind}_groups", None) if settings is not None else None
    return tuple(bool(on) for on in found) if found is not None else DEFAULT_SHOWN


def shown(scene, kind: str, group: int) -> bool:
    return switches(scene, kind)[clamp(group)]


# Helper objects MuJoCo's viewer draws only with a flag on (mjVIS_JOINT; frames: mjFRAME_BODY),
# off by default: their objects show where their overlay is on (and, for joints, their group).
HELPER_OVERLAYS = {"joint": "joints", "frame": "body_frames"}


def visible(scene, kind: str) -> tuple[bool, ...]:
    """For each group 0-5, whether `kind` objects of that group show: the group switch,
    and for helpers (joints, MJCF frames: see HELPER_OVERLAYS) their overlay too. MJCF
    frames have no group: all six follow the Body Frames overlay."""
    overlay = HELPER_OVERLAYS.get(kind)
    base = switches(scene, kind) if kind != "frame" else (True,) * NGROUP
    if overlay is None:
        return base
    settings = getattr(scene, "mujoco_overlays", None)
    on = bool(getattr(settings, overlay, False)) if settings is not None else False
    return tuple(shown_ and on for shown_ in base)


def default_visible(kind: str) -> tuple[bool, ...]:
    """`visible` with the switches and overlays at MuJoCo's defaults (helpers: none)."""
    return (False,) * NGROUP if kind in HELPER_OVERLAYS else DEFAULT_SHOWN


def element_group(obj, classes) -> int:
    """The group MuJoCo gives the element of `obj` (a geom, site or joint object):
    its own `group`, or its default class's when it leaves it to the class. The
    scan writes an element with a class only what it sets itself (`values.own`),
    so the class's value is the one MuJoCo compiles. `classes`: {name: class item}
    of the element's model root (`root_classes`)."""
    holder = obj.mujoco
    kind = holder.kind.lower()
    stored = holder.get(kind)  # (raw: no group made for an element that sets nothing)
    if stored is not None and "group" in stored:
        return int(stored["group"])
    return int(getattr(holder, kind).group)  # its class chain's (components/inherit.py)


def root_classes(root) -> dict:
    """{name: class item} of a model root's default classes."""
    return {item.name: item for item in root.mujoco.model.defaults}


def disabled_actuator_groups(scene) -> int:
    """MuJoCo's `opt.disableactuator` bits the scene simulates with: its option
    override when that is on, else the (first) model's own option."""
    override = scene.mujoco_simulation.override
    if override.use_disableactuator:
        return int(override.disableactuator)
    root = next((obj for obj in scene.objects if obj.mujoco.kind == "MODEL"), None)
    return int(root.mujoco.model.option.disableactuator) if root is not None else 0

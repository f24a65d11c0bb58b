"""MuJoCo's element groups: which of groups 0-5 a scene shows, and which group an
element object is in.

MuJoCo's viewer shows or hides whole groups of geoms, sites, joints, tendons and
actuators (`mjvOption.geomgroup`, ...; groups 0, 1 and 2 shown by default). A
scene keeps its switches in `scene.mujoco_overlays` (live/overlay_settings.py);
sync/groups.py shows and hides the objects, the importer asks the same question
of each new element, the overlays of each joint, tendon and actuator.
"""

from __future__ import annotations

from ..components import values
from ..components.kinds import GROUP_KINDS

NGROUP = 6  # MuJoCo's mjNGROUP
DEFAULT_SHOWN = (True, True, True, False, False, False)  # MuJoCo's mjv_defaultOption
KINDS = GROUP_KINDS  # the kinds with switches: geom, site, joint, tendon, actuator


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


def element_group(obj, classes) -> int:
    """The group MuJoCo gives the element of `obj` (a geom, site or joint object):
    its own `group`, or its default class's when it leaves it to the class. The
    scan writes an element with a class only what it sets itself (`values.own`),
    so the class's value is the one MuJoCo compiles. `classes`: {name: class item}
    of the element's model root (`root_classes`)."""
    holder = obj.mujoco
    kind = holder.kind.lower()
    group = getattr(holder, kind)
    if holder.classname:
        own = values.recorded_own(group)
        if own is not None and "group" not in own:
            item = classes.get(holder.classname)
            if item is not None:
                return int(getattr(item, kind).group)
    return int(group.group)


def root_classes(root) -> dict:
    """{name: class item} of a model root's default classes."""
    return {item.name: item for item in root.mujoco.model.defaults}

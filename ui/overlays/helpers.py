"""The active object's helper, drawn where the object itself is hidden: a joint or
MJCF frame empty hidden because MuJoCo draws no joints or frames by default
(sync/groups.py) still shows where it is once picked in the Outliner or a panel.

Blender cannot select a hidden object (`select_set` leaves it unselected) but lets
one be the active object, so "shown when selected" is "drawn while active": a
joint as its arrow along the axis (MuJoCo's joint length: the empty's display
size), ball and free joints and frames as their three axes, from the object's
world matrix (no simulation or compile needed). Layers as engine/overlays.py
makes them; draw.py draws them above the scene.
"""

from __future__ import annotations

import numpy as np

from ...engine.overlays import AXIS_COLORS, Layer

JOINT_COLOR = (0.2, 0.6, 0.8, 1.0)  # MuJoCo's default visual/rgba joint
HELPER_KINDS = ("JOINT", "FRAME")


def active_hidden(view_layer) -> list[Layer]:
    """Layers of the active object's helper when it is a hidden joint or frame empty."""
    obj = view_layer.objects.active if view_layer is not None else None
    if obj is None or obj.type != "EMPTY" or obj.mujoco.kind not in HELPER_KINDS:
        return []
    if obj.visible_get(view_layer=view_layer):
        return []  # (Blender draws it)
    world = np.array(obj.matrix_world)
    origin, size = world[:3, 3], float(obj.empty_display_size)
    if obj.mujoco.kind == "JOINT" and obj.empty_display_type == "SINGLE_ARROW":
        tip = origin + world[:3, 2] * size  # the joint's axis is the empty's z
        return [Layer("active joint", JOINT_COLOR, lines=np.array([origin, tip]),
                      points=origin[None], line_width=3.0, point_size=8.0)]
    return [Layer(f"active {obj.mujoco.kind.lower()} {'xyz'[k]}", AXIS_COLORS[k],
                  lines=np.array([origin, origin + world[:3, k] * size]), line_width=3.0)
            for k in range(3)]

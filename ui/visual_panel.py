"""The MuJoCo sidebar's Visualization panel (simulate's Visualization section): the
model's `<visual>` settings (headlight, map, scale, rgba, global, quality) and its
`<statistic>`, edited where the simulation is watched.

They are the model root's own settings (the Properties editor shows the same ones),
so the scene exports and scans to the model they make. While a simulation runs, an
edit of `<visual>` reaches the running model between two steps without a recompile
(live/simulation.py `_copy_visual`): the overlays' colours and sizes follow at the
next snapshot and the state goes on untouched. `<statistic>` is recompiled as any
edit: MuJoCo's solver scales by its meaninertia, and what it leaves unset the
compiler computes.
"""

from __future__ import annotations

import bpy

from ..components.schema import KINDS
from ..scan import scene_scan
from . import panels

SHOWN = (("visual_headlight", "Headlight"), ("visual_map", "Map"), ("visual_scale", "Scale"),
         ("visual_rgba", "Colours"), ("visual_global", "Global"), ("visual_quality", "Quality"),
         ("statistic", "Statistic (recompiles)"))


def model_root(context):
    """The active object's model root, else the scene's first."""
    active = context.active_object
    root = scene_scan.model_of(active) if active is not None else None
    if root is None:
        roots = scene_scan.model_roots(context.scene)
        root = roots[0] if roots else None
    return root


class MJBLEND_PT_visualization(bpy.types.Panel):
    bl_idname = "MJBLEND_PT_visualization"
    bl_label = "Visualization"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "MuJoCo"
    bl_parent_id = "MJBLEND_PT_simulation"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return context.scene is not None and bool(scene_scan.model_roots(context.scene))

    def draw(self, context):
        layout = self.layout
        root = model_root(context)
        if root is None:
            return
        if len(scene_scan.model_roots(context.scene)) > 1:
            layout.label(text=f"Model: {root.name}", icon="OBJECT_DATA")
        model = root.mujoco.model
        for kind, title in SHOWN:
            body = panels._section(layout, f"mjb_visualization_{kind}", title)
            if body is None:
                continue
            body.use_property_split = True
            body.use_property_decorate = False
            for attr in KINDS[kind].editable:
                panels.draw_attr(body, getattr(model, kind), attr)


CLASSES = (MJBLEND_PT_visualization,)

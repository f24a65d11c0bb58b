"""Switching the viewport's MuJoCo overlays from the keyboard, as in MuJoCo's own
viewer (the keys: ui/keymaps.py; the switches: components/overlay_settings.py). A view
setting, like Blender's own overlays: no undo step."""

from __future__ import annotations

import bpy
from bpy.props import StringProperty

from ..scan import scene_scan
from ..components import overlay_settings as settings
from ..sync import views

INERTIA = "inertia"  # kept with the simulation settings (saved files have it there)
# switches a press moves to their next kind: (what the report calls them, their items)
CYCLED = {"labels": ("labels", settings.LABELS), "frame": ("frames", settings.FRAMES)}


def _label_of(name: str) -> str:
    if name == INERTIA:
        return "Inertia Boxes"
    return next(label for switch, label, _text in settings.OVERLAYS if switch == name)


class MUJOCO_OT_toggle_overlay(bpy.types.Operator):
    """Show or hide one of the viewport's MuJoCo overlays (labels, frame: the next kind)"""

    bl_idname = "mujoco.toggle_overlay"
    bl_label = "Toggle MuJoCo Overlay"

    overlay: StringProperty(name="Overlay", description="The overlay's switch "
                            "(components/overlay_settings.py), 'inertia', 'labels' or 'frame'")

    @classmethod
    def poll(cls, context):
        return context.scene is not None and bool(scene_scan.model_roots(context.scene))

    def execute(self, context):
        switches = settings.get(context.scene)
        names = [name for name, _label, _text in settings.OVERLAYS]
        if self.overlay in CYCLED:
            said, items = CYCLED[self.overlay]
            kinds = [key for key, _label, _text in items]
            now = (kinds.index(getattr(switches, self.overlay)) + 1) % len(kinds)
            setattr(switches, self.overlay, kinds[now])
            self.report({"INFO"}, f"MuJoCo {said}: {items[now][1]}")
        elif self.overlay == INERTIA:
            simulation = context.scene.mujoco_simulation
            simulation.show_inertia = not simulation.show_inertia
            self._said(simulation.show_inertia)
        elif self.overlay in names:
            setattr(switches, self.overlay, not getattr(switches, self.overlay))
            self._said(getattr(switches, self.overlay))
        else:
            self.report({"ERROR"}, f"No MuJoCo overlay {self.overlay!r}: one of {', '.join(names)}, "
                        f"{INERTIA}, labels, frame")
            return {"CANCELLED"}
        views.redraw()
        return {"FINISHED"}

    def _said(self, shown: bool) -> None:
        self.report({"INFO"}, f"{_label_of(self.overlay)}: {'on' if shown else 'off'}")


CLASSES = (MUJOCO_OT_toggle_overlay,)

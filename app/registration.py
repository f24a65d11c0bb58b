"""Registers every class and property of the add-on, and removes them again.

Order matters: property groups before the panels that draw them; unregister
runs in reverse, so a disable leaves nothing behind.
"""

import bpy

from ..authoring import edits
from ..components import camera_preview_settings, overlay_settings, plot_settings, properties, scene_settings
from ..importer import mujoco_load
from ..live import file_watch, simulation_settings
from ..operators import (author, bridge as bridge_operators, groups as group_operators, io, model_tools,
                         overlays as overlay_operators,
                         perturb, randomization as randomization_operators,
                         randomization_preview as preview_operators, simulate, timeline as timeline_operators)
from ..operators import dataset as dataset_operators
from ..operators import plots as plot_operators
from ..operators import readouts as readout_operators
from ..operators import view as view_operators
from ..ui import add_menu, keymaps, menus, panels, preferences, randomization_panel, sidebar
from ..ui import readouts, view_panel, visual_panel
from ..ui.overlays import debug_draw, draw as overlay_draw, popover as overlay_popover
from ..ui.overlays import screenshot as screenshot_draw
from ..ui.camera_preview import draw as camera_preview_draw
from ..ui.plots import draw as plot_draw
from . import batch_export, dataset_command, handlers, serve


class _Classes:
    """A module-like registrar for a tuple of classes."""

    def __init__(self, classes):
        self.classes = classes

    def register(self):
        for cls in self.classes:
            bpy.utils.register_class(cls)

    def unregister(self):
        for cls in reversed(self.classes):
            bpy.utils.unregister_class(cls)


class _ProbeHelper:
    """The import's probe helper process (importer/mujoco_load.py) started with the add-on,
    ahead of the first import, and stopped with it."""

    @staticmethod
    def register():
        mujoco_load.start_helper()

    @staticmethod
    def unregister():
        mujoco_load.stop_helper()


OPERATORS = (io.CLASSES + simulate.CLASSES + timeline_operators.CLASSES + perturb.CLASSES
             + author.CLASSES + model_tools.CLASSES + bridge_operators.CLASSES
             + randomization_operators.CLASSES + preview_operators.CLASSES + overlay_operators.CLASSES
             + group_operators.CLASSES + dataset_operators.CLASSES
             + readout_operators.CLASSES)
# (the saved property groups first, then what reacts to their edits (simulation_settings);
# overlay_popover before sidebar: the header's Play / Pause button stays its last item)
MODULES = (properties, scene_settings, overlay_settings, plot_settings, camera_preview_settings,
           simulation_settings, _Classes(plot_operators.CLASSES), screenshot_draw, plot_draw,
           camera_preview_draw,
           _Classes(OPERATORS), _Classes(preferences.CLASSES), panels, randomization_panel, overlay_popover,
           sidebar, _Classes(readouts.CLASSES),
           # (the sub-panels of Simulation after it)
           _Classes(view_operators.CLASSES), _Classes(view_panel.CLASSES),
           menus, add_menu, handlers, keymaps, overlay_draw, debug_draw, edits,
           serve, batch_export, dataset_command, file_watch, _Classes(visual_panel.CLASSES), _ProbeHelper)


def register():
    """All or nothing: if one part fails, the parts already registered are removed
    again before the error goes on to Blender."""
    done = []
    try:
        for module in MODULES:
            module.register()
            done.append(module)
    except Exception:
        for module in reversed(done):
            module.unregister()
        raise


def unregister():
    for module in reversed(MODULES):
        module.unregister()

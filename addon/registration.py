"""Registers every class and property of the add-on, and removes them again.

Order matters: property groups before the panels that draw them; unregister
runs in reverse, so a disable leaves nothing behind.
"""

import bpy

from ..components import properties
from ..operators import author, perturb, simulate
from . import (add_menu, display, handlers, keymaps, menus, overlay, panels, preferences,
               simulation_panels, simulation_props)


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


MODULES = (properties, simulation_props, _Classes(simulate.CLASSES + perturb.CLASSES + author.CLASSES),
           _Classes(preferences.CLASSES), panels, simulation_panels, menus, add_menu, handlers, keymaps,
           overlay, display)


def register():
    for module in MODULES:
        module.register()


def unregister():
    for module in reversed(MODULES):
        module.unregister()

"""Registers every class and property of the add-on, and removes them again.

Order matters: property groups before the panels that draw them; unregister
runs in reverse, so a disable leaves nothing behind.
"""

from ..components import properties
from . import handlers, menus, panels

MODULES = (properties, panels, menus, handlers)


def register():
    for module in MODULES:
        module.register()


def unregister():
    for module in reversed(MODULES):
        module.unregister()

"""What follows a user's edit of a MuJoCo property, in order: the element's display
(a geom's shape), its class's members (a class edit propagates, a class change
re-applies the class), then a debounced check that the model still compiles.

components/properties.py calls the one function connected to it
(`changes.connect_edits`); this module is it, so what an edit does is read here.
"""

from ..components import changes
from . import default_classes, display, validation


def after_edit(group, attr: str) -> None:
    display.on_edit(group, attr)
    default_classes.on_edit(group, attr)
    validation.on_edit(group, attr)


def register():
    changes.connect_edits(after_edit)


def unregister():
    changes.connect_edits(None)
    validation.cancel()

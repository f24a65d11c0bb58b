"""The one base of every failure MJBlend reports to the user."""

from __future__ import annotations


class MJBlendError(Exception):
    """A stage cannot do what was asked. The message names the element and the
    cause; `objects` are the Blender objects at fault (an operator selects them).
    Each stage raises its own subclass (ImportFailed, ScanError, CompileError,
    ExportFailed, SimulationError, AuthoringError, ClassError)."""

    def __init__(self, message, objects=()):
        super().__init__(message)
        self.objects = list(objects)


def select_culprits(context, error: MJBlendError) -> None:
    """Select the objects at fault (the first made active), so the user sees them."""
    if not error.objects:
        return
    for obj in context.view_layer.objects:
        obj.select_set(obj in error.objects)
    context.view_layer.objects.active = error.objects[0]

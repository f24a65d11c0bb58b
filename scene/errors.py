"""The one base of every failure MJBlend reports to the user (defined bpy-free in
engine/errors.py), and the one way an operator reports it."""

from __future__ import annotations

from ..engine.errors import MJBlendError

__all__ = ["MJBlendError", "report_error"]


def report_error(operator, context, error: Exception) -> None:
    """How every operator tells the user of a failure: its message as an error report
    and, for an MJBlendError, the objects at fault selected (the selection replaced by
    them, the first made active), so the user sees what to fix. With no object at
    fault (or an engine refusal, a plain ValueError) the selection stays as it is."""
    operator.report({"ERROR"}, str(error))
    culprits = error.objects if isinstance(error, MJBlendError) else []
    if not culprits:
        return
    for obj in context.view_layer.objects:
        obj.select_set(obj in culprits)
    context.view_layer.objects.active = culprits[0]

"""What every MJBlend operator shares: its undo options and how it turns an
expected failure into a report instead of a traceback."""

from __future__ import annotations

import bpy

from ..scene.errors import MJBlendError, report_error

UNDOABLE = {"REGISTER", "UNDO"}


def run_reporting(operator, context, make, errors=(MJBlendError,)):
    """Run `make()`: one of `errors` is reported (scene/errors.py: report_error) and the
    operator CANCELLED; an object it returns is reported as added."""
    try:
        result = make()
    except errors as error:
        report_error(operator, context, error)
        return {"CANCELLED"}
    if isinstance(result, bpy.types.Object):
        operator.report({"INFO"}, f"Added {result.mujoco.kind.lower()} {result.mujoco.name!r}")
    return {"FINISHED"}

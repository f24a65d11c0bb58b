"""The one base of every failure MJBlend reports to the user.

bpy-free, so every stage can derive from it: the bpy-free ones (engine/, bridge/,
batch/) import it from here, the Blender stages from scene/errors.py, which also
holds how an operator reports it. Standard library only: the importer's probe
process, run as a script where there is no fork, loads the engine folder by path.
"""

from __future__ import annotations


class MJBlendError(Exception):
    """A stage cannot do what was asked. The message names the element and the
    cause; `objects` are the Blender objects at fault, a plain list (an operator
    selects them; empty where no object is at fault, or outside Blender). Each
    stage raises its own subclass (ImportFailed, ScanError, CompileError,
    ExportFailed, SimulationError, BridgeError, BatchError, ...); one that callers
    also catch as a ValueError, OSError or ImportError is that too."""

    def __init__(self, message, objects=()):
        super().__init__(message)
        self.objects = list(objects)

"""Compiling the scene in the background of edits, to show mistakes as they are made.

After an edit, a short timer (debounced: each edit pushes it back) scans and
compiles every model root with MuJoCo; the result, "compiles" or MuJoCo's first
error mapped to the object it names, is kept per scene for the panels. Nothing
here blocks typing: the compile runs only once edits pause. In the bpy module and
`--background` timers do not run: call `validate(scene)`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import bpy

from ..scan import compile_spec, scene_scan
from ..live import scene_session

DELAY = 0.4  # seconds of quiet after an edit before compiling

@dataclass
class Result:
    ok: bool
    message: str = ""
    objects: list[str] = field(default_factory=list)  # Blender names of the objects at fault
    models: dict = field(default_factory=dict)  # root name -> compiled MjModel


def result(scene) -> Result | None:
    """The last check of `scene` (kept by its scene session, dropped with it)."""
    owner = scene_session.existing(scene)
    return owner.validation if owner is not None else None


def validate(scene) -> Result:
    """Scan and compile every model root of `scene`; the first problem found."""
    models = {}
    owner = scene_session.of(scene)
    scans = owner.scans
    roots = scene_scan.model_roots(scene)
    if not roots:
        outcome = Result(False, "No MuJoCo model in the scene")
    else:
        outcome = None
        for root in roots:
            try:
                spec, _updated = scans.spec(root)
                models[root.name] = compile_spec.check(spec, scanners=[scans.scanner_of(root)])
            except (scene_scan.ScanError, compile_spec.CompileError) as error:
                outcome = Result(False, f"{root.name}: {error}", [o.name for o in error.objects])
                break
        outcome = outcome or Result(True, "Compiles")
    outcome.models = models
    owner.validation = outcome
    return outcome


# ------------------------------------------------------------- debouncing


_due: float | None = None  # when the pending check runs (None: none pending)


def _run():
    global _due
    wait = (_due or 0.0) - time.monotonic()
    if wait > 0:
        return wait  # edited again meanwhile: wait for the quiet
    _due = None
    for scene in bpy.data.scenes:
        # (a running simulation reports its own errors)
        if scene_scan.model_roots(scene) and scene_session.simulation(scene) is None:
            validate(scene)
    for window in bpy.context.window_manager.windows:
        for area in window.screen.areas:
            if area.type in ("VIEW_3D", "PROPERTIES"):
                area.tag_redraw()
    return None


def schedule(*_args) -> None:
    """Compile once edits have paused for DELAY seconds (each call pushes it back;
    one timer, whatever the number of edits)."""
    global _due
    pending = _due is not None
    _due = time.monotonic() + DELAY
    if not pending:
        bpy.app.timers.register(_run, first_interval=DELAY)


def on_edit(_group, _attr) -> None:
    schedule()


def cancel() -> None:
    """No check pending (the add-on's disable)."""
    global _due
    if bpy.app.timers.is_registered(_run):
        bpy.app.timers.unregister(_run)
    _due = None

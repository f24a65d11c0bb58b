"""Randomization preview operators: start (modal, on a window-manager timer at the
scene's frame rate), stop, and redraw (new values, initial states).

Thin: live/randomization_preview.py compiles, steps the environments and draws
them. Without a window (scripts, --background, the bpy module) no timer fires:
start only starts, and `randomization_preview.get(scene).tick()` steps.
"""

from __future__ import annotations

import time

import bpy

from ..live import randomization_preview
from ..live.randomization_preview import PreviewError
from ..scan import scene_scan
from ..scan.randomization import RandomizationInvalid, scene_randomization
from ..scene.errors import report_error
from .runner_wait import redraw


def _start(operator, context):
    """The scene's preview, started with its authored randomization (and its seed: the
    first K environments a training run draws) and the sidebar's settings; None (and a
    report, the objects at fault selected) if it cannot start."""
    scene = context.scene
    settings = scene.mujoco_preview
    try:
        randomization = scene_randomization(scene_scan.model_roots(scene))
        return randomization_preview.start(scene, randomization, settings.count, spacing=settings.spacing)
    except (PreviewError, RandomizationInvalid) as error:
        report_error(operator, context, error)
        return None


class MUJOCO_OT_randomization_preview_start(bpy.types.Operator):
    """Show randomized environments of the model side by side, stepping live with the
    same controls (the objects stay as authored, hidden while it runs)"""

    bl_idname = "mujoco.randomization_preview_start"
    bl_label = "Start Preview"
    bl_options = {"REGISTER"}

    _timer = None

    def invoke(self, context, _event):
        preview = _start(self, context)
        if preview is None:
            return {"CANCELLED"}
        if context.window is None:
            return {"FINISHED"}
        rate = randomization_preview.scene_fps(context.scene)
        self._timer = context.window_manager.event_timer_add(1 / rate, window=context.window)
        self._preview = preview
        self._last = time.perf_counter()
        context.window_manager.modal_handler_add(self)
        redraw(context, properties=False)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        preview = self._preview
        if not randomization_preview.is_current(preview):
            return self._finish(context)  # stopped, replaced, reloaded or its scene is gone
        if event.type == "TIMER":
            now = time.perf_counter()  # (real time: a frame that draws slowly steps more)
            try:
                preview.tick(preview.steps_for(now - self._last))
            except Exception as error:  # (a diverging model, a deleted object: never a dead timer)
                self.report({"ERROR"}, f"The randomization preview stopped: {error}")
                randomization_preview.stop(preview.scene)
                redraw(context)
                return self._finish(context)
            self._last = now
            redraw(context, properties=False)
        return {"PASS_THROUGH"}

    def _finish(self, context):
        context.window_manager.event_timer_remove(self._timer)
        return {"FINISHED"}

    def execute(self, context):
        # No window timer here (scripts, --background): started only; tick() steps it.
        return {"FINISHED"} if _start(self, context) is not None else {"CANCELLED"}


class MUJOCO_OT_randomization_preview_stop(bpy.types.Operator):
    """Stop the randomization preview: its environments go, the objects show as authored"""

    bl_idname = "mujoco.randomization_preview_stop"
    bl_label = "Stop Preview"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return randomization_preview.get(context.scene) is not None

    def execute(self, context):
        randomization_preview.stop(context.scene)
        redraw(context)
        return {"FINISHED"}


class MUJOCO_OT_randomization_preview_reset(bpy.types.Operator):
    """Draw new randomized values for every environment and start them again from the
    initial state"""

    bl_idname = "mujoco.randomization_preview_reset"
    bl_label = "Redraw"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return randomization_preview.get(context.scene) is not None

    def execute(self, context):
        randomization_preview.get(context.scene).redraw()
        redraw(context, properties=False)
        return {"FINISHED"}


CLASSES = (MUJOCO_OT_randomization_preview_start, MUJOCO_OT_randomization_preview_stop,
           MUJOCO_OT_randomization_preview_reset)

"""Simulation operators: play (modal, on a window-manager timer), pause, step,
reset, stop, and simulate (a fixed duration: in a window on the physics thread,
its progress shown and Esc cancelling; in scripts and `--background` at once).

Thin: live/scene_session.py compiles, binds, sends commands and shows snapshots;
engine/runner.py steps (on its own thread in a window).
"""

from __future__ import annotations

import time

import bpy
from bpy.props import FloatProperty, IntProperty

from ..authoring import authoring
from ..engine import commands
from ..engine.runner import DISPLAY_RATE
from ..live import profile, scene_session, simulation
from ..scene import preferences
from ..scene.errors import report_error
from .reporting import run_reporting
from .runner_wait import RunnerWait, redraw


def start_simulation(operator, context):
    """The scene's simulation, compiled if needed; None (and a report, the objects at
    fault selected) if it cannot."""
    try:
        return scene_session.start_simulation(context.scene, preferences.settings(context))
    except simulation.SimulationError as error:
        report_error(operator, context, error)
        return None


def step_limit(context) -> int:
    """The preferences' step limit now (a simulation may have started before it changed)."""
    return preferences.settings(context).step_limit


PROPERTIES_EVERY = 6  # display frames between redraws of the Properties editor (its panels cost)


class MUJOCO_OT_play(bpy.types.Operator):
    """Simulate the scene in real time (MuJoCo, on its own thread); the viewport shows it"""

    bl_idname = "mujoco.play"
    bl_label = "Play"
    bl_options = {"REGISTER"}

    _timer = None

    def invoke(self, context, _event):
        running = start_simulation(self, context)
        if running is None or not _play(self, context, running):
            return {"CANCELLED"}
        if running.modal_running:  # a paused simulation resumes on its own timer
            return {"FINISHED"}
        self._timer = context.window_manager.event_timer_add(1 / DISPLAY_RATE, window=context.window)
        self._live = running
        running.modal_running = True
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        running = self._live
        if not scene_session.is_current(running):
            return self._finish(context)  # stopped, reloaded or the scene is gone
        if event.type == "TIMER":  # (any timer: the runner keeps its own time)
            start = time.perf_counter()
            try:
                shown = running.tick(time.perf_counter(), context.selected_objects)
            except simulation.SimulationError as error:  # it ended itself (objects deleted)
                report_error(self, context, error)
                redraw(context)
                return self._finish(context)
            profile.of(running).ticked(time.perf_counter() - start)  # (the profiler line's sync)
            if shown:
                self._frames = getattr(self, "_frames", 0) + 1
                redraw(context, properties=self._frames % PROPERTIES_EVERY == 0)
            message = running.take_message()
            if message:
                self.report({"WARNING"}, message)
        return {"PASS_THROUGH"}

    def _finish(self, context):
        context.window_manager.event_timer_remove(self._timer)
        self._live.modal_running = False
        return {"FINISHED"}

    def execute(self, context):
        # No window timer here (scripts, --background): compile and mark as playing;
        # `mujoco.simulate` advances time.
        running = start_simulation(self, context)
        if running is None or not _play(self, context, running):
            return {"CANCELLED"}
        return {"FINISHED"}


def _play(operator, context, running) -> bool:
    """Play (False, and a report, if the model's timestep cannot be stepped)."""
    try:
        running.play()
    except simulation.SimulationError as error:
        report_error(operator, context, error)
        return False
    return True


class MUJOCO_OT_pause(bpy.types.Operator):
    """Pause the simulation (the viewport shows the state it paused in)"""

    bl_idname = "mujoco.pause"
    bl_label = "Pause"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        running = scene_session.simulation(context.scene)
        return running is not None and running.playing

    def execute(self, context):
        scene_session.simulation(context.scene).pause()
        redraw(context)
        return {"FINISHED"}


class MUJOCO_OT_step(bpy.types.Operator):
    """Advance the simulation by a number of steps, then pause"""

    bl_idname = "mujoco.step"
    bl_label = "Step"
    bl_options = {"REGISTER"}

    count: IntProperty(name="Steps", default=1, min=1, description="Number of MuJoCo steps")

    def execute(self, context):
        running = start_simulation(self, context)
        if running is None:
            return {"CANCELLED"}
        try:
            running.take_edits(context.selected_objects)
            running.step(self.count, step_limit=step_limit(context))
        except simulation.SimulationError as error:  # refused, or it ended itself
            report_error(self, context, error)
            redraw(context)
            return {"CANCELLED"}
        _report_divergence(self, running)
        redraw(context)
        return {"FINISHED"}


class MUJOCO_OT_history_step(bpy.types.Operator):
    """Show the kept state before (or after) the one shown; the simulation pauses"""

    bl_idname = "mujoco.history_step"
    bl_label = "Step Through History"
    bl_options = {"REGISTER"}

    offset: IntProperty(name="Offset", default=-1, description="Kept states to move: -1 back, 1 forward")

    @classmethod
    def poll(cls, context):
        running = scene_session.simulation(context.scene)
        return running is not None and running.latest.history[0] > 1

    def execute(self, context):
        running = scene_session.simulation(context.scene)
        kept, shown = running.latest.history
        index = min(max(shown + self.offset, 0), kept - 1)
        running.send(commands.ShowHistory(index), simulation.SHOW_WAIT)
        redraw(context)
        return {"FINISHED"}


class MUJOCO_OT_reset(bpy.types.Operator):
    """Reset the simulation to the reference pose (qpos0) or to a keyframe"""

    bl_idname = "mujoco.reset"
    bl_label = "Reset"
    bl_options = {"REGISTER"}

    keyframe: IntProperty(name="Keyframe", default=-2, min=-2,
                          description="-1: the reference pose qpos0; 0, 1, ...: that keyframe; "
                                      "-2: the scene's keyframe setting")

    def execute(self, context):
        running = start_simulation(self, context)
        if running is None:
            return {"CANCELLED"}
        keyframe = context.scene.mujoco_simulation.keyframe if self.keyframe == -2 else self.keyframe
        outcome = run_reporting(self, context, lambda: running.reset(keyframe),
                                (ValueError, simulation.SimulationError))
        redraw(context)
        return outcome


class MUJOCO_OT_stop(bpy.types.Operator):
    """Stop the simulation: every object goes back to where it was authored"""

    bl_idname = "mujoco.stop"
    bl_label = "Stop"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return scene_session.simulation(context.scene) is not None

    def execute(self, context):
        if scene_session.simulation(context.scene).recorder is not None:  # (never lose a recording)
            bpy.ops.mujoco.record_keep()
            if scene_session.simulation(context.scene) is None:
                return {"FINISHED"}
        if not scene_session.end_simulation(scene_session.simulation(context.scene), restore=True):
            self.report({"WARNING"}, "MuJoCo is still inside a step: its thread ends when the step "
                                     "returns (the objects are back as authored)")
        redraw(context)
        return {"FINISHED"}


class MUJOCO_OT_simulate(RunnerWait, bpy.types.Operator):
    """Simulate a fixed duration as fast as possible. In a window it runs on the physics
    thread, its progress in the status bar: Esc or right-click cancels"""

    bl_idname = "mujoco.simulate"
    bl_label = "Simulate Duration"
    bl_options = {"REGISTER"}

    duration: FloatProperty(name="Duration", default=1.0, min=0.0, unit="TIME_ABSOLUTE",
                            description="Simulated seconds: round(duration / timestep) steps")

    def execute(self, context):
        """All steps now, waited for (scripts, --background: deterministic)."""
        running = start_simulation(self, context)
        if running is None:
            return {"CANCELLED"}
        try:
            running.take_edits(context.selected_objects)
            playing = running.playing
            steps = running.simulate(self.duration, step_limit(context))
        except simulation.SimulationError as error:  # refused, or it ended itself
            report_error(self, context, error)
            return {"CANCELLED"}
        self._done(running, playing, steps)
        return {"FINISHED"}

    def invoke(self, context, _event):
        """In a window with a physics thread: the steps run there while Blender stays
        responsive (modal); otherwise as `execute`."""
        running = start_simulation(self, context)
        if running is None:
            return {"CANCELLED"}
        if not running.threaded_runner or context.window is None:
            return self.execute(context)
        try:
            running.take_edits(context.selected_objects)
            limit = step_limit(context)
            command = running.start_steps(running.steps_for(self.duration, limit), limit)
        except simulation.SimulationError as error:
            report_error(self, context, error)
            return {"CANCELLED"}
        self._playing = running.playing
        return self.wait_for(context, running, running.queue(command), command.count)

    def status(self, shot, done, percent):
        return (f"Simulating {self.duration:g} s: t = {shot.time:.3f} s, {done:,} of "
                f"{self._count:,} steps ({percent}%)")

    def finished(self, context, shot, done):
        if self.cancelled and done < self._count and not shot.message:
            self.report({"WARNING"}, f"Simulation cancelled after {done:,} of {self._count:,} steps: "
                                     f"t = {shot.time:.4f} s (the state shown)")
            return {"CANCELLED"}
        self._done(self._live, self._playing, done)
        return {"FINISHED"}

    def _done(self, running, playing: bool, steps: int) -> None:
        """Report a finished run; a simulation that played before plays on."""
        if playing and not running.latest.message:
            running.play()  # (its timestep was just stepped with)
        if not _report_divergence(self, running):
            self.report({"INFO"}, f"Simulated {steps} steps: t = {running.latest.time:.4f} s")


def _report_divergence(operator, running) -> bool:
    message = running.take_message()
    if message:
        operator.report({"WARNING"}, message)
        return True
    return False


CLASSES = (MUJOCO_OT_play, MUJOCO_OT_pause, MUJOCO_OT_step, MUJOCO_OT_history_step, MUJOCO_OT_reset,
           MUJOCO_OT_stop, MUJOCO_OT_simulate)


class MUJOCO_OT_zero_controls(bpy.types.Operator):
    """Set every actuator's control to zero"""

    bl_idname = "mujoco.zero_controls"
    bl_label = "Zero All"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return scene_session.simulation(context.scene) is not None

    def execute(self, context):
        running = scene_session.simulation(context.scene)
        running.send(commands.ZeroControls(), simulation.SHOW_WAIT)
        return {"FINISHED"}


class MUJOCO_OT_select_object(bpy.types.Operator):
    """Select the object a MuJoCo message names"""

    bl_idname = "mujoco.select_object"
    bl_label = "Select"
    bl_options = {"REGISTER", "UNDO"}

    name: bpy.props.StringProperty(name="Object")

    def execute(self, context):
        obj = context.scene.objects.get(self.name)
        if obj is None:
            self.report({"ERROR"}, f"No object {self.name!r} in the scene")
            return {"CANCELLED"}
        authoring.select_only(context, obj)
        return {"FINISHED"}


CLASSES += (MUJOCO_OT_zero_controls, MUJOCO_OT_select_object)

"""Timeline operators: bake a simulation into keyframes, record while playing,
import a trajectory recorded elsewhere, save a bake's recording, clear a bake.

Thin: live/scene_session.py runs and records (engine/recording.py), sync/timeline.py
writes and removes the keys, engine/trajectory.py reads and writes files.
"""

from __future__ import annotations

import contextlib
import math
import os

import bpy
from bpy.props import EnumProperty, FloatProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..engine import trajectory
from ..live import scene_session, simulation
from ..scene import preferences
from ..scene.errors import report_error
from ..sync import timeline
from .reporting import UNDOABLE
from .runner_wait import RunnerWait, redraw
from .simulate import start_simulation, step_limit


def scene_fps(scene) -> float:
    """Scene frames per second: one simulated second is this many frames."""
    return scene.render.fps / scene.render.fps_base


def _keep(operator, context, live, recording, source: str) -> set:
    """`recording` into the timeline (replacing any bake), the simulation ended, the
    frame shown; reported."""
    scene = context.scene
    if recording is None or len(recording) == 0:
        operator.report({"WARNING"}, "Nothing was recorded: nothing baked")
        return {"CANCELLED"}
    targets, model = live.binding.targets(), live.model
    message = live.take_message() if not live.ended else ""
    scene_session.end_simulation(live, restore=True)
    timeline.clear(scene)
    baked = timeline.write(scene, recording, targets, model, source)
    scene.frame_set(scene.frame_current)
    seconds = (len(recording) - 1) / recording.fps
    text = (f"Baked frames {recording.frame_start}-{recording.frame_end} ({seconds:.3f} s at "
            f"{recording.fps:g} fps): {baked.objects} objects keyed"
            + (f", {baked.meshes} meshes shaped" if baked.meshes else ""))
    for why in [message, recording.message, *baked.skipped]:
        if why:
            operator.report({"WARNING"}, why)
    operator.report({"INFO"}, text)
    redraw(context)
    return {"FINISHED"}


class MUJOCO_OT_bake(RunnerWait, bpy.types.Operator):
    """Simulate and bake it into the timeline: keys on every simulated body (and flex and
    skin shapes) at each scene frame, so Blender's play, scrubbing and Render Animation show
    it. In a window it runs on the physics thread: Esc cancels"""

    bl_idname = "mujoco.bake"
    bl_label = "Bake to Timeline"
    bl_options = UNDOABLE

    start: EnumProperty(
        name="From", default="CURRENT",
        items=(("CURRENT", "Current State", "The simulation's state now: a running simulation's (paused "
                "or playing), else the scene's Keyframe setting"),
               ("KEYFRAME", "Keyframe", "A keyframe (Keyframe), or the reference pose qpos0 (-1)")),
        description="The state the bake starts from (at its first frame)")
    keyframe: IntProperty(name="Keyframe", default=-1, min=-1,
                          description="From = Keyframe: -1 the reference pose qpos0, 0, 1, ...: "
                                      "that keyframe")
    frame_start: IntProperty(name="Start Frame", description="First frame baked (default: the scene's start)")
    frame_end: IntProperty(name="End Frame", description="Last frame baked (default: the scene's end, or "
                                                         "Start Frame + Duration)")
    duration: FloatProperty(name="Duration", default=0.0, min=0.0, unit="TIME_ABSOLUTE",
                            description="Simulated seconds to bake (0: up to End Frame); one simulated "
                                        "second is the scene's frame rate of frames")

    def frame_range(self, scene) -> tuple[int, int, float]:
        fps = scene_fps(scene)
        start = self.frame_start if self.properties.is_property_set("frame_start") else scene.frame_start
        if self.duration > 0:
            end = start + math.ceil(self.duration * fps - 1e-9)
        else:
            end = self.frame_end if self.properties.is_property_set("frame_end") else scene.frame_end
        if end < start:
            raise simulation.SimulationError(
                f"The bake ends (frame {end}) before it starts (frame {start})")
        return start, end, fps

    def _begin(self, context):
        """(live simulation, command sequence number, recorder), or None (reported)."""
        made = scene_session.simulation(context.scene) is None
        live = start_simulation(self, context)
        if live is None:
            return None
        try:
            start, end, fps = self.frame_range(context.scene)
            live.take_edits(context.selected_objects)
            if self.start == "KEYFRAME":
                live.reset(self.keyframe)
            elif made:  # (a new simulation on a baked scene starts from the frame shown: a
                live.reset()  # re-bake starts where the scene's keyframe says, as the first did)
            self._from = (f"keyframe {self.keyframe}" if self.start == "KEYFRAME" and self.keyframe >= 0 else
                          "qpos0" if self.start == "KEYFRAME" else f"t = {live.latest.time:.4f} s")
            seq, recorder = live.start_bake(end - start + 1, fps, start, step_limit(context))
        except (simulation.SimulationError, ValueError) as error:
            report_error(self, context, error)
            return None
        return live, seq, recorder

    def execute(self, context):
        begun = self._begin(context)
        if begun is None:
            return {"CANCELLED"}
        live, seq, recorder = begun
        live.wait(seq, None)
        return self._write(context, live, recorder)

    def invoke(self, context, _event):
        running = scene_session.simulation(context.scene)
        threaded = running.threaded_runner if running is not None \
            else simulation.threaded_default(preferences.settings(context))
        if not threaded or context.window is None:
            return self.execute(context)
        begun = self._begin(context)
        if begun is None:
            return {"CANCELLED"}
        live, seq, self._recorder = begun
        return self.wait_for(context, live, seq, live.bake_steps(self._recorder.frames, self._recorder.fps,
                                                                     step_limit(context)))

    def status(self, shot, done, percent):
        recorder = self._recorder
        return (f"Baking frames {recorder.frame_start}-{recorder.frame_start + recorder.frames - 1}: "
                f"t = {shot.time:.3f} s ({percent}%)")

    def finished(self, context, shot, done):
        recorder = self._recorder
        if self.cancelled and recorder.count < recorder.frames and not shot.message:
            self.report({"WARNING"}, f"Bake cancelled after {recorder.count:,} of {recorder.frames:,} "
                                     "frames: nothing was baked")
            return {"CANCELLED"}
        return self._write(context, self._live, recorder)

    def _write(self, context, live, recorder) -> set:
        return _keep(self, context, live, recorder.recording(), f"simulated from {self._from}")


class MUJOCO_OT_clear_bake(bpy.types.Operator):
    """Remove the bake from the timeline: its keys, shape keys and recording; every object
    as it was before (the authored model was never changed)"""

    bl_idname = "mujoco.clear_bake"
    bl_label = "Clear Bake"
    bl_options = UNDOABLE

    @classmethod
    def poll(cls, context):
        return context.scene is not None and timeline.is_baked(context.scene)

    def execute(self, context):
        live = scene_session.simulation(context.scene)
        if live is not None:  # (it holds the baked bodies' authored poses: put back first)
            scene_session.end_simulation(live, restore=True)
        removed = timeline.clear(context.scene)
        self.report({"INFO"}, f"Bake cleared ({removed} actions removed)")
        redraw(context)
        return {"FINISHED"}


class MUJOCO_OT_record_start(bpy.types.Operator):
    """Record the simulation from now on, at the scene's frame rate from the current frame:
    play, step or pull bodies; Keep Recording (or Stop) bakes it into the timeline"""

    bl_idname = "mujoco.record_start"
    bl_label = "Record"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        live = scene_session.simulation(context.scene)
        return live is None or live.recorder is None

    def execute(self, context):
        live = start_simulation(self, context)
        if live is None:
            return {"CANCELLED"}
        scene = context.scene
        live.start_recording(scene_fps(scene), scene.frame_current)
        self.report({"INFO"}, f"Recording from frame {scene.frame_current} at {scene_fps(scene):g} fps")
        redraw(context)
        return {"FINISHED"}


class MUJOCO_OT_record_keep(bpy.types.Operator):
    """Stop recording and bake what was recorded into the timeline (the simulation stops)"""

    bl_idname = "mujoco.record_keep"
    bl_label = "Keep Recording"
    bl_options = UNDOABLE

    @classmethod
    def poll(cls, context):
        live = scene_session.simulation(context.scene)
        return live is not None and live.recorder is not None

    def execute(self, context):
        live = scene_session.simulation(context.scene)
        return _keep(self, context, live, live.stop_recording(), "recorded while simulating")


@contextlib.contextmanager
def _compiled(operator, context):
    """The scene's simulation (compiled now if none runs; ended again after, unless
    the body handed it on with `keep`); None (reported) if it cannot compile."""
    made = scene_session.simulation(context.scene) is None
    live = start_simulation(operator, context)
    try:
        yield live
    finally:
        if made and live is not None and scene_session.simulation(context.scene) is live:
            scene_session.end_simulation(live, restore=True)


class MUJOCO_OT_import_trajectory(bpy.types.Operator, ImportHelper):
    """Bake qpos over time recorded elsewhere into the timeline (.npz or .csv of time + qpos,
    MuJoCo state arrays from mujoco.rollout or mj_getState), resampled to the scene's frame rate"""

    bl_idname = "mujoco.import_trajectory"
    bl_label = "Import MuJoCo Trajectory"
    bl_options = UNDOABLE

    filename_ext = ".npz"
    filter_glob: StringProperty(default="*.npz;*.npy;*.csv", options={"HIDDEN"})
    frame_start: IntProperty(name="Start Frame", description="The frame of the trajectory's first "
                                                             "sample (default: the scene's start)")
    batch: IntProperty(name="Batch", default=-1, min=-1,
                       description="Which rollout of a batched state array (nbatch > 1); -1: none")

    def execute(self, context):
        scene = context.scene
        path = bpy.path.abspath(self.filepath)
        start = self.frame_start if self.properties.is_property_set("frame_start") else scene.frame_start
        with _compiled(self, context) as live:
            if live is None:
                return {"CANCELLED"}
            model = live.model
            try:
                loaded = trajectory.read(path, model, None if self.batch < 0 else self.batch)
                frames = trajectory.resample(loaded, model, scene_fps(scene))
                recording = trajectory.to_recording(model, frames, scene_fps(scene), start)
            except trajectory.TrajectoryError as error:
                report_error(self, context, error)
                return {"CANCELLED"}
            for note in loaded.notes:
                self.report({"INFO"}, note)
            return _keep(self, context, live, recording, f"trajectory {os.path.basename(path)}")


class MUJOCO_OT_save_recording(bpy.types.Operator, ExportHelper):
    """Save the bake's recorded qpos, qvel, act, ctrl and sensor values per frame (.npz for
    NumPy, .csv for spreadsheets)"""

    bl_idname = "mujoco.save_recording"
    bl_label = "Save Recording"
    bl_options = {"REGISTER"}

    filename_ext = ".npz"
    filter_glob: StringProperty(default="*.npz;*.csv", options={"HIDDEN"})

    @classmethod
    def poll(cls, context):
        return context.scene is not None and timeline.is_baked(context.scene)

    def execute(self, context):
        path = bpy.path.abspath(self.filepath)
        recording = timeline.recorded(context.scene)
        with _compiled(self, context) as live:
            if live is None:
                return {"CANCELLED"}
            if timeline.fingerprint(live.model) != timeline.fingerprint_of(context.scene):
                self.report({"ERROR"}, "The model was changed since it was baked: its recording no longer "
                                       "matches it (bake again)")
                return {"CANCELLED"}
            save = trajectory.save_csv if path.lower().endswith(".csv") else trajectory.save_npz
            try:
                save(path, recording, live.model)
            except OSError as error:
                self.report({"ERROR"}, f"Cannot write {path}: {error.strerror or error}")
                return {"CANCELLED"}
        self.report({"INFO"}, f"Saved {len(recording)} frames to {path}")
        return {"FINISHED"}


CLASSES = (MUJOCO_OT_bake, MUJOCO_OT_clear_bake, MUJOCO_OT_record_start, MUJOCO_OT_record_keep,
           MUJOCO_OT_import_trajectory, MUJOCO_OT_save_recording)

"""Render Camera Dataset: the bake rendered from a set of MuJoCo cameras into a folder
a training pipeline reads (engine/dataset.py writes it, live/camera_dataset.py
gathers the bake, the model and the renderer).

Thin. In a window it renders one frame per timer tick (progress in the status bar,
Esc or right-click stops it between frames: the folder then holds the frames made,
its manifest.json saying "complete": false); from scripts, the bpy module and
`blender --command mjblend_dataset` (app/dataset_command.py) EXEC does all of it.
"""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, IntProperty, StringProperty

from ..components.scene_settings import BLENDER_ENGINES, DATASET_KINDS, DATASET_RANDOMIZE, DATASET_RENDERERS
from ..engine import cameras, dataset
from ..live import camera_dataset
from ..scene import preferences
from ..scene.errors import MJBlendError, report_error
from .runner_wait import end_progress

ERRORS = (MJBlendError, OSError)
FIELDS = (
    "directory",
    "cameras",
    "kinds",
    "renderer",
    "engine",
    "samples",
    "width",
    "height",
    "randomize",
    "seed",
    "textures",
)


def settings_of(values: dict) -> dataset.Settings:
    """The operator's (or the scene's) values as engine settings."""
    names = tuple(n.strip() for n in values["cameras"].split(",") if n.strip())
    return dataset.Settings(
        cameras=names,
        kinds=_ordered(values["kinds"]),
        renderer=values["renderer"].lower(),
        engine=values["engine"],
        samples=values["samples"] or None,
        width=values["width"] or None,
        height=values["height"] or None,
        randomize=values["randomize"].lower(),
        seed=values["seed"],
        textures=bpy.path.abspath(values["textures"]) if values.get("textures") else None,
        frames=values.get("frames"),
    )


def _ordered(kinds) -> tuple:
    """Kinds in the one order they render in (rgb, depth, segmentation); unknown ones
    kept at the end for Settings.check to name."""
    return (*(k for k in cameras.KINDS if k in kinds), *sorted(k for k in kinds if k not in cameras.KINDS))


class MUJOCO_OT_render_dataset(bpy.types.Operator):
    """Render the bake from MuJoCo cameras into a dataset folder: RGB, depth and segmentation
    per frame and camera, intrinsics and extrinsics, MuJoCo states and sensor values
    (Esc stops it; unset options are the scene's Camera Dataset settings)"""

    bl_idname = "mujoco.render_dataset"
    bl_label = "Render Camera Dataset"
    bl_options = {"REGISTER"}

    directory: StringProperty(name="Folder", subtype="DIR_PATH")
    cameras: StringProperty(name="Cameras", description="Comma-separated camera names (empty: every camera)")
    kinds: EnumProperty(
        name="Images", items=DATASET_KINDS, options={"ENUM_FLAG"}, default={"rgb", "depth", "segmentation"}
    )
    renderer: EnumProperty(name="Renderer", items=DATASET_RENDERERS)
    engine: EnumProperty(name="Engine", items=BLENDER_ENGINES)
    samples: IntProperty(name="Samples", min=0, description="0: the scene's")
    width: IntProperty(name="Width", min=0, description="0: each camera's resolution")
    height: IntProperty(name="Height", min=0, description="0: each camera's resolution")
    randomize: EnumProperty(name="Randomize", items=DATASET_RANDOMIZE)
    seed: IntProperty(name="Seed", min=0)
    textures: StringProperty(name="Textures", subtype="DIR_PATH",
                             description="A folder of images (empty: none)")
    frame_start: IntProperty(
        name="Start Frame", description="First frame rendered (default: the bake's first)"
    )
    frame_end: IntProperty(name="End Frame", description="Last frame rendered (default: the bake's last)")

    @classmethod
    def poll(cls, context):
        return context.scene is not None and context.scene.mujoco_bake.recording is not None

    def values(self, scene) -> dict:
        """Each option: the operator's where set, else the scene's Camera Dataset setting."""
        stored = scene.mujoco_dataset
        out = {
            name: getattr(self if self.properties.is_property_set(name) else stored, name) for name in FIELDS
        }
        bake = scene.mujoco_bake
        start = self.frame_start if self.properties.is_property_set("frame_start") else bake.frame_start
        end = self.frame_end if self.properties.is_property_set("frame_end") else bake.frame_end
        out["frames"] = (
            None if (start, end) == (bake.frame_start, bake.frame_end) else tuple(range(start, end + 1))
        )
        return out

    def _job(self, context):
        values = self.values(context.scene)
        if not values["directory"]:
            raise dataset.DatasetError("Choose a folder for the dataset")
        if values["directory"].startswith("//") and not bpy.data.filepath:
            raise dataset.DatasetError(f"The folder {values['directory']} is relative to the .blend file, "
                                       "which is not saved yet: save it first, or choose an absolute folder")
        folder = bpy.path.abspath(values["directory"])
        return camera_dataset.job(context.scene, folder, settings_of(values), preferences.settings(context))

    def execute(self, context):
        manager = context.window_manager
        try:
            job = self._job(context)
        except ERRORS as error:
            report_error(self, context, error)
            return {"CANCELLED"}
        manager.progress_begin(0, job.total)
        try:
            job.run(lambda done, total: manager.progress_update(done))
        except ERRORS as error:
            report_error(self, context, error)
            return {"CANCELLED"}
        finally:
            manager.progress_end()
        return self._done(job)

    def invoke(self, context, _event):
        if context.window is None:
            return self.execute(context)
        try:
            self._dataset = self._job(context)
        except ERRORS as error:
            report_error(self, context, error)
            return {"CANCELLED"}
        manager = context.window_manager
        self._timer = manager.event_timer_add(0.01, window=context.window)
        manager.progress_begin(0, self._dataset.total)
        manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        job = self._dataset
        if event.type in {"ESC", "RIGHTMOUSE"} and event.value == "PRESS":
            job.cancel("cancelled (Esc)")
            self._end(context)
            self.report(
                {"WARNING"},
                f"Dataset cancelled after {job.done} of {job.total} frames: "
                f"{job.dataset.folder} holds them, its manifest.json says complete: false",
            )
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            more = job.step()
        except ERRORS as error:
            self._end(context)
            report_error(self, context, error)
            return {"CANCELLED"}
        context.window_manager.progress_update(job.done)
        if context.workspace is not None:
            context.workspace.status_text_set(
                f"Rendering dataset frame {job.done} of {job.total}. Esc or right-click cancels"
            )
        if more:
            return {"RUNNING_MODAL"}
        self._end(context)
        return self._done(job)

    def cancel(self, context):
        """Blender ends the operator (a window closed, a file loaded)."""
        self._dataset.cancel("stopped by Blender")
        self._end(context)

    def _end(self, context):
        end_progress(context, self._timer)

    def _done(self, job) -> set:
        cams = ", ".join(job.settings.cameras)
        self.report(
            {"INFO"},
            f"Dataset of {job.done} frames from {cams} ({job.settings.renderer} renderer) "
            f"written to {job.dataset.folder}",
        )
        return {"FINISHED"}


CLASSES = (MUJOCO_OT_render_dataset,)

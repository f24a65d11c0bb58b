"""File > Import / Export > MuJoCo: thin operators over the importer, the scan and the exporter."""

from __future__ import annotations

import os
import time

import bpy
import numpy as np
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..scan import compile_spec, scene_scan
from ..exporter import mjcf_writer
from ..importer import build, framing, reload
from ..live import file_watch, scene_session
from ..scene import preferences
from ..scene.errors import MJBlendError, report_error


class IMPORT_SCENE_OT_mjcf(bpy.types.Operator, ImportHelper):
    """Import a MuJoCo model (MJCF or URDF); MuJoCo itself reads and checks the file"""

    bl_idname = "import_scene.mjcf"
    bl_label = "Import MuJoCo (MJCF/URDF)"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ".xml"
    filter_glob: StringProperty(default="*.xml;*.mjcf;*.urdf", options={"HIDDEN"})
    # Several files at once from the browser, or dropped on the viewport.
    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})
    # Set by invoke: the user chose the files in a window, so MuJoCo's load may run while
    # Blender keeps drawing (scripts calling execute get the import done when it returns).
    interactive: BoolProperty(options={"HIDDEN", "SKIP_SAVE"})
    frame_view: BoolProperty(name="Frame the Model", default=True,
                             description="Point the window's 3D views at the imported model's bodies "
                                         "(not the floor); views through a camera are left alone")

    def paths(self) -> list[str]:
        if self.files and self.directory:
            return [os.path.join(self.directory, f.name) for f in self.files if f.name]
        return [self.filepath]

    def invoke(self, context, event):
        self.interactive = True
        if self.files and self.directory:  # dropped on the viewport: no file browser
            return self.execute(context)
        return ImportHelper.invoke(self, context, event)

    def execute(self, context):
        if self.interactive and context.window is not None and not bpy.app.background:
            # the waiting operator loads, imports, reports and owns the undo step
            bpy.ops.import_scene.mjcf_wait("INVOKE_DEFAULT", files=[{"name": p} for p in self.paths()],
                                           frame_view=self.frame_view)
            return {"CANCELLED"}
        wm = context.window_manager
        imported = []
        for path in self.paths():
            try:
                job = build.start_load(path, limits_=build.limits(preferences.settings(context)))
                job.run()
            except build.ImportFailed as error:
                report_error(self, context, error)
                continue
            result = _build(self, context, job, wm)
            if result is not None:
                imported.append(result)
        return _finish_import(context, imported, self.frame_view)


# The build's time per window timer tick (Blender draws and reads keys between): at least
# STEP_SECONDS, and BUILD_SHARE of the wall time (a step 4x the gap Blender took since the
# last one: on software OpenGL a redraw takes as long as a 0.1 s step, which left the build
# a quarter of the time), at most STEP_MAX so Esc still answers within half a second
STEP_SECONDS, STEP_MAX, BUILD_SHARE = 0.1, 0.5, 0.8
STATUS_EVERY = 0.5  # seconds between status-bar texts (each redraws the window)


class IMPORT_SCENE_OT_mjcf_wait(bpy.types.Operator):
    """MuJoCo reads the chosen files, then MJBlend builds their objects, while Blender
    keeps drawing; Esc cancels (nothing is added)"""

    bl_idname = "import_scene.mjcf_wait"
    bl_label = "Import MuJoCo"
    bl_options = {"UNDO", "INTERNAL"}

    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    frame_view: BoolProperty(default=True, options={"HIDDEN", "SKIP_SAVE"})

    def invoke(self, context, _event):
        self._paths = [f.name for f in self.files]
        self._imported, self._job, self._steps, self._status = [], None, None, None
        self._shown_at = self._stepped_at = 0.0
        self._timer = context.window_manager.event_timer_add(0.1, window=context.window)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type in {"ESC", "RIGHTMOUSE"} and event.value == "PRESS":
            if self._steps is not None:
                self._steps.cancel()  # what the build made so far is removed
            elif self._job is not None:
                self._job.cancel()
            if self._job is not None:
                self.report({"WARNING"}, f"Import of {self._job.label} cancelled: nothing was added")
            return self._finish(context, cancelled=True)
        if event.type != "TIMER":
            # while MuJoCo loads the viewport stays usable; while the objects are built
            # the half-made model's datablocks exist (outside the scene), so no edit, undo
            # or file load may run in between: keys other than Esc wait
            return {"PASS_THROUGH"} if self._steps is None else {"RUNNING_MODAL"}
        if self._steps is not None:
            return self._build_step(context)
        if self._job is None:
            if not self._paths:
                return self._finish(context)
            try:
                self._job = build.start_load(self._paths.pop(0), threaded=True,
                                              limits_=build.limits(preferences.settings(context)))
            except build.ImportFailed as error:
                report_error(self, context, error)
                return {"RUNNING_MODAL"}
        if not self._job.poll():
            self._show_status(context, f"{self._job.status}; Esc to cancel")
            return {"RUNNING_MODAL"}
        self._steps = build.ImportSteps(self._job, context.scene)
        self._shown_at = 0.0  # (its first progress shows at once)
        context.window_manager.progress_begin(0, 100)
        return self._build_step(context)

    def _build_step(self, context):
        """One tick of the build: STEP_SECONDS of it, then the progress shown."""
        steps = self._steps
        started = time.perf_counter()
        gap = started - self._stepped_at if self._stepped_at else 0.0
        budget = min(STEP_MAX, max(STEP_SECONDS, gap * BUILD_SHARE / (1.0 - BUILD_SHARE)))
        try:
            done = steps.advance(budget)
        except build.ImportFailed as error:  # (nothing of it is left)
            self._end_build(context)
            report_error(self, context, error)
            return {"RUNNING_MODAL"}
        if not done:
            self._show_progress(context, steps.fraction)
            self._stepped_at = time.perf_counter()
            return {"RUNNING_MODAL"}
        self._end_build(context)
        _reported(self, steps.result)
        self._imported.append(steps.result)
        return {"RUNNING_MODAL"}

    def _show_progress(self, context, fraction):
        percent = int(100 * fraction)
        context.window_manager.progress_update(percent)
        self._show_status(context, f"Building {self._job.label}: {percent}%; Esc to cancel", STATUS_EVERY)

    def _show_status(self, context, status, every=0.0):
        # (only when it changes, at most every `every` seconds: each call redraws the
        # window, and ten a second left Blender 5.2 on software OpenGL half as responsive)
        now = time.perf_counter()
        if status != self._status and now - self._shown_at >= every:
            self._status, self._shown_at = status, now
            context.workspace.status_text_set(status)

    def _end_build(self, context):
        context.window_manager.progress_end()
        self._steps, self._job, self._status, self._stepped_at = None, None, None, 0.0

    def cancel(self, context):
        """Blender ends the operator (a file loaded, the window closed, quit): the data of a
        build part way goes with the file; a load part way is stopped."""
        if self._steps is not None:
            self._steps.abandon()
            context.window_manager.progress_end()
        elif self._job is not None:
            self._job.cancel()
        context.window_manager.event_timer_remove(self._timer)

    def _finish(self, context, cancelled=False):
        if self._steps is not None:
            context.window_manager.progress_end()
        context.window_manager.event_timer_remove(self._timer)
        context.workspace.status_text_set(None)
        outcome = _finish_import(context, self._imported, self.frame_view)
        return {"CANCELLED"} if cancelled and not self._imported else outcome


def _build(operator, context, job, wm):
    """The ImportResult of a finished load, or None with the error reported."""
    wm.progress_begin(0, 100)
    try:
        result = build.import_loaded(job, context.scene, progress=lambda f: wm.progress_update(int(100 * f)))
    except build.ImportFailed as error:
        report_error(operator, context, error)
        return None
    finally:
        wm.progress_end()
    return _reported(operator, result)


def _reported(operator, result):
    """`result`, its warnings and summary reported."""
    for warning in result.warnings:
        operator.report({"WARNING"}, f"MuJoCo: {warning}")
    operator.report({"INFO"}, result.summary())
    return result


def _finish_import(context, imported, frame_view):
    """The imported models' roots selected (the last one active) and, in a window, its
    3D views framing their bodies."""
    if not imported:
        return {"CANCELLED"}
    for obj in context.view_layer.objects:  # import_file updated the view layers
        obj.select_set(False)
    for result in imported:
        result.root.select_set(True)
        context.view_layer.objects.active = result.root
    # File > Import runs from the top bar, not from a 3D view: every view of the window
    # the user imported in shows the model (views through a camera keep the camera)
    if frame_view and context.window is not None and not bpy.app.background:
        low = np.min([result.bounds[0] for result in imported], axis=0)
        high = np.max([result.bounds[1] for result in imported], axis=0)
        framing.frame_views(context.window, low, high)
    return {"FINISHED"}


class EXPORT_SCENE_OT_mjcf(bpy.types.Operator, ExportHelper):
    """Export the MuJoCo models of the scene to MJCF; MuJoCo checks the result first"""

    bl_idname = "export_scene.mjcf"
    bl_label = "Export MuJoCo (MJCF)"
    bl_options = {"REGISTER", "PRESET"}

    filename_ext = ".xml"
    filter_glob: StringProperty(default="*.xml;*.zip", options={"HIDDEN"})
    use_selection: BoolProperty(name="Selection Only",
                                description="Only the models that selected objects belong to")
    copy_assets: BoolProperty(name="Copy Assets",
                              description="Copy mesh, height-field and texture files into an "
                                          "'assets' folder next to the file (else reference them)")
    file_format: EnumProperty(name="Format", items=(
        ("XML", "MJCF (.xml)", "One MJCF file"),
        ("ZIP", "Zip (.zip)", "MJCF and assets in one zip (MjSpec.to_zip)")))
    save_mjb: BoolProperty(name="Save Compiled Model (.mjb)",
                           description="Also write MuJoCo's binary model, for debugging")

    def invoke(self, context, event):
        result = ExportHelper.invoke(self, context, event)
        # where exports usually go: a killed export's staging folders there go now (one listdir)
        folder = os.path.dirname(bpy.path.abspath(self.filepath)) if self.filepath else ""
        if folder and os.path.isdir(folder):
            mjcf_writer.remove_stale(folder)
        return result

    def check(self, _context):
        ext = ".zip" if self.file_format == "ZIP" else ".xml"
        if self.filename_ext != ext:
            self.filename_ext = ext
            return True
        return False

    def roots(self, context):
        roots = scene_scan.model_roots(context.scene)
        if self.use_selection:
            chosen = {scene_scan.model_of(o) for o in context.selected_objects} - {None}
            roots = [r for r in roots if r in chosen]
        return roots

    def execute(self, context):
        warnings: list[str] = []
        filepath = bpy.path.abspath(self.filepath) if self.filepath else ""  # "//" is the .blend's folder
        try:
            # the target first: say why it will not do before scanning anything
            stem = os.path.splitext(os.path.basename(filepath))[0]
            mjcf_writer.check_target(filepath, [stem + ".mjb"] if self.save_mjb else ())
            built = compile_spec.build_spec(self.roots(context), warnings, find_painted_textures=True,
                                            held=scene_session.of(context.scene).held)
            mjcf_writer.write(built, filepath, copy_assets=self.copy_assets,
                              as_zip=self.file_format == "ZIP", save_mjb=self.save_mjb,
                              scene_objects=context.scene.objects, randomize=True)
        except MJBlendError as error:  # the scan's, the compile's or the writer's
            report_error(self, context, error)
            return {"CANCELLED"}
        for warning in warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, f"Exported {os.path.basename(filepath)}")
        return {"FINISHED"}


# ------------------------------------------------------------ reload (issue 34)


def reload_target(context):
    """The model root Reload acts on: the active object's model, else the scene's only
    model imported from a file; None when neither."""
    root = scene_scan.model_of(context.active_object) if context.active_object is not None else None
    if root is not None and reload.source_of(root):
        return root
    roots = [r for r in scene_scan.model_roots(context.scene) if reload.source_of(r)]
    return roots[0] if len(roots) == 1 else None


class MUJOCO_OT_reload(bpy.types.Operator):
    """Reload the model from its file, in place: objects of unchanged elements stay, the
    view stays, a running simulation carries its state over (MuJoCo Studio's Reload)"""

    bl_idname = "mujoco.reload"
    bl_label = "Reload from File"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.scene is not None and reload_target(context) is not None

    def execute(self, context):
        root = reload_target(context)
        watch = file_watch.watch_of(context.scene)  # (Follow File on: its panel shows the outcome)
        try:
            result = file_watch.reload_in_place(context.scene, root, preferences.settings(context))
        except build.ImportFailed as error:
            if watch is not None:
                watch.error = str(error)
            report_error(self, context, error)
            return {"CANCELLED"}
        if watch is not None:
            watch.error = ""
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, result.summary())
        return {"FINISHED"}


CLASSES = (IMPORT_SCENE_OT_mjcf, IMPORT_SCENE_OT_mjcf_wait, EXPORT_SCENE_OT_mjcf, MUJOCO_OT_reload)

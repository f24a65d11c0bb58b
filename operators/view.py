"""The 3D view as simulate's Rendering > Camera has it: track the selected body
(mjCAMERA_TRACKING), look through a model camera (mjCAMERA_FIXED), back to the
free view; Copy Camera (the view as an MJCF `<camera>`); Screenshot (the 3D view
under the mouse, else the largest, with its overlays, as a PNG). Thin: live/view_follow.py moves
the view, live/viewport.py captures it."""

from __future__ import annotations

import os
import tempfile
import time

import bpy
import mujoco
import numpy as np
from bpy.props import EnumProperty, StringProperty
from mathutils import Matrix

from ..engine import png
from ..live import scene_session, view_follow, viewport
from ..scan import scene_scan

SCREENSHOT_WAIT = 5.0  # seconds the Screenshot waits for its view to draw
SCREENSHOT_NAME = "mujoco_screenshot_{:03d}.png"


def view_area(context):
    """The 3D view the operator acts on: the one under the mouse (or whose sidebar was
    clicked), else the largest on screen; None without one."""
    if context.area is not None and context.area.type == "VIEW_3D":
        return context.area
    if bpy.app.background or context.window_manager is None:
        return None
    areas = [a for w in context.window_manager.windows for a in w.screen.areas if a.type == "VIEW_3D"]
    return max(areas, key=lambda a: a.width * a.height) if areas else None


def mujoco_world(context) -> np.ndarray:
    """MuJoCo's world in Blender's (4x4): the running simulation's, else the one model
    root's frame (several roots are compiled where they stand: the identity)."""
    running = scene_session.simulation(context.scene)
    if running is not None and running.binding is not None:
        return np.array(running.binding.world)
    roots = scene_scan.model_roots(context.scene)
    if len(roots) != 1:
        return np.eye(4)
    location, rotation, _scale = roots[0].matrix_world.decompose()
    return np.array(Matrix.LocRotScale(location, rotation, None))


def tracked_body(context) -> int | None:
    """The body of the active object in the running simulation (a body, or a geom, site,
    joint... of one), or None (no simulation, no active object, the world)."""
    running = scene_session.simulation(context.scene)
    obj = context.active_object
    if running is None or obj is None:
        return None
    body = running.binding.body_of(obj)
    return body if body else None


class _FollowOperator:
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return scene_session.simulation(context.scene) is not None and view_area(context) is not None


class MUJOCO_OT_view_track(_FollowOperator, bpy.types.Operator):
    """Follow the active object's body with the 3D view as MuJoCo's tracking camera does: \
the view's centre stays on the body's centre of mass (its subtree's), turning and zoom are yours"""

    bl_idname = "mujoco.view_track"
    bl_label = "Track"

    @classmethod
    def poll(cls, context):
        return super().poll(context) and tracked_body(context) is not None

    def execute(self, context):
        body = tracked_body(context)
        owner = scene_session.of(context.scene)
        name = context.active_object.name
        view_follow.start(owner, view_area(context), view_follow.TRACK, body, name)
        self.report({"INFO"}, f"The view tracks {name} (body {body})")
        return {"FINISHED"}


_camera_items = None  # (Blender keeps no reference to the strings of dynamic enum items)


def _cameras(_self, context):
    global _camera_items
    running = scene_session.simulation(context.scene) if context is not None else None
    model = running.model if running is not None else None
    found = []
    for index in range(model.ncam if model is not None else 0):
        obj = running.binding.by_id.get(("camera", index))
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, index) or f"camera {index}"
        label = obj.name if obj is not None else name
        found.append((str(index), label, f"Look through MuJoCo camera {name}"))
    _camera_items = found or [("NONE", "No camera", "The model has no camera")]
    return _camera_items


class MUJOCO_OT_view_camera(_FollowOperator, bpy.types.Operator):
    """Look through one of the model's cameras (MuJoCo's fixed camera: its pose and vertical \
field of view, as the simulation moves it)"""

    bl_idname = "mujoco.view_camera"
    bl_label = "View Through Camera"
    bl_property = "camera"

    camera: EnumProperty(name="Camera", items=_cameras)

    @classmethod
    def poll(cls, context):
        return super().poll(context) and scene_session.simulation(context.scene).model.ncam > 0

    def execute(self, context):
        if self.camera == "NONE":
            self.report({"ERROR"}, "The model has no camera")
            return {"CANCELLED"}
        index = int(self.camera)
        name = next((label for key, label, _tip in _cameras(self, context) if key == self.camera), "")
        owner = scene_session.of(context.scene)
        view_follow.start(owner, view_area(context), view_follow.CAMERA, index, name)
        self.report({"INFO"}, f"The view looks through {name}")
        return {"FINISHED"}


class MUJOCO_OT_view_free(bpy.types.Operator):
    """Stop following (tracking or a camera): the 3D view gets back the pose it had before"""

    bl_idname = "mujoco.view_free"
    bl_label = "Free"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        owner = scene_session.existing(context.scene)
        return owner is not None and owner.follow is not None

    def execute(self, context):
        view_follow.free(scene_session.of(context.scene))
        return {"FINISHED"}


class MUJOCO_OT_copy_camera(bpy.types.Operator):
    """Copy the 3D view's eye to the clipboard as an MJCF <camera pos xyaxes> element in the \
model's world, as MuJoCo's simulate copies its camera"""

    bl_idname = "mujoco.copy_camera"
    bl_label = "Copy Camera"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return view_area(context) is not None

    def execute(self, context):
        area = view_area(context)
        text = view_follow.camera_text_of(area, context.scene, mujoco_world(context))
        context.window_manager.clipboard = text
        self.report({"INFO"}, f"Copied {text.strip()}")
        return {"FINISHED"}


def screenshot_path(filepath: str = "") -> str:
    """Where a screenshot goes: `filepath` (Blender's // relative to the .blend), else
    the first free mujoco_screenshot_###.png beside the .blend (the temporary folder
    while it is unsaved)."""
    if filepath:
        return bpy.path.abspath(filepath)
    folder = os.path.dirname(bpy.data.filepath) if bpy.data.filepath else tempfile.gettempdir()
    number = 1
    while os.path.exists(os.path.join(folder, SCREENSHOT_NAME.format(number))):
        number += 1
    return os.path.join(folder, SCREENSHOT_NAME.format(number))


class MUJOCO_OT_screenshot(bpy.types.Operator):
    """Save the 3D view as it is drawn, with MuJoCo's overlays, labels and plots, as a PNG \
(beside the .blend, or in the temporary folder while it is unsaved)"""

    bl_idname = "mujoco.screenshot"
    bl_label = "Screenshot"
    bl_options = {"REGISTER"}

    filepath: StringProperty(name="File", subtype="FILE_PATH", default="", options={"SKIP_SAVE"},
                             description="Where to write the PNG (empty: mujoco_screenshot_###.png "
                                         "beside the .blend)")

    _timer = None
    _capture = None
    _owner = None

    @classmethod
    def poll(cls, context):
        return not bpy.app.background and context.window is not None and view_area(context) is not None

    def execute(self, context):
        # (the view draws after this returns: the capture is waited for on a timer, never here)
        self._owner = scene_session.of(context.scene)
        wm = context.window_manager
        self._capture = viewport.ask_capture(self._owner, view_area(context))
        self._deadline = time.monotonic() + SCREENSHOT_WAIT
        self._timer = wm.event_timer_add(0.02, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        capture = self._capture
        if not capture.done.is_set():
            if time.monotonic() < self._deadline:
                return {"PASS_THROUGH"}
            if capture in self._owner.captures:
                self._owner.captures.remove(capture)
            return self._end(context, "ERROR", f"The 3D view did not draw within {SCREENSHOT_WAIT:g} s "
                             "(is Blender's window minimised?)")
        if capture.pixels is None:
            return self._end(context, "ERROR", "The scene's session ended before the 3D view drew")
        path = screenshot_path(self.filepath)
        try:
            with open(path, "wb") as fh:
                fh.write(png.encode(capture.pixels[..., :3], level=3))
        except OSError as error:
            return self._end(context, "ERROR", f"Cannot write the screenshot: {error}")
        height, width = capture.pixels.shape[:2]
        return self._end(context, "INFO", f"Saved the 3D view ({width} x {height}) as {path}")

    def _end(self, context, level, message):
        context.window_manager.event_timer_remove(self._timer)
        self.report({level}, message)
        return {"FINISHED"} if level == "INFO" else {"CANCELLED"}


CLASSES = (MUJOCO_OT_view_track, MUJOCO_OT_view_camera, MUJOCO_OT_view_free, MUJOCO_OT_copy_camera,
           MUJOCO_OT_screenshot)

"""Poking the running simulation with the mouse, as in MuJoCo's own viewer:
Ctrl + left-drag pulls a body with a spring toward the cursor, Ctrl +
right-drag turns it; while paused the drags move it. Double-click selects the
body under the cursor. The keymap (ui/keymaps.py) calls these only in the
3D viewport, and their poll lets the click through when nothing simulates.

Thin: engine/perturb.py does the MuJoCo side (mjvPerturb, on the runner's thread:
the operator only sends StartGrab / Drag / Release commands), live/scene_session.py
knows which body an object belongs to.
"""

from __future__ import annotations

import math

import bpy
from bpy.props import BoolProperty
from mathutils import Vector

from ..authoring import authoring
from ..live import scene_session, simulation
from ..scene import preferences
from ..scan import scene_scan
from ..engine import commands, perturb

TURN_PER_PIXEL = math.radians(0.5)
MAX_SKIPPED = 32  # objects outside the model a pick ray passes through


def _running(context):
    return scene_session.simulation(context.scene)


def _in_view(context) -> bool:
    return context.area is not None and context.area.type == "VIEW_3D" and context.region_data is not None


def pick(context, coord):
    """(object, Blender world point) of the first MuJoCo element under the mouse,
    or (None, None). Objects outside any model (a reference mesh, Blender's
    default cube) do not block the ray."""
    region, view = context.region, context.region_data
    origin, direction = perturb.mouse_ray(coord, (region.width, region.height),
                                          view.view_matrix, view.window_matrix)
    origin, direction = Vector(origin), Vector(direction)
    depsgraph = context.evaluated_depsgraph_get()
    for _ in range(MAX_SKIPPED):
        hit, location, _normal, _index, obj, matrix = context.scene.ray_cast(depsgraph, origin, direction)
        if not hit:
            return None, None
        obj = obj.original  # (older Blender returns the evaluated copy; bindings use the original)
        running = _running(context)
        if running is not None:  # the Fast display draws shared shapes: which object is it?
            obj = running.display.source_of(obj, matrix)
        if scene_scan.model_of(obj) is not None:
            return obj, location
        origin = location + direction * 1e-5
    return None, None


def press_position(context, event):
    """Where the button went down, in region pixels: a busy Blender may handle the
    press after the mouse has moved on (Event.mouse_prev_press_*)."""
    return (event.mouse_prev_press_x - context.region.x, event.mouse_prev_press_y - context.region.y)


class MUJOCO_OT_perturb(bpy.types.Operator):
    """Pull (or turn) a body of the running simulation with a mouse spring; while
    paused, move it. Esc or right-click lets go"""

    bl_idname = "mujoco.perturb"
    bl_label = "Pull Body"
    bl_options = {"REGISTER"}

    rotate: BoolProperty(name="Turn", description="Turn the body instead of pulling it",
                         options={"SKIP_SAVE"})

    @classmethod
    def poll(cls, context):
        return _running(context) is not None and _in_view(context)

    def invoke(self, context, event):
        running = _running(context)
        coord = press_position(context, event)
        obj, location = pick(context, coord)
        body = running.binding.body_of(obj) if obj is not None else None
        if body is None:
            return {"CANCELLED", "PASS_THROUGH"}  # nothing to grab: Blender's own click
        if running.model.body_mocapid[body] >= 0:
            self.report({"INFO"}, "A mocap body follows its object: move the object (G) instead")
            return {"CANCELLED", "PASS_THROUGH"}
        self._grab = running.send(commands.StartGrab(
            body, tuple(running.binding.to_mujoco(location)), rotate=self.rotate,
            view_distance=context.region_data.view_distance,
            stiffness_scale=preferences.settings(context).spring_stiffness))
        self._live, self._plane_point = running, Vector(location)
        self._button, self._last = event.type, coord
        name = running.binding.by_id[("body", body)].name
        action = "Turning" if self.rotate else "Pulling"
        context.workspace.status_text_set(
            f"MuJoCo: {action} {name}: release the mouse to let go; Esc or right-click cancels")
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        running = self._live
        if not scene_session.is_current(running) or not self._holding():
            return self._end(context, {"CANCELLED"})  # stopped, reset or recompiled
        if event.type in ("MOUSEMOVE", "INBETWEEN_MOUSEMOVE"):
            self._drag(context, event)
            return {"RUNNING_MODAL"}
        if event.type == self._button and event.value == "RELEASE":
            return self._end(context, {"FINISHED"})
        if event.type == "ESC" or (event.type == "RIGHTMOUSE" and self._button != "RIGHTMOUSE"):
            return self._end(context, {"CANCELLED"})
        return {"PASS_THROUGH"}  # the play operator's timer and everything else

    def _holding(self) -> bool:
        """Does our spring still hold (not let go by a reset or a recompile)? Until
        the runner has applied it, yes."""
        shot = self._live.latest
        return shot.applied < self._grab or shot.grab is not None

    def _drag(self, context, event):
        running, view = self._live, context.region_data
        coord = (event.mouse_region_x, event.mouse_region_y)
        to_mujoco = running.binding.world.inverted().to_3x3()
        if self.rotate:
            inverse = view.view_matrix.inverted()
            up, right = inverse.col[1].xyz, inverse.col[0].xyz
            dx, dy = coord[0] - self._last[0], coord[1] - self._last[1]
            if dx:
                self._send(commands.Drag(axis=tuple(to_mujoco @ up), angle=dx * TURN_PER_PIXEL))
            if dy:
                self._send(commands.Drag(axis=tuple(to_mujoco @ right), angle=-dy * TURN_PER_PIXEL))
        else:
            region = context.region
            target = perturb.drag_target(coord, (region.width, region.height), view.view_matrix,
                                         view.window_matrix, self._plane_point, horizontal=event.shift)
            if target is not None:
                self._send(commands.Drag(target=tuple(running.binding.to_mujoco(target))))
        self._last = coord
        context.area.tag_redraw()

    def _send(self, command) -> None:
        """Playing, the spring pulls from the next step on; paused, the body moves
        there now (the paused runner answers at once) and shows."""
        running = self._live
        running.send(command, 0.0 if running.playing else simulation.SHOW_WAIT)

    def _end(self, context, result):
        if scene_session.is_current(self._live) and self._holding():
            self._live.send(commands.Release())
        context.workspace.status_text_set(None)
        if context.area:
            context.area.tag_redraw()
        return result


class MUJOCO_OT_select_body(bpy.types.Operator):
    """Select the body of the running simulation under the mouse"""

    bl_idname = "mujoco.select_body"
    bl_label = "Select Body"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _running(context) is not None and _in_view(context)

    def invoke(self, context, event):
        running = _running(context)
        obj, _location = pick(context, press_position(context, event))
        body = running.binding.body_of(obj) if obj is not None else None
        if body is None:
            return {"CANCELLED", "PASS_THROUGH"}
        obj = running.binding.by_id[("body", body)]
        authoring.select_only(context, obj)
        running.display.selected(obj, context.view_layer)  # (hidden under the Fast display)
        return {"FINISHED"}


CLASSES = (MUJOCO_OT_perturb, MUJOCO_OT_select_body)

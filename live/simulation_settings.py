"""What edits of the scene's saved settings (components/scene_settings.py,
overlay_settings.py, plot_settings.py) do while MJBlend runs, and the per-actuator
control sliders.

The settings groups live in components/, below this stage: they call the
`Reactions` connected to them, and `register` connects `LiveReactions`. The
control value lives in the running MjData (a get/set property), so the .blend
never holds simulation state.
"""

from __future__ import annotations

import bpy
from bpy.props import FloatProperty

from ..components import scene_settings
from ..engine import commands
from ..sync import views
from ..engine import cameras
from . import camera_preview, file_watch, groups as live_groups, randomization_preview, scene_session
from .simulation import SHOW_WAIT


class LiveReactions(scene_settings.Reactions):
    """Settings edits reach the scene's running simulation and the viewport."""

    def speed_changed(self, simulation):
        running = scene_session.simulation(simulation.id_data)
        if running is not None:
            running.send(commands.SetSpeed(simulation.realtime))

    def fast_forward_changed(self, simulation):
        running = scene_session.simulation(simulation.id_data)
        if running is not None:
            running.send(commands.FastForward(simulation.fast_forward))

    def display_changed(self, simulation):
        running = scene_session.simulation(simulation.id_data)
        if running is not None:
            running.show(force=True)

    def override_changed(self, override):
        scene = override.id_data
        running = scene_session.simulation(scene) if isinstance(scene, bpy.types.Scene) else None
        if running is not None:
            running.apply_overrides()

    def history_shown(self, simulation):
        running = scene_session.simulation(simulation.id_data)
        return running.latest.history[1] if running is not None else 0

    def show_history(self, simulation, index):
        running = scene_session.simulation(simulation.id_data)
        if running is not None:
            kept = running.latest.history[0]
            running.send(commands.ShowHistory(min(max(index, 0), kept - 1)), SHOW_WAIT)

    def groups_changed(self, overlays, kind):
        scene = overlays.id_data
        if isinstance(scene, bpy.types.Scene):
            live_groups.apply(scene, kind)

    def plots_changed(self, edited):
        views.redraw()

    def camera_preview_changed(self, settings):
        scene = settings.id_data
        if isinstance(scene, bpy.types.Scene):
            camera_preview.update(scene)  # (switched off: its thread ends now)
            if settings.enabled:
                camera_preview.wake()
            views.redraw()

    def noise_changed(self, simulation):
        running = scene_session.simulation(simulation.id_data)
        if running is not None:
            running.send(noise_command(simulation))

    def follow_file_changed(self, simulation):
        scene = simulation.id_data
        if isinstance(scene, bpy.types.Scene):
            file_watch.follow_changed(scene)

    def camera_names(self, scene):
        running = scene_session.simulation(scene)
        if running is None or running.model is None:
            return None
        return [cam.name for cam in cameras.cameras(running.model)]


def noise_command(simulation) -> commands.SetNoise:
    """The scene's control noise settings as the command that sets them."""
    return commands.SetNoise(simulation.noise_scale, simulation.noise_rate, simulation.noise_seed)


def _control_get(obj):
    running, index = _actuator(obj)
    if running:
        return running.control(index)
    preview, index = _previewed_actuator(obj)
    return float(preview.ctrl[index]) if preview else 0.0


def _control_set(obj, value):
    running, index = _actuator(obj)
    if running:
        running.set_control(index, value)
        return
    preview, index = _previewed_actuator(obj)  # (the randomization preview's environments, all alike)
    if preview:
        preview.set_control(index, value)


def _position_get(obj):
    running, index = _joint(obj)
    return running.joint_position(index) if running else 0.0


def _position_set(obj, value):
    running, index = _joint(obj)
    if running:  # (refused while playing: the slider is greyed out then)
        running.set_joint_position(index, value)


def _joint(obj):
    """(live simulation, joint id) of a joint object, or (None, -1)."""
    running = scene_session.simulation(bpy.context.scene) if bpy.context.scene else None
    if running is None or running.binding is None:
        return None, -1
    kind, index = running.binding.ids.get(obj.as_pointer(), (None, -1))
    return (running, index) if kind == "joint" else (None, -1)


def _actuator(obj):
    """(live simulation, actuator id) of an actuator object, or (None, -1)."""
    running = scene_session.simulation(bpy.context.scene) if bpy.context.scene else None
    if running is None:
        return None, -1
    index = running.binding.actuator_ids.get(obj.as_pointer())
    return (running, index) if index is not None else (None, -1)


def _previewed_actuator(obj):
    """(randomization preview, actuator id) of an actuator object, or (None, -1)."""
    preview = randomization_preview.get(bpy.context.scene) if bpy.context.scene else None
    index = preview.actuator_of.get(obj.as_pointer()) if preview is not None else None
    return (preview, index) if index is not None else (None, -1)


def register():
    scene_settings.connect(LiveReactions())
    bpy.types.Object.mujoco_ctrl = FloatProperty(
        name="Control", get=_control_get, set=_control_set,
        description="The actuator's control input in the running simulation (clamped to "
                    "its ctrlrange when ctrllimited)")
    bpy.types.Object.mujoco_qpos = FloatProperty(
        name="Position", get=_position_get, set=_position_set, precision=4,
        description="The hinge or slide joint's position in the running simulation, set while "
                    "paused (radians or metres, clamped to its range when limited; velocities kept)")


def unregister():
    camera_preview.unregister()
    del bpy.types.Object.mujoco_ctrl
    del bpy.types.Object.mujoco_qpos
    scene_settings.disconnect()

"""Scene settings of the live simulation, and the per-actuator control sliders.

The control value lives in the running MjData (a get/set property), so the
.blend never holds simulation state.
"""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty

from ..components.properties import attribute_property
from ..components.schema import KINDS
from ..engine import commands
from . import randomization_preview, scene_session, simulation


def _override_changed(self, context):
    scene = self.id_data
    running = scene_session.simulation(scene) if isinstance(scene, bpy.types.Scene) else None
    if running is not None:
        running.apply_overrides()


def _realtime_changed(self, _context):
    running = scene_session.simulation(self.id_data)
    if running is not None:
        running.send(commands.SetSpeed(self.realtime))


def _fast_forward_changed(self, _context):
    running = scene_session.simulation(self.id_data)
    if running is not None:
        running.send(commands.FastForward(self.fast_forward))


def _display_changed(self, _context):
    running = scene_session.simulation(self.id_data)
    if running is not None:
        running.show(force=True)


def _history_get(self):
    running = scene_session.simulation(self.id_data)
    return running.latest.history[1] if running is not None else 0


def _history_set(self, value):
    running = scene_session.simulation(self.id_data)
    if running is not None:
        kept = running.latest.history[0]
        running.send(commands.ShowHistory(min(max(value, 0), kept - 1)), simulation.SHOW_WAIT)


def _override_group() -> type:
    """One switch and one value per <option> attribute: switched-on values replace
    the compiled model's option after every compile (the MJCF is untouched)."""
    annotations = {}
    for attr in KINDS["option"].attrs:
        annotations["use_" + attr.prop] = BoolProperty(
            name=f"Override {attr.label}", update=_override_changed,
            description=f"Replace the model's {attr.name} while simulating")
        annotations[attr.prop] = attribute_property(attr, update=_override_changed)
    return type("MJBLEND_PG_option_override", (bpy.types.PropertyGroup,), {"__annotations__": annotations})


OptionOverride = _override_group()


class MJBLEND_PG_simulation(bpy.types.PropertyGroup):
    realtime: FloatProperty(
        name="Speed", default=1.0, min=0.01, max=100.0, soft_max=4.0, update=_realtime_changed,
        description="Simulated seconds per wall-clock second (1 = real time)")
    fast_forward: BoolProperty(
        name="Fast-Forward", default=False, update=_fast_forward_changed,
        description="Step as fast as the machine can, the viewport showing the latest state")
    display: EnumProperty(
        name="Display", default="AUTO", update=_display_changed,
        items=(("AUTO", "Auto", "Objects for robots of tens of bodies; Fast when moving every "
                "object would not fit a 60 Hz frame"),
               ("OBJECTS", "Objects", "Every simulated body's object moves (what scripts and "
                "drivers see)"),
               ("FAST", "Fast", "One instancer draws the moving geoms; the objects stay where "
                "they were authored, hidden while playing, and show the state when paused")),
        description="How the viewport shows a playing simulation")
    history: IntProperty(
        name="History", get=_history_get, set=_history_set, min=0,
        description="Step back through the kept states (pauses; playing continues from the "
                    "state shown)")
    keyframe: IntProperty(
        name="Keyframe", default=-1, min=-1,
        description="Start and reset from this keyframe (-1: the model's reference pose qpos0)")
    override: PointerProperty(type=OptionOverride, name="Option overrides")
    show_inertia: BoolProperty(
        name="Inertia", default=False,
        description="Draw each body's equivalent inertia box and centre of mass (from the last "
                    "compile of the model)")
    active_key: IntProperty(options={"HIDDEN"})


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


CLASSES = (OptionOverride, MJBLEND_PG_simulation)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.mujoco_simulation = PointerProperty(type=MJBLEND_PG_simulation)
    bpy.types.Object.mujoco_ctrl = FloatProperty(
        name="Control", get=_control_get, set=_control_set,
        description="The actuator's control input in the running simulation (clamped to "
                    "its ctrlrange when ctrllimited)")


def unregister():
    del bpy.types.Object.mujoco_ctrl
    del bpy.types.Scene.mujoco_simulation
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

"""Plot operators: add a channel (a search of the model's sensors, joints and
actuators, or a kind and a name from a script), remove one. Channels are checked
against the running model, or the last check of the scene's model (made now if
there is none): an unknown name is refused with the names there are."""

from __future__ import annotations

import bpy
import mujoco
from bpy.props import EnumProperty, IntProperty, StringProperty

from ..authoring import validation
from ..engine import plots
from ..live import scene_session
from ..sync import views
from ..scan import compile_spec, scene_scan
from .reporting import UNDOABLE

KIND_ITEMS = tuple((kind.upper(), label, f"{label} (the element's {kind})")
                   for kind, (_element, label) in plots.KINDS.items())
_JOINT_TYPES = {0: "free", 1: "ball", 2: "slide", 3: "hinge"}
_items: list = []  # (Blender keeps only pointers to an enum callback's strings: they must live on)


def models_of(scene, check: bool = False) -> list[tuple[str, object]]:
    """[(name prefix, MjModel)]: the running model (names as they are), else each model
    root's last checked model with the prefix the simulated scene gives its names
    (several roots). `check`: check the scene now if it was not checked yet."""
    running = scene_session.simulation(scene)
    if running is not None:
        return [("", running.model)]
    outcome = validation.result(scene)
    if check and (outcome is None or not outcome.ok):
        outcome = validation.validate(scene)
    if outcome is None or not outcome.ok:
        return []
    roots = scene_scan.model_roots(scene)
    prefixes = compile_spec.root_prefixes(roots)
    return [(prefix, outcome.models[root.name]) for root, prefix in zip(roots, prefixes, strict=True)
            if root.name in outcome.models]


def _describe(model, element: str, index: int) -> str:
    """What tells an unnamed element apart in the search."""
    if element == "joint":
        body = model.body(int(model.jnt_bodyid[index])).name or f"#{model.jnt_bodyid[index]}"
        return f"{_JOINT_TYPES.get(int(model.jnt_type[index]), '')} joint of body {body}"
    if element == "sensor":
        kind = mujoco.mjtSensor(int(model.sensor_type[index])).name.removeprefix("mjSENS_").lower()
        dim = int(model.sensor_dim[index])  # (numpy 2: a str times a numpy bool is an error)
        return f"{kind}, {dim} value{'s' if dim != 1 else ''}"
    return ""


def channel_items(scene) -> list[tuple[str, str, str]]:
    """(identifier "kind:name", label, description) of every channel the scene's model has."""
    found = []
    models = models_of(scene)
    for prefix, model in models:
        for kind, (element, label) in plots.KINDS.items():
            for index in range(plots.element_count(model, element)):
                name = plots.element_name(model, element, index)
                if name.startswith("#") and len(models) > 1:
                    continue  # (an unnamed element of one of several roots has another id when attached)
                about = _describe(model, element, index)
                text = f"{label}: {prefix}{name}" + (f" ({about})" if about else "")
                found.append((f"{kind}:{prefix}{name}", text, text))
    return found


def _channel_items(_self, context):
    global _items
    _items = channel_items(context.scene) if context is not None and context.scene else []
    return _items or [("NONE", "No model: check it or play the simulation", "")]


def checked_models(scene) -> list[tuple[str, object]]:
    """models_of(scene, check=True), or a ValueError saying why there is none."""
    models = models_of(scene, check=True)
    if not models:
        outcome = validation.result(scene)
        raise ValueError("Plot channels are checked against the scene's model, which does not compile"
                         + (f": {outcome.message}" if outcome is not None and outcome.message else ""))
    return models


def check_channel(scene, spec: plots.Spec) -> None:
    """ValueError (in a user's words) unless the scene's model has `spec`."""
    models = checked_models(scene)
    problems = []
    for prefix, model in models:
        if spec.name.startswith(prefix):
            try:
                plots.resolve(model, plots.Spec(spec.kind, spec.name[len(prefix):], spec.component))
                return
            except ValueError as error:
                problems.append(str(error))
    raise ValueError(f"Cannot plot {spec}: " + ("; ".join(problems) or "no model root has that prefix"))


class MUJOCO_OT_plot_add(bpy.types.Operator):
    """Plot a sensor, a joint's position or velocity, or an actuator's control or force over the
    last seconds, in a corner of the 3D viewport while the simulation runs"""

    bl_idname = "mujoco.plot_add"
    bl_label = "Add Plot"
    bl_options = UNDOABLE
    bl_property = "channel"

    channel: EnumProperty(name="Channel", items=_channel_items,
                          description="The signal to plot (the model's sensors, joints and actuators)")
    kind: EnumProperty(name="Kind", items=KIND_ITEMS, default="SENSOR",
                       description="With Element: what of the element to plot")
    element: StringProperty(name="Element", description="The MuJoCo name of the sensor, joint or actuator "
                            "(#3: element 3 when unnamed); empty: Channel says what to plot")
    component: IntProperty(name="Component", default=plots.ALL, min=plots.ALL,
                           description="Which component (-1: all)")

    def invoke(self, context, _event):
        if not models_of(context.scene, check=True):
            return self.execute(context)  # (says why there is nothing to choose from)
        context.window_manager.invoke_search_popup(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        if self.element:
            spec = plots.Spec(self.kind.lower(), self.element, self.component)
        elif self.channel not in ("", "NONE"):
            kind, name = self.channel.split(":", 1)
            spec = plots.Spec(kind, name, self.component)
        else:
            spec = None
        try:
            if spec is None:
                checked_models(context.scene)  # (why there was nothing to choose from)
                raise ValueError("Choose a channel to plot (or give a kind and an element)")
            check_channel(context.scene, spec)
        except ValueError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        settings = context.scene.mujoco_plots
        if any(channel.spec() == spec for channel in settings.channels):
            self.report({"INFO"}, f"{spec} is plotted already")
            return {"CANCELLED"}
        item = settings.channels.add()
        item.kind, item.element, item.component = spec.kind.upper(), spec.name, spec.component
        item.name = str(spec)
        settings.active = len(settings.channels) - 1
        settings.show_plots = True
        views.redraw()
        return {"FINISHED"}


class MUJOCO_OT_plot_remove(bpy.types.Operator):
    """Stop plotting a channel"""

    bl_idname = "mujoco.plot_remove"
    bl_label = "Remove Plot"
    bl_options = UNDOABLE

    index: IntProperty(name="Index", default=-1, min=-1,
                       description="The channel to remove (-1: the active one)")

    @classmethod
    def poll(cls, context):
        return context.scene is not None and len(context.scene.mujoco_plots.channels) > 0

    def execute(self, context):
        settings = context.scene.mujoco_plots
        index = settings.active if self.index < 0 else self.index
        if not 0 <= index < len(settings.channels):
            self.report({"ERROR"}, f"No plot channel {index} (there are {len(settings.channels)})")
            return {"CANCELLED"}
        settings.channels.remove(index)
        settings.active = max(0, min(settings.active, len(settings.channels) - 1))
        views.redraw()
        return {"FINISHED"}


CLASSES = (MUJOCO_OT_plot_add, MUJOCO_OT_plot_remove)

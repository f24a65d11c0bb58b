"""Properties editor > Object > MuJoCo Randomization: the active element's
domain-randomization entries (the model root: gravity, and the seed)."""

from __future__ import annotations

import textwrap

import bpy

from ..batch.randomization import ATTRIBUTES
from ..components import randomization
from ..scan import compile_spec, scene_scan
from ..scan.randomization import entry_problem

WRAP = 60  # characters per line of a message


def _prefix(obj) -> str:
    """The prefix the compiled scene gives the element's name (several model roots)."""
    roots = scene_scan.model_roots(bpy.context.scene)
    root = scene_scan.model_of(obj)
    if root is None or root not in roots:
        return ""
    return compile_spec.root_prefixes(roots)[roots.index(root)]


def _range_text(item) -> str:
    return f"{item.low:.4g} .. {item.high:.4g}"


class MJBLEND_UL_randomization(bpy.types.UIList):
    bl_idname = "MJBLEND_UL_randomization"

    def draw_item(self, _context, layout, _data, item, _icon, _active_data, _active_prop, _index=0):
        obj = item.id_data
        problem = entry_problem(item, obj)
        row = layout.row()
        row.alert = bool(problem)
        described = ATTRIBUTES.get((randomization.element_of(obj.mujoco.kind), item.attribute_name))
        part = "" if item.component == randomization.ALL else f" [{item.component}]"
        label = described.label if described else item.attribute_name or "?"
        row.label(text=label + part, icon="ERROR" if problem else "MOD_NOISE")
        row.label(text=f"{item.mode_name} {_range_text(item)}")


def _wrapped(layout, text: str, icon: str = "NONE") -> None:
    for number, line in enumerate(textwrap.wrap(text, WRAP)):
        layout.label(text=line, icon=icon if number == 0 else "BLANK1")


def draw_entry(layout, item, obj) -> None:
    element = randomization.element_of(obj.mujoco.kind)
    col = layout.column()
    col.use_property_split = True
    col.use_property_decorate = False
    col.prop(item, "attribute")
    described = ATTRIBUTES.get((element, item.attribute_name))
    if described is not None:
        _wrapped(col.box(), described.description, "INFO")
    col.prop(item, "distribution")
    col.prop(item, "mode")
    sub = col.column(align=True)
    sub.prop(item, "low")
    sub.prop(item, "high")
    if item.distribution == "normal":
        row = col.row(heading="Std")
        row.prop(item, "use_std", text="")
        sub = row.row()
        sub.active = item.use_std
        sub.prop(item, "std", text="")
    if randomization.width_of(element, item.attribute_name) > 1:
        col.prop(item, "index")
        if item.component == randomization.ALL:
            col.prop(item, "independent")
    problem = entry_problem(item, obj, _prefix(obj))
    if problem:
        box = layout.box()
        box.alert = True
        _wrapped(box, problem, "ERROR")


class MJBLEND_PT_randomization(bpy.types.Panel):
    """Domain randomization of the active element: ranges its attributes take in a batch of environments"""

    bl_label = "MuJoCo Randomization"
    bl_idname = "MJBLEND_PT_randomization"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "object"

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and (randomization.element_of(obj.mujoco.kind) is not None
                                    or len(obj.mujoco.randomize) > 0)

    def draw(self, context):
        layout = self.layout
        obj = context.object
        holder = obj.mujoco
        if holder.kind == "MODEL":
            row = layout.row()
            row.use_property_split = True
            row.prop(holder.model, "randomize_seed")
            layout.label(text="The scene's gravity (option) varies here", icon="WORLD")
        row = layout.row()
        row.template_list("MJBLEND_UL_randomization", "", holder, "randomize", holder, "randomize_active",
                          rows=3)
        buttons = row.column(align=True)
        buttons.operator("mujoco.randomization_add", text="", icon="ADD")
        buttons.operator("mujoco.randomization_remove", text="", icon="REMOVE")
        if randomization.element_of(holder.kind) is None:
            layout.label(text=f"A {holder.kind.lower()} has nothing to randomize: remove these entries",
                         icon="ERROR")
        if 0 <= holder.randomize_active < len(holder.randomize):
            draw_entry(layout, holder.randomize[holder.randomize_active], obj)


CLASSES = (MJBLEND_UL_randomization, MJBLEND_PT_randomization)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

"""MuJoCo panels of the Properties editor (Object, Mesh data, Material) and of
the Image editor's sidebar, all drawn from the schema table.

Nothing here names a single attribute: sections are the groups MuJoCo's own
headers put the fields in (the schema's `section`), widgets follow the type.
"""

from __future__ import annotations

import textwrap

import bpy

from ..components import spec_io, values
from ..live import scene_session
from ..scan.scene_scan import model_of
from ..components.schema import DATA_KINDS, DEFAULT_KINDS, KINDS, MODEL_SETTINGS, Attr

SETTINGS_TITLES = {k: k.replace("_", " ").title() for k in MODEL_SETTINGS}
MAX_LIST_ROWS = 16
MAX_TEXT_VALUES = 64


def _section(layout, idname: str, title: str, closed: bool = True):
    """A collapsible sub-layout."""
    header, body = layout.panel(idname, default_closed=closed)
    header.label(text=title)
    return body


# ----------------------------------------------------------------- widgets


def draw_attr(layout, group, attr: Attr, model=None) -> None:
    t = attr.type
    if t in ("refvec", "stringvec"):
        items = getattr(group, attr.prop)
        col = layout.column(align=True)
        col.label(text=f"{attr.label} ({len(items)})")
        for item in list(items)[:MAX_LIST_ROWS]:
            if t == "stringvec":
                col.prop(item, "value", text="")
            else:
                row = col.row(align=True)
                row.prop(item, "target", text="")
                if item.target is None and item.authored:
                    row.label(text=f"missing: {item.authored}", icon="ERROR")
        if len(items) > MAX_LIST_ROWS:
            col.label(text=f"... {len(items) - MAX_LIST_ROWS} more")
    elif t in ("floatvec", "float32vec", "intvec"):
        count = len(values.read_vector(group, attr))
        if count <= MAX_TEXT_VALUES:
            layout.prop(group, attr.prop)
        else:
            layout.label(text=f"{attr.label}: {count} values")
    elif t in ("bytes", "intvecvec", "float32vecvec", "keyvalues"):
        count = getattr(group, attr.prop)
        layout.label(text=f"{attr.label}: {count} {'bytes' if t == 'bytes' else 'entries'}")
        if t == "keyvalues":
            for key, value in values.read_keyvalues(group, attr).items():
                layout.label(text=f"    {key} = {value}")
    elif t == "ref" and attr.ref == "default" and model is not None:
        layout.prop_search(group, attr.prop, model.mujoco.model, "defaults")
    elif t == "ref":
        row = layout.row(align=True)
        row.prop(group, attr.prop)
        authored = group.get(values.REF, {}).get(attr.prop)
        if getattr(group, attr.prop) is None and authored:
            row.label(text=f"missing: {authored}", icon="ERROR")
    elif t == "flags":
        layout.label(text=attr.label)
        layout.grid_flow(columns=2, align=True).prop(group, attr.prop)
    else:
        layout.prop(group, attr.prop)


def draw_kind(layout, group, kind: str, idprefix: str, model=None) -> None:
    """Every editable attribute of `kind`: ungrouped ones on top, then one
    collapsible section per group of MuJoCo's header, in its order."""
    by_section: dict[str, list[Attr]] = {}
    for attr in KINDS[kind].editable:
        by_section.setdefault(attr.section, []).append(attr)
    col = layout.column()
    col.use_property_split = True
    col.use_property_decorate = False
    own = _own_if_classed(group, kind)
    for attr in by_section.pop("", []):
        _draw_sourced(col, group, attr, model, own)
    for section, attrs in by_section.items():
        title = section[:1].upper() + section[1:]
        body = _section(layout, f"{idprefix}_{kind}_{section}", title, closed=False)
        if body is None:
            continue
        body.use_property_split = True
        body.use_property_decorate = False
        for attr in attrs:
            _draw_sourced(body, group, attr, model, own)


def _own_if_classed(group, kind):
    """The attributes an element of a class sets itself, or None (not a classed element)."""
    holder = getattr(group.id_data, "mujoco", None)
    if kind not in DEFAULT_KINDS or holder is None or getattr(holder, "kind", "").lower() != kind \
            or not holder.classname:
        return None
    return values.own(group, kind)


def _draw_sourced(layout, group, attr, model, own) -> None:
    """An attribute, greyed with a link icon when it comes from the element's class;
    its own values get a "reset to class" button."""
    if own is None:
        draw_attr(layout, group, attr, model)
        return
    row = layout.row(align=True)
    sub = row.column()
    sub.active = attr.name in own
    draw_attr(sub, group, attr, model)
    if attr.name in own:
        row.operator("mujoco.reset_to_class", text="", icon="LOOP_BACK").attr = attr.name
    else:
        row.label(text="", icon="LINKED")


def draw_header(layout, holder, model=None) -> None:
    col = layout.column()
    col.use_property_split = True
    col.use_property_decorate = False
    col.prop(holder, "kind")
    if holder.kind == "NONE":
        return
    col.prop(holder, "name")
    if holder.kind.lower() not in spec_io.CLASS_KINDS:
        return  # a kind without classes in MuJoCo (a model lists its classes below)
    if model is not None:
        col.prop_search(holder, "classname", model.mujoco.model, "defaults")
    else:
        col.prop(holder, "classname")


# ------------------------------------------------------------------ panels


class MJBLEND_UL_default_classes(bpy.types.UIList):
    bl_idname = "MJBLEND_UL_default_classes"

    def draw_item(self, _context, layout, _data, item, _icon, _active_data, _active_prop, _index=0):
        row = layout.row()
        row.label(text=item.name, icon="PRESET")  # renamed with mujoco.class_rename (keeps uses)
        if item.parent:
            row.label(text=f"< {item.parent}")


def draw_model(layout, obj) -> None:
    model = obj.mujoco.model
    draw_kind(layout, model, "model", "mjb_model", obj)
    for kind in MODEL_SETTINGS:
        body = _section(layout, f"mjb_settings_{kind}", SETTINGS_TITLES[kind])
        if body is not None:
            body.use_property_split = True
            body.use_property_decorate = False
            for attr in KINDS[kind].editable:
                draw_attr(body, getattr(model, kind), attr)
    body = _section(layout, "mjb_default_classes", f"Default Classes ({len(model.defaults)})")
    if body is None:
        return
    row = body.row()
    row.template_list("MJBLEND_UL_default_classes", "", model, "defaults", model,
                      "active_default", rows=3)
    buttons = row.column(align=True)
    buttons.operator("mujoco.class_add", text="", icon="ADD")
    buttons.operator("mujoco.class_remove", text="", icon="REMOVE")
    buttons.operator("mujoco.class_rename", text="", icon="GREASEPENCIL")
    if 0 <= model.active_default < len(model.defaults):
        item = model.defaults[model.active_default]
        body.prop(item, "parent")
        for kind in DEFAULT_KINDS:
            sub = _section(body, f"mjb_default_{kind}", kind.title())
            if sub is not None:
                draw_kind(sub, getattr(item, kind), kind, "mjb_default", obj)


def draw_tendon_path(layout, group) -> None:
    body = _section(layout, "mjb_tendon_path", f"Path ({len(group.path)})")
    if body is None:
        return
    for i, wrap in enumerate(group.path):
        box = body.box()
        box.label(text=f"{i}: {wrap.type.lower()}")
        draw_kind(box, wrap, "wrap", f"mjb_wrap{i}")


def draw_simulation_error(layout, scene, obj) -> None:
    """MuJoCo's error about this object, while the simulation runs on its last good model."""
    running = scene_session.simulation(scene)
    if running is None or obj.name not in running.error_objects:
        return
    box = layout.box()
    box.alert = True
    box.label(text="MuJoCo rejects this edit (the simulation runs the last good model):",
              icon="ERROR")
    for line in textwrap.wrap(running.error, 60):
        box.label(text=line)


class MJBLEND_PT_object(bpy.types.Panel):
    """MJCF element of the active object"""

    bl_label = "MuJoCo"
    bl_idname = "MJBLEND_PT_object"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "object"

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def draw(self, context):
        obj = context.object
        holder = obj.mujoco
        model = model_of(obj)
        draw_simulation_error(self.layout, context.scene, obj)
        draw_header(self.layout, holder, model)
        if holder.kind == "NONE":
            self.layout.label(text="Not a MuJoCo element", icon="INFO")
            return
        kind = holder.kind.lower()
        if kind == "model":
            draw_model(self.layout, obj)
            return
        draw_kind(self.layout, getattr(holder, kind), kind, "mjb_object", model)
        if kind == "tendon":
            draw_tendon_path(self.layout, holder.tendon)


class _DataPanel:
    """Shared draw of an asset kind held by a datablock (mesh, material, image)."""

    bl_label = "MuJoCo"

    @staticmethod
    def datablock(context):
        raise NotImplementedError

    @classmethod
    def poll(cls, context):
        return cls.datablock(context) is not None

    def draw(self, context):
        holder = self.datablock(context).mujoco
        draw_header(self.layout, holder)
        if holder.kind != "NONE":
            kind = holder.kind.lower()
            draw_kind(self.layout, getattr(holder, kind), kind, f"mjb_{kind}")


class MJBLEND_PT_mesh(_DataPanel, bpy.types.Panel):
    """MJCF mesh or height field asset of this mesh"""

    bl_idname = "MJBLEND_PT_mesh"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "data"

    @staticmethod
    def datablock(context):
        return getattr(context, "mesh", None)


class MJBLEND_PT_material(_DataPanel, bpy.types.Panel):
    """MJCF material asset of this material"""

    bl_idname = "MJBLEND_PT_material"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "material"

    @staticmethod
    def datablock(context):
        return getattr(context, "material", None)


class MJBLEND_PT_image(_DataPanel, bpy.types.Panel):
    """MJCF texture asset of this image"""

    bl_idname = "MJBLEND_PT_image"
    bl_space_type = "IMAGE_EDITOR"
    bl_region_type = "UI"
    bl_category = "Image"

    @staticmethod
    def datablock(context):
        space = getattr(context, "space_data", None)
        return getattr(space, "image", None)


CLASSES = (MJBLEND_UL_default_classes, MJBLEND_PT_object, MJBLEND_PT_mesh,
           MJBLEND_PT_material, MJBLEND_PT_image)
assert set(DATA_KINDS.values()) == {"Mesh", "Material", "Image"}  # one panel each


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

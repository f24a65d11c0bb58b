"""The add-on's 3D-viewport keys: Ctrl+left-drag pulls a body, Ctrl+right-drag
turns it, double-click selects it. They are add-on keymap entries (editable in
Preferences > Keymap); their operators' poll fails unless a simulation runs, and
then Blender handles the click as usual."""

from __future__ import annotations

import bpy

ITEMS = (  # operator, event, value, modifiers, operator properties
    ("mujoco.perturb", "LEFTMOUSE", "PRESS", {"ctrl": True}, {"rotate": False}),
    ("mujoco.perturb", "RIGHTMOUSE", "PRESS", {"ctrl": True}, {"rotate": True}),
    ("mujoco.select_body", "LEFTMOUSE", "DOUBLE_CLICK", {}, {}),
)

_registered: list[tuple] = []  # (keymap, item)


def register():
    keyconfig = bpy.context.window_manager.keyconfigs.addon
    if keyconfig is None:  # background mode has no key configurations
        return
    keymap = keyconfig.keymaps.new(name="3D View", space_type="VIEW_3D")
    for operator, event, value, modifiers, properties in ITEMS:
        item = keymap.keymap_items.new(operator, event, value, **modifiers)
        for name, setting in properties.items():
            setattr(item.properties, name, setting)
        _registered.append((keymap, item))


def unregister():
    for keymap, item in _registered:
        keymap.keymap_items.remove(item)
    _registered.clear()


def draw(layout, context):
    import rna_keymap_ui

    keyconfig = context.window_manager.keyconfigs.user
    keymap = keyconfig.keymaps.get("3D View") if keyconfig else None
    if keymap is None:
        return
    for _addon_keymap, item in _registered:
        for user_item in keymap.keymap_items:
            if user_item.idname == item.idname and user_item.type == item.type \
                    and user_item.value == item.value:
                rna_keymap_ui.draw_kmi([], keyconfig, keymap, user_item, layout, 0)
                break

"""The add-on's 3D-viewport keys, as add-on keymap entries (editable in
Preferences > Keymap, listed in the add-on's preferences by `draw`):

- while a simulation runs: Ctrl+left-drag pulls a body, Ctrl+right-drag turns
  it, double-click selects it;
- with a MuJoCo model in the scene, in Object Mode: 0-5 show or hide geom groups
  0-5, Shift+0-5 site groups 0-5, as MuJoCo's `simulate` does;
- with a MuJoCo model in the scene: Shift+Alt + simulate's letter switches an
  overlay (Ctrl+Shift+Alt+E for equality constraints: Pose Mode's Shift+Alt+E
  is Blender's);
- anywhere: Shift+Alt+P saves the 3D view under the mouse as a PNG (simulate's
  and Studio's Ctrl+P is Blender's Make Parent).

Each operator's poll fails where its key is not MuJoCo's (no simulation, no
model): Blender then passes the key on to its own item, so the number keys hide
collections as usual in a scene without a model (4.2-4.5; 5.0 and later have no
number key in Object Mode unless the user binds one, which then works the same).

Which keymap: Blender merges an add-on's items into the user keymap of the same
name ahead of the default items (wm_keymap_addon_add: BLI_addhead), and the 3D
viewport's main region handles its mode keymaps ("Object Mode", ...) before "3D
View" (view3d_main_region_init: "own keymap, last so modes can override it").
So the number keys go into "Object Mode", ahead of its collection keys (Blender
4.2-4.5; 5.0 has no number keys there), and the rest into "3D View", whose
Shift+Alt letters no default keymap of the viewport uses (tests/blender/test_keymaps.py
checks every item against Blender's default keymaps).
"""

from __future__ import annotations

import bpy

NUMBERS = ("ZERO", "ONE", "TWO", "THREE", "FOUR", "FIVE")  # groups 0-5
SPACES = {"3D View": "VIEW_3D", "Object Mode": "EMPTY"}  # keymap -> its space
# simulate's key of each overlay (operators/overlays.py; "inertia" and "labels" as it names them)
OVERLAY_KEYS = (("contact_points", "C"), ("contact_forces", "F"), ("contact_frames", "K"), ("joints", "J"),
                ("body_frames", "R"), ("com", "M"), ("tendons", "V"), ("actuators", "U"),
                ("equality", "E"), ("perturbation", "B"), ("inertia", "I"), ("labels", "L"))
SHIFT_ALT = {"shift": True, "alt": True}
# Pose Mode's Shift+Alt+E (pose.blend_to_neighbor) comes before "3D View": this one adds Ctrl
OVERLAY_MODIFIERS = {"equality": {"shift": True, "ctrl": True, "alt": True}}

ITEMS = (  # keymap, operator, event, value, modifiers, operator properties
    ("3D View", "mujoco.perturb", "LEFTMOUSE", "PRESS", {"ctrl": True}, {"rotate": False}),
    ("3D View", "mujoco.perturb", "RIGHTMOUSE", "PRESS", {"ctrl": True}, {"rotate": True}),
    ("3D View", "mujoco.select_body", "LEFTMOUSE", "DOUBLE_CLICK", {}, {}),
    *(("Object Mode", "mujoco.toggle_group", key, "PRESS", {}, {"kind": "geom", "group": group})
      for group, key in enumerate(NUMBERS)),
    *(("Object Mode", "mujoco.toggle_group", key, "PRESS", {"shift": True}, {"kind": "site", "group": group})
      for group, key in enumerate(NUMBERS)),
    *(("3D View", "mujoco.toggle_overlay", key, "PRESS", OVERLAY_MODIFIERS.get(overlay, SHIFT_ALT),
       {"overlay": overlay}) for overlay, key in OVERLAY_KEYS),
    ("3D View", "mujoco.screenshot", "P", "PRESS", SHIFT_ALT, {}),
)

_registered: list[tuple] = []  # (keymap, item)


def register():
    keyconfig = bpy.context.window_manager.keyconfigs.addon
    if keyconfig is None:  # background mode has no key configurations
        return
    keymaps = {}
    for keymap_name, operator, event, value, modifiers, properties in ITEMS:
        if keymap_name not in keymaps:
            keymaps[keymap_name] = keyconfig.keymaps.new(name=keymap_name, space_type=SPACES[keymap_name])
        keymap = keymaps[keymap_name]
        item = keymap.keymap_items.new(operator, event, value, **modifiers)
        for name, setting in properties.items():
            setattr(item.properties, name, setting)
        _registered.append((keymap, item))


def unregister():
    for keymap, item in _registered:
        keymap.keymap_items.remove(item)
    _registered.clear()


HEADINGS = {"mujoco.perturb": "While a simulation runs:",
            "mujoco.toggle_group": "MuJoCo groups (Object Mode):",
            "mujoco.toggle_overlay": "MuJoCo overlays:",
            "mujoco.screenshot": "Screenshot:"}


def draw(layout, context):
    """Every add-on key as the user keymap has it now (rebindable in place), under a
    heading for each kind of key."""
    import rna_keymap_ui

    keyconfig = context.window_manager.keyconfigs.user
    if keyconfig is None:
        return
    previous = None
    for addon_keymap, item in _registered:
        if item.idname != previous and item.idname in HEADINGS:
            layout.label(text=HEADINGS[item.idname])
        previous = item.idname
        keymap = keyconfig.keymaps.get(addon_keymap.name)
        if keymap is None:
            continue
        user_item = next((k for k in keymap.keymap_items
                          if k.idname == item.idname and _same_properties(k, item)), None)
        if user_item is not None:
            rna_keymap_ui.draw_kmi([], keyconfig, keymap, user_item, layout, 0)


def _same_properties(a, b) -> bool:
    """The same operator properties (the add-on's items are told apart by them, or by
    their operator alone)."""
    if b.properties is None:
        return True
    names = [p.identifier for p in b.properties.bl_rna.properties if p.identifier != "rna_type"]
    return all(getattr(a.properties, n, None) == getattr(b.properties, n, None) for n in names)

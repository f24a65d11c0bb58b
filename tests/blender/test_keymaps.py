"""The add-on's keys against Blender's own: none of them takes a key Blender's default
keymap gives to something else where the add-on's key acts (the 3D viewport's main
region, in the modes its keymap is active in), but the number keys, which take
Object Mode's "hide collection" keys while the scene has a MuJoCo model (documented
in docs/index.md; their operator's poll passes the key on otherwise: GUI tier,
tests/gui/test_gui_groups.py).

Blender's default keymap is built here as Blender builds it, from the keymap data
the bpy module ships (scripts/presets/keyconfig/keymap_data/blender_default.py,
through bl_keymap_utils) into a key configuration of its own, for left- and
right-click select. Run on each supported bpy (4.2, 4.5, 5.0, 5.2).
"""

import importlib.util
import os

import bpy
import pytest
from bl_keymap_utils.io import keyconfig_init_from_data

from mjblend.components import overlay_settings
from mjblend.operators import overlays as overlay_operators
from mjblend.ui import keymaps

SHIPPED = os.path.join(bpy.utils.preset_paths("keyconfig")[0], "keymap_data", "blender_default.py")
DATA = {f"{bpy.app.version[0]}.{bpy.app.version[1]}": SHIPPED}

# Keymaps of the other editors (space EMPTY, but never handled in the 3D viewport's main
# region), and "User Interface": the viewport's main region handles it not (its region
# type has no ED_KEYMAP_UI; only button regions, as the sidebar, do)
ELSEWHERE = {"View2D", "View2D Buttons List", "UV Editor", "Mask Editing", "Markers", "Time Scrub",
             "Animation Channels", "Toolbar Popup", "User Interface"}
# Keymaps of modes other than Object Mode (their tools too): where an "Object Mode" item never acts
OTHER_MODES = {"Mesh", "Curve", "Curves", "Armature", "Metaball", "Lattice", "Font", "Pose", "Particle",
               "Sculpt", "Sculpt Curves", "Vertex Paint", "Weight Paint", "Image Paint", "Paint Curve",
               "Paint Face Mask (Weight, Vertex, Texture)", "Paint Vertex Selection (Weight, Vertex)",
               "Point Cloud", "Grease Pencil Paint Mode", "Grease Pencil Edit Mode",
               "Grease Pencil Sculpt Mode",
               "Grease Pencil Weight Paint", "Grease Pencil Vertex Paint", "Grease Pencil Brush Stroke",
               "Grease Pencil Fill Tool", "Grease Pencil Stroke Edit Mode", "Grease Pencil Stroke Paint Mode",
               "Grease Pencil Stroke Paint (Draw brush)", "Grease Pencil Stroke Paint (Erase)",
               "Grease Pencil Stroke Paint (Fill)", "Grease Pencil Stroke Paint (Tint)",
               "Grease Pencil Stroke Sculpt Mode", "Grease Pencil Stroke Weight Mode",
               "Grease Pencil Stroke Vertex Mode"}
OTHER_MODE_TOOLS = ("3D View Tool: Edit", "3D View Tool: Sculpt", "3D View Tool: Paint", "3D View Tool: Pose",
                    "3D View Tool: Weight", "3D View Tool: Vertex", "3D View Tool: Texture")
# A press the add-on handles: Blender then makes no click, drag or double click of it
SHADOWED_VALUES = {"PRESS": {"PRESS", "CLICK", "CLICK_DRAG", "DOUBLE_CLICK", "ANY"},
                   "DOUBLE_CLICK": {"DOUBLE_CLICK", "ANY"}}
MODIFIERS = ("shift", "ctrl", "alt", "oskey", "hyper")
# The documented exceptions: 0-5 and Shift+0-5 take Object Mode's collection keys while the
# scene has a MuJoCo model; the simulation's mouse keys (MuJoCo's Ctrl+drag, double-click)
# take Blender's Ctrl+click and double-click while a simulation runs
EXPECTED = {("mujoco.toggle_group", "object.hide_collection")}
WHILE_SIMULATING = {"mujoco.perturb", "mujoco.select_body"}


def _load(path):
    spec = importlib.util.spec_from_file_location(f"keymap_data_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=sorted(DATA), ids=str)
def default_keymaps(request):
    """[(keymap name, space, region, is_modal, [(idname, type, value, modifiers, any)])] of
    Blender's default keymap (left- and right-click select), built as Blender builds it."""
    path = DATA[request.param]
    if not os.path.exists(path):
        pytest.skip(f"no {path}")
    data = _load(path)
    found = []
    manager = bpy.context.window_manager
    for select in ("LEFT", "RIGHT"):
        config = manager.keyconfigs.new(f"mjblend test {request.param} {select}")
        try:
            keyconfig_init_from_data(config, data.generate_keymaps(data.Params(select_mouse=select)))
            for keymap in config.keymaps:
                items = [(i.idname, i.type, i.value, {m: getattr(i, m, 0) for m in MODIFIERS}, i.any,
                          i.key_modifier) for i in keymap.keymap_items if i.active]
                found.append((keymap.name, keymap.space_type, keymap.region_type, keymap.is_modal, items))
        finally:
            manager.keyconfigs.remove(config)
    assert sum(len(items) for *_rest, items in found) > 1000  # (the whole keymap, not a stub)
    return found


def addon_items():
    """(keymap, idname, type, value, modifiers) of every item the add-on registers."""
    out = []
    for keymap, idname, event, value, modifiers, _properties in keymaps.ITEMS:
        out.append((keymap, idname, event, value, {m: int(modifiers.get(m, False)) for m in MODIFIERS}))
    return out


def reachable(addon_keymap, name, space, region, modal) -> bool:
    """Is the default keymap `name` handled where (and when) an item of `addon_keymap` acts?"""
    if modal or region != "WINDOW" or space not in ("EMPTY", "VIEW_3D") or name in ELSEWHERE:
        return False
    if addon_keymap == "Object Mode":
        return name not in OTHER_MODES and not name.startswith(OTHER_MODE_TOOLS)
    return True


def same_key(ours, theirs) -> bool:
    _keymap, _idname, event, value, modifiers = ours
    _idname2, type_, value2, modifiers2, any_, key_modifier = theirs
    if type_ != event or key_modifier not in ("NONE", "", None) or value2 not in SHADOWED_VALUES[value]:
        return False
    return any_ or all(modifiers2[m] in (-1, modifiers[m]) for m in MODIFIERS)


def clashes(default_keymaps):
    found = set()
    for ours in addon_items():
        for name, space, region, modal, items in default_keymaps:
            if reachable(ours[0], name, space, region, modal):
                for theirs in items:
                    if same_key(ours, theirs):
                        modifiers = tuple(m for m in MODIFIERS if ours[4][m])
                        found.add((ours[1], ours[2], modifiers, name, theirs[0]))
    return found


def test_no_add_on_key_takes_a_default_key_but_the_documented_ones(default_keymaps):
    found = {c for c in clashes(default_keymaps) if c[0] not in WHILE_SIMULATING}
    unexpected = sorted(c for c in found if (c[0], c[4]) not in EXPECTED)
    assert unexpected == []
    # the number keys take exactly Object Mode's collection keys (Blender 5.0 has none there)
    numbers = {(event, modifiers) for _op, event, modifiers, _keymap, _idname in found}
    assert numbers in (set(), {(key, mods) for key in keymaps.NUMBERS for mods in ((), ("shift",))})
    assert all(keymap == "Object Mode" for *_rest, keymap, _idname in found)


def test_the_check_finds_a_clash(default_keymaps, monkeypatch):
    """Shift+Alt+E is Pose Mode's (blend to neighbour) and Alt+H reveals hidden objects:
    both are found (a check that finds nothing cannot fail)."""
    items = [*keymaps.ITEMS, ("3D View", "mujoco.toggle_overlay", "E", "PRESS", keymaps.SHIFT_ALT, {}),
             ("Object Mode", "mujoco.toggle_group", "H", "PRESS", {"alt": True}, {})]
    monkeypatch.setattr(keymaps, "ITEMS", items)
    found = {(op, event, keymap, idname) for op, event, _mods, keymap, idname in clashes(default_keymaps)}
    assert ("mujoco.toggle_overlay", "E", "Pose", "pose.blend_to_neighbor") in found
    assert ("mujoco.toggle_group", "H", "Object Mode", "object.hide_view_clear") in found


def test_every_overlay_and_group_has_its_key():
    overlays = {props["overlay"] for _k, op, _e, _v, _m, props in keymaps.ITEMS
                if op == "mujoco.toggle_overlay"}
    assert overlays == {name for name, _label, _text in overlay_settings.OVERLAYS} | {
        overlay_operators.INERTIA, "labels"}
    groups = {(props["kind"], props["group"]) for _k, op, _e, _v, _m, props in keymaps.ITEMS
              if op == "mujoco.toggle_group"}
    assert groups == {(kind, g) for kind in ("geom", "site") for g in range(6)}
    keys = [(keymap, event, value, tuple(sorted(mods.items())))
            for keymap, _op, event, value, mods, _p in keymaps.ITEMS]
    assert len(keys) == len(set(keys))  # no key twice


def test_the_items_are_registered_with_their_operators_properties():
    """The bpy module has key configurations: the add-on's are registered, each item's
    operator exists and its properties are what ITEMS says."""
    config = bpy.context.window_manager.keyconfigs.addon
    registered = [(keymap.name, item) for keymap in config.keymaps for item in keymap.keymap_items
                  if item.idname.startswith("mujoco.")]
    assert len(registered) == len(keymaps.ITEMS)
    for (keymap, idname, event, value, modifiers, properties), (name, item) in zip(
            keymaps.ITEMS, sorted(registered, key=lambda pair: _order(pair[1])), strict=True):
        assert (name, item.idname, item.type, item.value) == (keymap, idname, event, value)
        assert all(getattr(item, m) == int(modifiers.get(m, False)) for m in ("shift", "ctrl", "alt"))
        assert item.properties is not None, f"{idname}: no such operator"
        assert {p: getattr(item.properties, p) for p in properties} == properties


def _order(item):
    """Where an item is in ITEMS (by its keymap, operator, key and properties)."""
    for index, (_keymap, idname, event, value, modifiers, properties) in enumerate(keymaps.ITEMS):
        if (item.idname, item.type, item.value) == (idname, event, value) and \
                all(getattr(item, m) == int(modifiers.get(m, False)) for m in ("shift", "ctrl", "alt")) and \
                all(getattr(item.properties, p) == v for p, v in properties.items()):
            return index
    raise AssertionError(f"{item.idname} {item.type} is not in ITEMS")

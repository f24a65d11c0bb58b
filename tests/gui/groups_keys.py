"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

The add-on's keys pressed for real (xdotool) with the mouse over the 3D viewport,
in Object Mode:

- in a scene without a MuJoCo model, 1 is Blender's: the add-on's item is first in
  "Object Mode" but its poll passes the key on. Blender 5.2 binds no number key there
  (the Outliner keeps 1-0 for collections), so the script binds 1 as a user who
  wants the older Blenders' key back does (Preferences > Keymap > Object Mode > Add New:
  object.hide_collection, every collection hidden but the first) and checks that the
  add-on's item stays ahead of it;
- with a model, 3 shows geom group 3 (a collision sphere whose class sets the group),
  3 again hides it, Shift+5 shows site group 5, 1 switches geom group 1 and leaves
  the collections alone;
- Shift+Alt+C, Ctrl+Shift+Alt+E, Shift+Alt+L and Shift+Alt+I switch overlays;
- while the simulation plays in the Fast display (the instancer draws the moving
  geoms, their objects hidden), 3 adds the group's geom to what the instancer draws
  and 3 again takes it out; stopped, the objects are as the switches say;
- the add-on preferences' key listing (ui/keymaps.draw) draws every item.

What it saw goes to MJBLEND_RESULT.
"""

import importlib
import os
import subprocess
import sys
import tempfile

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_mouse import blender_window, region_xy  # noqa: E402
from gui_script import ADDON, cheap_viewport, play_invoke, report, run_steps, view3d  # noqa: E402

MODEL = """<mujoco>
  <default><default class="collision"><geom group="3" rgba="1 0 0 1"/></default></default>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="box" pos="0 0 .3"><freejoint/>
      <geom name="visual" type="box" size=".1 .1 .1"/>
      <geom name="hull" class="collision" type="sphere" size=".2"/>
      <site name="mark" group="5" size=".03" pos="0 0 .15"/>
    </body>
  </worldbody>
</mujoco>"""


def press(key):
    """A real key press with the mouse in the middle of the largest 3D view."""
    _window, _area, region = view3d()
    x, y = region_xy(region, region.width // 2, region.height // 2)
    subprocess.run(["xdotool", "mousemove", "--window", blender_window(), str(x), str(y), "sleep", "0.1",
                    "key", key], check=True)


def hidden(name):
    obj = bpy.context.scene.objects[name]
    return [obj.hide_get(), obj.hide_render]


def bind_collection_key():
    """1 in the user's "Object Mode" keymap bound to Blender's object.hide_collection
    (collection 1 only), as the preferences' Add New does; what 1 (no modifier) runs
    there, in the keymap's order."""
    keymap = bpy.context.window_manager.keyconfigs.user.keymaps["Object Mode"]
    item = keymap.keymap_items.new("object.hide_collection", "ONE", "PRESS")
    item.properties.collection_index = 1
    return [k.idname for k in keymap.keymap_items
            if k.active and k.type == "ONE" and k.value == "PRESS" and not (k.shift or k.ctrl or k.alt)]


def second_hidden():
    return bpy.context.view_layer.layer_collection.children["Second"].hide_viewport


def record_listing():
    """Draw the key listing (ui/keymaps.draw) in the 3D view's header and note each
    item it drew: (operator, key, properties)."""
    import rna_keymap_ui

    keymaps = importlib.import_module(ADDON + ".ui.keymaps")
    drawn = report["listed"] = []
    original = rna_keymap_ui.draw_kmi

    def draw_kmi(display_keymaps, kc, km, kmi, layout, level):
        properties = kmi.properties
        names = [p.identifier for p in properties.bl_rna.properties
                 if p.identifier != "rna_type" and properties.is_property_set(p.identifier)] \
            if properties is not None else []  # (the item's own values: an unset file path is not one)
        entry = [kmi.idname, kmi.type, bool(kmi.shift), bool(kmi.ctrl), bool(kmi.alt),
                 {n: getattr(properties, n) for n in names}]
        if entry not in drawn:
            drawn.append(entry)
        return original(display_keymaps, kc, km, kmi, layout, level)
    rna_keymap_ui.draw_kmi = draw_kmi

    def header(self, context):
        try:
            keymaps.draw(self.layout.column(), context)
        except Exception as error:  # (Blender only prints what a draw raises)
            report["errors"].append(f"keymaps.draw: {error!r}")
            raise
    bpy.types.VIEW3D_HT_header.append(header)
    return header


def steps():
    scene = bpy.context.scene
    bpy.context.preferences.use_preferences_save = False  # (the keymap edit stays in this run)
    _window, area, _region = view3d()
    cheap_viewport(area)
    # a second collection, so that Blender's 1 (collection 1 only) has something to hide
    second = bpy.data.collections.new("Second")
    scene.collection.children.link(second)
    second.objects.link(bpy.data.objects.new("Second empty", None))
    yield 0.5

    # 1. no MuJoCo model: Blender's key
    report["ones"] = bind_collection_key()
    yield 0.5
    report["mode"] = bpy.context.mode
    report["second_before"] = second_hidden()
    press("1")
    yield 1.0
    report["second_after_1_without_model"] = second_hidden()
    bpy.context.view_layer.layer_collection.children["Second"].hide_viewport = False

    # 2. with a model: the add-on's keys
    path = os.path.join(tempfile.mkdtemp(), "groups.xml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(MODEL)
    bpy.ops.import_scene.mjcf(filepath=path)
    yield 1.0
    switches = scene.mujoco_overlays
    report["imported"] = {name: hidden(name) for name in ("visual", "hull", "mark")}
    states = report["presses"] = []
    for key in ("3", "3", "shift+5", "1", "1", "0"):
        press(key)
        yield 1.0
        states.append([key, hidden("hull"), hidden("mark"), hidden("visual"), list(switches.geom_groups),
                       list(switches.site_groups), second_hidden()])
    overlays = report["overlays"] = []
    for key in ("shift+alt+c", "ctrl+shift+alt+e", "shift+alt+l", "shift+alt+i"):
        press(key)
        yield 1.0
        overlays.append([key, switches.contact_points, switches.equality, switches.labels,
                         scene.mujoco_simulation.show_inertia])

    # 3. while it plays in the Fast display
    scene.mujoco_simulation.display = "FAST"
    running = play_invoke()
    yield 1.5
    fast = report["fast"] = []
    for key in ("3", "3"):
        press(key)
        yield 1.5
        instancer = running.display.instancer
        fast.append([key, running.display.fast_now, running.latest.time,
                     sorted(o.name for o in instancer.sources) if instancer else None,
                     bpy.context.scene.objects["hull"].visible_get()])
    press("3")
    yield 1.0
    bpy.ops.mujoco.stop()
    yield 0.5
    report["stopped"] = {name: hidden(name) for name in ("visual", "hull", "mark")}
    report["left"] = [o.name for o in bpy.data.objects if o.name.endswith("(fast display)")]

    # 4. the key listing
    header = record_listing()
    area.tag_redraw()
    yield 1.5
    bpy.types.VIEW3D_HT_header.remove(header)
    keymaps = importlib.import_module(ADDON + ".ui.keymaps")
    report["items"] = [[idname, event, bool(mods.get("shift")), bool(mods.get("ctrl")), bool(mods.get("alt")),
                        props] for _keymap, idname, event, _value, mods, props in keymaps.ITEMS]


run_steps(steps)

"""Re-make tests/blender/data/saved_format1.{blend,xml} and saved_format1_values.json.

The fixture of storage format 1 (issue 35): a .blend as MJBlend stored elements
before format 2 (every attribute stored, floats with `_exact` / `_seen`, `_own`).
Made with the tree of commit a7505ab in the bpy 4.2 module, the oldest supported
release, so every newer one opens it:

    /work/main/.venv-bpy-4.2.23/bin/python tools/make_saved_format1.py

It imports MODEL (classes nested three deep, a childclass, materials and a mesh
referenced by classes and elements, inf values, NaN "unset" defaults, exact
doubles, a key, an attached model with its own <compiler angle="degree">, an
included file), then
edits it the ways a user and a script do (EDITS below), saves it, opens the saved
file again, exports it and dumps every attribute as tests/blender/test_saved_format1
reads them (`dump_values`). Running it again on a later tree makes a file of
THAT tree's format: only re-make it from a format-1 tree.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "blender", "data")

MODEL = """<mujoco model="format1">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.0123456789" impratio="1.5" gravity="0 0.1 -9.81"/>
  <size memory="1M"/>
  <visual><global fovy="33.3333333"/><quality shadowsize="2048"/></visual>
  <statistic meansize="0.123456789"/>
  <asset>
    <texture name="grid" type="2d" builtin="checker" width="16" height="16" rgb1=".1 .2 .3" rgb2=".4 .5 .6"/>
    <material name="red" rgba="0.9 0.1 0.1 1" shininess="0.123456789"/>
    <material name="gridmat" texture="grid" texrepeat="2 3" reflectance="0.1"/>
    <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1" scale="0.1 0.1 0.123456789"/>
    <model name="part" file="part.xml"/>
  </asset>
  <default>
    <geom friction="0.7 0.005 0.0001" rgba="0.1 0.2 0.3 1" solref="0.123456789 1"/>
    <default class="arm">
      <geom material="red" size="0.05 0.2" type="capsule" margin="0.001"/>
      <joint damping="0.1" range="-1 1" armature="0.123456789"/>
      <default class="hand">
        <geom type="mesh" mesh="tet" condim="4" priority="2"/>
        <site size="0.02" rgba="0 1 0 1"/>
      </default>
    </default>
    <default class="drive">
      <motor gear="2.5" ctrlrange="-1 1"/>
      <tendon stiffness="0.3"/>
    </default>
  </default>
  <worldbody>
    <light name="sun" pos="0 0 3" dir="0 0 -1" diffuse="0.7 0.7 0.7"/>
    <geom name="floor" type="plane" size="inf inf 0.1" material="gridmat"/>
    <site name="anchor" pos="0 0 1"/>
    <body name="base" pos="0 0 0.5" childclass="arm">
      <joint name="swing" type="hinge" axis="0 1 0"/>
      <geom name="upper" fromto="0 0 0 0 0 0.3"/>
      <geom name="upper_own" margin="0.002" rgba="0.5 0.5 0.5 1" size="0.04 0.1"/>
      <geom name="upper_same" size="0.05 0.2"/>
      <body name="tip" pos="0 0 0.3">
        <joint name="free_spin" type="hinge" range="-inf inf" limited="true" damping="0.123456789"/>
        <geom name="fist" class="hand" pos="0 0 0.05"/>
        <site name="knuckle" class="hand" pos="0 0 0.1"/>
        <attach model="part" body="finger" prefix="part_"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="cable" class="drive" width="0.005">
      <site site="anchor"/>
      <site site="knuckle"/>
    </spatial>
  </tendon>
  <actuator>
    <motor name="m_swing" joint="swing" class="drive"/>
    <motor name="m_spin" joint="free_spin" class="drive" gear="0.123456789"/>
  </actuator>
  <include file="sensors.xml"/>
  <keyframe>
    <key name="home" qpos="0.1 0.123456789" ctrl="0.5 -0.25" time="0.5"/>
  </keyframe>
</mujoco>
"""

# a model attached (an MJCF <model> asset) with its own angle unit: its elements keep
# `_degree` (an <include>d file's <compiler> would set the whole model's)
PART = """<mujoco>
  <compiler angle="degree"/>
  <worldbody>
    <body name="finger" pos="0 0 0.15" euler="0 0 30">
      <joint name="bend" type="hinge" range="-45 45" ref="10"/>
      <geom name="nail" type="box" size="0.01 0.02 0.03" euler="0 15 0"/>
    </body>
  </worldbody>
</mujoco>
"""
# an included section
SENSORS = """<mujoco>
  <sensor>
    <jointpos name="q_swing" joint="swing" noise="0.123456789"/>
  </sensor>
</mujoco>
"""

# The edits made after import, as `make` does them (what each format-1 case is).
EDITS = """
- class 'arm' geom margin edited through RNA after import (0.003): propagates to its
  members that do not set it (upper, upper_same), not to upper_own (own margin)
- class 'hand' geom priority edited (3), class 'main' joint frictionloss (0.01)
- upper_own rgba reset to class (reset_to_class): takes 'arm' -> main's rgba
- script: upper.friction[0] = 0.9 (one component), part_nail.size = (0.011, 0.021, 0.031),
  swing.margin = 0.123456789 (an RNA float32), base.gravcomp = 0.5, m_swing.ctrlrange
  set whole, option.timestep left exact, option.impratio = 2.0, visual fovy = 44.0
- upper_same.margin set through RNA to its class's value (0.003): own, equal to the class's
- Add: a body under 'tip' and a box geom in it (Add > MuJoCo operators), its class set to 'arm'
- a randomization entry on 'upper' (friction, scale 0.8-1.2)
"""


def make(bpy, folder: str) -> None:
    from mjblend.authoring import default_classes
    from stored_values import dump_values
    from mjblend.importer import build

    model_path = os.path.join(folder, "format1.xml")
    with open(model_path, "w", encoding="utf-8") as f:
        f.write(MODEL)
    with open(os.path.join(folder, "part.xml"), "w", encoding="utf-8") as f:
        f.write(PART)
    with open(os.path.join(folder, "sensors.xml"), "w", encoding="utf-8") as f:
        f.write(SENSORS)
    bpy.ops.wm.read_homefile(use_empty=True)
    result = build.import_file(model_path, bpy.context.scene)
    root = result.root
    objects = {o.mujoco.name: o for o in bpy.data.objects if o.mujoco.kind != "NONE"}
    model = root.mujoco.model

    # classes edited after import (RNA: the update callback propagates)
    default_classes.find(root, "arm").geom.margin = 0.003
    default_classes.find(root, "hand").geom.priority = 3
    default_classes.find(root, "main").joint.frictionloss = 0.01
    # an element reset to class
    default_classes.reset_to_class(objects["upper_own"], "rgba")
    # script-set values
    objects["upper"].mujoco.geom.friction[0] = 0.9
    objects["part_nail"].mujoco.geom.size = (0.011, 0.021, 0.031)
    objects["swing"].mujoco.joint.margin = 0.123456789
    objects["base"].mujoco.body.gravcomp = 0.5
    objects["m_swing"].mujoco.actuator.ctrlrange = (-2.0, 2.0)
    model.option.impratio = 2.0
    model.visual_global.fovy = 44.0
    # an own value equal to its class's
    objects["upper_same"].mujoco.geom.margin = 0.003
    # elements added by Add
    for o in bpy.context.selected_objects:
        o.select_set(False)
    bpy.context.view_layer.objects.active = objects["tip"]
    assert bpy.ops.mujoco.add_element(kind="BODY") == {"FINISHED"}
    added_body = bpy.context.active_object
    assert bpy.ops.mujoco.add_element(kind="GEOM", subtype="BOX") == {"FINISHED"}
    added_geom = bpy.context.active_object
    assert added_geom.parent == added_body
    added_geom.mujoco.classname = "arm"
    added_geom.mujoco.geom.density = 500.0
    # a randomization entry
    entry = objects["upper"].mujoco.randomize.add()
    entry.attribute = "friction"
    entry.mode = "scale"
    entry.low, entry.high = 0.8, 1.2

    blend = os.path.join(DATA, "saved_format1.blend")
    bpy.ops.wm.save_as_mainfile(filepath=blend, compress=True)
    bpy.ops.wm.open_mainfile(filepath=blend)
    out = os.path.join(DATA, "saved_format1.xml")
    assert bpy.ops.export_scene.mjcf(filepath=out) == {"FINISHED"}
    # (the export's folder gets no asset files: the mesh and texture are the file's own)
    bpy.ops.wm.open_mainfile(filepath=blend)  # the values as a fresh open reads them
    with open(os.path.join(DATA, "saved_format1_values.json"), "w", encoding="utf-8") as f:
        json.dump(dump_values(bpy), f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from addon_loader import enable_addon

    import bpy

    enable_addon()
    with tempfile.TemporaryDirectory() as folder:
        make(bpy, folder)
    print("made", os.path.join(DATA, "saved_format1.blend"), "with bpy", bpy.app.version_string)
    sys.stdout.flush()
    os._exit(0)  # (the bpy 4.2 module may crash at exit: tests/blender/conftest.py)


if __name__ == "__main__":
    main()

"""What a script sees when it sets an attribute: the oracle of issue 35's "tests over
every kind" (storage format 2 must not change it).

For every element kind and every attribute a script can set through RNA, a value is
set (`obj.mujoco.<kind>.<prop> = value`) on four elements of one model:
    "fresh"     an element made by MJBlend's Add (authoring: `fill` of MuJoCo's new element)
    "imported"  an element of an imported file, of class "c" where its kind takes classes
    "class"     class "c" itself (kinds a class sets)
and then read back through RNA, through `spec_io.read_value` and from the scan's spec
(what an export writes), together with:
    "inherits"  an imported element of class "c" that sets nothing itself: what it shows
                after its class was set (the class edit reaching it)
Settings groups (option, visual, ...) are set on the imported model ("imported") and on
a model made by Add > Model ("fresh"). Two rounds of values: round 0 sets every value
whole, round 1 sets one component of each vector (the others stay as round 0 left them)
and new scalars, so float32 vs double (0.1, 0.123456789), vectors, ints, enums, flags,
strings and array texts are all exercised. `record(bpy)` gives {key: answer};
tools/make_script_values.py writes it to tests/blender/data/script_values.json and
tests/blender/test_script_values.py compares.

Not set (a script cannot, or not as a plain value): references to datablocks and
classes (`ref`), their lists (`refvec`, `stringvec`) and the raw-only arrays (`bytes`,
`intvecvec`, `float32vecvec`, `keyvalues`: read-only length properties); the kinds flex,
skin and plugin (their elements need Blender geometry or a plugin library), and SKIPPED.
A scan that fails is recorded as its error for every attribute of that round (so a new
failure shows as a changed answer).
"""

from __future__ import annotations

import os
import tempfile

from stored_values import plain

MODEL = """<mujoco model="kinds">
  <default>
    <default class="c">
      <geom size="0.1" margin="0.01"/>
      <joint damping="0.2"/>
      <site size="0.03"/>
      <camera fovy="40"/>
      <light diffuse="0.5 0.5 0.5"/>
      <material shininess="0.3"/>
      <mesh scale="2 2 2"/>
      <pair margin="0.02"/>
      <equality solref="0.03 1"/>
      <tendon stiffness="0.4"/>
      <motor gear="2"/>
    </default>
  </default>
  <asset>
    <texture name="imp_texture" class="c" type="2d" builtin="checker" width="8" height="8"/>
    <texture name="inh_texture" class="c" type="2d" builtin="flat" width="8" height="8"/>
    <material name="imp_material" class="c"/>
    <material name="inh_material" class="c"/>
    <mesh name="imp_mesh" class="c" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
    <mesh name="inh_mesh" class="c" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
    <hfield name="imp_hfield" nrow="2" ncol="2" size="1 1 1 0.1" elevation="0 1 2 3"/>
  </asset>
  <worldbody>
    <site name="s0" pos="0 0 1"/>
    <body name="imp_body" pos="0 0 1">
      <joint name="imp_joint" class="c" type="hinge"/>
      <joint name="inh_joint" class="c" type="hinge" axis="1 0 0"/>
      <geom name="imp_geom" class="c"/>
      <geom name="inh_geom" class="c"/>
      <site name="imp_site" class="c"/>
      <site name="inh_site" class="c"/>
      <camera name="imp_camera" class="c"/>
      <camera name="inh_camera" class="c"/>
      <light name="imp_light" class="c"/>
      <light name="inh_light" class="c"/>
      <frame name="imp_frame"/>
    </body>
    <body name="other" pos="1 0 1">
      <joint name="j2" type="hinge"/>
      <geom name="g2" size="0.1"/>
    </body>
  </worldbody>
  <contact>
    <pair name="imp_pair" class="c" geom1="imp_geom" geom2="g2"/>
    <pair name="inh_pair" class="c" geom1="inh_geom" geom2="g2"/>
    <exclude name="imp_exclude" body1="imp_body" body2="other"/>
  </contact>
  <equality>
    <joint name="imp_equality" class="c" joint1="imp_joint" joint2="j2"/>
    <joint name="inh_equality" class="c" joint1="inh_joint" joint2="j2"/>
  </equality>
  <tendon>
    <spatial name="imp_tendon" class="c"><site site="s0"/><site site="imp_site"/></spatial>
    <spatial name="inh_tendon" class="c"><site site="s0"/><site site="inh_site"/></spatial>
  </tendon>
  <actuator>
    <motor name="imp_actuator" class="c" joint="imp_joint"/>
    <motor name="inh_actuator" class="c" joint="inh_joint"/>
  </actuator>
  <sensor>
    <jointpos name="imp_sensor" joint="imp_joint"/>
  </sensor>
  <keyframe>
    <key name="imp_key" time="0.5"/>
  </keyframe>
  <custom>
    <numeric name="imp_numeric" size="2" data="1 2"/>
    <text name="imp_text" data="hello"/>
    <tuple name="imp_tuple"><element objtype="body" objname="imp_body" prm="0.5"/></tuple>
  </custom>
</mujoco>
"""

SKIPPED_KINDS = ("flex", "skin", "plugin", "wrap", "model")
SET_TYPES = ("float", "float32", "int64", "int", "bool", "enum", "flags", "string", "floatvec",
             "float32vec", "intvec")
# (target, kind, attribute) -> why it is not set there
SKIPPED = {("class", "mesh", name): "a default class's mesh vertex / face arrays: the scan's MjSpec "
                                    "refuses them (RuntimeError from the binding)"
           for name in ("uservert", "userface")}


def settable(kind: str, target: str):
    from mjblend.components.schema import KINDS

    return [a for a in KINDS[kind].editable if a.type in SET_TYPES and (target, kind, a.name) not in SKIPPED]


# ------------------------------------------------------------------ values

FLOATS = (0.1, 0.123456789, 2.5, -1.25, 1e-7, 3.0)


def value_for(attr, current, round_: int):
    """(how, value): "whole" sets the property, "index" sets component 0 of a vector."""
    from mjblend.components.schema import enum_items

    t = attr.type
    if t in ("float", "float32", "int64"):
        if t == "int64":
            def pick(i):
                return float(12345 + i)
        else:
            def pick(i):
                return FLOATS[(i + round_) % len(FLOATS)]
        if attr.is_vector:  # round 0: 0.1, 0.123456789, 2.5, ...; round 1: [0] = 0.123456789
            if round_ == 0:
                return "whole", tuple(pick(i) for i in range(attr.size))
            return "index", pick(0)
        return "whole", pick(0)  # round 0: 0.1; round 1: 0.123456789
    if t == "int":
        if attr.is_vector:
            return ("whole", tuple(3 + i for i in range(attr.size))) if round_ == 0 else ("index", 7)
        return "whole", 3 if round_ == 0 else 7
    if t == "bool":
        if attr.is_vector:
            return ("whole", tuple(not v for v in current)) if round_ == 0 else ("index", not current[0])
        return "whole", not current
    if t == "enum":
        idents = [item[0] for item in enum_items(attr.enum)]
        choices = [i for i in idents if i != current] or idents
        return "whole", choices[0] if round_ == 0 else choices[-1]
    if t == "flags":
        idents = [item[0] for item in enum_items(attr.enum)]
        return "whole", set(idents[:1]) if round_ == 0 else set(idents[:2])
    if t == "string":
        text = "abc" if round_ == 0 else "x y"
        return "whole", text[:attr.size] if attr.size else text
    if t in ("floatvec", "float32vec"):
        return "whole", "0.1 0.123456789" if round_ == 0 else "2.5"
    if t == "intvec":
        return "whole", "1 2" if round_ == 0 else "5"
    raise TypeError(t)


def set_value(group, attr, round_: int) -> object:
    """Set one attribute as a script does; what was set (or the error it raised)."""
    current = getattr(group, attr.prop)
    if attr.is_vector and attr.type not in ("floatvec", "float32vec", "intvec"):
        current = tuple(current)
    how, value = value_for(attr, current, round_)
    try:
        if how == "index":
            getattr(group, attr.prop)[0] = value
        else:
            setattr(group, attr.prop, value)
    except Exception as error:  # (what a script gets is part of the answer)
        return {"error": type(error).__name__}
    return plain(value)


def read_back(group, attr) -> dict:
    from mjblend.components import spec_io

    rna = getattr(group, attr.prop)
    try:
        read = plain(spec_io.read_value(group, attr))
    except Exception as error:
        read = {"error": type(error).__name__}
    return {"rna": plain(rna), "read": read}


# ------------------------------------------------------------------ scene


def build(bpy, folder: str) -> dict:
    """The scene: {(target, kind): group getter}, the roots."""
    from mjblend.authoring import authoring, default_classes
    from mjblend.components import spec_io
    from mjblend.components.kinds import ELEMENT_KINDS
    from mjblend.components.schema import DATA_KINDS, DEFAULT_KINDS, MODEL_SETTINGS, SPATIAL_KINDS
    from mjblend.importer import build as importer

    bpy.ops.wm.read_homefile(use_empty=True)
    path = os.path.join(folder, "kinds.xml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(MODEL)
    root = importer.import_file(path, bpy.context.scene).root
    fresh_root = authoring.new_model(bpy.context, "fresh")
    by_name = {o.mujoco.name: o for o in bpy.data.objects if o.mujoco.kind != "NONE"}
    for collection in (bpy.data.meshes, bpy.data.materials, bpy.data.images):
        by_name.update({b.mujoco.name: b for b in collection if b.mujoco.kind != "NONE"})
    kinds = [k for k in ELEMENT_KINDS if k not in SKIPPED_KINDS]
    targets = {}

    def group_of(block, kind):
        return lambda: getattr(block.mujoco, kind)

    body = by_name["imp_body"]
    for kind in kinds:
        targets[("imported", kind)] = group_of(by_name["imp_" + kind], kind)
        if kind in DEFAULT_KINDS:
            targets[("class", kind)] = \
                (lambda kind=kind: getattr(default_classes.find(root, "c"), kind))
            if "inh_" + kind in by_name:
                targets[("inherits", kind)] = group_of(by_name["inh_" + kind], kind)
        name = "new_" + kind
        if kind in SPATIAL_KINDS:
            block = authoring.new_spatial(root, body, kind, name=name)
        elif kind in DATA_KINDS:
            id_type = DATA_KINDS[kind]
            if id_type == "Mesh":
                block = bpy.data.meshes.new(name)
                block.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)], [],
                                  [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)])
            elif id_type == "Material":
                block = bpy.data.materials.new(name)
            else:
                block = bpy.data.images.new(name, 8, 8)
            block.mujoco.kind, block.mujoco.name = kind.upper(), name
            authoring.fill(getattr(block.mujoco, kind), spec_io.new_element(kind), kind)
            root.mujoco.model.assets.add().block = block
        else:
            block = bpy.data.objects.new(name, None)
            root.users_collection[0].objects.link(block)
            block.parent = root
            block.mujoco.kind, block.mujoco.name = kind.upper(), name
            authoring.fill(getattr(block.mujoco, kind), spec_io.new_element(kind), kind)
        targets[("fresh", kind)] = group_of(block, kind)
    for kind in MODEL_SETTINGS:
        targets[("imported", kind)] = (lambda kind=kind: getattr(root.mujoco.model, kind))
        targets[("fresh", kind)] = (lambda kind=kind: getattr(fresh_root.mujoco.model, kind))
    return {"targets": targets, "roots": {"imported": root, "fresh": fresh_root}, "names": by_name}


def spec_value(spec, target: str, kind: str, attr):
    """The value the scan's spec holds for the target's attribute."""
    from mjblend.components import spec_io
    from mjblend.components.kinds import ELEMENT_KINDS
    from mjblend.components.schema import MODEL_SETTINGS

    if kind in MODEL_SETTINGS:
        element = spec_io.spec_settings(spec, kind, attr)
    elif target == "class":
        element = getattr(spec.find_default("c"), kind)
    else:
        name = {"fresh": "new_", "imported": "imp_", "inherits": "inh_"}[target] + kind
        element = next((e for e in getattr(spec, ELEMENT_KINDS[kind].plural) if e.name == name), None)
        if element is None:
            return {"error": "not in the spec"}
    return plain(spec_io.from_mujoco(attr, spec_io.get_attr(element, attr)))


def record(bpy) -> dict:
    """{"<target>/<kind>/<attribute>": [per round: {"set", "rna", "read", "spec"}]}."""
    from mjblend.components.schema import KINDS, MODEL_SETTINGS
    from mjblend.scan import scene_scan

    with tempfile.TemporaryDirectory() as folder:
        scene = build(bpy, folder)
        out: dict = {}
        # classes first: what "inherits" shows is the class's value reaching it
        order = sorted(scene["targets"], key=lambda tk: (tk[0] != "class", tk))
        for round_ in (0, 1):
            answers = {}
            for target, kind in order:
                if target == "inherits":
                    continue
                group = scene["targets"][(target, kind)]()
                for attr in settable(kind, target):
                    answers[(target, kind, attr.name)] = {"set": set_value(group, attr, round_)}
            for (target, kind), get_group in scene["targets"].items():
                group = get_group()
                for attr in settable(kind, target):
                    answers.setdefault((target, kind, attr.name), {}).update(read_back(group, attr))
            specs = {}
            for which, root in scene["roots"].items():
                try:
                    specs[which] = scene_scan.scan_model(root)
                except Exception as error:
                    specs[which] = {"error": f"{type(error).__name__}: {error}"}
            for (target, kind, name), answer in answers.items():
                which = "fresh" if target == "fresh" and kind in MODEL_SETTINGS else "imported"
                spec = specs[which]
                attr = KINDS[kind].attr(name)
                answer["spec"] = spec if isinstance(spec, dict) else spec_value(spec, target, kind, attr)
                out.setdefault(f"{target}/{kind}/{name}", []).append(answer)
    return out

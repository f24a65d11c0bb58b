"""Storage format 2 (issue 35): a group stores only what it sets itself, floats as their
exact doubles under the property's name; everything else is read through the class
chain (components/inherit.py) or MuJoCo's defaults."""

import math
import os

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.authoring import default_classes
from mjblend.components import values
from mjblend.importer import build
from mjblend.scan import scene_scan

CLASSES = """<mujoco>
  <default>
    <geom friction="0.7 0.01 0.001"/>
    <default class="a">
      <geom margin="0.0123456789"/>
      <default class="b">
        <geom rgba="1 0 0 1"/>
      </default>
    </default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.1"/>
    <body name="body" pos="0 0 1">
      <freejoint/>
      <geom name="g" class="b" size="0.1"/>
      <geom name="own" class="b" size="0.1" margin="0.2"/>
    </body>
  </worldbody>
</mujoco>
"""


def imported(tmp_path, text=CLASSES):
    path = tmp_path / "model.xml"
    path.write_text(text, encoding="utf-8")
    return build.import_file(str(path), bpy.context.scene)


def compiled(root):
    return scene_scan.scan_model(root).compile()


def class_item(root, name):
    return next(item for item in root.mujoco.model.defaults if item.name == name)


@needs_corpus
def test_a_humanoid_element_stores_few_keys(clean_scene):
    """Format 1 stored 33 keys (~160 values) in every humanoid geom; format 2 only what it
    sets: at most its type, size, material and its pose records (6 keys)."""
    path = os.path.join(CORPUS, "mujoco_model/model/humanoid/humanoid.xml")
    root = build.import_file(path, bpy.context.scene).root
    geoms = [o.mujoco.get("geom") for o in root.children_recursive if o.mujoco.kind == "GEOM"]
    assert len(geoms) == 20 and all(g is not None for g in geoms)
    keys = [len(g.keys()) for g in geoms]
    assert max(keys) <= 6 and sum(keys) / len(keys) < 5
    assert not any(k in g for g in geoms for k in ("_exact", "_seen", "_own"))
    # what it does not store, it reads from its class: the same values as MuJoCo compiled
    model = mujoco.MjModel.from_xml_path(path)
    for obj in root.children_recursive:
        if obj.mujoco.kind == "GEOM":
            gid = model.geom(obj.mujoco.name).id if obj.mujoco.name else None
            if gid is not None:
                assert tuple(obj.mujoco.geom.friction) == pytest.approx(tuple(model.geom_friction[gid]))
                assert obj.mujoco.geom.condim == model.geom_condim[gid]


CLASS_POSE = """<mujoco>
  <default>
    <default class="x">
      <geom pos="0 0 1" euler="0 0 30" size="0.1"/>
      <joint axis="1 0 0"/>
    </default>
  </default>
  <worldbody>
    <body name="b" pos="1 0 0">
      <joint name="same" class="x"/>
      <joint name="own" class="x" axis="0 1 0"/>
      <geom name="inherits" class="x"/>
      <geom name="moved" class="x" pos="0 0 2"/>
      <geom name="plain" size="0.1"/>
    </body>
  </worldbody>
</mujoco>
"""


def _pose_keys(obj, kind):
    stored = obj.mujoco[kind].get("_pose")
    return set() if stored is None else set(stored.keys())


def test_an_element_stores_only_the_pose_values_its_class_does_not_give(clean_scene, tmp_path):
    """`_pose` holds the spatial values that differ from what a new element of the element's
    class holds (the scan makes it from that class): a body's quaternion and unused
    orientation forms are not stored; a class's own pose is stored in the class (it was
    dropped before), and the model compiles as MuJoCo's, bit for bit."""
    root = imported(tmp_path, CLASS_POSE).root
    objs = {o.mujoco.name: o for o in root.children_recursive if o.mujoco.name}
    assert _pose_keys(objs["b"], "body") == {"pos"}
    assert _pose_keys(objs["plain"], "geom") == set()
    assert _pose_keys(objs["inherits"], "geom") == set()
    assert _pose_keys(objs["moved"], "geom") == {"pos"}
    assert _pose_keys(objs["same"], "joint") == set() and _pose_keys(objs["own"], "joint") == {"axis"}
    item = class_item(root, "x")
    assert {"pos", "alt_type", "alt_euler"} <= set(item.geom["_pose"].keys())
    assert set(item.joint["_pose"].keys()) == {"axis"}
    ours, theirs = compiled(root), mujoco.MjModel.from_xml_path(str(tmp_path / "model.xml"))
    for field in ("geom_pos", "geom_quat", "body_pos", "body_quat", "jnt_axis"):
        assert getattr(ours, field).tobytes() == getattr(theirs, field).tobytes(), field
    # moved in Blender, it stores its transform as before; the others keep their class's pose
    objs["inherits"].location = (0.0, 0.0, 3.0)
    bpy.context.view_layer.update()
    moved = compiled(root)
    gid = theirs.geom("inherits").id
    assert moved.geom_pos[gid].tolist() == [0.0, 0.0, 3.0]
    others = [i for i in range(theirs.ngeom) if i != gid]
    assert moved.geom_pos[others].tobytes() == theirs.geom_pos[others].tobytes()


def test_an_unset_attribute_reads_its_class_then_the_parent_class_then_mujoco(clean_scene, tmp_path):
    result = imported(tmp_path)
    g = bpy.data.objects["g"].mujoco.geom
    assert values.own(g) == {"size"}
    assert "margin" not in g.keys() and "rgba" not in g.keys()
    assert tuple(g.rgba) == (1, 0, 0, 1)  # class b
    assert g.margin == pytest.approx(0.0123456789) and values.read_float(g, _attr("margin")) == 0.0123456789
    assert tuple(g.friction) == pytest.approx((0.7, 0.01, 0.001))  # main
    assert tuple(g.solref) == pytest.approx((0.02, 1.0))  # MuJoCo's default
    assert g.condim == 3 and g.type == "SPHERE"
    own = bpy.data.objects["own"].mujoco.geom
    assert values.own(own) == {"size", "margin"} and own.margin == pytest.approx(0.2)
    model = compiled(result.root)
    assert model.geom("g").margin[0] == 0.0123456789 and model.geom("own").margin[0] == 0.2


def _attr(name, kind="geom"):
    from mjblend.components.schema import KINDS
    return KINDS[kind].attr(name)


def test_a_class_edit_reaches_its_members_without_copies(clean_scene, tmp_path):
    result = imported(tmp_path)
    root = result.root
    g, own = bpy.data.objects["g"].mujoco.geom, bpy.data.objects["own"].mujoco.geom
    keys_before = sorted(g.keys())
    class_item(root, "a").geom.margin = 0.05  # an edit of the parent class
    assert sorted(g.keys()) == keys_before  # nothing copied into the member
    assert g.margin == pytest.approx(0.05) and own.margin == pytest.approx(0.2)
    model = compiled(root)
    assert model.geom("g").margin[0] == 0.05 and model.geom("own").margin[0] == 0.2
    # a class's own value, then "reset to class": the key goes, the class's value shows
    own_obj = bpy.data.objects["own"]
    default_classes.reset_to_class(own_obj, "margin")
    assert "margin" not in own.keys() and own.margin == pytest.approx(0.05)
    # an edit of a class's parent name: what the member reads follows at once
    class_item(root, "b").parent = "main"
    assert g.margin == 0.0 and g.rgba[0] == 1.0


def test_undo_after_a_class_edit(clean_scene, tmp_path):
    result = imported(tmp_path)
    g = bpy.data.objects["g"].mujoco.geom
    bpy.ops.ed.undo_push(message="imported")
    class_item(result.root, "b").geom.rgba = (0, 1, 0, 1)
    assert tuple(bpy.data.objects["g"].mujoco.geom.rgba) == (0, 1, 0, 1)
    bpy.ops.ed.undo_push(message="class edited")
    bpy.ops.ed.undo()
    g = bpy.data.objects["g"].mujoco.geom
    assert tuple(g.rgba) == (1, 0, 0, 1)
    root = next(o for o in bpy.data.objects if o.mujoco.kind == "MODEL")
    assert tuple(compiled(root).geom("g").rgba) == (1, 0, 0, 1)
    bpy.ops.ed.redo()
    assert tuple(bpy.data.objects["g"].mujoco.geom.rgba) == (0, 1, 0, 1)


def test_edits_at_and_beyond_the_largest_float_and_nan(clean_scene, tmp_path):
    """Blender keeps +-3.4e38 of an infinity or of anything larger: the property's set
    stores +-FLT_MAX, which no file keeps (UnkeptNumber); NaN too, where MuJoCo has no
    "unset" NaN. An infinity the file held is kept through an edit of another value."""
    result = imported(tmp_path, CLASSES.replace('size="0 0 0.1"', 'size="inf inf 0.1"'))
    floor = bpy.data.objects["floor"].mujoco.geom
    assert floor["size"].to_list() == [math.inf, math.inf, 0.1]
    assert floor.size[0] == values.FLT_MAX  # shown as Blender shows an infinity
    floor.size[2] = 0.25  # the other values are the file's infinities still
    assert floor["size"].to_list() == [math.inf, math.inf, 0.25]
    assert list(compiled(result.root).geom_size[0]) == [math.inf, math.inf, 0.25]
    g = bpy.data.objects["g"].mujoco.geom
    for typed in (math.inf, 1e39, 3.5e38, -math.inf):
        g.margin = typed
        assert g["margin"] == math.copysign(values.FLT_MAX, typed)
        with pytest.raises(scene_scan.ScanError, match="3.4e38"):
            compiled(result.root)
    g.margin = 3.4e38  # below Blender's largest: kept (its shortest decimal), as in format 1
    assert g["margin"] == 3.4e38 and compiled(result.root).geom("g").margin[0] == 3.4e38
    g.margin = float("nan")
    assert math.isnan(g["margin"])
    with pytest.raises(scene_scan.ScanError, match="NaN"):
        compiled(result.root)
    g.margin = 0.1  # typed: its shortest decimal, exact
    assert g["margin"] == 0.1 and compiled(result.root).geom("g").margin[0] == 0.1


def test_vector_components_keep_their_doubles(clean_scene, tmp_path):
    imported(tmp_path)
    g = bpy.data.objects["g"].mujoco.geom
    g.friction = (0.123456789, 0.1, 3.0)
    assert g["friction"].to_list() == [0.12345679, 0.1, 3.0]  # each typed float32's shortest decimal
    g["friction"] = [0.123456789012, 0.1, 3.0]  # (an exact double, as an import stores it)
    g.friction[1] = 0.5
    assert g["friction"].to_list() == [0.123456789012, 0.5, 3.0]
    np.testing.assert_array_equal(np.float32(g.friction), np.float32([0.123456789012, 0.5, 3.0]))


def _shown(root):
    """Every geom attribute every member and class shows through RNA."""
    from mjblend.components.schema import KINDS
    attrs = [a for a in KINDS["geom"].editable if a.type in ("float", "float32", "int", "bool", "enum")]
    groups = [o.mujoco.geom for o in root.children_recursive if o.mujoco.kind == "GEOM"]
    groups += [item.geom for item in root.mujoco.model.defaults]
    return repr([[tuple(v) if hasattr(v, "__len__") and not isinstance(v, str) else v  # (repr: NaN)
                  for v in (getattr(g, a.prop) for a in attrs)] for g in groups])


def test_no_class_operation_leaves_a_stale_value(clean_scene, tmp_path):
    """After each class operation, what the cache shows is what resolving anew shows."""
    from mjblend.components import inherit
    root = imported(tmp_path).root

    def check():
        cached = _shown(root)
        inherit.forget()
        assert _shown(root) == cached
    check()
    default_classes.add_class(root, "c", "b")
    bpy.data.objects["g"].mujoco.classname = "c"
    check()
    class_item(root, "c").geom.margin = 0.3
    check()
    assert bpy.data.objects["g"].mujoco.geom.margin == pytest.approx(0.3)
    default_classes.rename_class(root, "c", "d")
    check()
    class_item(root, "b").geom.rgba = (0, 0, 1, 1)
    check()
    assert tuple(bpy.data.objects["g"].mujoco.geom.rgba) == (0, 0, 1, 1)
    default_classes.remove_class(root, "d")
    check()
    assert bpy.data.objects["g"].mujoco.classname == "b"
    assert bpy.data.objects["g"].mujoco.geom.margin == pytest.approx(0.0123456789)

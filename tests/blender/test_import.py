"""File > Import > MuJoCo: every corpus model arrives as MuJoCo sees it."""

import csv
import os

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, corpus_params, needs_corpus

from mjblend.geometry import materials
from mjblend.importer import build, defaults
from mjblend.scan import scene_scan

# models.tsv column -> MJBlend kind (objects or datablocks of that kind)
COUNT_COLUMNS = {"njnt": "joint", "ngeom": "geom", "nmesh": "mesh", "nactuator": "actuator",
                 "nsensor": "sensor", "ntendon": "tendon", "neq": "equality", "nsite": "site",
                 "ncam": "camera", "nlight": "light", "nhfield": "hfield", "ntex": "texture",
                 "nmat": "material", "nflex": "flex", "nskin": "skin", "nplugin": "plugin",
                 "nkey": "key"}
ID_KINDS = {"mesh": "meshes", "hfield": "meshes", "texture": "images", "material": "materials"}


def expected_counts(path):
    with open(os.path.join(CORPUS, "models.tsv"), encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["path"] == path:
                return row
    raise KeyError(path)


def import_model(path):
    result = bpy.ops.import_scene.mjcf(filepath=os.path.join(CORPUS, path))
    assert result == {"FINISHED"}
    return bpy.context.view_layer.objects.active


def objects_of(kind):
    return [o for o in bpy.data.objects if o.mujoco.kind == kind.upper()]


def by_mjcf_name(kind):
    return {o.mujoco.name: o for o in objects_of(kind) if o.mujoco.name}


def matrix(obj):
    return np.array(obj.matrix_world, dtype=float)


@pytest.mark.parametrize("model", corpus_params())
def test_import_counts_match_mujoco(model, clean_scene):
    root = import_model(model)
    assert root.mujoco.kind == "MODEL"
    expected = expected_counts(model)
    got = {}
    for column, kind in COUNT_COLUMNS.items():
        if kind in ID_KINDS:
            blocks = getattr(bpy.data, ID_KINDS[kind])
            got[column] = sum(1 for b in blocks if b.mujoco.kind == kind.upper())
        else:
            got[column] = len(objects_of(kind))
    got["nbody"] = len(objects_of("body")) + 1  # MuJoCo counts the world body
    want = {c: int(expected[c]) for c in got}
    assert got == want


def compiled(path):
    model = mujoco.MjModel.from_xml_path(os.path.join(CORPUS, path))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)  # kinematics, and cameras and lights (mj_camlight)
    return model, data


def world_vertices(obj):
    mesh = obj.data
    local = np.empty(len(mesh.vertices) * 3)
    mesh.vertices.foreach_get("co", local)
    local = local.reshape(-1, 3)
    world = matrix(obj)
    return local @ world[:3, :3].T + world[:3, 3]


@pytest.mark.parametrize("model", corpus_params())
def test_imported_poses_match_mujoco_at_qpos0(model, clean_scene):
    result = build.import_file(os.path.join(CORPUS, model), bpy.context.scene)
    mj, data = compiled(model)
    worst = {}

    def check(what, value, reference):
        worst[what] = max(worst.get(what, 0.0), float(np.abs(np.asarray(value) - reference).max()))

    for b in range(1, mj.nbody):
        world = matrix(result.by_id[("body", b)])
        check("body pos", world[:3, 3], data.xpos[b])
        check("body rot", world[:3, :3], data.xmat[b].reshape(3, 3))
    for g in range(mj.ngeom):
        obj = result.by_id[("geom", g)]
        if int(mj.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_MESH):
            mesh = int(mj.geom_dataid[g])
            adr, num = int(mj.mesh_vertadr[mesh]), int(mj.mesh_vertnum[mesh])
            verts = mj.mesh_vert[adr:adr + num].astype(float)
            expected = verts @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g]
            got = world_vertices(obj)
            assert got.shape == expected.shape
            scale = max(1.0, float(np.abs(expected).max()))
            check("mesh vertices", got / scale, expected / scale)
            continue
        world = matrix(obj)
        check("geom pos", world[:3, 3], data.geom_xpos[g])
        check("geom rot", world[:3, :3], data.geom_xmat[g].reshape(3, 3))
    for s in range(mj.nsite):
        world = matrix(result.by_id[("site", s)])
        check("site pos", world[:3, 3], data.site_xpos[s])
        check("site rot", world[:3, :3], data.site_xmat[s].reshape(3, 3))
    for c in range(mj.ncam):  # cameras aimed at a target body too: as MuJoCo aims them at qpos0
        world = matrix(result.by_id[("camera", c)])
        check("camera pos", world[:3, 3], data.cam_xpos[c])
        check("camera rot", world[:3, :3], data.cam_xmat[c].reshape(3, 3))
    for j in range(mj.njnt):
        world = matrix(result.by_id[("joint", j)])
        check("joint anchor", world[:3, 3], data.xanchor[j])
        if int(mj.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            check("joint axis", world[:3, 2], data.xaxis[j])  # a joint object's +Z is its axis
    for lid in range(mj.nlight):
        world = matrix(result.by_id[("light", lid)])
        check("light pos", world[:3, 3], data.light_xpos[lid])
        check("light dir", -world[:3, 2], data.light_xdir[lid])  # lights shine along -Z
    tolerance = {"mesh vertices": 1e-5}
    bad = {k: v for k, v in worst.items() if v > tolerance.get(k, 1e-6)}
    assert not bad, f"{model}: worst errors {worst}"


# ------------------------------------------------------------------ details

TWO_TORSOS = """<mujoco model="names">
  <default><default class="thin"><geom size="0.01"/></default></default>
  <worldbody>
    <body name="torso" pos="0 0 1">
      <geom name="torso" type="sphere" size="0.1"/>
      <geom class="thin" type="capsule" fromto="0 0 0 0 0 0.2"/>
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <site name="tip" pos="0 0 0.2"/>
      <geom name="hidden" type="box" size="0.1 0.1 0.1" group="3"/>
      <geom name="visual_only" type="box" size="0.1 0.1 0.1" group="4" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator><motor name="torso" joint="hinge"/></actuator>
  <sensor><framepos name="tip_pos" objtype="site" objname="tip"/></sensor>
</mujoco>
"""


def write_model(tmp_path, text, name="model.xml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


EXTREME_POSES = """<mujoco model="extremes">
  <worldbody>
    <body name="far" pos="1e39 -1e39 0.1" quat="0.3 1e-46 1e-40 0.7">
      <geom type="sphere" size="0.1" pos="0.1 0.2 0.3" quat="1 2 3 4"/>
      <site type="capsule" size="0.01" fromto="0 0 0 0.3 0.1 0.7"/>
      <joint type="hinge" axis="0.2 0.3 0.9"/>
    </body>
    <light dir="0.3 -0.2 -1"/>
    <camera pos="1e-45 3 4" euler="10 20 30"/>
  </worldbody>
</mujoco>"""


def test_seen_pose_is_what_blender_reads_back(clean_scene, tmp_path):
    """The import computes the float32 pose Blender keeps instead of reading it back: equal,
    also where RNA clamps to +-FLT_MAX or keeps denormals."""
    from mjblend.components.stored_keys import SEEN_POSE
    result = build.import_file(write_model(tmp_path, EXTREME_POSES), bpy.context.scene)
    checked = 0
    for obj in result.collection.all_objects:
        group = getattr(obj.mujoco, obj.mujoco.kind.lower())
        if SEEN_POSE in group:
            read_back = list(obj.location) + list(obj.rotation_quaternion)
            assert list(group[SEEN_POSE]) == read_back, obj.name
            checked += 1
    assert checked == 6


def test_names_are_unique_readable_and_keep_the_mjcf_name(clean_scene, tmp_path):
    result = build.import_file(write_model(tmp_path, TWO_TORSOS), bpy.context.scene)
    body, geom = result.by_id[("body", 1)], result.by_id[("geom", 0)]
    actuator = result.by_id[("actuator", 0)]
    assert (body.name, body.mujoco.name) == ("torso", "torso")
    assert (geom.name, geom.mujoco.name) == ("torso (geom)", "torso")
    assert actuator.name.startswith("torso (actuator)") and actuator.mujoco.name == "torso"
    unnamed = result.by_id[("geom", 1)]
    assert unnamed.mujoco.name == "" and unnamed.name.startswith("torso geom")
    assert result.root.name == "names" and result.root.mujoco.kind == "MODEL"


def test_references_point_at_the_imported_objects(clean_scene, tmp_path):
    result = build.import_file(write_model(tmp_path, TWO_TORSOS), bpy.context.scene)
    motor = result.by_id[("actuator", 0)].mujoco.actuator
    sensor = result.by_id[("sensor", 0)].mujoco.sensor
    assert motor.target == result.by_id[("joint", 0)]
    assert sensor.objname == result.by_id[("site", 0)]
    # non-spatial elements live in child collections of the model's collection
    assert result.by_id[("actuator", 0)].users_collection[0].name.endswith("Actuators")
    assert result.by_id[("actuator", 0)].users_collection[0].name in result.collection.children


def test_default_classes_and_own_attributes(clean_scene, tmp_path):
    result = build.import_file(write_model(tmp_path, TWO_TORSOS), bpy.context.scene)
    classes = {c.name: c for c in result.root.mujoco.model.defaults}
    assert set(classes) == {"main", "thin"} and classes["thin"].parent == "main"
    assert classes["thin"].geom.size[0] == pytest.approx(0.01)
    thin_geom = result.by_id[("geom", 1)]
    assert thin_geom.mujoco.classname == "thin"
    from mjblend.components import values
    assert "size" not in values.own(thin_geom.mujoco.geom)  # comes from the class
    assert "type" in values.own(thin_geom.mujoco.geom)       # set on the element



TENDON_CLASS = """<mujoco>
  <default><default class="stiff"><tendon stiffness="3" rgba="1 0 0 1"/></default></default>
  <worldbody>
    <body><joint name="j"/><geom size="0.1"/><site name="a"/></body>
    <site name="b" pos="1 0 0"/>
  </worldbody>
  <tendon>
    <spatial class="stiff" name="s" damping="2"><site site="a"/><site site="b"/></spatial>
    <fixed name="f"><joint joint="j" coef="1"/></fixed>
  </tendon>
</mujoco>
"""


def test_tendons_keep_their_class(clean_scene, tmp_path):
    """mujoco 4.0.0 names a tendon's class with `default()`, not `classname`."""
    result = build.import_file(write_model(tmp_path, TENDON_CLASS), bpy.context.scene)
    from mjblend.scan import scene_scan
    from mjblend.components import values
    spatial, fixed = result.by_id[("tendon", 0)], result.by_id[("tendon", 1)]
    assert (spatial.mujoco.classname, fixed.mujoco.classname) == ("stiff", "main")
    assert values.own(spatial.mujoco.tendon) == {"damping"}  # stiffness and rgba: the class's
    spec = scene_scan.scan_model(result.root)
    written = mujoco.MjSpec.from_string(spec.to_xml())
    assert written.tendons[0].default().name == "stiff"
    model = spec.compile()
    assert model.tendon_stiffness[0] == 3 and model.tendon_damping[0] == 2
    assert list(model.tendon_rgba[0]) == [1, 0, 0, 1] and model.tendon_stiffness[1] == 0

@pytest.mark.parametrize("model", corpus_params())
def test_class_tree_without_the_writers_full_cost_is_the_same(model):
    """Skipping the writer where the text has no class, and writing the file read again
    with trivial assets, give the classes MuJoCo's writer gives for the model itself."""
    path = os.path.join(CORPUS, model)
    spec = mujoco.MjSpec.from_file(path)
    spec.compile()
    with open(path, "rb") as fh:
        source = fh.read()
    full = defaults.class_tree(spec)
    assert defaults.class_tree(spec, source) == full
    assert defaults.class_tree(spec, None, path) == full
    if len(spec.meshes) or len(spec.textures) or len(spec.hfields):
        assert defaults._without_assets(path).to_xml()  # not the fallback


def test_one_default_element_is_the_main_class_only():
    source = b'<mujoco><default><geom size=".2"/></default><worldbody><geom/></worldbody></mujoco>'
    spec = mujoco.MjSpec.from_string(source.decode())
    assert not defaults.may_define_classes(source)
    assert defaults.class_tree(spec, source) == defaults.class_tree(spec) == [("main", "")]
    assert defaults.may_define_classes(b'<mujoco><include file="x.xml"/></mujoco>')
    assert defaults.may_define_classes(b'<default><default class="a"/></default>')


def test_groups_3_to_5_are_hidden_and_collision_geoms_told_apart(clean_scene, tmp_path):
    result = build.import_file(write_model(tmp_path, TWO_TORSOS), bpy.context.scene)
    shown, hidden, visual = (result.by_id[("geom", i)] for i in (0, 2, 3))
    assert not shown.hide_get() and hidden.hide_get() and visual.hide_get()
    assert hidden.display_type == "WIRE" and visual.display_type != "WIRE"


@needs_corpus
def test_model_root_holds_settings(clean_scene):
    root = import_model("mujoco_model/model/humanoid/humanoid.xml")
    spec = mujoco.MjSpec.from_file(os.path.join(CORPUS, "mujoco_model/model/humanoid/humanoid.xml"))
    assert root.mujoco.model.option.timestep == pytest.approx(spec.option.timestep)
    integrator = mujoco.mjtIntegrator(spec.option.integrator).name  # "mjINT_EULER"
    assert root.mujoco.model.option.integrator == integrator.split("_", 1)[1]


INERTIA = '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'
URDF = f"""<robot name="arm">
  <link name="base"><visual><geometry><box size="0.2 0.2 0.1"/></geometry></visual>
    <inertial><mass value="1"/>{INERTIA}</inertial></link>
  <link name="upper"><visual><geometry><cylinder radius="0.03" length="0.4"/></geometry></visual>
    <inertial><mass value="0.5"/>{INERTIA}</inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def test_urdf_imports(clean_scene, tmp_path):
    path = write_model(tmp_path, URDF, "arm.urdf")
    assert bpy.ops.import_scene.mjcf(filepath=path) == {"FINISHED"}
    assert {o.mujoco.name for o in objects_of("joint")} == {"shoulder"}
    model = mujoco.MjModel.from_xml_path(path)
    assert len(objects_of("body")) == model.nbody - 1
    assert len(objects_of("geom")) == model.ngeom


def test_the_import_operator_is_in_the_file_menu_and_takes_drops():
    from mjblend.ui import menus
    assert menus.import_menu in bpy.types.TOPBAR_MT_file_import.draw._draw_funcs
    handler = bpy.types.FileHandler.bl_rna_get_subclass_py("MJBLEND_FH_mjcf")
    assert handler is not None and handler.bl_import_operator == "import_scene.mjcf"
    assert ".urdf" in handler.bl_file_extensions


@pytest.mark.parametrize("model", corpus_params())
def test_every_reference_in_the_corpus_resolves_to_an_object(model, clean_scene):
    from mjblend.components import values
    from mjblend.components.schema import KINDS
    import_model(model)
    unresolved = []
    holders = [(o, o.mujoco.kind.lower()) for o in bpy.data.objects if o.mujoco.kind != "NONE"]
    holders += [(b, b.mujoco.kind.lower()) for b in list(bpy.data.meshes) + list(bpy.data.materials)
                + list(bpy.data.images) if b.mujoco.kind != "NONE"]
    for block, kind in holders:
        groups = [getattr(block.mujoco, kind)]
        if kind == "tendon":
            groups += [(w, "wrap") for w in block.mujoco.tendon.path]
        for entry in groups:
            group, gkind = entry if isinstance(entry, tuple) else (entry, kind)
            for attr in KINDS[gkind].editable:
                if attr.type == "ref" and attr.ref != "default":
                    authored = group.get(values.REF, {}).get(attr.prop)
                    if authored and getattr(group, attr.prop) is None:
                        unresolved.append(f"{block.name}.{attr.name} -> {authored}")
                elif attr.type == "refvec":
                    unresolved += [f"{block.name}.{attr.name} -> {i.authored}"
                                   for i in getattr(group, attr.prop) if i.authored and i.target is None]
    assert not unresolved, unresolved[:10]


@pytest.mark.parametrize("model", corpus_params())
def test_imported_attributes_are_exactly_mujocos(model, clean_scene):
    """Every element's properties give back, bit for bit, the element MuJoCo parsed."""
    from helpers import SPEC_LISTS, as_comparable, fresh

    from mjblend.components import spec_io
    from mjblend.components.schema import KINDS
    result = build.import_file(os.path.join(CORPUS, model), bpy.context.scene)
    spec = mujoco.MjSpec.from_file(os.path.join(CORPUS, model))
    spec.compile()  # gives every element its id
    errors, checked = [], 0
    for kind, listname in SPEC_LISTS.items():
        for element in getattr(spec, listname):
            if kind == "body" and element.name == "world":
                continue
            block = result.by_id[(kind, element.id)]
            copy = fresh(kind)
            spec_io.props_to_element(getattr(block.mujoco, kind), copy, kind)
            for attr in KINDS[kind].editable:
                a, b = spec_io.get_attr(element, attr), spec_io.get_attr(copy, attr)
                if attr.type in ("ref", "refvec"):
                    a, b = spec_io.from_mujoco(attr, a), spec_io.from_mujoco(attr, b)
                if as_comparable(a) != as_comparable(b):
                    errors.append(f"{kind} {element.name!r}.{attr.name}: {a!r} -> {b!r}")
                checked += 1
    assert checked and not errors, f"{len(errors)} differences: {errors[:5]}"


@needs_corpus
def test_texture_pixels_survive_saving_the_blend_file(clean_scene, tmp_path):
    result = build.import_file(os.path.join(CORPUS, "pip/dm_control/suite/cartpole.xml"),
                               bpy.context.scene)
    images = [b for (kind, _), b in result.by_id.items() if kind == "texture"]
    assert images
    before = {i.name: np.array(i.pixels[:64]) for i in images}
    path = str(tmp_path / "saved.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    for name, pixels in before.items():
        image = bpy.data.images[name]
        assert image.packed_file is not None
        assert np.allclose(np.array(image.pixels[:64]), pixels, atol=1 / 255)


@needs_corpus
def test_textures_are_packed_pngs_decoded_when_first_used(clean_scene, tmp_path):
    """An imported texture is MuJoCo's bytes packed as an uncompressed PNG: nothing
    decodes it on import or on a scan (the painted check reads the packed file); its
    pixels are MuJoCo's. The first save compresses it; a reopened file still exports
    the textures by reference (not painted) and shows the same pixels."""
    path = os.path.join(CORPUS, "menagerie/skydio_x2/scene.xml")
    result = build.import_file(path, bpy.context.scene)
    images = {block.name: block for (kind, _), block in result.by_id.items() if kind == "texture"}
    assert len(images) == 3
    for image in images.values():
        assert image.packed_file is not None and image.source == "FILE"
        assert not image.has_data  # (not decoded)
    painted = scene_scan.Scanner(result.root, [], textures=True).blender_textures  # (the export's scan)
    assert painted == {} and not any(image.has_data for image in images.values())
    model = mujoco.MjModel.from_xml_path(path)
    sizes = {name: image.packed_file.size for name, image in images.items()}
    pixels = {}
    for name, image in images.items():
        t = next(t for t in range(model.ntex) if result.by_id[("texture", t)] is image)
        w, h, c = int(model.tex_width[t]), int(model.tex_height[t]), int(model.tex_nchannel[t])
        tex = model.tex_data[model.tex_adr[t]:model.tex_adr[t] + w * h * c].reshape(h, w, c)
        shown = materials.image_bytes(image)[..., :c]
        assert np.array_equal(shown, tex), name
        pixels[name] = shown
    saved = str(tmp_path / "saved.blend")
    bpy.ops.wm.save_as_mainfile(filepath=saved)
    bpy.ops.wm.open_mainfile(filepath=saved)
    for name, size in sizes.items():
        image = bpy.data.images[name]
        assert image.packed_file.size < size  # compressed on the first save
        assert not scene_scan._painted(image, None)
        assert np.array_equal(materials.image_bytes(image)[..., :pixels[name].shape[2]], pixels[name])
    out = tmp_path / "out"
    out.mkdir()
    bpy.ops.export_scene.mjcf(filepath=str(out / "model.xml"))
    assert sorted(os.listdir(out)) == ["model.xml"]  # no texture written from pixels


def test_mujoco_warnings_are_passed_on(clean_scene, tmp_path):
    text = TWO_TORSOS.replace('<site name="tip" pos="0 0 0.2"/>', '<site name="tip" pos="nan 0 0.2"/>')
    result = build.import_file(write_model(tmp_path, text), bpy.context.scene)
    assert any("NaN" in w for w in result.warnings), result.warnings

"""File > Export > MuJoCo: what MuJoCo compiles from the written file is the model."""

import os

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, corpus_params, needs_corpus
from test_scan import KNOWN, model_differences

from mjblend.components import values
from mjblend.importer import build


pytestmark = needs_corpus  # every test here starts from a corpus model


def export(path, **options):
    result = bpy.ops.export_scene.mjcf(filepath=str(path), **options)
    assert result == {"FINISHED"}
    return str(path)


@pytest.mark.parametrize("model", corpus_params())
def test_import_export_round_trip_is_exact(model, clean_scene, tmp_path, request):
    if model in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[model], strict=True))
    source = os.path.join(CORPUS, model)
    assert bpy.ops.import_scene.mjcf(filepath=source) == {"FINISHED"}
    written = export(tmp_path / "exported.xml")
    differences = model_differences(mujoco.MjModel.from_xml_path(written),
                                    mujoco.MjModel.from_xml_path(source))
    assert not differences, f"{model}: {differences[:8]}"


def test_export_is_stable(clean_scene, tmp_path):
    """import -> export -> import -> export: the second file is byte for byte the first."""
    bpy.ops.import_scene.mjcf(filepath=os.path.join(CORPUS, "mujoco_model/model/humanoid/humanoid.xml"))
    one = export(tmp_path / "one.xml")
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.import_scene.mjcf(filepath=one)
    two = export(tmp_path / "two.xml")
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.import_scene.mjcf(filepath=two)
    three = export(tmp_path / "three.xml")
    assert open(two, encoding="utf-8").read() == open(three, encoding="utf-8").read()


def test_an_edited_value_exports_as_typed(clean_scene, tmp_path):
    result = build.import_file(os.path.join(CORPUS, "mujoco_model/model/humanoid/humanoid.xml"),
                               bpy.context.scene)
    geom = result.by_id[("geom", 1)]
    geom.mujoco.geom.mass = 0.3  # what typing 0.3 into the panel does
    text = open(export(tmp_path / "edited.xml"), encoding="utf-8").read()
    assert 'mass="0.3"' in text and "0.30000001" not in text
    compiled = mujoco.MjModel.from_xml_path(str(tmp_path / "edited.xml"))
    assert compiled.body_mass[int(compiled.geom_bodyid[1])] > 0


def test_moving_an_object_moves_the_element_exactly(clean_scene, tmp_path):
    path = os.path.join(CORPUS, "pip/gymnasium/envs/mujoco/assets/ant.xml")
    result = build.import_file(path, bpy.context.scene)
    original = mujoco.MjModel.from_xml_path(path)
    body = result.by_id[("body", 1)]
    typed = values.shortest_float32(body.location.x + 0.25)
    body.location.x = typed
    moved = mujoco.MjModel.from_xml_path(export(tmp_path / "moved.xml"))
    assert moved.body_pos[1][0] == typed
    assert np.array_equal(moved.body_pos[1][1:], original.body_pos[1][1:])
    assert np.array_equal(moved.body_pos[2:], original.body_pos[2:])


def test_two_copies_of_one_robot_get_prefixed_names(clean_scene, tmp_path):
    path = os.path.join(CORPUS, "pip/gymnasium/envs/mujoco/assets/ant.xml")
    first = build.import_file(path, bpy.context.scene).root
    second = build.import_file(path, bpy.context.scene).root
    second.location.x = 3.0
    single = mujoco.MjModel.from_xml_path(path)
    both = mujoco.MjModel.from_xml_path(export(tmp_path / "two_ants.xml"))
    assert both.nbody == 2 * (single.nbody - 1) + 1 and both.nu == 2 * single.nu
    names = {mujoco.mj_id2name(both, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(1, both.nbody)}
    assert any(n.startswith(first.name.replace(" ", "_")) for n in names if n)
    assert len([n for n in names if n]) == len({n for n in names if n})
    # each copy stands where its root does: the second 3 m along x
    torso = mujoco.mj_name2id(single, mujoco.mjtObj.mjOBJ_BODY, "torso")
    copies = [i for i in range(1, both.nbody) if (mujoco.mj_id2name(both, mujoco.mjtObj.mjOBJ_BODY, i)
                                                 or "").endswith("torso")]
    data = mujoco.MjData(both)
    mujoco.mj_kinematics(both, data)
    xs = sorted(float(data.xpos[i][0]) for i in copies)
    assert len(copies) == 2 and torso > 0
    assert xs[1] - xs[0] == pytest.approx(3.0, abs=1e-6)


def test_authored_from_scratch_exports_what_was_set(clean_scene, tmp_path):
    """A two-link arm made with properties only (no import) exports and compiles."""
    scene = bpy.context.scene

    def element(kind, name, parent=None, data=None):
        obj = bpy.data.objects.new(name, data)
        scene.collection.objects.link(obj)
        obj.mujoco.kind, obj.mujoco.name = kind.upper(), name
        obj.parent = parent
        obj.rotation_mode = "QUATERNION"
        return obj

    root = element("model", "arm")
    upper = element("body", "upper", root)
    upper.location = (0, 0, 1)
    hinge = element("joint", "shoulder", upper)
    hinge.mujoco.joint.type = "HINGE"
    hinge.rotation_quaternion = (0.7071068, 0.7071068, 0, 0)  # axis along -Y
    box = element("geom", "upper_box", upper)
    box.mujoco.geom.type = "BOX"
    box.mujoco.geom.size = (0.05, 0.05, 0.2)
    mesh = bpy.data.meshes.new("tetra")
    mesh.from_pydata([(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)], [],
                     [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)])
    asset = root.mujoco.model.assets.add()
    asset.block = mesh
    mesh.mujoco.kind, mesh.mujoco.name = "MESH", "tetra"  # its geometry is the Blender mesh
    tip = element("geom", "tip", upper)
    tip.mujoco.geom.type = "MESH"
    tip.mujoco.geom.meshname = mesh
    tip.location = (0, 0, 0.25)
    motor = element("actuator", "motor", root)
    motor.mujoco.actuator.trntype = "JOINT"
    motor.mujoco.actuator.target = hinge
    motor.mujoco.actuator.gear = (2.5, 0, 0, 0, 0, 0)
    sensor = element("sensor", "angle", root)
    sensor.mujoco.sensor.type = "JOINTPOS"
    sensor.mujoco.sensor.objtype = "JOINT"
    sensor.mujoco.sensor.objname = hinge
    model = mujoco.MjModel.from_xml_path(export(tmp_path / "arm.xml"))
    assert (tmp_path / "assets" / "tetra.stl").exists()
    assert (model.nbody, model.njnt, model.ngeom, model.nmesh, model.nu, model.nsensor) == (2, 1, 2, 1, 1, 1)
    assert model.mesh_vertnum[0] == 4
    assert model.actuator_gear[0][0] == 2.5
    assert np.allclose(model.jnt_axis[0], (0, -1, 0), atol=1e-6)
    box_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "upper_box")
    assert model.geom_size[box_id].tolist() == [0.05, 0.05, 0.2]  # typed values, exactly


@pytest.mark.parametrize("case", ["joint_outside_body", "deleted_joint", "mesh_geom_without_mesh",
                                  "unwritable_folder"])
def test_bad_states_fail_clearly_and_write_nothing(case, clean_scene, tmp_path):
    path = os.path.join(CORPUS, "pip/gymnasium/envs/mujoco/assets/ant.xml")
    result = build.import_file(path, bpy.context.scene)
    target = tmp_path / "out"
    target.mkdir()
    expected = {"joint_outside_body": "joint", "deleted_joint": "deleted",
                "mesh_geom_without_mesh": "mesh", "unwritable_folder": "cannot write"}[case]
    if case == "joint_outside_body":
        result.by_id[("joint", 1)].parent = result.root
    elif case == "deleted_joint":
        bpy.data.objects.remove(result.by_id[("joint", 1)])
    elif case == "mesh_geom_without_mesh":
        result.by_id[("geom", 1)].mujoco.geom.type = "MESH"
    folder = target
    if case == "unwritable_folder":  # /proc refuses new files even to root
        folder = "/proc/self"
    with pytest.raises(RuntimeError, match=expected):
        bpy.ops.export_scene.mjcf(filepath=os.path.join(folder, "model.xml"))
    assert os.listdir(target) == []


def test_a_mesh_edited_in_blender_is_written_as_stl(clean_scene, tmp_path):
    path = os.path.join(CORPUS, "menagerie/robotiq_2f85/scene.xml")
    result = build.import_file(path, bpy.context.scene)
    mesh = next(b for (kind, _), b in result.by_id.items() if kind == "mesh")
    name = mesh.mujoco.name
    untouched = [b.mujoco.name for (kind, _), b in result.by_id.items() if kind == "mesh" and b != mesh]
    moved = np.array(mesh.vertices[0].co) + (0.01, 0, 0)
    mesh.vertices[0].co = moved
    written = export(tmp_path / "edited.xml")
    text = open(written, encoding="utf-8").read()
    stl = tmp_path / "assets" / f"{name}.stl"
    assert stl.exists() and f'file="assets/{name}.stl"' in text
    assert 'vertex="' not in text  # the geometry went to the file, not inline
    assert len(untouched) > 1 and untouched[0] in text
    # MuJoCo reads the written STL: re-import it and find the moved vertex
    bpy.ops.wm.read_homefile(use_empty=True)
    again = build.import_file(written, bpy.context.scene)
    reread = next(b for (kind, _), b in again.by_id.items()
                  if kind == "mesh" and b.mujoco.name == name)
    coords = np.array([v.co for v in reread.vertices])
    assert np.min(np.linalg.norm(coords - np.float32(moved), axis=1)) < 1e-6


def test_copy_assets_copies_the_files_next_to_the_model(clean_scene, tmp_path):
    bpy.ops.import_scene.mjcf(filepath=os.path.join(CORPUS, "menagerie/robotiq_2f85/scene.xml"))
    written = export(tmp_path / "copied.xml", copy_assets=True)
    assert (tmp_path / "assets").is_dir() and len(os.listdir(tmp_path / "assets")) > 3
    # every mesh file is in the model's own meshdir="assets": it is written so
    assert 'meshdir="assets"' in open(written, encoding="utf-8").read()
    moved_away = tmp_path.parent / "moved"
    os.rename(tmp_path, moved_away)
    model = mujoco.MjModel.from_xml_path(str(moved_away / os.path.basename(written)))
    original = mujoco.MjModel.from_xml_path(os.path.join(CORPUS, "menagerie/robotiq_2f85/scene.xml"))
    assert model_differences(model, original) == []


def test_zip_and_compiled_model_exports(clean_scene, tmp_path):
    source = os.path.join(CORPUS, "menagerie/robotiq_2f85/scene.xml")
    bpy.ops.import_scene.mjcf(filepath=source)
    zipped = export(tmp_path / "model.zip", file_format="ZIP", save_mjb=True)
    assert sorted(os.listdir(tmp_path)) == ["model.mjb", "model.zip"]  # the assets are inside
    elsewhere = tmp_path.parent / "elsewhere.zip"
    os.replace(zipped, elsewhere)  # self-contained: loads away from the original files' paths
    unzipped = mujoco.MjSpec.from_zip(str(elsewhere)).compile()
    assert model_differences(unzipped, mujoco.MjModel.from_xml_path(source)) == []
    compiled = mujoco.MjModel.from_binary_path(str(tmp_path / "model.mjb"))
    assert model_differences(compiled, mujoco.MjModel.from_xml_path(source)) == []


def test_plain_objects_parent_inverses_and_euler_rotations_are_followed(clean_scene, tmp_path):
    result = build.import_file(os.path.join(CORPUS, "pip/gymnasium/envs/mujoco/assets/ant.xml"),
                               bpy.context.scene)
    body = result.by_id[("body", 1)]
    geom = result.by_id[("geom", 1)]  # the torso sphere, in body 1
    holder = bpy.data.objects.new("plain empty", None)  # not a MuJoCo element
    bpy.context.scene.collection.objects.link(holder)
    holder.parent = body
    holder.location = (0.1, 0.0, 0.0)
    world_before = np.array(geom.matrix_world)
    geom.parent = holder
    geom.matrix_parent_inverse = holder.matrix_world.inverted()  # Ctrl+P keeps it in place
    geom.rotation_mode = "XYZ"
    geom.rotation_euler = (0.0, 0.0, 0.5)
    bpy.context.view_layer.update()
    model = mujoco.MjModel.from_xml_path(export(tmp_path / "moved.xml"))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    world = np.array(geom.matrix_world)
    assert np.allclose(data.geom_xpos[1], world[:3, 3], atol=1e-6)
    assert np.allclose(data.geom_xmat[1].reshape(3, 3), world[:3, :3], atol=1e-6)
    assert not np.allclose(world, world_before)


def test_a_compile_error_selects_the_object_it_names(clean_scene, tmp_path):
    result = build.import_file(os.path.join(CORPUS, "pip/gymnasium/envs/mujoco/assets/ant.xml"),
                               bpy.context.scene)
    geom = result.by_id[("geom", 1)]
    geom.mujoco.name = "broken"
    geom.mujoco.geom.mass = -1.0  # MuJoCo refuses negative masses
    with pytest.raises(RuntimeError, match="negative"):
        bpy.ops.export_scene.mjcf(filepath=str(tmp_path / "model.xml"))
    assert geom.select_get() and bpy.context.view_layer.objects.active == geom
    assert os.listdir(tmp_path) == []


def test_an_edited_mesh_with_uvs_is_written_as_obj_and_keeps_them(clean_scene, tmp_path):
    result = build.import_file(os.path.join(CORPUS, "menagerie/skydio_x2/scene.xml"), bpy.context.scene)
    mesh = next(b for (kind, _), b in result.by_id.items() if kind == "mesh")
    name = mesh.mujoco.name
    assert mesh.uv_layers, "the Skydio body mesh has texture coordinates"
    mesh.vertices[0].co.x += 0.01
    uv = np.empty(len(mesh.loops) * 2, np.float32)
    mesh.uv_layers.active.data.foreach_get("uv", uv)
    written = export(tmp_path / "edited.xml")
    assert (tmp_path / "assets" / f"{name}.obj").exists()
    bpy.ops.wm.read_homefile(use_empty=True)
    again = build.import_file(written, bpy.context.scene)
    reread = next(b for (kind, _), b in again.by_id.items() if kind == "mesh" and b.mujoco.name == name)
    uv2 = np.empty(len(reread.loops) * 2, np.float32)
    reread.uv_layers.active.data.foreach_get("uv", uv2)
    # the same set of UVs comes back (corners may be ordered differently)
    assert np.allclose(np.unique(uv.reshape(-1, 2).round(5), axis=0),
                       np.unique(uv2.reshape(-1, 2).round(5), axis=0), atol=1e-5)


# ------------------------------------------------------------------ textures

def _paint(image, rows, cols, rgb):
    """Paint a rectangle of an image (rows counted from the top, as in the file)."""
    width, height = image.size
    pixels = np.empty(width * height * 4, np.float32)
    image.pixels.foreach_get(pixels)
    top_down = pixels.reshape(height, width, 4)[::-1]
    top_down[rows, cols, :3] = np.asarray(rgb, np.float32) / 255
    image.pixels.foreach_set(top_down[::-1].ravel())


def _tex_pixels(model, name):
    tex = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_TEXTURE, name)
    assert tex >= 0, name
    h, w, c = model.tex_height[tex], model.tex_width[tex], model.tex_nchannel[tex]
    adr = model.tex_adr[tex]
    return model.tex_data[adr:adr + h * w * c].reshape(h, w, c)


def _image_bytes(image, channels):
    """An image's pixels as MuJoCo's bytes: row 0 on top."""
    width, height = image.size
    pixels = np.empty(width * height * 4, np.float32)
    image.pixels.foreach_get(pixels)
    top_down = pixels.reshape(height, width, 4)[::-1, :, :channels]
    return (top_down * 255 + 0.5).astype(np.uint8)


def test_painted_textures_are_written_as_png(clean_scene, tmp_path):
    """A painted file texture and a painted builtin skybox are written as PNG files;
    MuJoCo compiles the written file to the painted pixels. An untouched texture
    keeps its builtin pattern."""
    source = os.path.join(CORPUS, "menagerie/skydio_x2/scene.xml")
    result = build.import_file(source, bpy.context.scene)
    textures = {t.mujoco.name: t for (kind, _), t in result.by_id.items() if kind == "texture"}
    painted = textures["X2_lowpoly_texture_SpinningProps_1024"]
    sky = next(t for name, t in textures.items() if not name)  # the nameless skybox, 512 x 3072
    _paint(painted, slice(10, 60), slice(100, 300), (255, 0, 7))
    _paint(sky, slice(600, 700), slice(0, 512), (3, 200, 9))  # inside the second face (-X)
    written = export(tmp_path / "painted.xml")
    text = open(written, encoding="utf-8").read()
    pngs = sorted(os.listdir(tmp_path / "assets"))
    # the nameless skybox is given its image's name ("texture 1"), its file that name
    assert pngs == sorted(["X2_lowpoly_texture_SpinningProps_1024.png",
                           sky.name.replace(" ", "_") + ".png"])
    # skydio's own texturedir="assets" is kept: every texture file is in it
    assert 'texturedir="assets"' in text and 'file="X2_lowpoly_texture_SpinningProps_1024.png"' in text
    assert 'builtin="gradient"' not in text and 'builtin="checker"' in text  # groundplane untouched
    model = mujoco.MjModel.from_xml_path(written)
    original = mujoco.MjModel.from_xml_path(source)
    got = _tex_pixels(model, "X2_lowpoly_texture_SpinningProps_1024")
    assert np.array_equal(got, _image_bytes(painted, 3))
    assert np.array_equal(got[10:60, 100:300], np.broadcast_to([255, 0, 7], (50, 200, 3)))
    assert not np.array_equal(got, _tex_pixels(original, "X2_lowpoly_texture_SpinningProps_1024"))
    sky_written = _tex_pixels(model, sky.name)
    assert sky_written.shape == (3072, 512, 3)
    assert np.array_equal(sky_written, _image_bytes(sky, 3))
    assert np.array_equal(_tex_pixels(model, "groundplane"), _tex_pixels(original, "groundplane"))
    # the rest of the model is the original
    assert model.nmesh == original.nmesh and np.array_equal(model.mesh_vert, original.mesh_vert)


def test_an_unpainted_import_writes_no_png(clean_scene, tmp_path):
    bpy.ops.import_scene.mjcf(filepath=os.path.join(CORPUS, "menagerie/skydio_x2/scene.xml"))
    export(tmp_path / "untouched.xml")
    assert sorted(os.listdir(tmp_path)) == ["untouched.xml"]


def test_a_texture_made_in_blender_is_written_as_png(clean_scene, tmp_path):
    result = build.import_file(os.path.join(CORPUS, "pip/gymnasium/envs/mujoco/assets/ant.xml"),
                               bpy.context.scene)
    image = bpy.data.images.new("made here", 8, 4, alpha=True)
    rng = np.random.default_rng(1)
    image.pixels.foreach_set((rng.integers(0, 256, 8 * 4 * 4) / 255).astype(np.float32))
    image.mujoco.kind, image.mujoco.name = "TEXTURE", "painted_in_blender"
    image.mujoco.texture.type = "2D"
    image.mujoco.texture.nchannel = 4
    result.root.mujoco.model.assets.add().block = image
    written = export(tmp_path / "made.xml")
    text = open(written, encoding="utf-8").read()
    assert 'file="assets/painted_in_blender.png"' in text  # ant has no texturedir: relative path
    model = mujoco.MjModel.from_xml_path(written)
    assert np.array_equal(_tex_pixels(model, "painted_in_blender"), _image_bytes(image, 4))


def test_written_files_never_replace_unrelated_ones(clean_scene, tmp_path):
    """An existing file of the same name that the replaced MJCF does not use is left
    alone (the new file is numbered); exporting over the same MJCF again replaces
    the files it wrote, instead of numbering again."""
    result = build.import_file(os.path.join(CORPUS, "menagerie/skydio_x2/scene.xml"),
                               bpy.context.scene)
    image = next(t for (kind, _), t in result.by_id.items()
                 if kind == "texture" and t.mujoco.name == "groundplane")
    (tmp_path / "assets").mkdir()
    unrelated = tmp_path / "assets" / "groundplane.png"
    unrelated.write_bytes(b"not ours")
    _paint(image, slice(0, 5), slice(0, 5), (9, 9, 9))
    written = export(tmp_path / "scene.xml")
    assert unrelated.read_bytes() == b"not ours"
    # the original 2D texture stays outside assets/: no texturedir, paths from the MJCF
    assert 'file="assets/groundplane_2.png"' in open(written, encoding="utf-8").read()
    _paint(image, slice(0, 5), slice(0, 5), (200, 9, 9))
    export(tmp_path / "scene.xml")  # again, over its own earlier output
    assert sorted(os.listdir(tmp_path / "assets")) == ["groundplane.png", "groundplane_2.png"]
    assert unrelated.read_bytes() == b"not ours"
    model = mujoco.MjModel.from_xml_path(written)
    assert np.array_equal(_tex_pixels(model, "groundplane")[0, 0], [200, 9, 9])

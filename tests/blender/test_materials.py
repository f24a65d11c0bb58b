"""importer/materials.py: the looks of imported elements, checked against MuJoCo itself.

What MuJoCo renders an element with is taken from MuJoCo's own visualiser:
`mjv_updateScene` fills an mjvScene whose mjvGeoms carry the rgba the renderer
draws (src/engine/engine_vis_visualize.c, setMaterial), with every group made
visible. Elements of alpha 0 are left out of that scene; for them the
documented rule (XMLreference, geom/material: the element's rgba wins when it
differs from the default 0.5 0.5 0.5 1) is applied here directly.

`test_textures_map_like_mujoco` renders textured boxes, a plane, a sphere and a
skybox with MuJoCo's OpenGL renderer (EGL, in a subprocess) and with Cycles,
lit by emission only, and compares the pictures.
"""

import functools
import os
import subprocess
import sys
import textwrap

import bpy
import mathutils
import mujoco
import numpy as np
import pytest
from helpers import corpus_params, load_corpus_spec, needs_corpus

from mjblend.geometry import materials
from mjblend.components import stored_keys
from mjblend.geometry.materials import Looks

KINDS = {"geom": mujoco.mjtObj.mjOBJ_GEOM, "site": mujoco.mjtObj.mjOBJ_SITE,
         "tendon": mujoco.mjtObj.mjOBJ_TENDON, "flex": mujoco.mjtObj.mjOBJ_FLEX,
         "skin": mujoco.mjtObj.mjOBJ_SKIN}


@functools.lru_cache(maxsize=None)
def corpus_model(path):
    return load_corpus_spec(path).compile()


def documented_rgba(model, kind, index):
    """XMLreference (geom/material, geom/rgba): the element's rgba unless it is the
    default 0.5 0.5 0.5 1 and a material is given."""
    own = np.asarray(getattr(model, f"{kind}_rgba")[index], np.float32)
    mat = int(getattr(model, f"{kind}_matid")[index])
    if mat >= 0 and np.array_equal(own, np.float32([0.5, 0.5, 0.5, 1])):
        return np.asarray(model.mat_rgba[mat], np.float32)
    return own


def scene_rgba(model):
    """{(mjtObj, id): rgba} as MuJoCo's visualiser hands them to the renderer."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    opt = mujoco.MjvOption()
    for groups in (opt.geomgroup, opt.sitegroup, opt.tendongroup, opt.flexgroup, opt.skingroup):
        groups[:] = 1
    opt.flags[mujoco.mjtVisFlag.mjVIS_FLEXFACE] = 1
    scene = mujoco.MjvScene(model, maxgeom=50000)
    mujoco.mjv_updateScene(model, data, opt, mujoco.MjvPerturb(), mujoco.MjvCamera(),
                           mujoco.mjtCatBit.mjCAT_ALL, scene)
    out = {}
    for i in range(scene.ngeom):
        geom = scene.geoms[i]
        out.setdefault((int(geom.objtype), int(geom.objid)), np.array(geom.rgba, np.float32))
    return out


def image_array(image):
    """(height, width, 4) float32, row 0 on top (as the picture looks)."""
    px = np.empty(len(image.pixels), np.float32)
    image.pixels.foreach_get(px)
    w, h = image.size
    return px.reshape(h, w, 4)[::-1]


def upstream(socket):
    """Every node feeding `socket`, directly or not."""
    found, todo = [], [link.from_node for link in socket.links]
    while todo:
        node = todo.pop()
        if node in found:
            continue
        found.append(node)
        for sock in node.inputs:
            todo.extend(link.from_node for link in sock.links)
    return found


def principled(material):
    return next(n for n in material.node_tree.nodes if n.bl_idname == "ShaderNodeBsdfPrincipled")


# ----------------------------------------------------------------------------- colours


@pytest.mark.parametrize("path", corpus_params())
def test_element_colors_are_what_mujoco_renders(clean_scene, path):
    model = corpus_model(path)
    looks = Looks(model)
    drawn = scene_rgba(model)
    checked = 0
    for kind, objtype in KINDS.items():
        for i in range(getattr(model, "n" + kind)):
            expected = documented_rgba(model, kind, i)
            if kind == "tendon" and model.tendon_matid[i] < 0 and \
                    np.array_equal(expected, np.float32([0.5, 0.5, 0.5, 1])):
                pass  # a default grey tendon is drawn redder as it nears its limit: state, not looks
            elif (int(objtype), i) in drawn:
                np.testing.assert_array_equal(drawn[int(objtype), i], expected, err_msg=f"{kind} {i}")
            else:  # MuJoCo skips invisible elements
                assert expected[3] == 0 or kind == "tendon", f"{kind} {i} missing from MuJoCo's scene"
            material = looks.element_material(kind, i)
            bsdf = principled(material)
            label = f"{path} {kind} {i} -> {material.name}"
            np.testing.assert_allclose(bsdf.inputs["Base Color"].default_value, expected, atol=1e-6,
                                       err_msg=label)
            np.testing.assert_allclose(material.diffuse_color, expected, atol=1e-6, err_msg=label)
            assert bsdf.inputs["Alpha"].default_value == pytest.approx(expected[3], abs=1e-6)
            checked += 1
    assert checked == sum(getattr(model, "n" + k) for k in KINDS)


def test_authored_default_rgba_loses_to_the_material(clean_scene):
    """An rgba written as the default 0.5 0.5 0.5 1 still shows the material (MuJoCo compares values)."""
    model = mujoco.MjModel.from_xml_string("""
    <mujoco><asset><material name="red" rgba="1 0 0 1" emission="0.3" shininess="0" specular="0.2"
        reflectance="0.2"/></asset>
      <worldbody>
        <geom name="authored" size=".1" material="red" rgba="0.5 0.5 0.5 1"/>
        <geom name="own" size=".1" material="red" rgba="0 0 1 0.5" pos="1 0 0"/>
        <geom name="plain" size=".1" rgba="0 1 0 1" pos="2 0 0"/>
        <geom name="plain2" size=".1" rgba="0 1 0 1" pos="3 0 0"/>
      </worldbody></mujoco>""")
    looks = Looks(model)
    drawn = scene_rgba(model)
    assert list(drawn[int(mujoco.mjtObj.mjOBJ_GEOM), 0]) == [1, 0, 0, 1]
    assert looks.geom_material(0) is looks.material(0)
    own = looks.geom_material(1)
    assert own is not looks.material(0) and own[stored_keys.LOOK] == "override"
    assert list(principled(own).inputs["Base Color"].default_value) == [0, 0, 1, 0.5]
    assert own.surface_render_method == "BLENDED" and looks.material(0).surface_render_method == "DITHERED"
    assert looks.geom_material(2) is looks.geom_material(3)  # equal rgba: one shared material
    bsdf = principled(looks.material(0))
    assert bsdf.inputs["Emission Strength"].default_value == pytest.approx(0.3)
    assert bsdf.inputs["Roughness"].default_value == pytest.approx(1.0)     # shininess 0
    assert bsdf.inputs["Specular IOR Level"].default_value == pytest.approx(0.2)
    ior = bsdf.inputs["Coat IOR"].default_value
    assert ((ior - 1) / (ior + 1)) ** 2 == pytest.approx(0.2, rel=1e-5)    # Fresnel F0 = reflectance
    assert materials.shininess_to_roughness(0.5) == pytest.approx((2 / 66) ** 0.25)


# ----------------------------------------------------------------------------- textures


@pytest.mark.parametrize("path", corpus_params())
def test_textures_become_images_with_mujocos_pixels(clean_scene, path):
    model = corpus_model(path)
    looks = Looks(model)
    for t in range(model.ntex):
        image = looks.texture_image(t)
        w, h, c = model.tex_width[t], model.tex_height[t], model.tex_nchannel[t]
        # cube/skybox: MuJoCo's strip of six w x w faces (+X -X +Y -Y +Z -Z) from the top,
        # or one face when height == width
        assert tuple(image.size) == (w, h)
        assert image.get(stored_keys.PACK_ON_SAVE) == 1  # packed on the first save (app/handlers.py)
        srgb = model.tex_colorspace[t] == mujoco.mjtColorSpace.mjCOLORSPACE_SRGB
        assert (image.colorspace_settings.name == "sRGB") == srgb
        tex = model.tex_data[model.tex_adr[t]:model.tex_adr[t] + w * h * c].reshape(h, w, c)
        px = np.rint(image_array(image) * 255).astype(np.uint8)
        # orientation, spelled out: tex_data row 0 is the image's top row (Blender's last)
        raw = np.empty(len(image.pixels), np.float32)
        image.pixels.foreach_get(raw)
        top_left = raw.reshape(h, w, 4)[h - 1, 0, :3]
        np.testing.assert_array_equal(np.rint(top_left * 255), tex[0, 0, :3])
        for r, col in ((0, w - 1), (h - 1, 0), (h // 3, w // 2), (h - 1, w - 1)):
            np.testing.assert_array_equal(px[r, col, :3], tex[r, col, :3], err_msg=f"tex {t} ({r}, {col})")
        np.testing.assert_array_equal(px[..., :3], tex[..., :3], err_msg=f"texture {t}")


@pytest.mark.parametrize("path", corpus_params())
def test_textured_materials_wire_the_image(clean_scene, path):
    model = corpus_model(path)
    looks = Looks(model)
    textured = 0
    for m in range(model.nmat):
        tex = model.mat_texid[m][mujoco.mjtTextureRole.mjTEXROLE_RGB]
        material = looks.material(m)
        feeding = upstream(principled(material).inputs["Base Color"])
        images = [n for n in feeding if n.bl_idname == "ShaderNodeTexImage"]
        if tex < 0:
            assert not images
            continue
        textured += 1
        assert [n.image for n in images] == [looks.texture_image(tex)]
        if model.tex_type[tex] == mujoco.mjtTexture.mjTEXTURE_2D:
            mapping = next(n for n in feeding if n.name == "MuJoCo texrepeat")
            k = 0.5 if model.mat_texuniform[m] else 1.0
            rx, ry = model.mat_texrepeat[m]
            np.testing.assert_allclose(mapping.inputs["Scale"].default_value[:2], (k * rx, -k * ry))
        else:
            assert any(n.bl_idname == "ShaderNodeGroup" and n.node_tree.name.startswith(materials.CUBE_GROUP)
                       for n in feeding)
    assert textured == sum(model.mat_texid[m][1] >= 0 for m in range(model.nmat))


@pytest.mark.parametrize("path", corpus_params())
def test_skybox_becomes_the_world(clean_scene, path):
    model = corpus_model(path)
    looks = Looks(model)
    skyboxes = [t for t in range(model.ntex) if model.tex_type[t] == mujoco.mjtTexture.mjTEXTURE_SKYBOX]
    world = looks.world()
    if not skyboxes:
        assert world is None
        return
    assert world is looks.world()
    output = next(n for n in world.node_tree.nodes if n.bl_idname == "ShaderNodeOutputWorld")
    images = [n.image for n in upstream(output.inputs["Surface"]) if n.bl_idname == "ShaderNodeTexImage"]
    assert images == [looks.texture_image(skyboxes[0])]


@pytest.mark.parametrize("path", corpus_params())
def test_datablocks_are_new_and_cached(clean_scene, path):
    model = corpus_model(path)
    # a material already named like the model's own must not be reused
    for m in range(model.nmat):
        bpy.data.materials.new(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_MATERIAL, m) or f"material {m}")
    before_mats, before_imgs = set(bpy.data.materials), set(bpy.data.images)
    looks = Looks(model)
    made = [looks.element_material(k, i) for k in KINDS for i in range(getattr(model, "n" + k))]
    made += [looks.material(m) for m in range(model.nmat)]
    images = [looks.texture_image(t) for t in range(model.ntex)]
    new_mats, new_imgs = set(bpy.data.materials) - before_mats, set(bpy.data.images) - before_imgs
    assert set(made) == new_mats and set(images) == new_imgs
    assert len(new_imgs) == model.ntex
    assert len(new_mats) == len(set(made))
    # cached: asking again gives the same datablocks and makes nothing
    assert [looks.element_material(k, i) for k in KINDS for i in range(getattr(model, "n" + k))] \
        == made[:len(made) - model.nmat]
    assert [looks.material(m) for m in range(model.nmat)] == made[len(made) - model.nmat:]
    assert [looks.texture_image(t) for t in range(model.ntex)] == images
    assert len(bpy.data.materials) == len(before_mats) + len(new_mats)
    assert len(bpy.data.images) == len(before_imgs) + len(new_imgs)


@needs_corpus
def test_names_given_or_mujocos(clean_scene):
    model = corpus_model("pip/gymnasium/envs/mujoco/assets/ant.xml")
    looks = Looks(model, names={("material", 0): "my plane", ("texture", 1): "my geom texture"})
    assert looks.material(0).name == "my plane"
    assert looks.material(1).name == "geom"
    assert looks.texture_image(1).name == "my geom texture"
    assert looks.texture_image(0).name == "texture 0"  # the unnamed skybox


@needs_corpus
def test_texture_by_reference_is_decoded(clean_scene):
    """compiler passthrough="textures" leaves PNGs by reference (tex_adr -1): mj_loadTexture decodes them."""
    spec = load_corpus_spec("menagerie/skydio_x2/scene.xml")
    embedded = spec.compile()
    spec.compiler.passthrough = mujoco.mjtPassthrough.mjPASSTHROUGH_TEXTURES
    referenced = spec.compile()
    tex = next(t for t in range(referenced.ntex) if referenced.tex_adr[t] < 0)
    image = Looks(referenced).texture_image(tex)
    w, h, c = embedded.tex_width[tex], embedded.tex_height[tex], embedded.tex_nchannel[tex]
    expected = embedded.tex_data[embedded.tex_adr[tex]:embedded.tex_adr[tex] + w * h * c].reshape(h, w, c)
    np.testing.assert_array_equal(np.rint(image_array(image) * 255).astype(np.uint8)[..., :3], expected)


def test_rgba_texture_and_pbr_layers(clean_scene):
    """A 4-channel texture brings alpha; roughness/metallic/normal layers are wired and scaled."""
    spec = mujoco.MjSpec()
    rgba = np.zeros((4, 4, 4), np.uint8)
    rgba[..., 3] = np.arange(16).reshape(4, 4) * 16
    gray = np.full((4, 4, 1), 200, np.uint8)
    for name, data in (("color", rgba), ("rough", gray), ("metal", gray), ("normal", rgba[..., :3])):
        tex = spec.add_texture(name=name, type=mujoco.mjtTexture.mjTEXTURE_2D, width=4, height=4,
                               nchannel=data.shape[2])
        tex.data = data.tobytes()
    roles = [""] * int(mujoco.mjtTextureRole.mjNTEXROLE)
    roles[mujoco.mjtTextureRole.mjTEXROLE_RGBA] = "color"
    roles[mujoco.mjtTextureRole.mjTEXROLE_ROUGHNESS] = "rough"
    roles[mujoco.mjtTextureRole.mjTEXROLE_METALLIC] = "metal"
    roles[mujoco.mjtTextureRole.mjTEXROLE_NORMAL] = "normal"
    spec.add_material(name="pbr", textures=roles, roughness=0.5, metallic=-1)
    spec.worldbody.add_geom(size=[0.1, 0, 0], material="pbr")
    model = spec.compile()
    looks = Looks(model)
    material = looks.geom_material(0)
    bsdf = principled(material)
    assert material.surface_render_method == "BLENDED"  # the texture has alpha
    alpha_sources = [n for n in upstream(bsdf.inputs["Alpha"]) if n.bl_idname == "ShaderNodeTexImage"]
    assert [n.image.name for n in alpha_sources] == ["color"]
    assert np.rint(image_array(looks.texture_image(0))[0, 1, 3] * 255) == 16
    rough = upstream(bsdf.inputs["Roughness"])
    assert any(n.bl_idname == "ShaderNodeMath" and n.inputs[1].default_value == 0.5 for n in rough)
    assert [n.image.name for n in rough if n.bl_idname == "ShaderNodeTexImage"] == ["rough"]
    assert [n.image.name for n in upstream(bsdf.inputs["Metallic"])
            if n.bl_idname == "ShaderNodeTexImage"] == ["metal"]
    assert any(n.bl_idname == "ShaderNodeNormalMap" for n in upstream(bsdf.inputs["Normal"]))


@needs_corpus
def test_collision_material_is_shared_and_translucent(clean_scene):
    looks = Looks(corpus_model("mujoco_model/model/car/car.xml"))
    material = looks.collision_material()
    assert material is looks.collision_material()
    assert 0 < material.diffuse_color[3] < 1 and material.surface_render_method == "BLENDED"


def _group_layout(group) -> list:
    """Everything a node group computes with: its sockets, nodes (type, operation, data type,
    unlinked input values, attribute names) and links, without names or locations."""
    def value(socket):
        v = getattr(socket, "default_value", None)
        return tuple(v) if hasattr(v, "__len__") and not isinstance(v, str) else v
    nodes = sorted(group.nodes, key=lambda n: n.name)
    index = {n.name: i for i, n in enumerate(nodes)}
    return [[(s.in_out, s.name, s.socket_type) for s in group.interface.items_tree],
            [(n.bl_idname, getattr(n, "operation", None), getattr(n, "data_type", None),
              getattr(n, "attribute_name", None), getattr(n, "vector_type", None),
              [value(s) for s in n.inputs if not s.is_linked]) for n in nodes],
            sorted((index[lk.from_node.name], lk.from_socket.identifier, index[lk.to_node.name],
                    lk.to_socket.identifier) for lk in group.links)]


@pytest.mark.parametrize("name", [materials.CUBE_GROUP, materials.UV_GROUP])
def test_shared_node_groups_are_made_once_and_appended_as_built(clean_scene, name):
    group = materials.shared_group(name)
    assert materials.shared_group(name) is group  # one per file
    built = _group_layout(group)
    assert os.path.isfile(materials._saved_groups["path"])  # the session keeps a copy
    bpy.ops.wm.read_homefile(use_empty=True)  # a fresh file: the session's saved copy comes back
    appended = materials.shared_group(name)
    assert len(bpy.data.node_groups) == 1 and not bpy.data.libraries  # nothing linked is left
    assert _group_layout(appended) == built
    assert appended.get(stored_keys.LOOK) and appended.get(stored_keys.NODE_GROUP_VERSION) == \
        group_version(name)
    # an older build of the group in the file is not used
    appended[stored_keys.NODE_GROUP_VERSION] = -1
    newer = materials.shared_group(name)
    assert newer != appended and _group_layout(newer) == built


@needs_corpus
def test_an_import_appends_the_groups_its_looks_use_at_once(clean_scene):
    """A model with a skybox and a 2D-textured material gets both groups, one of each, also
    when the file already has one of them; a model without textures gets none."""
    model = corpus_model("mujoco_model/model/humanoid/humanoid.xml")
    materials.shared_groups(list(materials._GROUPS))  # the session's copy exists
    bpy.ops.wm.read_homefile(use_empty=True)
    materials.shared_group(materials.UV_GROUP)
    looks = Looks(model)
    for m in range(model.nmat):
        looks.material(m)
    looks.world()
    groups = sorted(g.get(stored_keys.LOOK) for g in bpy.data.node_groups)
    assert groups == ["cube map", "texture uv"] and not bpy.data.libraries
    bpy.ops.wm.read_homefile(use_empty=True)
    plain = corpus_model("pip/dm_control/locomotion/walkers/assets/rodent.xml")  # no textures
    looks = Looks(plain)
    for g in range(plain.ngeom):
        looks.geom_material(g)
    assert looks.world() is None and not bpy.data.node_groups


def group_version(name):
    return materials._GROUPS[name][1]


# ----------------------------------------------------------------------------- pictures


@needs_corpus
def test_workbench_renders_a_corpus_material(clean_scene, tmp_path):
    model = corpus_model("pip/dm_control/suite/cartpole.xml")
    looks = Looks(model)
    # the most saturated geom colour of the model
    geom = max(range(model.ngeom), key=lambda g: np.ptp(looks.element_rgba("geom", g)[:3]))
    material = looks.geom_material(geom)
    rgb = np.array(material.diffuse_color[:3])
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1)
    bpy.context.object.data.materials.append(material)
    scene = bpy.context.scene
    camera = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    scene.collection.objects.link(camera)
    camera.location = (0, -4, 0)
    camera.rotation_euler = (np.pi / 2, 0, 0)
    scene.camera = camera
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.color_type = "MATERIAL"
    scene.render.resolution_x = scene.render.resolution_y = 64
    scene.render.image_settings.file_format = "PNG"
    scene.render.filepath = str(tmp_path / "sphere.png")
    bpy.ops.render.render(write_still=True)
    picture = image_array(bpy.data.images.load(str(tmp_path / "sphere.png")))
    center, corner = picture[32, 32, :3], picture[1, 1, :3]
    assert np.abs(center - corner).max() > 0.1, "the sphere is not visible"
    # lit shading changes brightness, not which channel dominates
    assert np.argmax(center) == np.argmax(rgb) and np.argmin(center) == np.argmin(rgb)


MJ_RENDER = textwrap.dedent("""
    import sys, mujoco, numpy as np
    model = mujoco.MjModel.from_binary_path(sys.argv[1])
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    size = int(sys.argv[3])
    with mujoco.Renderer(model, size, size) as renderer:
        out = {}
        for cam in range(model.ncam):
            renderer.update_scene(data, camera=cam)
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, cam)
            renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = name.startswith("sky")
            out[mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, cam)] = renderer.render().copy()
    np.savez(sys.argv[2], **out)
""")


def _look_at(direction):
    """Camera quaternion looking along -`direction` (MuJoCo and Blender cameras look down -Z)."""
    z = np.asarray(direction, float) / np.linalg.norm(direction)
    x = np.cross([0, 0, 1], z)
    x /= np.linalg.norm(x)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.column_stack([x, np.cross(z, x), z]).ravel())
    return quat


def _probe_model(size):
    """Emission-only textured geoms and a skybox, with cameras; textures of distinct quadrants."""
    rng = np.random.default_rng(7)

    def face():
        img = np.zeros((32, 32, 3), np.uint8)
        for rows in (slice(0, 16), slice(16, 32)):
            for cols in (slice(0, 16), slice(16, 32)):
                img[rows, cols] = rng.integers(30, 250, 3)
        return img

    spec = mujoco.MjSpec()
    light = spec.visual.headlight
    light.active, light.ambient, light.diffuse, light.specular = 0, [0] * 3, [0] * 3, [0] * 3
    spec.visual.quality.shadowsize = 0
    spec.visual.quality.offsamples = 0
    spec.visual.global_.offwidth = spec.visual.global_.offheight = size
    for name, kind, faces in (("flat", mujoco.mjtTexture.mjTEXTURE_2D, 1),
                              ("cube", mujoco.mjtTexture.mjTEXTURE_CUBE, 6),
                              ("sky", mujoco.mjtTexture.mjTEXTURE_SKYBOX, 6)):
        tex = spec.add_texture(name=name, type=kind, width=32, height=32 * faces, nchannel=3)
        tex.data = np.concatenate([face() for _ in range(faces)]).tobytes()
    G = mujoco.mjtGeom
    cases = [("m2d", "flat", False, [1, 1], G.mjGEOM_BOX, [.3, .2, .1]),
             ("m2du", "flat", True, [2, 2], G.mjGEOM_BOX, [.3, .2, .1]),
             ("m2dp", "flat", False, [2, 1], G.mjGEOM_PLANE, [.5, .3, .1]),
             ("mcube", "cube", False, [1, 1], G.mjGEOM_BOX, [.3, .2, .1]),
             ("mcubeu", "cube", True, [1, 1], G.mjGEOM_BOX, [.3, .2, .1]),
             ("msphere", "cube", False, [1, 1], G.mjGEOM_SPHERE, [.25, 0, 0]),
             ("m2dmesh", "flat", False, [2, 3], G.mjGEOM_MESH, None)]
    # a mesh with texture coordinates: a 0.6 x 0.4 square (and an apex below, for volume)
    mesh = spec.add_mesh(name="square")
    mesh.uservert = [-.3, -.2, 0, .3, -.2, 0, .3, .2, 0, -.3, .2, 0, 0, 0, -.05]
    mesh.userface = [0, 1, 2, 0, 2, 3, 0, 4, 1, 1, 4, 2, 2, 4, 3, 3, 4, 0]
    mesh.usertexcoord = [0, 0, 1, 0, 1, 1, 0, 1, .5, .5]
    mesh.userfacetexcoord = mesh.userface
    for i, (mat, tex, uniform, repeat, kind, geom_size) in enumerate(cases):
        roles = [""] * int(mujoco.mjtTextureRole.mjNTEXROLE)
        roles[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex
        spec.add_material(name=mat, emission=1, specular=0, shininess=0, texuniform=uniform,
                          texrepeat=repeat, textures=roles)
        pos = np.array([3.0 * i, 0, 0])
        geom = spec.worldbody.add_geom(type=kind, material=mat, rgba=[1, 1, 1, 1], pos=pos)
        if kind == G.mjGEOM_MESH:
            geom.meshname = "square"
        else:
            geom.size = geom_size
        spec.worldbody.add_camera(name=mat + " top", pos=pos + [0, 0, 1.5], quat=[1, 0, 0, 0], fovy=40)
        side = np.array([1.0, 1.3, 1.1])
        spec.worldbody.add_camera(name=mat + " side", pos=pos + 1.4 * side / np.linalg.norm(side),
                                  quat=_look_at(side), fovy=40)
    for k, (azimuth, elevation) in enumerate(((0, 0), (90, 10), (200, -30), (290, 35), (45, 80))):
        a, e = np.radians(azimuth), np.radians(elevation)
        forward = [np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)]
        spec.worldbody.add_camera(name=f"sky {k}", pos=[0, 0, 30], quat=_look_at(-np.array(forward)),
                                  fovy=60)
    return spec.compile()


def _blender_texcoord_mesh(model, mesh_id):
    """A mesh of the compiled model with its texture coordinates as the UV map, as the
    geometry module is asked to make it: UV = (u, 1 - v) of mesh_texcoord."""
    vert = model.mesh_vert[model.mesh_vertadr[mesh_id]:][:model.mesh_vertnum[mesh_id]]
    faces = model.mesh_face[model.mesh_faceadr[mesh_id]:][:model.mesh_facenum[mesh_id]]
    corner_tc = model.mesh_facetexcoord[model.mesh_faceadr[mesh_id]:][:model.mesh_facenum[mesh_id]]
    texcoord = model.mesh_texcoord[model.mesh_texcoordadr[mesh_id]:][:model.mesh_texcoordnum[mesh_id]]
    mesh = bpy.data.meshes.new("textured")
    mesh.from_pydata(vert.tolist(), [], faces.tolist())
    uv = texcoord[corner_tc.ravel()].astype(np.float32)
    uv[:, 1] = 1 - uv[:, 1]
    mesh.uv_layers.new().data.foreach_set("uv", uv.ravel())
    mesh[stored_keys.TEXCOORD] = 1
    obj = bpy.data.objects.new("textured", mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _blender_meshes(model, looks):
    for g in range(model.ngeom):
        size = model.geom_size[g]
        if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH:
            obj = _blender_texcoord_mesh(model, model.geom_dataid[g])
            obj.rotation_mode = "QUATERNION"
            obj.rotation_quaternion = model.geom_quat[g]
            obj.location = model.geom_pos[g]
            obj.data.materials.append(looks.geom_material(g))
            continue
        if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE:
            bpy.ops.mesh.primitive_uv_sphere_add(radius=size[0], segments=64, ring_count=32)
        else:  # boxes and planes at their true size, object scale 1
            if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX:
                bpy.ops.mesh.primitive_cube_add(size=2)
            else:
                bpy.ops.mesh.primitive_plane_add(size=2)
                size = (size[0], size[1], 1)
            bpy.context.object.data.transform(mathutils.Matrix.Diagonal((*size, 1)))
        obj = bpy.context.object
        obj.location = model.geom_pos[g]
        obj.data.materials.append(looks.geom_material(g))


def _cycles_pictures(model, size, tmp_path):
    looks = Looks(model)
    _blender_meshes(model, looks)
    scene = bpy.context.scene
    sky = scene.world = looks.world()
    for ray in ("diffuse", "glossy", "transmission", "scatter"):  # the sky lights nothing: emission only
        setattr(sky.cycles_visibility, ray, False)
    sky.cycles.sampling_method = "NONE"
    scene.render.engine = "CYCLES"
    scene.cycles.samples = 1
    scene.cycles.use_denoising = False
    scene.cycles.filter_width = 0.01  # sample pixel centres, like OpenGL without multisampling
    scene.cycles.max_bounces = 0
    scene.render.resolution_x = scene.render.resolution_y = size
    scene.render.image_settings.file_format = "OPEN_EXR"  # linear floats: the raw texture values
    camera = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    scene.collection.objects.link(camera)
    scene.camera = camera
    camera.data.sensor_fit = "VERTICAL"
    camera.data.clip_end = 1000
    camera.rotation_mode = "QUATERNION"
    pictures = {}
    for c in range(model.ncam):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, c)
        camera.location = model.cam_pos[c]
        camera.rotation_quaternion = model.cam_quat[c]
        camera.data.angle_y = np.radians(model.cam_fovy[c])
        # sky cameras see only the sky, the others only the geoms (on black)
        scene.world = sky if name.startswith("sky") else None
        for obj in scene.objects:
            if obj.type == "MESH":
                obj.hide_render = name.startswith("sky")
        scene.render.filepath = str(tmp_path / f"{name}.exr")
        bpy.ops.render.render(write_still=True)
        image = bpy.data.images.load(scene.render.filepath)
        pictures[name] = image_array(image)[..., :3]
        bpy.data.images.remove(image)
    return pictures


def _mujoco_pictures(model, size, tmp_path):
    model_path, out = tmp_path / "probe.mjb", tmp_path / "mujoco.npz"
    mujoco.mj_saveModel(model, str(model_path), None)
    env = dict(os.environ, MUJOCO_GL="egl", PYOPENGL_PLATFORM="egl")
    run = subprocess.run([sys.executable, "-c", MJ_RENDER, str(model_path), str(out), str(size)],
                         env=env, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        pytest.skip(f"MuJoCo cannot render headless here (EGL): {run.stderr.strip()[-300:]}")
    return {k: v.astype(np.float32) / 255 for k, v in np.load(out).items()}


def _matches_nearby(a, b, tolerance):
    """Per pixel of `a`: does `b` have the same colour there or at a neighbouring pixel?
    (Tolerates one-pixel shifts of edges and seams between two rasterisers.)"""
    padded = np.pad(b, ((1, 1), (1, 1), (0, 0)), mode="edge")
    h, w, _ = a.shape
    best = np.full((h, w), np.inf, np.float32)
    for dy in range(3):
        for dx in range(3):
            diff = np.abs(a - padded[dy:dy + h, dx:dx + w]).max(axis=2)
            best = np.minimum(best, diff)
    return best < tolerance


def test_textures_map_like_mujoco(clean_scene, tmp_path):
    """2D textures (texrepeat, texuniform) on boxes, a plane and a mesh with texture coordinates,
    cube textures on boxes and a sphere, and the skybox: Cycles shows MuJoCo's pixels."""
    size = 128
    model = _probe_model(size)
    expected = _mujoco_pictures(model, size, tmp_path)
    got = _cycles_pictures(model, size, tmp_path)
    # Compare where MuJoCo shows a texel's own colour (inside a quadrant, unblended): there a
    # wrong face, flip or offset shows another colour. Texture filtering (MuJoCo mipmaps
    # oblique faces and blends across cube seams, Cycles does neither) only touches the rest.
    palette = np.unique(model.tex_data.reshape(-1, 3), axis=0).astype(np.float32) / 255
    for name, picture in expected.items():
        pure = np.abs(picture[:, :, None, :] - palette[None, None]).max(axis=3).min(axis=2) < 1.5 / 255
        seen = (picture.max(axis=2) > 0) | (got[name].max(axis=2) > 0)
        close = _matches_nearby(picture, got[name], 3 / 255)
        assert pure.sum() > 0.3 * seen.sum(), f"{name}: too few unfiltered pixels to compare"
        share = close[pure].mean()
        assert share > 0.99, f"{name}: only {share:.1%} of the unfiltered pixels match MuJoCo's"

"""Looks of imported MuJoCo elements: Blender materials, images and the world.

Everything here reads the *compiled* `mujoco.MjModel`, i.e. what MuJoCo's
compiler resolved (defaults, mesh materials, procedural textures already
rasterised). One `Looks` per imported model creates and caches the datablocks.

MuJoCo's colour rule (what a geom, site, tendon, flex or skin is drawn with)
---------------------------------------------------------------------------
Documented in XMLreference.rst, body/geom `material` and `rgba`: "if the rgba
attribute is different from its internal default, it takes precedence while
the remaining material properties are still applied". The renderer applies it
in `setMaterial()` of src/engine/engine_vis_visualize.c, comparing the
compiled float32 rgba with the literal default 0.5 0.5 0.5 1: the element's
own rgba wins if it differs from that default or if there is no material;
otherwise the material's rgba is used. So an rgba *authored* as "0.5 0.5 0.5 1"
(or inherited from a default class) still loses to the material.
`rendered_rgba()` is that rule. A texture colour is multiplied by it.

Colours and colour spaces
-------------------------
MuJoCo's numbers go into Blender unchanged: Base Color = rgba. Texture bytes
of colour space "sRGB" are decoded (Blender colour space "sRGB", as OpenGL's
GL_SRGB8 does); "linear" and "auto" (what builtin textures get) are used raw,
as MuJoCo's renderer does ("Linear Rec.709", numerically raw for byte images).
MuJoCo's classic renderer lights in display space while Blender lights in
linear space, so Blender's pictures look lighter; the numbers are the same.

Mappings of MuJoCo's (OpenGL fixed-function) material to the Principled BSDF
---------------------------------------------------------------------------
- rgba          -> Base Color; alpha -> Alpha, and the material switches to
                   blended transparency (EEVEE's `surface_render_method`
                   "BLENDED"; Cycles needs nothing) whenever alpha < 1 or a
                   texture has alpha.
                   `diffuse_color` (Solid mode, Workbench) = rgba too.
- emission      -> Emission Color = the base colour (rgba x texture), Emission
                   Strength = emission (MuJoCo: GL emission = emission * rgba).
- specular      -> Specular IOR Level (both default to 0.5; 0 removes
                   highlights in both).
- shininess     -> Roughness, unless the material gives `roughness` >= 0.
                   OpenGL's Blinn-Phong exponent is n = 128 * shininess; the
                   microfacet width with the same highlight is
                   alpha = sqrt(2 / (n + 2)) (Walter et al. 2007) and Blender's
                   Roughness is sqrt(alpha): roughness = (2 / (n + 2)) ** 0.25.
                   shininess 0 -> 1.0, 0.5 (default) -> 0.417, 1 -> 0.352.
- reflectance   -> a clear coat: Coat Weight 1, Coat Roughness 0 and a Coat
                   IOR whose normal-incidence Fresnel reflectance
                   ((n - 1) / (n + 1))^2 equals `reflectance`. MuJoCo mixes a
                   mirror image with that weight (on planes and boxes only).
- metallic, roughness (MuJoCo 3.x PBR fields, -1 = unset) -> Metallic,
                   Roughness; a roughness/metallic/ORM texture layer is
                   multiplied by them, as the documentation says.

Textures and how they are mapped
--------------------------------
`texture_image()` makes one packed Image per texture from the compiled pixels
(`tex_data`; `mj_loadTexture` for textures left by reference). Images keep the
picture the right way up: row 0 of tex_data (the top row of the PNG) is the top
row of the image (Blender stores rows bottom-up, so rows are reversed).
Consequence for meshes: MuJoCo's compiler flips OBJ texture coordinates
(`mesh_texcoord` v = 1 - v of the file), so a Blender UV map addressing these
images must use (u, 1 - mesh_texcoord v), i.e. the file's own UVs.
Cube and skybox textures stay in MuJoCo's layout, one image of width w and
height 6w: the faces right, left, up, down, front, back (+X, -X, +Y, -Y, +Z,
-Z) stacked from the top; a cube texture with height == width is one face
repeated on all six sides.

How MuJoCo 4.0's renderer maps textures was measured by rendering probe
textures with it (tests/test_materials.py, test_textures_map_like_mujoco,
compares its pictures with Cycles'); the materials rebuild it with nodes:
- 2D texture: MuJoCo samples (s, t) = (u, v) * texrepeat, times the geom's
  size (size[0], size[1]) when texuniform is true ("repeated per spatial
  unit": in fact a period of 1 / texrepeat per half-size unit); (u, v) are
  the element's texture coordinates: a mesh's own (texrepeat applies to them
  too), for primitives the ones MuJoCo builds: on a box each face shows the
  whole texture, u along the first and v along the second of the two axes
  across the face (x, y for faces along z; y, z along x; x, z along y) with v
  running from the +axis edge; a plane is the top of a box. The image is
  sampled at (s, 1 - t).
  Blender: base UV = the object's UV map if the object (or its mesh data) has
  the custom property TEXCOORD = 1 (read by an Attribute node), else the
  box UVs above made from Generated coordinates (0..1 across the bounding
  box) and the object-space normal, then (u, 1 - v): the node group UV_GROUP,
  one shared by every 2D-textured material; then [times the object's
  `dimensions` / 2 when texuniform] a Mapping node: times texrepeat, v' = 1 - t.
  So an importer should give a mesh with texture coordinates the UV map
  (u, 1 - v of mesh_texcoord) and set TEXCOORD = 1 on it; spheres,
  cylinders and capsules without a UV map get the box mapping (MuJoCo wraps
  them in longitude/latitude), meshes without UVs too.
- cube texture: OpenGL cube mapping of the direction from the object centre
  (face and (s, t) by the OpenGL specification's table), rebuilt by the node
  group CUBE_GROUP; texuniform false maps the unit object (Generated * 2 - 1),
  true the object at its size (Object coordinates).
The node groups are built once per Blender session and appended from a copy
saved in the session's temp folder into every later file (`shared_group`):
building one costs its size squared, appending it a few milliseconds.
Within a face every pixel matches MuJoCo's; along cube seams MuJoCo's GPU
blends neighbouring faces, Blender stays on one (half a texel inset).

Skybox
------
`world()` makes a World whose background samples the skybox image through the
same cube mapping, with MuJoCo's skybox rotation (texture coordinates
(x, z, -y) of the view direction), so the picture is MuJoCo's pixel for pixel,
without resampling into an equirectangular image. Background strength 1; Cycles
samples it with a 1024 light map (its "Automatic" map for an 800 x 4800 sky
costs 2.5 s per render).

Datablocks made here carry LOOK = "material" (an MJCF material),
"override" (an MJCF material with an element's own rgba), "rgba" (an element
without material), "collision" or "skybox". MJCF materials and texture images
get a fake user: they are model assets even when nothing uses them.
"""

from __future__ import annotations

import math
import os
import zlib

import bpy
import mujoco
import numpy as np

from ..components.stored_keys import LOOK, NODE_GROUP_VERSION, PACK_ON_SAVE, TEXCOORD, TEXTURE_ALPHA
from ..engine import png

CUBE_GROUP = "MuJoCo cube map"
_CUBE_GROUP_VERSION = 1
UV_GROUP = "MuJoCo texture UV"
_UV_GROUP_VERSION = 1

# MuJoCo's internal default rgba of geoms, sites, tendons, flexes and skins.
DEFAULT_RGBA = np.array([0.5, 0.5, 0.5, 1.0], dtype=np.float32)


# What an element without material is drawn with (mjv_initGeom's defaults).
class Surface:
    """The non-colour material properties MuJoCo renders with."""

    def __init__(self, emission=0.0, specular=0.5, shininess=0.5, reflectance=0.0,
                 metallic=-1.0, roughness=-1.0):
        self.emission = float(emission)
        self.specular = float(specular)
        self.shininess = float(shininess)
        self.reflectance = float(reflectance)
        self.metallic = float(metallic)
        self.roughness = float(roughness)

    @classmethod
    def of_material(cls, model: mujoco.MjModel, mat_id: int) -> Surface:
        return cls(model.mat_emission[mat_id], model.mat_specular[mat_id],
                   model.mat_shininess[mat_id], model.mat_reflectance[mat_id],
                   model.mat_metallic[mat_id], model.mat_roughness[mat_id])


# ----------------------------------------------------------------------------- rules and mappings

def rendered_rgba(model: mujoco.MjModel, mat_id: int, rgba) -> np.ndarray:
    """The rgba MuJoCo draws an element with, from its material id and own rgba.

    The element's rgba wins when there is no material or when it differs from
    the default 0.5 0.5 0.5 1 (compared as float32, as MuJoCo does).
    """
    own = np.asarray(rgba, dtype=np.float32)
    if mat_id < 0 or np.any(own != DEFAULT_RGBA):
        return own.copy()
    return np.asarray(model.mat_rgba[mat_id], dtype=np.float32).copy()


def shininess_to_roughness(shininess: float) -> float:
    """Principled Roughness giving the highlight of OpenGL shininess (see module doc)."""
    exponent = 128.0 * min(max(float(shininess), 0.0), 1.0)
    return (2.0 / (exponent + 2.0)) ** 0.25


def reflectance_to_coat_ior(reflectance: float) -> float:
    """Coat IOR whose Fresnel reflectance at normal incidence is `reflectance`."""
    root = math.sqrt(min(max(float(reflectance), 0.0), 0.99))
    return (1.0 + root) / (1.0 - root)


# ----------------------------------------------------------------------------- pixels

def texture_pixels(model: mujoco.MjModel, tex_id: int) -> tuple[np.ndarray, int]:
    """(pixels as uint8 (height, width, nchannel) with row 0 on top, mjtColorSpace)."""
    adr = int(model.tex_adr[tex_id])
    if adr < 0:  # left by reference (compiler passthrough): decode the file like the renderer
        pixels, colorspace = mujoco.mj_loadTexture(model, tex_id)
        return np.asarray(pixels, dtype=np.uint8), int(colorspace)
    h, w, c = (int(model.tex_height[tex_id]), int(model.tex_width[tex_id]),
               int(model.tex_nchannel[tex_id]))
    pixels = model.tex_data[adr:adr + h * w * c].reshape(h, w, c)
    return pixels, int(model.tex_colorspace[tex_id])


def pixel_signature(rgba: np.ndarray, width: int, height: int) -> str:
    """A fingerprint of an image's uint8 RGBA bytes (bottom row first): equal while
    nobody paints it. CRC-32: fast, and edits are accidents, not attacks."""
    return f"{width}x{height}:{zlib.crc32(np.ascontiguousarray(rgba, dtype=np.uint8)):08x}"


def image_rgba(image) -> np.ndarray:
    """uint8 RGBA (height, width, 4) of a Blender image, bottom row first: its pixels
    as bytes (MuJoCo's, rows reversed); fewer channels are spread as grey."""
    width, height = image.size
    channels = image.channels
    pixels = np.empty(width * height * channels, dtype=np.float32)
    image.pixels.foreach_get(pixels)
    values = (np.clip(pixels, 0.0, 1.0) * np.float32(255) + np.float32(0.5)).astype(np.uint8)
    values = values.reshape(height, width, channels)
    if channels == 4:
        return values
    rgba = np.full((height, width, 4), 255, dtype=np.uint8)
    rgba[..., :3] = values[..., :3] if channels >= 3 else values[..., :1]
    return rgba


def image_bytes(image) -> np.ndarray:
    """uint8 RGBA (height, width, 4) of a Blender image, row 0 on top: MuJoCo's layout."""
    return image_rgba(image)[::-1]


def image_signature(image) -> str:
    """`pixel_signature` of a Blender image as it is now."""
    width, height = image.size
    return pixel_signature(image_rgba(image), width, height)


def packed_signature(data: bytes) -> str:
    """The signature of an imported texture: the PNG its image was packed from, by its
    size and the CRC its image data chunk carries (the last chunk before IEND's 12 bytes:
    no second pass over the pixels); `image_painted` reads it against the packed file."""
    return f"{PACKED}{len(data)}:{data[-16:-12].hex()}"


PACKED = "packed:"  # (older imports' signatures are `pixel_signature`s of the pixels)


def image_painted(image, signature: str) -> bool:
    """Whether `image`'s pixels are no longer the ones its `signature` was taken of
    (`packed_signature`, or `pixel_signature` for an image an older import filled).
    An image still holding its packed PNG, unpainted, is answered without decoding it."""
    if not signature.startswith(PACKED):
        return signature != image_signature(image)
    packed = image.packed_file
    if image.is_dirty or packed is None:
        return True
    return signature != packed_signature(packed.data)


def _is_ktx(model: mujoco.MjModel, tex_id: int) -> bool:
    """A KTX texture is stored as its encoded file (1 channel), not as pixels."""
    def text(adr):
        return model.paths[adr:model.paths.index(b"\0", adr)].decode() if adr >= 0 else ""
    content = text(int(model.tex_contenttypeadr[tex_id]))
    path = text(int(model.tex_pathadr[tex_id]))
    return content == "image/ktx" or path.lower().endswith(".ktx")


def _colorspace_name(colorspace: int) -> str:
    if colorspace == mujoco.mjtColorSpace.mjCOLORSPACE_SRGB:
        return "sRGB"
    names = {item.identifier for item in
             bpy.types.ColorManagedInputColorspaceSettings.bl_rna.properties["name"].enum_items}
    return "Linear Rec.709" if "Linear Rec.709" in names else "Non-Color"


# ----------------------------------------------------------------------------- node helpers

class _Nodes:
    """Adds nodes and links to one node tree, laid out in columns.

    Every change to a node tree (a node, a link, a socket value, a location)
    updates the whole tree, so building one costs its size squared; the
    locations are therefore set all at once by `place()`, when the tree is built.
    """

    def __init__(self, tree):
        self.tree = tree
        self.places = []  # (node, x, y) for place()

    def add(self, bl_idname, x=0, y=0, name=None, label=None, **props):
        node = self.tree.nodes.new(bl_idname)
        self.places.append((node, x, y))
        if name:
            node.name = name
        if label:
            node.label = label
        for key, value in props.items():
            setattr(node, key, value)
        return node

    def link(self, output, socket):
        self.tree.links.new(output, socket)

    def feed(self, socket, value):
        """Link a socket, or set its default when `value` is a plain number."""
        if isinstance(value, (int, float)):
            socket.default_value = value
        else:
            self.link(value, socket)

    def place(self):
        """Give the added nodes their locations, in one call (without the updates)."""
        nodes = self.tree.nodes
        index = {node.as_pointer(): i for i, node in enumerate(nodes)}
        flat = np.empty(2 * len(index), dtype=np.float32)
        nodes.foreach_get("location", flat)
        for node, x, y in self.places:
            i = index[node.as_pointer()]
            flat[2 * i:2 * i + 2] = x, y
        nodes.foreach_set("location", flat)
        self.places.clear()


class _Math:
    """Math nodes from Python calls on sockets and numbers, stacked in one column."""

    def __init__(self, nodes: _Nodes, x):
        self.n, self.x, self.y = nodes, x, 0

    def _node(self, bl_idname, **props):
        node = self.n.add(bl_idname, self.x + 180 * (self.y // 40), -(self.y % 40) * 40,
                          hide=True, **props)
        self.y += 1
        return node

    def op(self, operation, a, b=None):
        node = self._node("ShaderNodeMath", operation=operation)
        self.n.feed(node.inputs[0], a)
        if b is not None:
            self.n.feed(node.inputs[1], b)
        return node.outputs[0]

    def mul(self, a, b):
        return self.op("MULTIPLY", a, b)

    def sub(self, a, b):
        return self.op("SUBTRACT", a, b)

    def ge(self, a, b):
        """1 if a >= b else 0."""
        return self.sub(1.0, self.op("LESS_THAN", a, b))

    def vector(self, x, y, z):
        """A vector of three sockets or numbers."""
        node = self._node("ShaderNodeCombineXYZ")
        for socket, value in zip(node.inputs, (x, y, z), strict=True):
            self.n.feed(socket, value)
        return node.outputs[0]

    def pick(self, weights, values):
        """A branch-free select: the one of three `values` whose weight is 1, for
        `weights` a vector of one 1 and two 0s. Their dot product, which is exact:
        the other two products are 0."""
        node = self._node("ShaderNodeVectorMath", operation="DOT_PRODUCT")
        self.n.link(weights, node.inputs[0])
        self.n.link(self.vector(*values), node.inputs[1])
        return node.outputs["Value"]


def _new_group_socket(group, name, in_out, socket_type, default=None):
    socket = group.interface.new_socket(name, in_out=in_out, socket_type=socket_type)
    if default is not None:
        socket.default_value = default
    return socket


def _build_cube_group() -> bpy.types.NodeTree:
    """Node group: OpenGL cube-map lookup of a direction into MuJoCo's face-strip image.

    Inputs: Vector (the texture coordinate s, t, r), Face Step (1/6 for a strip of
    six faces, 0 for one repeated face), Face Height (1/6 or 1), Inset (half a
    texel in face units, keeps linear filtering inside a face).
    Output: Vector, the UV into the image (face 0 on top).
    """
    group = bpy.data.node_groups.new(CUBE_GROUP, "ShaderNodeTree")
    group[LOOK] = "cube map"
    group[NODE_GROUP_VERSION] = _CUBE_GROUP_VERSION
    _new_group_socket(group, "Vector", "INPUT", "NodeSocketVector")
    _new_group_socket(group, "Face Step", "INPUT", "NodeSocketFloat", 1.0 / 6.0)
    _new_group_socket(group, "Face Height", "INPUT", "NodeSocketFloat", 1.0 / 6.0)
    _new_group_socket(group, "Inset", "INPUT", "NodeSocketFloat", 0.0)
    _new_group_socket(group, "Vector", "OUTPUT", "NodeSocketVector")

    n = _Nodes(group)
    gin = n.add("NodeGroupInput", -600, 0)
    gout = n.add("NodeGroupOutput", 1800, 0)
    sep = n.add("ShaderNodeSeparateXYZ", -400, 0)
    n.link(gin.outputs["Vector"], sep.inputs[0])
    x, y, z = sep.outputs
    step, height, inset = gin.outputs["Face Step"], gin.outputs["Face Height"], gin.outputs["Inset"]

    m = _Math(n, -200)
    ax, ay, az = m.op("ABSOLUTE", x), m.op("ABSOLUTE", y), m.op("ABSOLUTE", z)
    # major axis, ties resolved towards X then Y
    is_x = m.mul(m.ge(ax, ay), m.ge(ax, az))
    is_y = m.mul(m.sub(1.0, is_x), m.ge(ay, az))
    is_z = m.sub(m.sub(1.0, is_x), is_y)
    pos_x, pos_y, pos_z = m.op("GREATER_THAN", x, 0.0), m.op("GREATER_THAN", y, 0.0), \
        m.op("GREATER_THAN", z, 0.0)
    sign_x, sign_y, sign_z = (m.op("MULTIPLY_ADD", p, 2.0) for p in (pos_x, pos_y, pos_z))
    for sign in (sign_x, sign_y, sign_z):  # MULTIPLY_ADD's third input: p * 2 - 1
        sign.node.inputs[2].default_value = -1.0
    # face index in MuJoCo's order +X -X +Y -Y +Z -Z (= GL_TEXTURE_CUBE_MAP_POSITIVE_X + i)
    axis = m.vector(is_x, is_y, is_z)
    face = m.pick(axis, (m.sub(1.0, pos_x), m.sub(3.0, pos_y), m.sub(5.0, pos_z)))
    major = m.pick(axis, (ax, ay, az))
    # OpenGL's table: +X (-z, -y) -X (z, -y) +Y (x, z) -Y (x, -z) +Z (x, -y) -Z (-x, -y)
    minus_y = m.mul(y, -1.0)
    sc = m.pick(axis, (m.mul(m.mul(sign_x, z), -1.0), x, m.mul(sign_z, x)))
    tc = m.pick(axis, (minus_y, m.mul(sign_y, z), minus_y))

    def unit(c):  # (c / major + 1) / 2, kept half a texel inside the face
        value = m.op("MULTIPLY_ADD", m.op("DIVIDE", c, major), 0.5)
        value.node.inputs[2].default_value = 0.5
        return m.op("MINIMUM", m.op("MAXIMUM", value, inset), m.sub(1.0, inset))

    s, t = unit(sc), unit(tc)
    # image v counts from the bottom; face 0 occupies the top rows
    v = m.sub(m.sub(1.0, m.mul(face, step)), m.mul(t, height))
    comb = n.add("ShaderNodeCombineXYZ", 1600, 0)
    n.link(s, comb.inputs[0])
    n.link(v, comb.inputs[1])
    n.link(comb.outputs[0], gout.inputs[0])
    n.place()
    return group


def _build_uv_group() -> bpy.types.NodeTree:
    """Node group: MuJoCo's (s, t) of a 2D texture before texrepeat (module doc).

    Base UV: the object's UV map when it (or its mesh) carries TEXCOORD = 1, else
    MuJoCo's box UVs (`_box_uv`); then (u, 1 - v). No inputs: it reads the
    shaded object's coordinates. Output: Vector.
    """
    group = bpy.data.node_groups.new(UV_GROUP, "ShaderNodeTree")
    group[LOOK] = "texture uv"
    group[NODE_GROUP_VERSION] = _UV_GROUP_VERSION
    _new_group_socket(group, "Vector", "OUTPUT", "NodeSocketVector")
    n = _Nodes(group)
    coords = n.add("ShaderNodeTexCoord", -1700, 0)
    has_uv = n.add("ShaderNodeAttribute", -1700, -300, attribute_type="OBJECT",
                   attribute_name=TEXCOORD, label="has MuJoCo texcoords")
    uv = n.add("ShaderNodeUVMap", -1700, -500)
    base = n.add("ShaderNodeMix", -1500, 0, data_type="VECTOR", label="UV or box UV")
    n.link(_socket(has_uv.outputs, "Fac"), _socket(base.inputs, "Factor_Float"))
    n.link(_box_uv(n, coords, 0), _socket(base.inputs, "A_Vector"))
    n.link(uv.outputs[0], _socket(base.inputs, "B_Vector"))
    st = n.add("ShaderNodeMapping", -1300, 0, vector_type="POINT", label="MuJoCo (s, t)")
    st.inputs["Scale"].default_value = (1.0, -1.0, 1.0)
    st.inputs["Location"].default_value = (0.0, 1.0, 0.0)
    n.link(_socket(base.outputs, "Result_Vector"), st.inputs["Vector"])
    gout = n.add("NodeGroupOutput", -1100, 0)
    n.link(st.outputs[0], gout.inputs[0])
    n.place()
    return group


def _box_uv(n, coords, y):
    """MuJoCo's box texture coordinates as Blender UVs: (x, y) on faces along z, (y, z)
    along x, (x, z) along y, each from the Generated coordinates (0..1 across the box)."""
    gen = n.add("ShaderNodeSeparateXYZ", -2100, y + 200)
    n.link(coords.outputs["Generated"], gen.inputs[0])
    normal = n.add("ShaderNodeSeparateXYZ", -2100, y - 100)
    n.link(coords.outputs["Normal"], normal.inputs[0])
    pairs = {}
    for axis, (a, b) in {"z": (0, 1), "x": (1, 2), "y": (0, 2)}.items():
        pairs[axis] = n.add("ShaderNodeCombineXYZ", -1900, y + 300 - 120 * len(pairs),
                            label=f"face along {axis}")
        n.link(gen.outputs[a], pairs[axis].inputs[0])
        n.link(gen.outputs[b], pairs[axis].inputs[1])
    m = _Math(n, -1900)
    m.y = 30  # below the pairs
    ax, ay, az = (m.op("ABSOLUTE", normal.outputs[i]) for i in range(3))
    along_x = m.ge(ax, ay)
    along_z = m.mul(m.ge(az, ax), m.ge(az, ay))
    side = n.add("ShaderNodeMix", -1700, y + 150, data_type="VECTOR", label="side face")
    n.link(along_x, _socket(side.inputs, "Factor_Float"))
    n.link(pairs["y"].outputs[0], _socket(side.inputs, "A_Vector"))
    n.link(pairs["x"].outputs[0], _socket(side.inputs, "B_Vector"))
    face = n.add("ShaderNodeMix", -1500, y + 150, data_type="VECTOR", label="box face")
    n.link(along_z, _socket(face.inputs, "Factor_Float"))
    n.link(_socket(side.outputs, "Result_Vector"), _socket(face.inputs, "A_Vector"))
    n.link(pairs["z"].outputs[0], _socket(face.inputs, "B_Vector"))
    return _socket(face.outputs, "Result_Vector")


# The shared node groups: key -> (look, version, build). Building one costs its size squared
# (every node and link updates the whole tree: ~12 ms for the cube map) and every import into
# a fresh file needs them again, so the first build of a session saves them all to one .blend
# in Blender's session temp folder, and later files append what they need from it in one
# load (opening a .blend costs ~4 ms whatever it holds: one load for all groups).
_GROUPS = {CUBE_GROUP: ("cube map", _CUBE_GROUP_VERSION, _build_cube_group),
           UV_GROUP: ("texture uv", _UV_GROUP_VERSION, _build_uv_group)}
# "path": the .blend this session saved the groups in, "names": key -> group name there
_saved_groups: dict[str, object] = {}


def shared_groups(keys) -> dict[str, bpy.types.NodeTree]:
    """The node groups `keys` (CUBE_GROUP, UV_GROUP) of this file at today's version:
    those already here, else appended from this session's saved copy, else built."""
    found = {key: _present(key) for key in keys}
    missing = [key for key, group in found.items() if group is None]
    if missing:
        found.update(_append_saved(missing))
        built = {key: _GROUPS[key][2]() for key in missing if found.get(key) is None}
        found.update(built)
        if built:
            _save(built)
    return found


def shared_group(key: str) -> bpy.types.NodeTree:
    return shared_groups([key])[key]


def _present(key):
    look, version, _build = _GROUPS[key]
    for group in bpy.data.node_groups:
        if group.get(LOOK) == look and group.get(NODE_GROUP_VERSION) == version:
            return group
    return None


def _append_saved(keys) -> dict:
    path, names = _saved_groups.get("path"), _saved_groups.get("names", {})
    wanted = {key: names[key] for key in keys if key in names}
    if not path or not wanted or not os.path.isfile(path):
        return {}
    before = set(bpy.data.libraries)
    try:
        with bpy.data.libraries.load(path, link=False) as (source, target):
            order = [key for key, name in wanted.items() if name in source.node_groups]
            target.node_groups = [wanted[key] for key in order]
    except (OSError, RuntimeError):  # the temp file went away or is damaged: build instead
        return {}
    finally:
        for library in set(bpy.data.libraries) - before:  # appending leaves its Library behind
            bpy.data.libraries.remove(library)
    appended = {}
    for key, group in zip(order, target.node_groups, strict=True):
        look, version, _build = _GROUPS[key]
        if group is not None and group.get(LOOK) == look and group.get(NODE_GROUP_VERSION) == version:
            appended[key] = group
        elif group is not None:
            bpy.data.node_groups.remove(group)
    return appended


def _save(built: dict):
    """Every shared group into this session's .blend: those just `built`, the others built
    for it and removed again (not a file's own copies: they may have been edited)."""
    folder = bpy.app.tempdir
    if not folder or not os.path.isdir(folder):
        return
    extra = {key: build() for key, (_look, _version, build) in _GROUPS.items() if key not in built}
    groups = {**built, **extra}
    path = os.path.join(folder, "mjblend-node-groups.blend")
    try:
        bpy.data.libraries.write(path, set(groups.values()), fake_user=False)
        _saved_groups.update(path=path, names={key: group.name for key, group in groups.items()})
    except (OSError, RuntimeError):
        pass
    finally:
        for group in extra.values():
            bpy.data.node_groups.remove(group)


def _principled(material) -> bpy.types.Node:
    return next(n for n in material.node_tree.nodes if n.bl_idname == "ShaderNodeBsdfPrincipled")


def _socket(sockets, identifier):
    """A socket by identifier (a Mix node has several sockets of each name)."""
    return next(s for s in sockets if s.identifier == identifier)


def _set_transparency(material, transparent: bool):
    material.surface_render_method = "BLENDED" if transparent else "DITHERED"
    material.use_transparent_shadow = transparent


def _new_material(name: str) -> bpy.types.Material:
    material = bpy.data.materials.new(name)
    if material.node_tree is None:  # before Blender 5.0 (use_nodes is deprecated there)
        material.use_nodes = True
    return material


# ----------------------------------------------------------------------------- Looks

class Looks:
    """Creates and shares the Blender materials and images of one imported model."""

    def __init__(self, model: mujoco.MjModel, names: dict | None = None):
        self.model = model
        self.names = dict(names or {})
        self.warnings: list[str] = []
        self._images: dict[int, bpy.types.Image] = {}
        self.signatures: dict[int, str] = {}  # texture id -> pixel_signature of its image
        self._materials: dict[int, bpy.types.Material] = {}
        self._overrides: dict[tuple, bpy.types.Material] = {}
        self._plain: dict[tuple, bpy.types.Material] = {}
        self._collision = None
        self._world = None
        self._world_made = False
        self._groups: dict[str, bpy.types.NodeTree] = {}

    # ------------------------------------------------------------------ node groups

    def _group(self, key: str) -> bpy.types.NodeTree:
        """A shared node group; the first call gets every group the model's looks use at
        once (one append from the session's copy instead of one per group)."""
        group = self._groups.get(key)
        if group is None:
            self._groups = shared_groups(self._groups_used() | {key})
            group = self._groups[key]
        return group

    def _groups_used(self) -> set[str]:
        model = self.model
        used = model.mat_texid[model.mat_texid >= 0]
        types = {int(model.tex_type[t]) for t in used}
        keys = set()
        if int(mujoco.mjtTexture.mjTEXTURE_2D) in types:
            keys.add(UV_GROUP)
        if types - {int(mujoco.mjtTexture.mjTEXTURE_2D)} or self.skybox_texture() >= 0:
            keys.add(CUBE_GROUP)
        return keys

    # ------------------------------------------------------------------ names

    def name(self, kind: str, index: int) -> str:
        """Readable name of a material or texture: given, MuJoCo's, or 'material 3'."""
        given = self.names.get((kind, index))
        if given:
            return given
        obj = mujoco.mjtObj.mjOBJ_MATERIAL if kind == "material" else mujoco.mjtObj.mjOBJ_TEXTURE
        return mujoco.mj_id2name(self.model, obj, index) or f"{kind} {index}"

    # ------------------------------------------------------------------ images

    def texture_image(self, tex_id: int) -> bpy.types.Image:
        """The packed image of texture `tex_id` (one per texture)."""
        image = self._images.get(tex_id)
        if image is None:
            image = self._images[tex_id] = self._make_image(tex_id)
        return image

    def _make_image(self, tex_id: int) -> bpy.types.Image:
        name = self.name("texture", tex_id)
        if _is_ktx(self.model, tex_id):
            self.warnings.append(f"texture '{name}': KTX textures are not decoded; a grey placeholder "
                                 "image stands in for it")
            pixels, colorspace = np.full((1, 1, 3), 128, np.uint8), 0
        else:
            pixels, colorspace = texture_pixels(self.model, tex_id)
        # MuJoCo's bytes packed as an uncompressed PNG (at memory speed): Blender decodes
        # it when the image is first drawn or read, not on import (a float `pixels` write
        # was 2/3 of a textured model's build); compressed when the file is saved
        data = png.encode(pixels, level=0)
        image = bpy.data.images.new(name, 1, 1)  # (its generated pixels: replaced by the file's)
        image.pack(data=data, data_len=len(data))
        image.source = "FILE"
        image.filepath_raw = f"//textures/{bpy.path.clean_name(name)}.png"  # (where Unpack writes it)
        image.colorspace_settings.name = _colorspace_name(colorspace)
        # what the scan compares with to tell a painted texture (importer/build.py keeps it)
        self.signatures[tex_id] = packed_signature(data)
        image[PACK_ON_SAVE] = 1
        image.use_fake_user = True
        image[LOOK] = "texture"
        return image

    # ------------------------------------------------------------------ materials

    def material(self, mat_id: int) -> bpy.types.Material:
        """The Blender material of MJCF material `mat_id` (one per material)."""
        material = self._materials.get(mat_id)
        if material is None:
            material = self._materials[mat_id] = self._make_material(mat_id)
        return material

    def geom_material(self, geom_id: int) -> bpy.types.Material:
        return self.element_material("geom", geom_id)

    def site_material(self, site_id: int) -> bpy.types.Material:
        return self.element_material("site", site_id)

    def tendon_material(self, tendon_id: int) -> bpy.types.Material:
        return self.element_material("tendon", tendon_id)

    def flex_material(self, flex_id: int) -> bpy.types.Material:
        return self.element_material("flex", flex_id)

    def skin_material(self, skin_id: int) -> bpy.types.Material:
        return self.element_material("skin", skin_id)

    def element_rgba(self, kind: str, index: int) -> np.ndarray:
        """The rgba MuJoCo draws element `index` of `kind` with (a kind in
        components/kinds.py's MATERIAL_KINDS: geom, site, tendon, flex, skin)."""
        return rendered_rgba(self.model, self._matid(kind, index), self._rgba(kind, index))

    def element_material(self, kind: str, index: int) -> bpy.types.Material:
        """What an element shows: its material, that material in the element's own
        colour, or a plain material of its rgba, following MuJoCo's rule."""
        mat_id = self._matid(kind, index)
        rgba = self.element_rgba(kind, index)
        if mat_id < 0:
            return self.rgba_material(rgba)
        if np.array_equal(rgba, np.asarray(self.model.mat_rgba[mat_id], np.float32)):
            return self.material(mat_id)
        return self._override(mat_id, rgba)

    def rgba_material(self, rgba) -> bpy.types.Material:
        """A plain material of one colour, shared by every element of the same float32 rgba."""
        rgba = np.asarray(rgba, dtype=np.float32)
        key = tuple(rgba.tolist())
        material = self._plain.get(key)
        if material is None:
            material = _new_material("rgba " + " ".join(f"{v:.3g}" for v in key))
            material[LOOK] = "rgba"
            self._setup_surface(material, Surface())
            self._set_rgba(material, rgba)
            self._plain[key] = material
        return material

    def collision_material(self) -> bpy.types.Material:
        """A shared translucent blue-grey for collision-only geoms (groups 3-5 are
        hidden by MuJoCo's viewer by default): rgba 0.35 0.55 0.85 0.35."""
        if self._collision is None:
            material = _new_material("MuJoCo collision")
            material[LOOK] = "collision"
            self._setup_surface(material, Surface(specular=0.0, shininess=0.0))
            self._set_rgba(material, np.array([0.35, 0.55, 0.85, 0.35], np.float32))
            self._collision = material
        return self._collision

    def _matid(self, kind: str, index: int) -> int:
        return int(getattr(self.model, f"{kind}_matid")[index])

    def _rgba(self, kind: str, index: int) -> np.ndarray:
        return np.asarray(getattr(self.model, f"{kind}_rgba")[index], dtype=np.float32)

    def _override(self, mat_id: int, rgba: np.ndarray) -> bpy.types.Material:
        key = (mat_id, tuple(rgba.tolist()))
        material = self._overrides.get(key)
        if material is None:
            base = self.material(mat_id)
            material = base.copy()  # shares the images; the node tree is copied
            material.use_fake_user = False
            material.name = f"{base.name} rgba " + " ".join(f"{v:.3g}" for v in key[1])
            material[LOOK] = "override"
            self._set_rgba(material, rgba)
            self._overrides[key] = material
        return material

    def _make_material(self, mat_id: int) -> bpy.types.Material:
        model = self.model
        material = _new_material(self.name("material", mat_id))
        material[LOOK] = "material"
        material.use_fake_user = True
        self._setup_surface(material, Surface.of_material(model, mat_id))
        self._add_textures(material, mat_id)
        self._set_rgba(material, np.asarray(model.mat_rgba[mat_id], np.float32))
        return material

    @staticmethod
    def _setup_surface(material, surface: Surface):
        """Principled inputs from MuJoCo's non-colour properties (see module doc)."""
        bsdf = _principled(material)
        roughness = surface.roughness if surface.roughness >= 0 else \
            shininess_to_roughness(surface.shininess)
        metallic = max(surface.metallic, 0.0)
        specular = min(max(surface.specular, 0.0), 1.0)
        bsdf.inputs["Roughness"].default_value = roughness
        bsdf.inputs["Metallic"].default_value = metallic
        bsdf.inputs["Specular IOR Level"].default_value = specular
        bsdf.inputs["Emission Strength"].default_value = surface.emission
        if surface.reflectance > 0:
            bsdf.inputs["Coat Weight"].default_value = 1.0
            bsdf.inputs["Coat Roughness"].default_value = 0.0
            bsdf.inputs["Coat IOR"].default_value = reflectance_to_coat_ior(surface.reflectance)
        # Solid-mode (Workbench) counterparts
        material.roughness = roughness
        material.metallic = metallic
        material.specular_intensity = specular

    @staticmethod
    def _set_rgba(material, rgba: np.ndarray):
        """Put the colour MuJoCo renders with everywhere the material keeps it."""
        rgba = [float(v) for v in rgba]
        nodes = material.node_tree.nodes
        bsdf = _principled(material)
        bsdf.inputs["Base Color"].default_value = rgba
        bsdf.inputs["Alpha"].default_value = rgba[3]
        bsdf.inputs["Emission Color"].default_value = rgba[:3] + [1.0]
        tint = nodes.get("MuJoCo rgba")
        if tint is not None:
            _socket(tint.inputs, "B_Color").default_value = rgba
        alpha = nodes.get("MuJoCo alpha")
        if alpha is not None:
            alpha.inputs[1].default_value = rgba[3]
        material.diffuse_color = rgba
        _set_transparency(material, rgba[3] < 1.0 or bool(material.get(TEXTURE_ALPHA)))

    # ------------------------------------------------------------------ textures in materials

    def _role_texture(self, mat_id: int, role) -> int:
        return int(self.model.mat_texid[mat_id][int(role)])

    def _add_textures(self, material, mat_id: int):
        """Image Texture nodes for the material's texture roles, wired to the BSDF."""
        roles = mujoco.mjtTextureRole
        color_tex = self._role_texture(mat_id, roles.mjTEXROLE_RGB)
        if color_tex < 0:
            color_tex = self._role_texture(mat_id, roles.mjTEXROLE_RGBA)
        layers = {role: self._role_texture(mat_id, role) for role in
                  (roles.mjTEXROLE_ROUGHNESS, roles.mjTEXROLE_METALLIC, roles.mjTEXROLE_ORM,
                   roles.mjTEXROLE_NORMAL, roles.mjTEXROLE_OPACITY, roles.mjTEXROLE_EMISSIVE)}
        if color_tex < 0 and all(t < 0 for t in layers.values()):
            return
        n = _Nodes(material.node_tree)
        bsdf = _principled(material)
        bsdf.location = (300, 300)
        coords = {}  # one coordinate chain per texture type

        def sample(tex_id, y, label):
            kind = "2d" if self.model.tex_type[tex_id] == mujoco.mjtTexture.mjTEXTURE_2D else "cube"
            if kind not in coords:
                coords[kind] = self._coordinates(n, mat_id, tex_id, y)
            node = n.add("ShaderNodeTexImage", -300, y, label=label, image=self.texture_image(tex_id),
                         interpolation="Linear", extension="REPEAT" if kind == "2d" else "EXTEND")
            n.link(coords[kind], node.inputs["Vector"])
            return node

        if color_tex >= 0:
            self._wire_color(n, bsdf, sample(color_tex, 300, "MuJoCo texture"), material,
                             has_alpha=int(self.model.tex_nchannel[color_tex]) in (2, 4))
        self._wire_layers(n, bsdf, material, mat_id, layers, sample)
        n.place()

    @staticmethod
    def _wire_color(n, bsdf, image_node, material, has_alpha: bool):
        """Base Color = texture * rgba (MuJoCo multiplies them); emission follows it."""
        tint = n.add("ShaderNodeMix", 0, 300, name="MuJoCo rgba", label="MuJoCo rgba",
                     data_type="RGBA", blend_type="MULTIPLY")
        _socket(tint.inputs, "Factor_Float").default_value = 1.0
        n.link(image_node.outputs["Color"], _socket(tint.inputs, "A_Color"))
        n.link(_socket(tint.outputs, "Result_Color"), bsdf.inputs["Base Color"])
        n.link(_socket(tint.outputs, "Result_Color"), bsdf.inputs["Emission Color"])
        if has_alpha:
            alpha = n.add("ShaderNodeMath", 0, 100, name="MuJoCo alpha", label="MuJoCo alpha",
                          operation="MULTIPLY")
            n.link(image_node.outputs["Alpha"], alpha.inputs[0])
            n.link(alpha.outputs[0], bsdf.inputs["Alpha"])
            material[TEXTURE_ALPHA] = True

    def _wire_layers(self, n, bsdf, material, mat_id, layers, sample):
        """PBR layers (MuJoCo 3.x `<layer>`): roughness, metallic, ORM, normal, opacity, emissive."""
        roles = mujoco.mjtTextureRole
        model = self.model
        y = -100

        def scaled(output, factor, target):
            if factor >= 0:  # documented: the coefficient multiplies the texture
                output = _Math(n, 0).mul(output, float(factor))
            n.link(output, target)

        rough, metal, orm = (layers[roles.mjTEXROLE_ROUGHNESS], layers[roles.mjTEXROLE_METALLIC],
                             layers[roles.mjTEXROLE_ORM])
        if orm >= 0:  # packed occlusion (unused: Blender computes its own), roughness, metallic
            split = n.add("ShaderNodeSeparateColor", -50, y)
            n.link(sample(orm, y, "MuJoCo ORM").outputs["Color"], split.inputs[0])
            scaled(split.outputs[1], model.mat_roughness[mat_id], bsdf.inputs["Roughness"])
            scaled(split.outputs[2], model.mat_metallic[mat_id], bsdf.inputs["Metallic"])
            y -= 300
        if rough >= 0:
            scaled(sample(rough, y, "MuJoCo roughness").outputs["Color"], model.mat_roughness[mat_id],
                   bsdf.inputs["Roughness"])
            y -= 300
        if metal >= 0:
            scaled(sample(metal, y, "MuJoCo metallic").outputs["Color"], model.mat_metallic[mat_id],
                   bsdf.inputs["Metallic"])
            y -= 300
        normal = layers[roles.mjTEXROLE_NORMAL]
        if normal >= 0:
            normal_map = n.add("ShaderNodeNormalMap", 0, y)
            n.link(sample(normal, y, "MuJoCo normal").outputs["Color"], normal_map.inputs["Color"])
            n.link(normal_map.outputs[0], bsdf.inputs["Normal"])
            y -= 300
        opacity = layers[roles.mjTEXROLE_OPACITY]
        if opacity >= 0:
            n.link(sample(opacity, y, "MuJoCo opacity").outputs["Color"], bsdf.inputs["Alpha"])
            material[TEXTURE_ALPHA] = True
            y -= 300
        emissive = layers[roles.mjTEXROLE_EMISSIVE]
        if emissive >= 0:
            n.link(sample(emissive, y, "MuJoCo emissive").outputs["Color"], bsdf.inputs["Emission Color"])
            strength = bsdf.inputs["Emission Strength"]
            if strength.default_value == 0:
                strength.default_value = 1.0

    def _coordinates(self, n, mat_id: int, tex_id: int, y: float):
        """The vector output that maps texture `tex_id` the way MuJoCo does (module doc)."""
        model = self.model
        uniform = bool(model.mat_texuniform[mat_id])
        if model.tex_type[tex_id] != mujoco.mjtTexture.mjTEXTURE_2D:
            coords = n.add("ShaderNodeTexCoord", -1700, y)
            return self._cube_lookup(n, coords.outputs["Object" if uniform else "Generated"],
                                     tex_id, -1100, y, unit=not uniform)
        # MuJoCo's (s, t) = (u, 1 - v) * texrepeat [* geom size when texuniform]; image v = 1 - t.
        # (u, 1 - v): one shared group (the object's UV map or MuJoCo's box UVs)
        st = n.add("ShaderNodeGroup", -1300, y, label="MuJoCo (s, t)", node_tree=self._group(UV_GROUP))
        vector, k = st.outputs[0], 1.0
        if uniform:  # per spatial unit: times the geom's size[0], size[1] = half the dimensions
            size = n.add("ShaderNodeAttribute", -1300, y - 300, attribute_type="OBJECT",
                         attribute_name="dimensions", label="object dimensions")
            times = n.add("ShaderNodeVectorMath", -1100, y - 150, operation="MULTIPLY", label="size")
            n.link(vector, times.inputs[0])
            n.link(size.outputs["Vector"], times.inputs[1])
            vector, k = times.outputs[0], 0.5
        rx, ry = (float(v) for v in model.mat_texrepeat[mat_id])
        mapping = n.add("ShaderNodeMapping", -900, y, name="MuJoCo texrepeat",
                        label="MuJoCo texrepeat", vector_type="POINT")
        mapping.inputs["Scale"].default_value = (k * rx, -k * ry, 1.0)
        mapping.inputs["Location"].default_value = (0.0, 1.0, 0.0)
        n.link(vector, mapping.inputs["Vector"])
        return mapping.outputs[0]

    def _cube_lookup(self, n, vector, tex_id: int, x: float, y: float, unit: bool):
        """UV into the face-strip image of a cube texture for direction `vector`."""
        if unit:  # Generated 0..1 -> the unit object -1..1
            to_unit = n.add("ShaderNodeMapping", x - 200, y, vector_type="POINT")
            to_unit.inputs["Scale"].default_value = (2.0, 2.0, 2.0)
            to_unit.inputs["Location"].default_value = (-1.0, -1.0, -1.0)
            n.link(vector, to_unit.inputs["Vector"])
            vector = to_unit.outputs[0]
        width = int(self.model.tex_width[tex_id]) or self.texture_image(tex_id).size[0]
        height = int(self.model.tex_height[tex_id]) or self.texture_image(tex_id).size[1]
        six = height >= 6 * width
        node = n.add("ShaderNodeGroup", x, y, label="MuJoCo cube map", node_tree=self._group(CUBE_GROUP))
        node.inputs["Face Step"].default_value = 1.0 / 6.0 if six else 0.0
        node.inputs["Face Height"].default_value = 1.0 / 6.0 if six else 1.0
        node.inputs["Inset"].default_value = 0.5 / max(width, 1)
        n.link(vector, node.inputs["Vector"])
        return node.outputs[0]

    # ------------------------------------------------------------------ world

    def skybox_texture(self) -> int:
        """Id of the texture MuJoCo draws as the sky (the first skybox), or -1."""
        skyboxes = np.flatnonzero(self.model.tex_type == mujoco.mjtTexture.mjTEXTURE_SKYBOX)
        return int(skyboxes[0]) if len(skyboxes) else -1

    def world(self) -> bpy.types.World | None:
        """The skybox as a World (see module doc), or None without a skybox."""
        if not self._world_made:
            self._world_made = True
            tex_id = self.skybox_texture()
            if tex_id >= 0:
                self._world = self._make_world(tex_id)
        return self._world

    def _make_world(self, tex_id: int) -> bpy.types.World:
        name = self.names.get(("texture", tex_id)) or \
            mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_TEXTURE, tex_id) or "MuJoCo skybox"
        world = bpy.data.worlds.new(name)
        world[LOOK] = "skybox"
        if world.node_tree is None:  # before Blender 5.0
            world.use_nodes = True
        tree = world.node_tree
        tree.nodes.clear()
        n = _Nodes(tree)
        coords = n.add("ShaderNodeTexCoord", -1200, 0)
        # MuJoCo draws the skybox rotated 90 degrees about X: texture coordinates (x, z, -y)
        split = n.add("ShaderNodeSeparateXYZ", -1000, 0)
        n.link(coords.outputs["Generated"], split.inputs[0])
        flip = n.add("ShaderNodeMath", -800, -100, operation="MULTIPLY")
        n.link(split.outputs[1], flip.inputs[0])
        flip.inputs[1].default_value = -1.0
        rotated = n.add("ShaderNodeCombineXYZ", -600, 0, label="MuJoCo skybox frame")
        n.link(split.outputs[0], rotated.inputs[0])
        n.link(split.outputs[2], rotated.inputs[1])
        n.link(flip.outputs[0], rotated.inputs[2])
        uv = self._cube_lookup(n, rotated.outputs[0], tex_id, -400, 0, unit=False)
        image = n.add("ShaderNodeTexImage", -200, 0, label="MuJoCo skybox",
                      image=self.texture_image(tex_id), interpolation="Linear", extension="EXTEND")
        n.link(uv, image.inputs["Vector"])
        background = n.add("ShaderNodeBackground", 100, 0)
        n.link(image.outputs["Color"], background.inputs["Color"])
        out = n.add("ShaderNodeOutputWorld", 300, 0)
        n.link(background.outputs[0], out.inputs["Surface"])
        n.place()
        cycles = getattr(world, "cycles", None)
        if cycles is not None:  # "Automatic" sizes the light map from the image: 2.5 s more per render
            cycles.sampling_method = "MANUAL"
            cycles.sample_map_resolution = 1024
        # Solid-mode / Workbench world colour: the skybox's average colour (every 8th texel)
        pixels, _ = texture_pixels(self.model, tex_id)
        sample = pixels[::8, ::8].astype(np.float32)
        rgb = sample[..., :3] if sample.shape[-1] >= 3 else np.repeat(sample[..., :1], 3, axis=-1)
        world.color = (rgb.reshape(-1, 3).mean(axis=0) / 255).tolist()
        return world

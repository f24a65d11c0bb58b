"""blender_compat: each version claim holds on the Blender running the suite.

The suite runs once per supported release (4.2 LTS, 4.5 LTS, 5.0, 5.2 LTS), so
every flag is checked against the API it stands for on each of them: a wrong
version in blender_compat fails here, on the release where it is wrong.
"""

import bpy
import pytest

from mjblend import blender_compat as compat


def has_property(rna_type, name):
    return name in rna_type.bl_rna.properties


def fresh_mesh():
    mesh = bpy.data.meshes.new("compat probe")
    mesh.vertices.add(3)
    mesh.loops.add(3)
    mesh.polygons.add(1)
    mesh.polygons.foreach_set("loop_start", [0])
    return mesh


def free_normal_shows():
    """Does a "custom_normal" corner attribute become the mesh's corner normals?"""
    mesh = fresh_mesh()
    mesh.vertices.foreach_set("co", [0, 0, 0, 1, 0, 0, 0, 1, 0])
    mesh.loops.foreach_set("vertex_index", [0, 1, 2])
    mesh.update()
    tilted = [0.6, 0.0, 0.8] * 3
    mesh.attributes.new("custom_normal", "FLOAT_VECTOR", "CORNER").data.foreach_set("vector", tilted)
    mesh.update()
    shown = [0.0] * 9
    mesh.corner_normals.foreach_get("vector", shown)
    return all(abs(a - b) < 1e-6 for a, b in zip(shown, tilted, strict=True))


def positions_write_tags():
    """Does writing vertex positions with foreach_set alone reach the evaluated mesh?"""
    mesh = bpy.data.meshes.new("compat probe")
    mesh.vertices.add(1)
    obj = bpy.data.objects.new("compat probe", mesh)
    scene = bpy.context.scene
    scene.collection.objects.link(obj)
    try:
        layer = bpy.context.view_layer
        layer.update()
        mesh.vertices.foreach_set("co", [1.0, 2.0, 3.0])
        layer.update()
        return tuple(obj.evaluated_get(layer.depsgraph).data.vertices[0].co) == (1.0, 2.0, 3.0)
    finally:
        bpy.data.objects.remove(obj)


CLAIMS = {
    "FREE_NORMALS": lambda: free_normal_shows(),
    "POSITIONS_WRITE_TAGS": lambda: positions_write_tags(),
    "SLOTTED_ACTIONS": lambda: has_property(bpy.types.Action, "slots"),
    "EEVEE_NEXT_NAME": lambda: "BLENDER_EEVEE_NEXT" in {
        item.identifier for item in bpy.types.RenderSettings.bl_rna.properties["engine"].enum_items},
    "IMAGE_MEDIA_TYPE": lambda: has_property(bpy.types.ImageFormatSettings, "media_type"),
}


def test_every_flag_is_checked():
    flags = {name for name in dir(compat) if name.isupper() and name not in ("VERSION", "EEVEE")}
    assert flags == set(CLAIMS)


@pytest.mark.parametrize("flag", sorted(CLAIMS))
def test_flag_matches_this_blender(flag):
    try:
        assert getattr(compat, flag) == CLAIMS[flag](), f"{flag} on Blender {bpy.app.version_string}"
    finally:
        for mesh in [m for m in bpy.data.meshes if m.name.startswith("compat probe")]:
            bpy.data.meshes.remove(mesh)

"""blender_compat: each version claim holds on the Blender running the suite.

The suite runs once per supported release (4.2 LTS, 4.5 LTS, 5.0), so every
flag is checked against the API it stands for on each of them: a wrong version
in blender_compat fails here, on the release where it is wrong.
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


def instance_of_hidden_evaluates():
    """Does a Geometry Nodes instance of an object hidden with hide_viewport reach the
    viewport's evaluated instances? (Drawing itself needs a window: the GUI tier's
    Fast-display screenshots check Blender 3.4, where it is not drawn.)"""
    from mjblend.sync.instancer import Instancer
    mesh = bpy.data.meshes.new("compat probe")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    source = bpy.data.objects.new("compat probe", mesh)
    bpy.context.scene.collection.objects.link(source)
    layer = bpy.context.view_layer
    instancer = Instancer("compat probe", [[source]], bpy.context.scene.collection, layer)
    try:
        instancer.hide_sources(True)
        layer.update()
        return source.hide_viewport and any(
            i.is_instance and i.instance_object.original == source for i in layer.depsgraph.object_instances)
    finally:
        instancer.remove()
        bpy.data.objects.remove(source)
        bpy.data.meshes.remove(mesh)


CLAIMS = {
    "ATTRIBUTE_MESH": lambda: ".corner_vert" in fresh_mesh().attributes,
    "SET_LOOP_TOTAL": lambda: not bpy.types.MeshPolygon.bl_rna.properties["loop_total"].is_readonly,
    "NEEDS_AUTO_SMOOTH": lambda: has_property(bpy.types.Mesh, "use_auto_smooth"),
    "FREE_NORMALS": lambda: free_normal_shows(),
    "UV_VECTOR_ARRAY": lambda: has_property(bpy.types.MeshUVLoopLayer, "uv"),
    "POSITIONS_WRITE_TAGS": lambda: positions_write_tags(),
    "DRAWS_INSTANCES_OF_HIDDEN": lambda: instance_of_hidden_evaluates(),
    "NODE_TREE_INTERFACE": lambda: has_property(bpy.types.NodeTree, "interface"),
    "SURFACE_RENDER_METHOD": lambda: has_property(bpy.types.Material, "surface_render_method"),
    "HAS_TRANSPARENT_SHADOW": lambda: has_property(bpy.types.Material, "use_transparent_shadow"),
    "SLOTTED_ACTIONS": lambda: has_property(bpy.types.Action, "slots"),
    "FILE_HANDLER": lambda: hasattr(bpy.types, "FileHandler"),
    "LAYOUT_PANEL": lambda: "panel" in bpy.types.UILayout.bl_rna.functions,
    "EVENT_PRESS_POSITION": lambda: has_property(bpy.types.Event, "mouse_prev_press_x"),
}


def test_every_flag_is_checked():
    flags = {name for name in dir(compat) if name.isupper() and name != "VERSION"}
    assert flags == set(CLAIMS)


@pytest.mark.parametrize("flag", sorted(CLAIMS))
def test_flag_matches_this_blender(flag):
    try:
        assert getattr(compat, flag) == CLAIMS[flag](), f"{flag} on Blender {bpy.app.version_string}"
    finally:
        for mesh in [m for m in bpy.data.meshes if m.name.startswith("compat probe")]:
            bpy.data.meshes.remove(mesh)

"""The Fast display of a running simulation: one object per model whose Geometry
Nodes modifier draws every object that moves with a body, so a frame is one mesh
write instead of one transform write per object.

How Blender draws it (measured on 3.4, 4.2, 4.5 and 5.0):

- the sources are linked into one collection that no scene links; a Collection
  Info node ("Separate Children", children kept where they are) gives one
  instance per source object at its own world matrix, in Blender's order of
  their names;
- the instancer's mesh has one vertex per source (only vertices), in that order;
  "Instance on Points" (Pick Instance, index = the vertex's) moves each by its
  body's displacement: the vertex position and a rotation point attribute;
- object instances are drawn, rendered and hit by `Scene.ray_cast` (which
  returns the source) whatever the source's own hide flags, so the sources can
  be hidden in the viewport and in renders while their instances show. (An
  instance of a collection is not: Blender draws only the collection's visible
  objects, so one sub-collection per body would vanish with its sources.)
"""

from __future__ import annotations

from typing import Sequence

import bpy
import numpy as np

from .. import blender_compat

ROTATION = "rotation"  # point attribute: the body's displacement rotation
RENDERED = "rendered"  # point attribute: the source shows in renders


class Instancer:
    """The instancer object of one model and the sources it draws.

    `groups[i]` are the objects that move with simulated body i (row i of what
    `write` gets); their world matrices now are their authored poses. The
    instancer object, named after the model, is linked into `collection`;
    `view_layer` is one that shows that collection (Blender is asked once which
    instance is which source)."""

    def __init__(self, name: str, groups: Sequence[Sequence[bpy.types.Object]],
                 collection: bpy.types.Collection, view_layer: bpy.types.ViewLayer):
        self.sources = [obj for group in groups for obj in group]
        rows = {obj.as_pointer(): row for row, group in enumerate(groups) for obj in group}
        if len(rows) != len(self.sources):
            raise ValueError("an object is in more than one group")
        self.bodies = len(groups)
        self._shown = None  # while the sources are hidden: what hide_sources(False) puts back
        self._rows = np.zeros(len(self.sources), dtype=np.intp)  # (all row 0 until Blender's order is known)
        self.object = self.mesh = self.node_group = self.source_collection = None
        try:
            self._build(name, collection)
            # row of each vertex's source, in the order Collection Info gives the sources
            order = self._instance_order(view_layer)
            self._rows = np.array([rows[obj.as_pointer()] for obj in order], dtype=np.intp)
            self.mesh.attributes[RENDERED].data.foreach_set("value", [not obj.hide_render for obj in order])
        except BaseException:
            self.remove()
            raise

    # ------------------------------------------------------------------ frames

    def write(self, pos, quat) -> None:
        """Move every body's objects by its displacement: (N, 3) positions and (N, 4)
        quaternions (w x y z), world_now = Translation(pos) @ Rotation(quat) @ authored."""
        pos, quat = np.asarray(pos), np.asarray(quat)
        if pos.shape != (self.bodies, 3) or quat.shape != (self.bodies, 4):
            raise ValueError(f"expected ({self.bodies}, 3) and ({self.bodies}, 4), "
                             f"got {pos.shape} and {quat.shape}")
        mesh = self.mesh
        mesh.vertices.foreach_set("co", pos[self._rows].astype(np.float32).ravel())
        rotation = mesh.attributes[ROTATION].data
        if blender_compat.QUATERNION_ATTRIBUTE:
            rotation.foreach_set("value", quat[self._rows].astype(np.float32).ravel())
        else:
            rotation.foreach_set("vector", quaternion_to_euler(quat)[self._rows].astype(np.float32).ravel())
        mesh.update()

    # -------------------------------------------------------------- visibility

    def hide_sources(self, hidden: bool) -> None:
        """Hide the sources in every viewport and in renders (their instances still
        show and are picked), or put back exactly how they were shown and selected."""
        if hidden and self._shown is None:
            # hiding deselects (Blender drops the selection of what it cannot show)
            selected_in = {}  # object's pointer -> [(scene, view layer name)]
            for scene in bpy.data.scenes:
                for layer in scene.view_layers:
                    for obj in layer.objects.selected:
                        selected_in.setdefault(obj.as_pointer(), []).append((scene, layer.name))
            self._shown = [(obj, obj.hide_viewport, obj.hide_render, selected_in.get(obj.as_pointer(), []))
                           for obj in self.sources]
            for obj in self.sources:
                obj.hide_viewport = True
                obj.hide_render = True
        elif not hidden and self._shown is not None:
            shown, self._shown = self._shown, None
            for obj, hide_viewport, hide_render, selected_in in shown:
                try:
                    obj.hide_viewport = hide_viewport
                    obj.hide_render = hide_render
                    for scene, layer_name in selected_in:
                        layer = scene.view_layers.get(layer_name)
                        if layer is not None and obj.name in layer.objects:
                            obj.select_set(True, view_layer=layer)
                except ReferenceError:
                    pass  # deleted (or replaced by an undo) meanwhile

    # ---------------------------------------------------------------- clean up

    def remove(self) -> None:
        """Delete everything the instancer made, the sources shown as they were."""
        self.hide_sources(False)
        for blocks, block in ((bpy.data.objects, self.object), (bpy.data.meshes, self.mesh),
                              (bpy.data.node_groups, self.node_group),
                              (bpy.data.collections, self.source_collection)):
            if block is not None:
                try:
                    blocks.remove(block)  # (a collection's objects are unlinked, not deleted)
                except ReferenceError:
                    pass  # already gone with an undo
        self.object = self.mesh = self.node_group = self.source_collection = None

    # --------------------------------------------------------------- building

    def _build(self, name, collection):
        # never linked to a scene: its objects are drawn only through the instances
        self.source_collection = bpy.data.collections.new(f"{name} sources")
        self.source_collection.instance_offset = (0.0, 0.0, 0.0)  # Collection Info subtracts it
        for obj in self.sources:
            self.source_collection.objects.link(obj)
        self.mesh = bpy.data.meshes.new(f"{name} instances")
        self.mesh.vertices.add(len(self.sources))
        rotation_type = "QUATERNION" if blender_compat.QUATERNION_ATTRIBUTE else "FLOAT_VECTOR"
        self.mesh.attributes.new(ROTATION, rotation_type, "POINT")
        self.mesh.attributes.new(RENDERED, "BOOLEAN", "POINT")
        self.node_group = _node_group(f"{name} instances", self.source_collection, rotation_type)
        self.object = bpy.data.objects.new(f"{name} instances", self.mesh)
        self.object.modifiers.new("instances", "NODES").node_group = self.node_group
        self.object.hide_select = True  # a click picks the instance's source, never this
        collection.objects.link(self.object)

    def _instance_order(self, view_layer):
        """The sources in the order Collection Info instances them: Blender sorts them
        by name with its own natural, case-blind comparison, asked here, not redone."""
        self.write(np.zeros((self.bodies, 3)), np.tile([1.0, 0.0, 0.0, 0.0], (self.bodies, 1)))
        view_layer.update()
        by_pointer = {obj.as_pointer(): obj for obj in self.sources}
        order = [None] * len(self.sources)
        instancer = self.object.as_pointer()
        for instance in view_layer.depsgraph.object_instances:
            parent = instance.parent
            if instance.is_instance and parent and parent.original.as_pointer() == instancer:
                source = instance.instance_object.original
                order[instance.persistent_id[0]] = by_pointer.get(source.as_pointer())  # (its point's index)
        if any(obj is None for obj in order):
            raise RuntimeError(f"view layer {view_layer.name!r} does not show the instancer of "
                               f"{len(self.sources)} objects")
        return order


def _node_group(name, sources, rotation_type):
    """Collection Info (one instance per source, where it is) -> Instance on Points
    (vertex i draws instance i, rotated by the vertex's rotation attribute; in renders
    only the sources that render themselves)."""
    tree = bpy.data.node_groups.new(name, "GeometryNodeTree")
    if blender_compat.NODE_TREE_INTERFACE:
        tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
        tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    else:
        tree.inputs.new("NodeSocketGeometry", "Geometry")
        tree.outputs.new("NodeSocketGeometry", "Geometry")
    nodes, links = tree.nodes, tree.links
    group_in, group_out = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")

    info = nodes.new("GeometryNodeCollectionInfo")
    info.transform_space = "ORIGINAL"  # the instancer stays at the origin: world matrices as they are
    info.inputs["Collection"].default_value = sources
    info.inputs["Separate Children"].default_value = True
    info.inputs["Reset Children"].default_value = False  # each source at its authored world matrix

    place = nodes.new("GeometryNodeInstanceOnPoints")
    place.inputs["Pick Instance"].default_value = True
    links.new(group_in.outputs[0], place.inputs["Points"])
    links.new(info.outputs[0], place.inputs["Instance"])
    links.new(nodes.new("GeometryNodeInputIndex").outputs[0], place.inputs["Instance Index"])
    links.new(_named_attribute(nodes, ROTATION, rotation_type), place.inputs["Rotation"])

    # the viewport draws every instance; a render only those whose source renders
    shown = nodes.new("FunctionNodeBooleanMath")
    shown.operation = "OR"
    links.new(nodes.new("GeometryNodeIsViewport").outputs[0], shown.inputs[0])
    links.new(_named_attribute(nodes, RENDERED, "BOOLEAN"), shown.inputs[1])
    links.new(shown.outputs[0], place.inputs["Selection"])

    links.new(place.outputs[0], group_out.inputs[0])
    return tree


def _named_attribute(nodes, name, data_type):
    node = nodes.new("GeometryNodeInputNamedAttribute")
    node.data_type = data_type
    node.inputs["Name"].default_value = name
    # (before 4.0 the node has one "Attribute" output per type, the unused ones disabled)
    return next(s for s in node.outputs if s.name == "Attribute" and s.enabled)


def quaternion_to_euler(quat) -> np.ndarray:
    """(N, 4) quaternions (w x y z) -> (N, 3) XYZ Euler angles, Blender's convention
    (R = Rz @ Ry @ Rx), for Blenders whose Instance on Points takes an Euler rotation."""
    q = np.asarray(quat, dtype=np.float64)
    w, x, y, z = (q / np.linalg.norm(q, axis=1, keepdims=True)).T
    r00, r10, r20 = 1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)
    r21, r22 = 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    r11, r12 = 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    cos_y = np.hypot(r00, r10)
    locked = cos_y < 1e-6  # gimbal lock: only X + Z (or X - Z) is defined, Z is taken 0
    euler = np.empty((len(q), 3))
    euler[:, 0] = np.where(locked, np.arctan2(-r12, r11), np.arctan2(r21, r22))
    euler[:, 1] = np.arctan2(-r20, cos_y)
    euler[:, 2] = np.where(locked, 0.0, np.arctan2(r10, r00))
    return euler

"""The Fast display of a running simulation: one object per model whose Geometry
Nodes modifier draws every object that moves with a body, so a frame is two
array writes (rotations, positions) instead of one transform write per object.

How Blender is made to draw it (what Blender draws, renders and hits measured on
4.2, 4.5 and 5.0; costs on 5.0.1):

- Object instances are rendered and hit by `Scene.ray_cast` (which returns
  the source object) whatever the source's own hide flags, and drawn in the
  viewport when the source is hidden per view layer (`hide_set`, the H key),
  not when it is hidden with `hide_viewport`: Blender 5.2.2's viewport draws
  no instance of such a source (measured in the GUI tier: 0 pixels of the Fast
  display; the bpy module's offscreen evaluation does not show the
  difference). So the sources are hidden per view layer, in every view layer
  of every scene, and in renders (hide_render), while their instances show.
  An instance of a *collection* is not drawn so: Blender draws only the
  collection's visible objects. So the sources are instanced one object at a
  time: Collection Info with "Separate Children" on a collection holding the
  objects themselves (never linked to a scene).
- Blender looks an instance's object up in a list (linearly) as it adds it,
  twice per evaluation, and walks every referenced object per evaluation, so
  distinct referenced objects cost ~6-8 us each per frame (and N^2 / 2
  comparisons) while points drawing the same one cost ~0.2 us. So sources are
  grouped by shape (the same mesh data, materials, colour and no modifiers:
  MuJoCo imports share one mesh among identical primitives) and only one
  object per shape, its *representative*, is instanced (Reset Children: its
  geometry in its own space); every point carries its source's whole pose
  (position, rotation, and its scale as a point attribute written once). A
  hit on a representative's instance is told apart by its matrix
  (`source_at`). Representatives are split into chunks of CHUNK, each its own
  collection and "Instance on Points", made one nested instance.
- Collection Info sorts its children by name (Blender's natural, case-blind
  order); which instance is which representative is asked of Blender once.
- Blender's evaluation log walks every object a geometry socket's instances
  refer to, for each socket of the modifier's own node tree (not of the
  groups inside it, unless a node editor shows them): the work is done in a
  node group the modifier's tree only calls (about 30% less per frame).
- The mesh holds only vertices, one per point: its position now, and its
  rotation now in the quaternion point attribute "rotation", which Instance on
  Points takes as it is. A frame writes the rotations, then the vertex
  positions: from 4.3 the positions write tags the mesh itself, and its
  evaluation reads the rotations written with it; 4.2 needs Mesh.update()
  (blender_compat.POSITIONS_WRITE_TAGS).
- `copies` draws every source that many times, each copy moved by its own rows
  (the randomization preview's environments side by side): more points, the
  same instanced objects, so a copy costs what its points cost.
"""

from __future__ import annotations

from typing import Sequence

import bpy
import numpy as np
from mathutils import Matrix

from .. import blender_compat
from ..engine import frames

CHUNK = 256  # sources per Collection Info (its cost grows with the square of this)
PICK = "pick"  # point attribute: which instance of its chunk's collection the point draws
SCALE = "scale"  # point attribute: its source's own scale (written once)
CHUNK_OF = "chunk"  # point attribute: its chunk (-1: draws nothing)
ROTATION = "rotation"  # point attribute: its pose's rotation now, a quaternion (w x y z)
RENDERED = "rendered"  # point attribute: its source shows in renders
MADE = "mjblend_fast_display"  # ID property: a data-block an instancer made
SHOWN = "mjblend_shown"  # ID property of a hidden source: its hide_render before


class Instancer:
    """The instancer object of one model and the sources it draws.

    `groups[i]` are the objects that move with simulated body i (row i of what
    `write` gets); their world matrices now are their authored poses. The
    instancer object, named `name`, is linked into `collection`; `view_layer`
    is one that shows that collection (Blender is asked once which instance
    is which source). `also_hidden` objects are hidden and shown with the
    sources but not drawn (the empties of bodies and joints, cameras, lights).
    `copies`: each source is drawn that many times, copy c moved by rows
    c * len(groups) + i of what `write` gets."""

    def __init__(self, name: str, groups: Sequence[Sequence[bpy.types.Object]],
                 collection: bpy.types.Collection, view_layer: bpy.types.ViewLayer,
                 also_hidden: Sequence[bpy.types.Object] = (), copies: int = 1):
        self.sources = [obj for group in groups for obj in group]
        self.also_hidden = list(also_hidden)  # moving objects that draw no geometry (empties, ...)
        if len({obj.as_pointer() for obj in self.sources}) != len(self.sources):
            raise ValueError("an object is in more than one group")
        if copies < 1:
            raise ValueError(f"copies must be at least 1, not {copies}")
        self.bodies = len(groups)  # rows of `write` per copy
        self.copies = copies
        self._rows = np.array([row for row, group in enumerate(groups) for _ in group], dtype=np.intp)
        view_layer.update()  # (world matrices of transforms just put back)
        authored = [obj.matrix_world.copy() for obj in self.sources]
        # each source's authored pose: position, rotation (w x y z), scale
        parts = [matrix.decompose() for matrix in authored]
        self._where = np.array([tuple(loc) for loc, _rot, _scale in parts], dtype=np.float64).reshape(-1, 3)
        self._turn = np.array([tuple(rot) for _loc, rot, _scale in parts], dtype=np.float64).reshape(-1, 4)
        self._scale = np.array([tuple(scale) for _loc, _rot, scale in parts], dtype=np.float32).reshape(-1, 3)
        # a matrix with shear (a rotated child of a non-uniformly scaled parent) has no
        # position / rotation / scale: such a source is drawn where it is, then displaced
        self._placed = np.array([not _decomposes(m, loc, rot, scale) for m, (loc, rot, scale)
                                 in zip(authored, parts, strict=True)], dtype=bool)
        self._scale[self._placed] = 1.0
        # one instanced object per shape; shape[i]: the index of source i's representative
        first: dict = {}
        keys = [obj.as_pointer() if placed else _shape_key(obj)
                for obj, placed in zip(self.sources, self._placed, strict=True)]
        self._shape = np.array([first.setdefault(key, len(first)) for key in keys], dtype=np.intp)
        first_source = np.unique(self._shape, return_index=True)[1]  # (shapes number in first-seen order)
        self.representatives = [self.sources[i] for i in first_source]
        # chunks of at most CHUNK representatives, shaped and placed ones apart:
        # (placed?, [representative]); and each representative's (chunk, index in it)
        placed_shape = np.zeros(len(first), dtype=bool)
        placed_shape[self._shape] = self._placed
        self._probe_offset = np.where(placed_shape, self._where[first_source, 0], 0.0)
        self._chunks, self._slot = [], np.zeros((len(first), 2), dtype=np.intp)
        for placed in (False, True):
            members = np.flatnonzero(placed_shape == placed)
            for start in range(0, len(members), CHUNK):
                for index, shape in enumerate(members[start:start + CHUNK]):
                    self._slot[shape] = (len(self._chunks), index)
                self._chunks.append((placed, [self.representatives[i] for i in members[start:start + CHUNK]]))
        self._last = None  # (pos, quat) of the last write, to tell instances of one shape apart
        self._shown = None  # while the sources are hidden: what hide_sources(False) puts back
        # points: copy c of source i is point c * len(sources) + i
        self._points = copies * len(self.sources)
        self._point_rows = (np.arange(copies)[:, None] * self.bodies + self._rows).ravel()
        self._point_turn = np.tile(self._turn, (copies, 1))
        self._point_where = np.tile(self._where, (copies, 1))
        self._point_placed = np.tile(self._placed, copies)
        self._positions = np.zeros((self._points, 3), dtype=np.float32)
        self._rotations = np.zeros((self._points, 4), dtype=np.float32)
        self.object = self.mesh = None
        self.node_groups: list[bpy.types.NodeTree] = []  # the modifier's, then the one it calls
        self.collections: list[bpy.types.Collection] = []
        try:
            self._build(name, collection)
            self._pick_by_name(view_layer)
            self._show_instances(False)  # (until the sources hide)
        except BaseException:
            self.remove()
            raise

    # ------------------------------------------------------------------ frames

    def write(self, pos, quat) -> None:
        """Move every body's objects by its displacement: (N, 3) positions and (N, 4)
        quaternions (w x y z), world_now = Translation(pos) @ Rotation(quat) @ authored;
        N = copies * bodies (copy c's rows after copy c - 1's)."""
        pos, quat = np.asarray(pos, dtype=np.float64), np.asarray(quat, dtype=np.float64)
        rows = self.copies * self.bodies
        if pos.shape != (rows, 3) or quat.shape != (rows, 4):
            raise ValueError(f"expected ({rows}, 3) and ({rows}, 4), got {pos.shape} and {quat.shape}")
        self._rotations[:], self._positions[:] = self.poses(pos, quat)
        self._write_poses()
        self._last = (pos.copy(), quat.copy())

    def poses(self, pos, quat) -> tuple[np.ndarray, np.ndarray]:
        """Every point's (rotation, position) after its body's displacement (copy c of
        source i: row c * len(sources) + i)."""
        moved_q, moved_p = quat[self._point_rows], pos[self._point_rows]
        turn = frames.quat_multiply(moved_q, self._point_turn)
        where = moved_p + frames.rotate(moved_q, self._point_where)
        placed = self._point_placed
        turn[placed], where[placed] = moved_q[placed], moved_p[placed]
        return turn, where

    def _write_poses(self):
        # (the rotations first: the positions write tags the mesh for both)
        self.mesh.attributes[ROTATION].data.foreach_set("value", self._rotations.ravel())
        self.mesh.vertices.foreach_set("co", self._positions.ravel())
        if not blender_compat.POSITIONS_WRITE_TAGS:
            self.mesh.update()

    def source_at(self, obj, matrix) -> bpy.types.Object:
        """The source drawn by the instance `Scene.ray_cast` hit (its object and world
        matrix): of the sources drawn with that object's shape, the one whose
        instance is nearest `matrix`."""
        obj = obj.original  # (ray_cast gives the evaluated object)
        shape = next((i for i, rep in enumerate(self.representatives) if rep == obj), None)
        # (points: every copy of every source of that shape)
        candidates = [] if shape is None else np.flatnonzero(np.tile(self._shape, self.copies) == shape)
        count = len(self.sources)
        if len(candidates) <= 1 or self._last is None:
            return self.sources[candidates[0] % count] if len(candidates) else obj
        _turn, where = self.poses(*self._last)
        hit = np.array(matrix)
        distance = np.linalg.norm(where[candidates] - hit[:3, 3], axis=1)
        return self.sources[candidates[int(np.argmin(distance))] % count]

    # -------------------------------------------------------------- visibility

    def hide_sources(self, hidden: bool) -> None:
        """Hide the sources in every viewport and in renders and show the instances
        (still picked as their sources), or put the sources back exactly as they were
        shown and selected and hide the instances (so nothing stale is drawn or hit)."""
        if hidden and self._shown is None:
            # hiding deselects (Blender drops the selection of what it cannot show)
            layers = [(scene, layer) for scene in bpy.data.scenes for layer in scene.view_layers]
            selected_in = {}  # object's pointer -> [(scene, view layer name)]
            for scene, layer in layers:
                for obj in layer.objects.selected:
                    selected_in.setdefault(obj.as_pointer(), []).append((scene, layer.name))
            shown = []
            for obj in self.sources + self.also_hidden:
                hidden_in = [(scene, layer.name) for scene, layer in layers
                             if obj.name in layer.objects and obj.hide_get(view_layer=layer)]
                shown.append((obj, obj.hide_render, selected_in.get(obj.as_pointer(), []), hidden_in))
            self._shown = shown
            for obj in self.sources + self.also_hidden:
                obj[SHOWN] = int(obj.hide_render)  # (for `sweep`, after an undo)
                for _scene, layer in layers:
                    if obj.name in layer.objects:
                        obj.hide_set(True, view_layer=layer)
                obj.hide_render = True
            self._show_instances(True)
        elif not hidden and self._shown is not None:
            shown, self._shown = self._shown, None
            self._show_instances(False)
            for obj, hide_render, selected_in, hidden_in in shown:
                try:
                    obj.hide_render = hide_render
                    if SHOWN in obj:
                        del obj[SHOWN]
                    for scene in bpy.data.scenes:
                        for layer in scene.view_layers:
                            if obj.name in layer.objects:
                                obj.hide_set((scene, layer.name) in hidden_in, view_layer=layer)
                    for scene, layer_name in selected_in:
                        layer = scene.view_layers.get(layer_name)
                        if layer is not None and obj.name in layer.objects:
                            obj.select_set(True, view_layer=layer)
                except ReferenceError:
                    pass  # deleted (or replaced by an undo) meanwhile

    def select_only(self, obj, view_layer) -> None:
        """While the sources are hidden (Blender ignores selecting them): `obj` is
        the one selected when they show again."""
        if self._shown is None:
            return
        entry = (view_layer.id_data, view_layer.name)
        self._shown = [(o, render, [entry] if o == obj else
                        [e for e in selected if e[0] != entry[0] or e[1] != entry[1]], hidden)
                       for o, render, selected, hidden in self._shown]

    def _show_instances(self, shown: bool) -> None:
        if self.object is not None:
            self.object.hide_viewport = not shown
            self.object.hide_render = not shown

    # ---------------------------------------------------------------- clean up

    def remove(self) -> None:
        """Delete everything the instancer made, the sources shown as they were."""
        try:
            self.hide_sources(False)
        except ReferenceError:
            pass  # (sources gone with an undo: nothing to show)
        data = bpy.data
        blocks = [(data.objects, self.object), (data.meshes, self.mesh)]
        blocks += [(data.node_groups, tree) for tree in self.node_groups]
        blocks += [(data.collections, sources) for sources in self.collections]
        for datablocks, block in blocks:
            if block is not None:
                try:
                    datablocks.remove(block)  # (a collection's objects are unlinked, not deleted)
                except ReferenceError:
                    pass  # already gone with an undo
        self.object = self.mesh = None
        self.node_groups, self.collections = [], []

    # --------------------------------------------------------------- building

    def _build(self, name, collection):
        points = self._points
        for number, (_placed, members) in enumerate(self._chunks):
            # never linked to a scene: its objects are drawn only through the instances
            chunk = bpy.data.collections.new(f"{name} {number}")
            self.collections.append(chunk)
            for obj in members:
                chunk.objects.link(obj)
        self.mesh = bpy.data.meshes.new(name)
        self.mesh.vertices.add(points)
        attributes = self.mesh.attributes
        attributes.new(PICK, "INT", "POINT")
        attributes.new(CHUNK_OF, "INT", "POINT")
        attributes.new(SCALE, "FLOAT_VECTOR", "POINT")  # (written by _pick_by_name)
        attributes.new(ROTATION, "QUATERNION", "POINT")
        rendered = [not obj.hide_render for obj in self.sources] * self.copies
        attributes.new(RENDERED, "BOOLEAN", "POINT").data.foreach_set("value", rendered)
        self.node_groups.append(_new_tree(name))
        placed = [placed for placed, _members in self._chunks]
        self.node_groups.append(_instancing_tree(f"{name} instancing", self.collections, placed))
        _call(*self.node_groups)
        self.object = bpy.data.objects.new(name, self.mesh)
        self.object.modifiers.new("instances", "NODES").node_group = self.node_groups[0]
        self.object.hide_select = True  # a click picks the instance's source, never this
        for block in [self.object, self.mesh, *self.node_groups, *self.collections]:
            block[MADE] = True  # (for `sweep`, after an undo)
        collection.objects.link(self.object)

    def _pick_by_name(self, view_layer):
        """Which instance of its chunk's collection each representative is: ask
        Blender. Point j draws instance slot[j] (chunk, index) at x = j + 1,
        unrotated; Blender sorts a chunk by name, so the representative found at
        x = j + 1 is instance slot[j][1] of its chunk. Other points draw nothing."""
        count, shapes, points = len(self.sources), len(self.representatives), self._points
        probe = np.arange(shapes)
        pick, chunk_of = np.full(points, -1), np.full(points, -1)
        pick[:shapes], chunk_of[:shapes] = self._slot[:, 1], self._slot[:, 0]
        self.mesh.attributes[PICK].data.foreach_set("value", pick)
        self.mesh.attributes[CHUNK_OF].data.foreach_set("value", chunk_of)
        scale = self.mesh.attributes[SCALE].data
        scale.foreach_set("vector", np.ones(3 * points, dtype=np.float32))
        self._positions[:] = 0.0
        self._positions[:shapes, 0] = probe + 1
        self._rotations[:] = (1.0, 0.0, 0.0, 0.0)
        self._write_poses()
        self.mesh.update()  # (attribute writes, as _build's, tag nothing on 4.2)
        view_layer.update()
        shape_of = {obj.as_pointer(): i for i, obj in enumerate(self.representatives)}
        index = np.full(shapes, -1)
        instancer = self.object.as_pointer()
        for instance in view_layer.depsgraph.object_instances:
            parent = instance.parent
            if instance.is_instance and parent and parent.original.as_pointer() == instancer:
                shape = shape_of.get(instance.instance_object.original.as_pointer())
                if shape is not None:  # drawn by point j at x = j + 1 (placed ones: + where they are)
                    x = instance.matrix_world.translation.x - self._probe_offset[shape]
                    point = round(x) - 1
                    if 0 <= point < shapes:
                        index[shape] = self._slot[point, 1]
        if (index < 0).any():
            raise RuntimeError(f"view layer {view_layer.name!r} does not show the instancer of "
                               f"{count} objects")
        copies = self.copies
        pick[:] = np.tile(index[self._shape], copies)
        chunk_of[:] = np.tile(self._slot[self._shape, 0], copies)
        scale.foreach_set("vector", np.tile(self._scale, (copies, 1)).ravel())
        self.mesh.attributes[PICK].data.foreach_set("value", pick)
        self.mesh.attributes[CHUNK_OF].data.foreach_set("value", chunk_of)
        self.mesh.update()  # (as above)
        rows = self.copies * self.bodies
        self.write(np.zeros((rows, 3)), np.tile([1.0, 0.0, 0.0, 0.0], (rows, 1)))


def _decomposes(matrix, loc, rot, scale, tolerance=1e-6) -> bool:
    """Is `matrix` Translation @ Rotation @ Scale (no shear)?"""
    again = Matrix.LocRotScale(loc, rot, scale)
    return all(abs(a - b) <= tolerance * max(1.0, abs(a)) for row, other in zip(matrix, again, strict=True)
               for a, b in zip(row, other, strict=True))


def _shape_key(obj):
    """Objects drawn alike: the same data, materials, colour and display, no
    modifiers (an object with modifiers, or without data, is its own shape)."""
    if obj.data is None or len(obj.modifiers):
        return obj.as_pointer()
    slots = tuple((slot.link, slot.material.as_pointer() if slot.material else 0)
                  for slot in obj.material_slots)
    return (obj.type, obj.data.as_pointer(), slots, tuple(obj.color), obj.display_type,
            obj.show_wire, obj.visible_shadow if hasattr(obj, "visible_shadow") else True)


def sweep() -> int:
    """Undo and redo can bring back a state saved while an instancer existed (Blender
    pushes undo steps during a simulation, e.g. on a click), with no simulation to
    remove it: delete what an instancer made and show its sources as they were.
    Returns how many data-blocks it touched."""
    touched = 0
    for obj in bpy.data.objects:
        if SHOWN in obj.keys():
            flag = obj[SHOWN]  # hide_render (before issue 29: (hide_viewport, hide_render))
            obj.hide_render = bool(flag[-1] if hasattr(flag, "__len__") else flag)
            del obj[SHOWN]
            for scene in bpy.data.scenes:  # (hidden per view layer: the sources were shown)
                for layer in scene.view_layers:
                    if obj.name in layer.objects:
                        obj.hide_set(False, view_layer=layer)
            touched += 1
    for blocks in (bpy.data.objects, bpy.data.meshes, bpy.data.node_groups, bpy.data.collections):
        for block in [b for b in blocks if b.get(MADE)]:
            blocks.remove(block)
            touched += 1
    return touched


def _new_tree(name):
    """A Geometry Nodes tree with one geometry input and output."""
    tree = bpy.data.node_groups.new(name, "GeometryNodeTree")
    tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    return tree


def _call(tree, group):
    """`tree` is input -> `group` -> output."""
    node = tree.nodes.new("GeometryNodeGroup")
    node.node_tree = group
    tree.links.new(tree.nodes.new("NodeGroupInput").outputs[0], node.inputs[0])
    tree.links.new(node.outputs[0], tree.nodes.new("NodeGroupOutput").inputs[0])


def _instancing_tree(name, chunks, placed):
    """Per chunk: Collection Info (one instance per representative: in its own space,
    or where it is for `placed` chunks) -> Instance on Points (the chunk's points, each
    drawing its "pick" instance, turned by its "rotation", scaled by its "scale"; in
    renders only sources that render) -> one nested instance; all joined."""
    tree = _new_tree(name)
    nodes, links = tree.nodes, tree.links
    points, group_out = nodes.new("NodeGroupInput").outputs[0], nodes.new("NodeGroupOutput")

    # the viewport draws every source; a render only those that render themselves
    shown = nodes.new("FunctionNodeBooleanMath")
    shown.operation = "OR"
    links.new(nodes.new("GeometryNodeIsViewport").outputs[0], shown.inputs[0])
    links.new(_named_attribute(nodes, RENDERED, "BOOLEAN"), shown.inputs[1])
    pick = _named_attribute(nodes, PICK, "INT")
    scale = _named_attribute(nodes, SCALE, "FLOAT_VECTOR")
    chunk_of = _named_attribute(nodes, CHUNK_OF, "INT")
    rotation = _named_attribute(nodes, ROTATION, "QUATERNION")  # (a rotation socket)

    join = nodes.new("GeometryNodeJoinGeometry")
    for number, (sources, where_it_is) in enumerate(zip(chunks, placed, strict=True)):
        info = nodes.new("GeometryNodeCollectionInfo")
        info.transform_space = "ORIGINAL"  # the instancer stays at the origin: world matrices as they are
        info.inputs["Collection"].default_value = sources
        info.inputs["Separate Children"].default_value = True
        # a shape in its own space (points place it), or a placed source where it is (points displace it)
        info.inputs["Reset Children"].default_value = not where_it_is

        mine = nodes.new("FunctionNodeCompare")
        mine.data_type, mine.operation = "INT", "EQUAL"
        links.new(chunk_of, _enabled(mine.inputs, "A"))
        _enabled(mine.inputs, "B").default_value = number
        selected = nodes.new("FunctionNodeBooleanMath")
        selected.operation = "AND"
        links.new(mine.outputs[0], selected.inputs[0])
        links.new(shown.outputs[0], selected.inputs[1])

        place = nodes.new("GeometryNodeInstanceOnPoints")
        place.inputs["Pick Instance"].default_value = True
        links.new(points, place.inputs["Points"])
        links.new(selected.outputs[0], place.inputs["Selection"])
        links.new(info.outputs[0], place.inputs["Instance"])
        links.new(pick, place.inputs["Instance Index"])
        links.new(rotation, place.inputs["Rotation"])
        links.new(scale, place.inputs["Scale"])

        nested = nodes.new("GeometryNodeGeometryToInstance")  # a join adds each chunk's objects once
        links.new(place.outputs[0], nested.inputs[0])
        links.new(nested.outputs[0], join.inputs[0])
    links.new(join.outputs[0], group_out.inputs[0])
    return tree


def _enabled(sockets, name):
    """The socket `name` in use (Compare has one per data type, the others disabled)."""
    return next(s for s in sockets if s.name == name and s.enabled)


def _named_attribute(nodes, name, data_type):
    node = nodes.new("GeometryNodeInputNamedAttribute")
    node.data_type = data_type
    node.inputs["Name"].default_value = name
    return _enabled(node.outputs, "Attribute")


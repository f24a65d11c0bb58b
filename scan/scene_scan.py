"""The scan: a model root and its objects -> `mujoco.MjSpec`.

The inverse of importer/build.py. Every attribute goes through the
schema-driven `components.spec_io`; poses come from the objects' transforms,
or, while a transform still reads back what the import set, from the exact
authored values kept at import (so an untouched model compiles bit for bit
to what MuJoCo makes of the original file).

    spec = scan.scan_model(root)        # raises ScanError naming the objects
    model = spec.compile()
"""

from __future__ import annotations

import copy
import functools
import os

import bpy
import mujoco
import numpy as np

from ..components import changes, spec_io, values
from ..components.kinds import DATA_KINDS, FILE_KINDS, SECTION_KINDS, SPATIAL_KINDS
from ..components.schema import DEFAULT_KINDS, MODEL_SETTINGS, VISUAL_SETTINGS
from ..components.stored_keys import ANGLE_UNIT, DEGREE, ORDER, RESOLVED_PATH, SEEN_POSE, SIGNATURE, SOURCE
from ..engine import frames
from ..geometry import mujoco_meshes, materials
from ..scene.errors import MJBlendError
from ..scene.names import first_free, numbered
from ..scene.transforms import IDENTITY, authored, authored_placement

# every kind's element is made by the spec's (or a body's) "add_" + kind
SPATIAL = frozenset(SPATIAL_KINDS)  # in the body tree
ASSETS = frozenset(DATA_KINDS)
DEFAULT_KIND_SET = frozenset(DEFAULT_KINDS)  # what a <default> class sets (looked up per element)


class ScanError(MJBlendError):
    """The scene cannot become a model."""


# What the scan refuses, for an export and a simulation alike, since MuJoCo would take
# each silently and neither a written file nor a simulation would be the scene: a
# number no MJCF file keeps (NaN where MuJoCo has no "not set" NaN; an edit to Blender's
# +-3.4e38, what it keeps of an infinity: values.check_kept), a transform that is not
# finite or that no rotation can be read from (a zero quaternion, a zero axis, a zero
# scale: Blender's matrix of these is not the rotation shown), and two elements of one
# kind with one name (MuJoCo's namespaces are per kind). Infinities MuJoCo's own files
# hold (a joint's range, a plane's size) are kept exactly.
# (Names no MJCF file can keep are the export's to refuse: exporter/checks.py.)
TINY = 1e-15  # MuJoCo's mjMINVAL: a quaternion or axis shorter than this has no direction


def _unkept(block, kind: str, error) -> ScanError:
    """The ScanError of a values.UnkeptNumber of `block`'s `kind` values."""
    return ScanError(f"{block.name}: {kind} {error}", [block])


def model_roots(scene):
    return [o for o in scene.objects if o.mujoco.kind == "MODEL"]


def model_of(obj):
    """The model root an object belongs to: its nearest ancestor of kind MODEL."""
    while obj is not None:
        if obj.mujoco.kind == "MODEL":
            return obj
        obj = obj.parent
    return None


def scan_model(root, warnings: list[str] | None = None, held: dict | None = None) -> mujoco.MjSpec:
    """The spec of one model root, scanned afresh (`Scanner` for what only Blender has
    of it: `blender_meshes`, `blender_textures`)."""
    return Scanner(root, warnings if warnings is not None else [], held=held).spec


# ------------------------------------------------------------------ cache


class _Entry:
    def __init__(self, scanner, root, objects):
        self.spec = scanner.spec
        self.scanner = scanner  # keeps the element of each object, for in-place updates
        self.layout = _layout(root, objects)
        # the rest of the structure changes only by property edits, which report the object
        self.identities = {obj.as_pointer(): _identity(obj) for obj in objects}
        self.pending: set[int] = set()
        self.moved: set[int] = set()
        self.visual: set[int] = set()  # (roots whose `<visual>` settings alone were edited)

    def same_structure(self, root, objects) -> bool:
        """True while no object was added, removed, reparented, renamed, re-kinded or
        re-classed, and the model's assets and classes are the same."""
        if _layout(root, objects) != self.layout:
            return False
        edited = self.pending & self.identities.keys()
        if not edited:
            return True
        by_pointer = {obj.as_pointer(): obj for obj in objects}
        return all(_identity(by_pointer[p]) == self.identities[p] for p in edited)


def _layout(root, objects) -> tuple:
    """The objects below a model root, their parents, the model's assets and classes.
    Compared as lists of objects (bpy's == compares the ID pointers): ~0.3 µs an
    object, a fifth of reading each object's identity, so an unchanged rescan is cheap."""
    model = root.mujoco.model
    return (list(objects), [obj.parent for obj in objects], [a.block for a in model.assets],
            [(c.name, c.parent) for c in model.defaults])


def _identity(obj) -> tuple:
    holder = obj.mujoco
    return holder.kind, holder.name, holder.classname, obj.get(ORDER, -1)


class ScanCache:
    """The cached scans of one scene's model roots: a root is scanned again only where
    something changed. Owned by the scene's live.SceneSession (dropped with it on file
    load, undo, redo and add-on disable, which may put back values unreported).

    `held`: as_pointer() -> HeldPose of the objects a running simulation moves (the
    session's table, shared): the scan reads their authored transforms from it, not
    the objects' simulated poses, so an edit during a simulation never takes a
    simulated pose for an authored one."""

    def __init__(self, held: dict | None = None):
        self.held = held if held is not None else {}
        self.entries: dict[int, _Entry] = {}
        self._edits = changes.Cursor()  # the edits the cached scans have not seen yet

    def spec(self, root, warnings: list[str] | None = None):
        """The spec of `root`: (spec, updated). updated is None after a full scan
        (first time, or objects added, removed, reparented, renamed or re-classed),
        else the number of elements updated in place (0: nothing changed, the spec
        is reused)."""
        try:
            bpy.context.evaluated_depsgraph_get()  # lets the depsgraph report transform edits
        except (AttributeError, RuntimeError):  # no context: property edits are still tracked
            pass
        touched, visual, moved = self._edits.read_visual_apart()
        for entry in self.entries.values():
            entry.pending |= touched
            entry.moved |= moved
            entry.visual |= visual
        key = root.as_pointer()
        objects = root.children_recursive
        entry = self.entries.get(key)
        updated = None
        if entry is not None and key in entry.visual and key not in entry.pending:
            # `<visual>` only draws: written into the spec in place, not counted as an update
            # (a running simulation copies it into its model: live/simulation.py _copy_visual)
            entry.visual.discard(key)
            found = visual_values(root)
            if found is None:
                entry.pending.add(key)  # (what it cannot write, a full scan reports)
            else:
                put_visual(entry.spec.visual, found)
        if entry is not None and key not in entry.pending and entry.same_structure(root, objects):
            updated = entry.scanner.refresh(entry.pending, entry.moved)  # None: it cannot
            entry.pending.clear()
            entry.moved.clear()
        if updated is None:
            scanner = Scanner(root, warnings if warnings is not None else [], held=self.held)
            entry = self.entries[key] = _Entry(scanner, root, objects)
        return entry.spec, updated

    def scanner_of(self, root):
        """The Scanner behind `spec(root)` (its `elements` bind objects to ids), or None."""
        entry = self.entries.get(root.as_pointer())
        return entry.scanner if entry else None


def visual_values(root) -> list[tuple] | None:
    """[(part of mjVisual, attribute, value)] of a model root's `<visual>` settings, as a
    scan writes them into a new spec (and so as MuJoCo compiles them); None where a value
    cannot be kept (the full scan says what)."""
    spec = mujoco.MjSpec()
    model = root.mujoco.model
    out = []
    for kind in VISUAL_SETTINGS:
        raw = model.get(kind)
        only = values.recorded_own(raw, kind) if raw is not None else None
        if only:
            group = getattr(model, kind)
            try:
                spec_io.props_to_settings(group, spec, kind, only=only,
                                          unless=spec_io.new_spec_settings(kind))
            except values.UnkeptNumber:
                return None
        part = spec_io.KINDS[kind].path.split(".")[1]  # visual.map -> map (visual.global_ -> global_)
        owner = getattr(spec.visual, part)
        out += [(part, attr.name, copy.copy(getattr(owner, attr.name))) for attr in spec_io.KINDS[kind].attrs]
    return out


def put_visual(visual, found: list[tuple]) -> None:
    """`visual_values` into an mjVisual (a spec's `visual`, a model's `vis`). (MuJoCo
    4.0.1's Python MjModel shows rgba.bv and rgba.bvactive as empty arrays: those two
    colours, of bounding volumes MJBlend does not draw, cannot be written there.)"""
    for part, name, value in found:
        owner = getattr(visual, part)
        if np.shape(getattr(owner, name)) == np.shape(value):
            setattr(owner, name, value)


def structure_signature(root) -> int:
    """Changes whenever the model's element structure does (not its values): its
    `_layout` and every object's `_identity` (bpy objects hash by their ID pointer)."""
    objects = root.children_recursive
    return hash((root.as_pointer(), *map(tuple, _layout(root, objects)),
                 tuple(map(_identity, objects))))


def _order(obj):
    return (obj.get(ORDER, 1 << 30), obj.name)


class Scanner:
    def __init__(self, root, warnings, textures=False, held=None):
        self.root, self.warnings = root, warnings
        self.held = held if held is not None else {}  # see ScanCache
        # look for textures painted or made in Blender (reads every texture's pixels)
        self.check_textures = textures
        self.blender_textures: dict[str, bpy.types.Image] = {}
        self.model = root.mujoco.model
        self.model_degree = self.model.get(DEGREE)  # the angle unit most elements were written in
        # only an import from files of mixed angle units (and angles to convert) sets it
        self.mixed_units = self.model.get(ANGLE_UNIT) is not None
        self.spec = spec = mujoco.MjSpec()
        # Object.children walks all of bpy.data.objects on every call: one pass instead,
        # which also reads each object's kind and order once
        # as_pointer() -> [(order, object, kind, holder, its as_pointer())]
        self.children: dict[int, list] = {}
        for obj in root.children_recursive:
            holder = obj.mujoco
            kind = holder.kind.lower()
            pointer = obj.as_pointer()
            self.children.setdefault(obj.parent.as_pointer(), []).append(
                (_order(obj), obj, kind, holder, pointer))
        for members in self.children.values():
            members.sort(key=_first)
        spec.modelname = root.mujoco.name or root.name
        source = self.model.get(SOURCE)
        if source:
            spec.modelfiledir = os.path.dirname(source) + os.sep
        self.missing: list[str] = []
        self.plugin_users: list = []  # property groups that name a plugin
        self.elements: dict[int, tuple] = {}  # as_pointer() -> (datablock, kind, element)
        self.classed: dict[int, str] = {}  # id() of elements created from a default class -> its name
        self._class_poses: dict[tuple, dict] = {}  # (class name, kind) -> its pose, as `unless`
        self._class_parents: dict[str, str] = {}  # class name -> its parent's (not for main)
        self.inline_plugins: list = []  # nameless plugin objects: inline instances
        self.inline_users: list = []  # (element, group) whose plugin is declared inline
        self.placements: dict[int, tuple] = {}  # as_pointer() -> own transform / mesh size
        self.owned: dict[int, set] = {}  # as_pointer() -> own attributes of a classed element
        self.blender_meshes: list[str] = []
        self.named: dict[tuple[str, str], object] = {}  # (kind, MJCF name) -> its datablock
        self._classes: dict = {}  # class name -> its MjsDefault (after _defaults made them)
        self._settings()
        self._defaults()
        self._assets()
        self.sections = {kind: [] for kind in SECTION_KINDS}
        self.worldbody = spec.worldbody
        self._body(root.as_pointer(), spec.worldbody)
        self._activate_plugins()
        self._sections()
        self._inline_plugin_instances()
        if self.missing:
            raise ScanError("references to deleted objects: " + "; ".join(self.missing))

    # ---------------------------------------------------------------- parts

    def _settings(self):
        for kind in MODEL_SETTINGS:
            raw = self.model.get(kind)  # (no group: the file left the kind alone)
            only = values.recorded_own(raw, kind) if raw is not None else None
            if only:  # (most files leave most settings alone)
                group = getattr(self.model, kind)
                try:
                    spec_io.props_to_settings(group, self.spec, kind, only=only,
                                              unless=spec_io.new_spec_settings(kind))
                except values.UnkeptNumber as error:  # (the caller names the model)
                    raise ScanError(f"{kind} {error}", [self.root]) from None
        spec_io.props_to_settings(self.model, self.spec, "model")
        unit = self.model.get(ANGLE_UNIT)
        if unit is not None:  # included files disagreed on the unit: see importer/build.py
            self.spec.compiler.degree = bool(unit)
        self.degree = bool(self.spec.compiler.degree)

    def _defaults(self):
        names = [item.name for item in self.model.defaults]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:  # MuJoCo's spec takes them, and its XML reader refuses the file
            raise ScanError(f"two default classes are named {twice[0]!r}: rename one", [self.root])
        for item in self.model.defaults:
            if item.name == "main":
                default = self.spec.default
            else:
                parent = self.spec.find_default(item.parent or "main")
                if parent is None:
                    raise ScanError(f"default class {item.name!r}: parent class "
                                    f"{item.parent!r} does not exist", [self.root])
                default = self.spec.add_default(item.name, parent)
                self._class_parents[item.name] = item.parent or "main"
            for kind in DEFAULT_KINDS:
                raw = item.get(kind)  # a look at the raw group first: most kinds are left alone
                if raw is None:
                    continue  # the class sets nothing of this kind itself
                own = values.recorded_own(raw, kind)
                if not own and spec_io.POSE not in raw:
                    continue
                group = getattr(item, kind)
                element = getattr(default, kind)
                # a class may name an element that does not exist (MuJoCo only resolves what
                # elements inherit, e.g. after an `attach` prefixed the names): keep the name
                try:
                    spec_io.props_to_element(group, element, kind, only=own)
                except values.UnkeptNumber as error:
                    raise ScanError(f"default class {item.name!r}: {kind} {error}", [self.root]) \
                        from None
                if raw is not None and spec_io.POSE in raw:
                    # written over what the class inherited, and kept for its elements
                    start = self._class_pose(self._class_parents[item.name], kind) \
                        if item.name != "main" else spec_io.new_element_pose(kind)
                    mine = {}
                    spec_io.write_stored_pose(group, element, kind, unless=start, bits_into=mine)
                    self._class_poses[(item.name, kind)] = {**start, **mine}

    def _assets(self):
        for entry in self.model.assets:
            block = entry.block
            if block is None:
                continue  # an asset the user deleted: nothing refers to it any more, or it errs below
            kind = block.mujoco.kind.lower()
            if kind not in ASSETS:
                continue
            element = self._add(self.spec, kind, block.mujoco)
            self._copy(getattr(block.mujoco, kind), element, kind, block)
            if kind == "texture" and len(element.cubefiles) != 6:
                # a texture made in Blender has none; MuJoCo's XML writer crashes on fewer
                element.cubefiles = (list(element.cubefiles) + [""] * 6)[:6]
            if kind == "mesh":
                self._mesh_geometry(block, element)
            elif kind == "texture" and self.check_textures and _painted(block, element):
                if not element.name:  # the export refers to it by name
                    taken = {t.name for t in self.spec.textures}
                    element.name = first_free(taken, numbered(block.name, "_"))
                self.blender_textures[element.name] = block
                _texture_pixels(block, element)
            self.elements[block.as_pointer()] = (block, kind, element)

    def _mesh_geometry(self, mesh, element):
        """A mesh edited (or made) in Blender goes in as its Blender geometry: inline
        vertices and faces, already in the frame the geom places (the export writes
        them to a file). An untouched imported mesh keeps referring to its file."""
        group = mesh.mujoco.mesh
        signature = group.get(SIGNATURE)
        untouched = mujoco_meshes.same_mesh(mesh, signature) if signature \
            else bool(element.file or len(element.uservert))
        if untouched or not len(mesh.vertices):
            return
        if mesh.uv_layers.active is not None:
            verts, tris, texcoords = mujoco_meshes.textured_triangles(mesh)
        else:
            (verts, tris), texcoords = mujoco_meshes.triangles(mesh), np.zeros((0, 2))
        self.blender_meshes.append(element.name)
        element.file = ""
        element.uservert = verts.ravel().tolist()
        element.userface = tris.ravel().tolist()
        element.usertexcoord = texcoords.ravel().tolist()
        element.usernormal = []
        element.userfacenormal, element.userfacetexcoord = [], []
        element.scale = [1.0, 1.0, 1.0]  # Blender's vertices are already scaled and placed
        element.refpos, element.refquat = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]

    def _add(self, parent, kind, holder):
        """A new element of `kind` in `parent` (the spec, or a body or frame), made from
        the holder's default class, if it names one, and named as the holder says."""
        classname = holder.classname
        cls = None
        if classname:
            if kind not in spec_io.CLASS_KINDS:
                raise ScanError(f"{holder.id_data.name}: a {kind} has no default class in "
                                f"MuJoCo (its Class says {classname!r})", [holder.id_data])
            cls = self._classes.get(classname)
            if cls is None:
                cls = self._classes[classname] = self.spec.find_default(classname)
        add = getattr(parent, "add_" + kind)
        # the class positionally: the binding matches a keyword against all of the
        # element's ~40 optional parameters (~15 us an element instead of ~8)
        element = add() if cls is None else add(cls)
        name = holder.name
        if name:
            block = holder.id_data
            other = self.named.setdefault((kind, name), block)
            if other is not block:  # MuJoCo's spec refuses it (its namespaces are per kind)
                raise ScanError(f"{other.name} and {block.name}: two {kind} elements named {name!r} "
                                f"(MuJoCo needs each {kind} name once): rename one", [block, other])
            element.name = name
        if cls is not None:
            self.classed[id(element)] = classname
        return element

    def _start_pose(self, element, kind) -> dict | None:
        """The pose a new element holds before the scan writes its own (`pose_of`):
        its class's, or MuJoCo's default for a kind no class sets; None if unknown."""
        if kind not in DEFAULT_KIND_SET:
            return spec_io.new_element_pose(kind)
        classname = self.classed.get(id(element))
        return None if classname is None else self._class_pose(classname, kind)

    def _class_pose(self, classname, kind) -> dict:
        """The pose a class gives elements of `kind` (as `unless` takes it): the one
        `_defaults` recorded where the class sets one, else its parent's, else (main)
        MuJoCo's defaults."""
        key = (classname, kind)
        found = self._class_poses.get(key)
        if found is None:
            parent = self._class_parents.get(classname)
            # main gives what it was not set: MuJoCo's defaults, as a new element holds them
            found = self._class_poses[key] = self._class_pose(parent, kind) if parent else \
                spec_io.new_element_pose(kind)
        return found

    def _copy(self, group, element, kind, block, pointer=None, fresh=True):
        """`pointer`: the block's as_pointer(), if known; `fresh`: `element` was just
        added (not one refreshed in place)."""
        # An element made from its class has the class's values already, and one of a
        # kind no class sets starts at MuJoCo's defaults: only what it sets itself
        # (imported or edited since: the attributes its group stores, `values.own`) is
        # written, as MJCF would have it.
        owns = id(element) in self.classed or kind not in DEFAULT_KIND_SET
        only = values.recorded_own(group) if owns else None
        if only is not None:
            self.owned[pointer or block.as_pointer()] = only
        if only is None or only:  # (an empty own: nothing of its own to copy)
            # a new element of a kind no class sets starts at MuJoCo's defaults: those stay
            unless = _fresh_values(kind) if fresh and kind not in DEFAULT_KIND_SET else None
            try:
                spec_io.props_to_element(group, element, kind, on_missing=self._missing(block),
                                         only=only, unless=unless)
            except values.UnkeptNumber as error:
                raise _unkept(block, kind, error) from None
            for attr in _FLOAT_ARRAYS.get(kind, ()):
                if (only is None or attr.name in only) and _holds_nan(group.get(values.vector_key(attr))):
                    raise ScanError(f"{block.name}: {kind} {attr.xml or attr.name} holds a value that "
                                    "is not a number (NaN), which MJCF cannot keep", [block])
        if kind in PLUGIN_KINDS and group.plugin_active and group.plugin_plugin_name \
                and not values.read_ref(group, spec_io.KINDS[kind].attr("plugin.name")):
            self.inline_users.append((element, group))
        path = group.get(RESOLVED_PATH) if kind in FILE_KINDS else None
        if path and os.path.exists(path):  # where the import found it, whatever the base folder
            element.file = path

    def _missing(self, owner):
        """on_missing for references of `owner` (a datablock, or its name)."""
        def report(attr, name):
            self.missing.append(f"{getattr(owner, 'name', owner)}: {attr.name} -> {name!r}")
        return report

    # ----------------------------------------------------------- body tree

    def _body(self, pointer, body):
        """The contents of the body object (or root) whose as_pointer() is `pointer`
        into Mjs body `body`.

        Frames come first; then every element of the body, whichever frame it sits
        in, in MuJoCo id order, so that the compiled ids are the original ones."""
        members = []
        self._gather(pointer, body, members)
        members.sort(key=_first)
        for _order_key, child, kind, holder, child_pointer, parent, in_element in members:
            element = self._spatial(child, kind, parent, holder, child_pointer, in_element)
            if kind == "body":
                self._body(child_pointer, element)

    def _gather(self, pointer, parent, members, in_element=True):
        """Walk the children of the object at `pointer` down through frames (not
        bodies): create the frames, collect the other members with the Mjs body/frame
        they go in. `in_element`: that object is a MuJoCo element (or the root)."""
        for order, child, kind, holder, child_pointer in self.children.get(pointer, ()):
            if kind == "frame":
                frame = self._spatial(child, kind, parent, holder, child_pointer, in_element)
                self._gather(child_pointer, frame, members)
            elif kind in SPATIAL:
                members.append((order, child, kind, holder, child_pointer, parent, in_element))
            elif kind in self.sections:
                self.sections[kind].append(child)
            elif kind == "none":
                self._gather(child_pointer, parent, members, False)  # a plain object in between
            else:
                raise ScanError(f"{child.name}: a {kind} cannot sit inside a body", [child])

    def _spatial(self, obj, kind, parent, holder, pointer, in_element):
        """`in_element`: `obj`'s Blender parent is a MuJoCo element or the root."""
        if kind == "joint" and parent is self.worldbody:
            raise ScanError(f"{obj.name}: a joint must be inside a body, not in the world", [obj])
        element = self._add(parent, kind, holder)
        group = getattr(holder, kind)
        self._copy(group, element, kind, obj, pointer)
        if kind in PLUGIN_KINDS and group.plugin_plugin_name:
            self.plugin_users.append(group)
        placement = authored_placement(obj, self.held)
        self._pose(obj, kind, group, element, placement, self._start_pose(element, kind),
                   in_element and placement.parent_inverse == IDENTITY)
        self.elements[pointer] = (obj, kind, element)
        self.placements[pointer] = placement
        scale = placement.scale
        if scale != (1.0, 1.0, 1.0) and any(abs(s - 1.0) > 1e-6 for s in scale):
            self.warnings.append(f"{obj.name}: object scale {tuple(round(s, 4) for s in scale)} "
                                 "is not applied to the MuJoCo model (apply it to the size)")
        return element

    def _pose(self, obj, kind, group, element, placement, start=None, plain=None):
        """`placement`: the object's `_placement` (its authored transform); `start`: the
        pose `element` holds (`_start_pose`), None when not known; `plain`: parented
        straight to its element, no parent inverse (`_plain_parenting`) if known."""
        seen = group.get(SEEN_POSE)
        location, rotation, mode, _scale, inverse = placement
        total = sum(location) + sum(rotation)  # not finite or huge: some value is (or they add up)
        if total - total != 0.0 or not -values.FLT_MAX < total < values.FLT_MAX or \
                _no_direction(rotation, mode):
            _check_placement(obj, location, rotation, mode)
        if seen is not None and mode == "QUATERNION" and seen.to_list() == [*location, *rotation] \
                and (plain if plain is not None else self._plain_parenting(obj, inverse)):
            spec_io.write_stored_pose(group, element, kind, unless=start)
            own_unit = group.get(DEGREE, self.model_degree) if self.mixed_units else None
            if own_unit is not None and bool(own_unit) != self.degree:
                self._convert_angles(group, kind, element, bool(own_unit))
            return
        # a moved object: its transform, each number as the shortest decimal of its float32
        pos, quat = (np.array([values.shortest_float32(v) for v in part])
                     for part in self._local_transform(obj))
        if not (np.isfinite(pos).all() and np.isfinite(quat).all()):  # from a parent's transform
            raise ScanError(f"{obj.name}: its place in its parent is not finite (a parent's "
                            "transform holds NaN or infinite values)", [obj])
        element.pos = pos
        if kind == "joint":
            element.axis = frames.axis_of(quat)
        elif kind == "light":
            element.dir = -frames.axis_of(quat)
        else:
            element.quat = quat
            element.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
        if kind in ("geom", "site"):
            authored = spec_io.read_pose(group, kind).get("fromto")
            if authored is not None and frames.has_fromto(authored):
                # the transform now places it: its length goes into size[1]
                size = np.array(element.size)
                size[1] = np.linalg.norm(np.subtract(authored[3:], authored[:3])) / 2
                element.size = size
            element.fromto = [float("nan"), 0, 0, 0, 0, 0]

    def _convert_angles(self, group, kind, element, was_degree):
        """An element written in the other angle unit: its orientation as the
        quaternion it stood for, a hinge or ball joint's angles converted."""
        if kind in ("body", "frame", "geom", "site", "camera") and \
                int(element.alt.type) in (frames.EULER, frames.AXISANGLE):
            element.quat = frames.resolve_orientation(element.quat, element.alt, was_degree,
                                                      "".join(self.spec.compiler.eulerseq))
            element.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
        if kind == "joint" and int(element.type) in (int(mujoco.mjtJoint.mjJNT_HINGE),
                                                     int(mujoco.mjtJoint.mjJNT_BALL)):
            factor = np.pi / 180 if was_degree else 180 / np.pi
            element.range = np.asarray(element.range) * factor
            element.ref *= factor
            element.springref *= factor

    def _plain_parenting(self, obj, inverse):
        """`inverse`: the object's matrix_parent_inverse, as a `Placement` holds it.
        (The full scan knows this from its walk: this is for an in-place refresh.)"""
        parent = obj.parent
        return parent is not None and inverse == IDENTITY and parent.mujoco.kind != "NONE"

    def _local_transform(self, obj):
        """(pos, quat) of `obj` in its nearest MuJoCo parent, however it is parented."""
        parent = obj.parent
        while parent is not None and parent.mujoco.kind == "NONE":
            parent = parent.parent
        world = obj.matrix_world
        pose = authored(obj, self.held)
        if pose is not None:  # the authored pose of an object a simulation or a bake moves
            world = obj.parent.matrix_world @ obj.matrix_parent_inverse @ pose.basis()
        if world.to_3x3().determinant() == 0.0:
            _flattened(obj)
        try:
            local = world if parent is None else parent.matrix_world.inverted() @ world
        except ValueError:  # mathutils: "matrix does not have an inverse"
            raise ScanError(f"{obj.name}: the scale of its parent {parent.name} (or of one of its "
                            "parents) is zero, so its place in it cannot be read: give it a "
                            "non-zero scale", [obj, parent]) from None
        loc, rot, _scale = local.decompose()
        return np.array(loc, dtype=float), np.array(rot, dtype=float)

    # ------------------------------------------------------------ sections

    def refresh(self, touched: set[int], moved: set[int] = frozenset()):
        """Copy the changed objects' values onto their elements in place; the number
        updated, or None when only a full scan can follow the change. `moved` objects
        count only if their own transform (or mesh) differs from what was scanned."""
        updated = 0
        for pointer in touched | moved:
            entry = self.elements.get(pointer)
            if entry is None:
                continue  # not part of this model
            block, kind, element = entry
            placement = _placement(block, kind, self.held)
            if pointer not in touched and self.placements.get(pointer) == placement:
                continue  # reported only because something above it moved
            if kind == "tendon":
                return None  # its path may have changed: wraps are rebuilt by a full scan
            if pointer in self.owned:
                own = values.recorded_own(getattr(block.mujoco, kind))
                if own is None or not own >= self.owned[pointer]:
                    return None  # an attribute went back to its class or default: start anew
            group = getattr(block.mujoco, kind)
            self.missing.clear()
            self._copy(group, element, kind, block, pointer, fresh=False)
            if self.missing:
                raise ScanError("references to deleted objects: " + "; ".join(self.missing))
            if kind in SPATIAL:
                self._pose(block, kind, group, element, placement)
            elif kind == "mesh":
                self._mesh_geometry(block, element)
            self.placements[pointer] = placement
            updated += 1
        return updated

    def _inline_plugin_instances(self):
        """An element whose <plugin> is written inline gets its own instance (config
        included), paired in file order with the nameless plugin objects; the export
        writes it as a named <instance> the element refers to (the same model)."""
        taken = {p.name for p in self.spec.plugins}
        for element, group in self.inline_users:
            instance = self.spec.add_plugin()
            # named: MuJoCo's XML writer crashes on a nameless instance (mujoco 4.0.0)
            name = first_free(taken, numbered(f"{element.name or 'inline'}_plugin"))
            taken.add(name)
            instance.name = name
            instance.plugin_name = group.plugin_plugin_name
            instance.active = True
            if self.inline_plugins:
                source = self.inline_plugins.pop(0).mujoco.plugin
                instance.config = values.read_keyvalues(source, spec_io.KINDS["plugin"].attr("config"))
            element.plugin = instance  # the binding copies the instance link into the element

    def _activate_plugins(self):
        """A plugin's library must be active to compile: any plugin an element uses."""
        names = {o.mujoco.plugin.plugin_name for o in self.sections["plugin"]}
        for block in self.plugin_users:
            names.add(block.plugin_plugin_name)
        for name in sorted(filter(None, names)):
            self.spec.activate_plugin(name)

    def _sections(self):
        for kind in SECTION_KINDS:
            for obj in self.sections[kind]:
                holder = obj.mujoco
                if kind == "plugin" and not (holder.name or holder.plugin.plugin_name):
                    # the instance of a <plugin> written inline in an element (a sensor's):
                    # MuJoCo's spec lists it nameless; it is given to its user below
                    self.inline_plugins.append(obj)
                    continue
                element = self._add(self.spec, kind, holder)
                group = getattr(holder, kind)
                self._copy(group, element, kind, obj)
                if kind in PLUGIN_KINDS and group.plugin_plugin_name:
                    self.spec.activate_plugin(group.plugin_plugin_name)
                self.elements[obj.as_pointer()] = (obj, kind, element)
                if kind == "tendon":
                    self._wraps(obj, group, element)

    def _wraps(self, obj, group, tendon):
        for wrap in group.path:
            target = values.read_ref(wrap, _wrap_attr("target"), on_missing=self._missing(obj.name))
            side = values.read_ref(wrap, _wrap_attr("sidesite"))
            kind = wrap.type
            if kind == "SITE":
                tendon.wrap_site(target)
            elif kind in ("SPHERE", "CYLINDER"):
                tendon.wrap_geom(target, side)
            elif kind == "JOINT":
                tendon.wrap_joint(target, spec_io.read_value(wrap, _wrap_attr("coef")))
            elif kind == "PULLEY":
                tendon.wrap_pulley(spec_io.read_value(wrap, _wrap_attr("divisor")))


def _painted(image, element) -> bool:
    """True when a texture's pixels are Blender's to write: painted since the import
    (its pixel signature changed), or an image made in Blender that no file or
    builtin pattern of the texture makes."""
    signature = image.mujoco.texture.get(SIGNATURE)
    if signature:
        return materials.image_painted(image, signature)
    made = not element.file and not any(element.cubefiles) \
        and int(element.builtin) == int(mujoco.mjtBuiltin.mjBUILTIN_NONE)
    return made and image.size[0] > 0 and image.size[1] > 0


def _texture_pixels(image, element) -> None:
    """A painted texture goes in as its Blender pixels (a buffer, as MuJoCo's bytes:
    row 0 on top; the export writes them to a PNG file): no file, builtin pattern
    or flips any more. A cube or skybox image is MuJoCo's layout already."""
    rgba = materials.image_bytes(image)
    channels = int(element.nchannel)
    picked = {1: [0], 2: [0, 3], 3: [0, 1, 2]}.get(channels, [0, 1, 2, 3])
    element.data = np.ascontiguousarray(rgba[:, :, picked]).tobytes()
    element.height, element.width = rgba.shape[:2]
    element.builtin = mujoco.mjtBuiltin.mjBUILTIN_NONE
    element.file = ""
    element.cubefiles = [""] * 6
    element.content_type = ""
    element.hflip = element.vflip = False
    if int(element.colorspace) == int(mujoco.mjtColorSpace.mjCOLORSPACE_AUTO):
        # MuJoCo's bytes with no file to tell the colour space: the image says which
        srgb = image.colorspace_settings.name == "sRGB"
        element.colorspace = mujoco.mjtColorSpace.mjCOLORSPACE_SRGB if srgb \
            else mujoco.mjtColorSpace.mjCOLORSPACE_LINEAR


@functools.cache
def _fresh_values(kind) -> dict:
    """`values_of` a new element of `kind` in the form `unless` takes (`spec_io.bits_of`); made
    once (shared: do not change it)."""
    return spec_io.bits_of(spec_io.new_element_values(kind))


def _first(item):
    return item[0]


# per kind, its attributes of variable length holding doubles (userdata, a key's qpos, ...):
# kept as stored arrays, never clamped by Blender; MuJoCo's writer leaves out one holding NaN
_FLOAT_ARRAYS = {kind: tuple(a for a in k.editable if a.type in ("floatvec", "float32vec"))
                 for kind, k in spec_io.KINDS.items()}


def _holds_nan(stored) -> bool:
    """True when a stored array of doubles holds a NaN (None: nothing stored)."""
    if not stored:
        return False
    if len(stored) > 64:  # (an ID property array of doubles: numpy reads its buffer)
        return bool(np.isnan(np.asarray(memoryview(stored))).any())
    total = sum(stored)
    return total != total and any(v != v for v in stored)


def _flattened(obj) -> None:
    """ScanError for an object whose world matrix is flat: its own scale, or its highest
    parent's whose matrix is flat, is zero on some axis."""
    culprit, walk = obj, obj
    while walk is not None:
        if walk.matrix_world.to_3x3().determinant() == 0.0:
            culprit = walk
        walk = walk.parent
    whose = "its scale" if culprit is obj else f"the scale of its parent {culprit.name}"
    raise ScanError(f"{obj.name}: {whose} is zero, so no rotation can be read from its "
                    f"transform: give {culprit.name} a non-zero scale", list(dict.fromkeys([obj, culprit])))


def _no_direction(rotation, mode) -> bool:
    """A quaternion or an axis-angle axis (with an angle) too short to have a direction."""
    if mode == "QUATERNION":
        w, x, y, z = rotation
        return w * w + x * x + y * y + z * z < TINY * TINY
    if mode == "AXIS_ANGLE":
        angle, x, y, z = rotation
        return angle != 0.0 and x * x + y * y + z * z < TINY * TINY
    return False


def _check_placement(obj, location, rotation, mode) -> None:
    """ScanError for a transform a model cannot take (see TINY's comment)."""
    parts = (("location", location, "xyz"),
             ("rotation", rotation, "wxyz" if mode == "QUATERNION" else
              ("angle", "x", "y", "z") if mode == "AXIS_ANGLE" else "xyz"))
    for part, numbers, axes in parts:
        for axis, v in zip(axes, numbers, strict=True):
            if v != v:
                cause = "is not a number (NaN)"
            elif not -values.FLT_MAX < v < values.FLT_MAX:
                cause = "is infinite or beyond +-3.4e38 (Blender holds 3.4e38 instead)"
            else:
                continue
            raise ScanError(f"{obj.name}: {part} {axis} {cause}: type a finite value", [obj])
    if mode == "QUATERNION" and _no_direction(rotation, mode):
        raise ScanError(f"{obj.name}: its rotation quaternion is zero, which is no rotation "
                        "(Blender and MuJoCo each make a different one of it): set a rotation, "
                        "e.g. 1 0 0 0", [obj])
    if mode == "AXIS_ANGLE" and _no_direction(rotation, mode):
        raise ScanError(f"{obj.name}: its rotation axis is zero, so its angle turns about "
                        "nothing: set an axis", [obj])


# kinds whose elements may use a plugin (plugin.name / plugin_name / active)
PLUGIN_KINDS = frozenset(k for k, kind in spec_io.KINDS.items()
                         if any(a.name == "plugin.active" for a in kind.attrs))


def _placement(block, kind, held):
    """What a depsgraph update may have changed: an object's own transform (as
    a `Placement`, the held authored one while a simulation moves it), a mesh's
    geometry (its signature is computed only when it is reported)."""
    if kind == "mesh":
        return mujoco_meshes.mesh_signature(block)
    return authored_placement(block, held)


def _wrap_attr(name):
    return spec_io.KINDS["wrap"].attr(name)

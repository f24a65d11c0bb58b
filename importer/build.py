"""MJCF/URDF file -> Blender objects.

MuJoCo parses (`MjSpec.from_file`) and compiles the file; this module walks
the spec and makes one Blender object (or datablock) per element:

    model root (empty, kind MODEL)    scene-wide settings, default classes
      body / frame (empties)          parented as in MJCF; Location/Rotation = pos/quat
        geom (mesh object), site, joint (empty), camera, light
      flex, skin (mesh objects)
      actuators, sensors, tendons, ... (objects in child collections)

Attributes are copied by the schema-driven `components.spec_io`; the look of
geoms comes from `materials`, their shape from `geometry`. Everything created
is removed again if any step fails (see `transaction`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import bpy
import mujoco
import numpy as np
from mathutils import Matrix, Vector

from ..components import changes, inherit, spec_io, storage_format, values
from ..components.kinds import ELEMENT_KINDS
from ..components.schema import DEFAULT_KINDS, MODEL_SETTINGS
from ..components.stored_keys import (ANGLE_UNIT, DEGREE, LOOK, ORDER, RESOLVED_PATH, SEEN_POSE, SIGNATURE,
                                      SOURCE, TEXCOORD)
from ..engine import frames
from . import defaults, framing, mujoco_load, names
from ..geometry import mujoco_meshes, materials
from ..scene import groups, preferences
from ..scene.errors import MJBlendError

JOINT_DISPLAY = {"FREE": "ARROWS", "BALL": "SPHERE", "SLIDE": "SINGLE_ARROW", "HINGE": "SINGLE_ARROW"}
LIGHT_TYPES = {"SPOT": "SPOT", "DIRECTIONAL": "SUN", "POINT": "POINT", "IMAGE": "AREA"}
MESH, SDF, HFIELD = (int(mujoco.mjtGeom.mjGEOM_MESH), int(mujoco.mjtGeom.mjGEOM_SDF),
                     int(mujoco.mjtGeom.mjGEOM_HFIELD))
HINGE, BALL = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_BALL)
HIDDEN_GROUPS = range(3, 6)  # MuJoCo's viewer hides geom/site groups 3-5 by default (the scene's
# switches say which it shows now: scene/groups.py; the import hides what they hide)
CAMERA_DISPLAY_MIN, CAMERA_DISPLAY_MAX = 0.01, 1000.0  # Camera.display_size's range in Blender
DATA_COLLECTIONS = ("objects", "meshes", "materials", "node_groups", "images", "collections", "worlds",
                    "curves", "cameras", "lights")


# Height fields whose heights are in the file (elevation, or nrow / ncol alone: MuJoCo
# fills zeros in) are kept in the .blend as a property: 8000 x 8000 costs ~30 s and
# ~0.5 GB there; 20000 x 20000 would need ~13 GB of Python floats just to read.
HFIELD_MAX_SIDE_KEPT = 4096
HFIELD_MAX_KEPT = HFIELD_MAX_SIDE_KEPT ** 2
STEP_ELEMENTS = 16  # a stage's loop yields (a place a build in steps may pause) every this many


class ImportFailed(MJBlendError):
    """A file that cannot be imported; the message is for the user."""


@dataclass
class ImportResult:
    root: bpy.types.Object
    collection: bpy.types.Collection
    counts: Counter = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    # (kind, MuJoCo id in the compiled model) -> the object or datablock made for it
    by_id: dict = field(default_factory=dict)
    # (low, high) world corners of the model's bodies as imported: what a view frames
    bounds: tuple = ()
    # seconds each stage of the build took (`Builder.timings`; bench/import_bench.py)
    timings: dict = field(default_factory=dict)

    def summary(self) -> str:
        parts = [f"{n} {kind if n == 1 else ELEMENT_KINDS[kind].plural}"
                 for kind, n in self.counts.items() if n]
        return f"Imported {self.root.name}: " + (", ".join(parts) or "empty model")


class Rollback:
    """What `transaction` yields: `armed` False leaves what was made where it is (the file
    is being replaced: its data goes with it, and the sets it took are of the old file)."""

    armed = True


@contextlib.contextmanager
def transaction():
    """Remove every datablock created inside the block if it raises (also GeneratorExit:
    a build in steps closed part way, `ImportSteps.cancel`). It compares sets of every
    collection in DATA_COLLECTIONS before and after: O(all data), fine per import."""
    before = {name: set(getattr(bpy.data, name)) for name in DATA_COLLECTIONS}
    rollback = Rollback()
    try:
        yield rollback
    except BaseException:
        if rollback.armed:
            for name in reversed(DATA_COLLECTIONS):
                collection = getattr(bpy.data, name)
                for block in set(collection) - before[name]:
                    collection.remove(block)
        raise


def limits(prefs: preferences.Settings = preferences.DEFAULTS) -> mujoco_load.Limits:
    """The memory and time MuJoCo's load may take, from the preferences."""
    gigabytes = prefs.load_memory_gigabytes
    return mujoco_load.Limits(int(gigabytes * 2**30) if gigabytes else mujoco_load.default_memory_limit(),
                              prefs.load_seconds)


def start_load(filepath: str, threaded: bool = False, limits_=None) -> mujoco_load.Load:
    """MuJoCo's load of `filepath` begun (see importer/mujoco_load.py); raises ImportFailed
    when the file itself cannot be read."""
    try:
        source = mujoco_load.read_source(filepath)
    except mujoco_load.LoadError as error:
        raise ImportFailed(str(error)) from None
    return mujoco_load.Load(source, limits_ or limits(), threaded)


def import_loaded(job: mujoco_load.Load, scene: bpy.types.Scene,
                  progress: Callable[[float], None] | None = None,
                  builder: type | None = None) -> ImportResult:
    """Blender objects from a finished load, built in one call; raises ImportFailed,
    leaving nothing behind. `builder`: a Builder subclass (importer/reload.py's staging
    build), else Builder. (File > Import in a window builds in steps: `ImportSteps`.)"""
    steps = ImportSteps(job, scene, builder)
    while not steps.advance(float("inf") if progress is None else PROGRESS_SECONDS):
        progress(steps.fraction)
    if progress is not None:
        progress(1.0)
    return steps.result


PROGRESS_SECONDS = 0.05  # how often a drained build with a progress callback reports


class ImportSteps:
    """One import built in steps, so that a window keeps drawing and Esc can stop it:
    `advance(seconds)` builds for about that long (whole batches of elements: the
    Builder yields every few elements), `fraction` says how far it is, `cancel()`
    removes everything made so far. Between steps nothing is half made in the scene:
    the model's collection is linked to the scene in the last step, so the depsgraph
    never evaluates a partial model, and no `changes.quiet()` is held (it is global:
    entered and left within each step)."""

    def __init__(self, job: mujoco_load.Load, scene: bpy.types.Scene, builder: type | None = None):
        self.job, self.scene, self.builder_type = job, scene, builder or Builder
        self.fraction, self.result, self.builder = 0.0, None, None
        self.rollback: Rollback | None = None
        self._steps = self._run()

    def advance(self, seconds: float) -> bool:
        """Build for about `seconds`; True once the import is done (`result`). Raises
        ImportFailed, with nothing left behind."""
        deadline = time.perf_counter() + seconds
        with collector_paused():
            try:
                while True:
                    self.fraction = next(self._steps)
                    if time.perf_counter() >= deadline:
                        return False
            except StopIteration as stop:
                self.result = stop.value
                return True

    def cancel(self) -> None:
        """Stop here: every datablock made so far is removed (the transaction's rollback)."""
        self._steps.close()

    def abandon(self) -> None:
        """Stop here and leave the data alone: Blender is replacing the file (a modal
        operator's cancel() on file load or quit), its data goes with it."""
        if self.rollback is not None:
            self.rollback.armed = False
        self._steps.close()

    def _run(self):
        """The build as a generator of fractions done; returns the ImportResult."""
        job = self.job
        try:
            spec, model, data, warnings = job.outcome()
        except mujoco_load.LoadError as error:
            raise ImportFailed(f"{job.label}: {error}") from None
        with transaction() as self.rollback:
            try:
                with changes.quiet():  # the import sets `own` itself
                    self.builder = self.builder_type(spec, model, data, job.source, job.source.path,
                                                     self.scene)
                    stages = self.builder.steps()
                while True:
                    with changes.quiet():  # (global: never held across a yield)
                        try:
                            fraction = next(stages)
                        except StopIteration as stop:
                            result = stop.value
                            break
                    yield fraction
            except (ImportFailed, GeneratorExit):
                raise
            except Exception as error:  # a bug or an unsupported construct: still a clean failure
                raise _failure(job, error) from (None if _expected(error) else error)
        result.warnings = warnings + result.warnings
        return result


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off while the build runs: the build makes many
    small tracked objects that live until it ends, and each full collection walks all of
    them (9,000 bodies: 31.6 s -> 24.5 s without it; nothing the build makes is a cycle
    waiting to be freed). Back on, as it was, after each step."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _expected(error: Exception) -> bool:
    return isinstance(error, (MemoryError, UnicodeError)) or "Could not allocate memory" in str(error)


def _failure(job, error: Exception) -> ImportFailed:
    """The user's message for an import that failed on something other than the file."""
    text = " ".join(str(error).split())
    if isinstance(error, MemoryError) or "Could not allocate memory" in text:
        return ImportFailed(f"{job.label}: there is not enough memory left to import it "
                            "(MuJoCo or Blender could not allocate what it needs)")
    if isinstance(error, UnicodeError):
        return ImportFailed(f"{job.label}: a name or text MuJoCo read from it is not valid "
                            "UTF-8, which Blender cannot hold")
    return ImportFailed(f"{job.label}: import failed: {text}. This is a bug in MJBlend: "
                        "please report it with the file")


def import_file(filepath: str, scene: bpy.types.Scene,
                progress: Callable[[float], None] | None = None) -> ImportResult:
    """Import an MJCF or URDF file into `scene` (MuJoCo's load in this thread, within the
    preferences' limits); raises ImportFailed, leaving nothing behind."""
    job = start_load(os.path.abspath(filepath) if filepath else "")
    job.run()
    return import_loaded(job, scene, progress)


class Builder:
    """One import: the spec walked into Blender objects. `steps()` does it in steps (a
    generator of the fraction done, returning the ImportResult; closed part way it
    leaves half a model for `transaction` to remove); `build()` does it in one call.
    `timings`: seconds each stage took ("settings", "assets", "defaults", "tree",
    "others" (flex, skin and the collected kinds), "attributes", "finish", "link" (the
    collection into the scene, hidden objects hidden), "depsgraph" (view layer updates,
    aimed cameras and lights, the bounds)), the time between steps not counted."""

    def __init__(self, spec, model, data, source: mujoco_load.Source, filepath, scene):
        self.spec, self.model, self.data, self.loaded = spec, model, data, source
        self.source = source.raw if source.text is None else source.text.encode("utf-8")
        self.filepath, self.scene = filepath, scene
        self.counts: Counter = Counter()
        self.warnings: list[str] = []  # what the objects show differently from MuJoCo
        self.ids: dict[tuple[str, str], bpy.types.ID] = {}  # (kind, MJCF name) -> datablock
        # (element, datablock, kind, wrap index or None) for the reference pass. Groups are
        # looked up again then: a CollectionProperty item moves when the collection grows.
        self.copies: list[tuple] = []
        self.child_collections: dict[str, bpy.types.Collection] = {}
        self.by_id: dict[tuple[str, int], bpy.types.ID] = {}  # (kind, compiled id) -> datablock
        self.class_index: dict[str, int] = {}  # class -> its item in the model's defaults
        self.class_values: dict[tuple[str, str], dict] = {}  # (class, kind) -> attribute values
        self.class_poses: dict[tuple[str, str], dict] = {}  # (class, kind) -> its pose (`bits_of`)
        self.order = 0
        self.object_names = set(bpy.data.objects.keys())  # `in bpy.data.objects` is a linear search
        self.mixed_units = False
        self.primitives = mujoco_meshes.PrimitiveCache()
        self.looks = materials.Looks(model)
        self.scale = max(float(model.stat.extent), 1e-3)
        self.timings: dict[str, float] = {}
        self.to_hide: list[bpy.types.Object] = []  # hidden once the collection is in the scene

    # ------------------------------------------------------------------ steps

    def build(self) -> ImportResult:
        """The whole import in one call."""
        steps = self.steps()
        while True:
            try:
                next(steps)
            except StopIteration as stop:
                return stop.value

    def steps(self):
        """The import as a generator: yields the fraction done every few elements (the
        stages' loops), returns the ImportResult. The model's collection joins the scene
        only in the last stage, after every yield: a build stopped part way was never
        in the scene, and no view layer re-evaluated a partial model."""
        name = self.spec.modelname or os.path.splitext(os.path.basename(self.filepath))[0]
        self.collection = bpy.data.collections.new(name)
        self.root = self._new_object(name, None, "model", "", self.collection)
        self.root.mujoco.model[SOURCE] = self.filepath  # relative asset paths resolve from here
        self.root.empty_display_type = "CUBE"
        self.root.empty_display_size = 0.05 * self.scale
        yield from self._timed("settings", self._settings)
        # assets before the classes: a class may name a material or mesh
        yield from self._timed("assets", self._assets)
        yield 0.2
        yield from self._timed("defaults", self._defaults)
        yield 0.3
        yield from self._timed("tree", self._tree)
        yield 0.7
        yield from self._timed("others", self._deformables)
        yield from self._timed("others", self._collected)
        yield 0.75
        yield from self._timed("attributes", self._copy_attributes)
        yield 0.98
        # no yield from here on: the model goes into the scene whole
        yield from self._timed("finish", self._finish)
        yield from self._timed("link", self._link)
        yield from self._timed("depsgraph", self._update)
        self.counts["model"] = 0
        return ImportResult(self.root, self.collection, self.counts, self.warnings, by_id=self.by_id,
                            bounds=framing.model_bounds(self.model, self.data, HIDDEN_GROUPS),
                            timings=self.timings)

    def _timed(self, name, stage):
        """`stage()` run (a stage that yields: through its yields), its time added to
        `timings[name]` without the time spent suspended between steps."""
        start = time.perf_counter()
        out = stage()
        if hasattr(out, "__next__"):
            while True:
                try:
                    fraction = next(out)
                except StopIteration:
                    break
                self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start
                yield fraction
                start = time.perf_counter()
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start

    def _finish(self):
        self._world()
        self._unmark_derived_materials()
        if self.mixed_units:
            self._choose_angle_unit()

    def _link(self):
        """The model into the scene, then hidden in its view layers what its groups hide
        (hiding in a view layer needs the object in it). (Each hide_set re-syncs the view
        layer: O(objects) each, as it was when the objects were hidden as they were made.)"""
        self.scene.collection.children.link(self.collection)
        for obj in self.to_hide:
            hide(obj, self.scene, render=False)

    def _update(self):
        for view_layer in self.scene.view_layers:
            view_layer.update()  # world matrices, for callers that read them next
        if self._aim_trackers():
            for view_layer in self.scene.view_layers:
                view_layer.update()

    def _hide(self, obj):
        """Hidden as `hide` does: in renders now (cheap while the model is in no scene:
        each write re-syncs every scene's view layers), in the view layers once the
        model is in the scene (`_link`)."""
        obj.hide_render = True
        self.to_hide.append(obj)

    def _settings(self):
        """Only the settings the file changes from a new spec's (storage format 2: the
        rest read MuJoCo's defaults, components/inherit.py)."""
        model_props = self.root.mujoco.model
        storage_format.stamp(self.root)  # (written in today's format: never migrated)
        for kind in (*MODEL_SETTINGS, "model"):
            own = spec_io.settings_differing(spec_io.settings_values(self.spec, kind), kind)
            if own:  # (no group is made for a kind the file leaves alone)
                group = model_props if kind == "model" else getattr(model_props, kind)
                spec_io.settings_to_props(self.spec, group, kind, only=set(own))

    def _defaults(self):
        """The classes, each storing only what it changes from its parent (storage format
        2: the rest is read through the class chain, components/inherit.py)."""
        classes = self.root.mujoco.model.defaults
        # what "main" changes is relative to MuJoCo's own defaults: the values of each kind
        builtins = {kind: builtin_template(kind, classes) for kind in DEFAULT_KINDS}
        for name, parent in defaults.class_tree(self.spec, self.source,
                                                lambda: mujoco_load.parse(self.loaded)):
            default = self.spec.find_default(name)
            if default is None:
                continue
            parent_index = self.class_index.get(parent)  # the parent's item, if a class here
            index = len(classes)
            classes.add()
            item = classes[index]  # a collection item moves when the collection grows: index it
            item.name, item.parent = name, parent
            for kind in DEFAULT_KINDS:
                element = getattr(default, kind)
                inherited = parent_index is not None
                base = self.class_values[(parent, kind)] if inherited else builtins[kind][1]
                mine = self.class_values[(name, kind)] = spec_io.values_of(element, kind)
                own = spec_io.differing(mine, base, kind)
                shown = [attr for attr in _class_refs(kind) if attr.name not in own and mine[attr.name]]
                # a pose too (<default><geom pos=.../>): only what differs from its parent's
                pose_base = self.class_poses[(parent, kind)] if inherited else spec_io.new_element_pose(kind)
                pose = self.class_poses[(name, kind)] = spec_io.bits_of(spec_io.pose_of(element, kind))
                if own or shown or pose != pose_base:  # most classes leave most kinds alone
                    group = getattr(item, kind)  # (and get no group of them)
                    spec_io.element_to_props(element, group, kind, find=self._find, only=set(own),
                                             pose_start=pose_base)
                    for attr in shown:  # a reference it inherits: shown as its parent's
                        target = spec_io.target_of(attr, mine[attr.name], self._find, element, kind)
                        if target is not None:
                            values.show_class_ref(group, attr.prop, target)
            self.class_index[name] = index

    def _assets(self):
        for element in self.spec.meshes:
            mesh = mujoco_meshes.mesh_asset(self.model, element.id, element.name or "mesh")
            if mesh.uv_layers:  # textures follow the file's own UVs, as MuJoCo maps them
                mesh[TEXCOORD] = 1
            self._asset(element, mesh, "mesh")
            mesh.mujoco.mesh[SIGNATURE] = mujoco_meshes.mesh_signature(mesh)
        for element in self.spec.hfields:
            samples = element.nrow * element.ncol
            if not element.file and samples > HFIELD_MAX_KEPT:  # (before reading its userdata)
                raise ImportFailed(
                    f"{os.path.basename(self.filepath)}: height field '{element.name}' has "
                    f"{element.nrow} x {element.ncol} heights written in the file (or zeros MuJoCo fills "
                    f"in); MJBlend keeps such values in the .blend and can keep at most "
                    f"{HFIELD_MAX_KEPT:,} ({HFIELD_MAX_SIDE_KEPT} x {HFIELD_MAX_SIDE_KEPT}). Give the "
                    "heights as a PNG or binary file (file=\"...\"): files are referenced, not copied")
            mesh = mujoco_meshes.hfield_mesh(self.model, element.id, element.name or "hfield")
            self._asset(element, mesh, "hfield")
            nrow, ncol = int(self.model.hfield_nrow[element.id]), int(self.model.hfield_ncol[element.id])
            if max(nrow, ncol) > mujoco_meshes.HFIELD_MAX_SIDE:
                shown = (len(mujoco_meshes.hfield_rows(nrow)), len(mujoco_meshes.hfield_rows(ncol)))
                self.warnings.append(
                    f"height field '{element.name}': its {nrow} x {ncol} samples are shown as a "
                    f"{shown[0]} x {shown[1]} mesh (too many for Blender); MuJoCo simulates all of them")
        for element in self.spec.textures:
            image = self.looks.texture_image(element.id)
            self._asset(element, image, "texture")
            image.mujoco.texture[SIGNATURE] = self.looks.signatures[element.id]
        for element in self.spec.materials:
            self._asset(element, self.looks.material(element.id), "material")

    def _asset(self, element, block, kind):
        self.root.mujoco.model.assets.add().block = block
        set_element(block, kind, element.name)
        self._register(element, block, kind)

    def _resolved_path(self, kind, index):
        field = ELEMENT_KINDS[kind].file_path
        adr = int(getattr(self.model, field)[index]) if field else -1
        if adr < 0:
            return ""
        raw = self.model.paths[adr:]
        return raw[:raw.index(b"\0")].decode("utf-8") if b"\0" in raw else raw.decode("utf-8")

    # ------------------------------------------------------------- body tree

    def _tree(self):
        world = self.spec.worldbody
        self.parents = {world: self.root}  # Mjs bodies and frames hash by identity
        self._frames(world, self.root)
        self._body_contents(world, self.root)
        total = max(len(self.spec.bodies), 1)
        for i, body in enumerate(self._bodies_depth_first(world)):
            parent = self._parent_of(body)
            obj = self._spatial(body, "body", None, parent)
            obj.empty_display_type = "PLAIN_AXES"  # (small, inside the geoms: how a body is picked)
            obj.empty_display_size = 0.02 * self.scale
            self.parents[body] = obj
            self._frames(body, obj)
            self._body_contents(body, obj)
            if i % STEP_ELEMENTS == 0:
                yield 0.3 + 0.4 * i / total

    def _bodies_depth_first(self, body):
        for child in body.bodies:
            yield child
            yield from self._bodies_depth_first(child)

    def _frames(self, body, body_obj):
        pending = list(body.frames)
        while pending:  # a frame may sit in another frame: parents first
            ready = [f for f in pending if f.frame is None or f.frame in self.parents]
            if not ready:
                raise ImportFailed(f"{self._label()}: frame nesting in body {body.name!r} "
                                   "could not be resolved")
            for frame in ready:
                obj = self._spatial(frame, "frame", None, self._parent_of(frame, body_obj))
                obj.empty_display_type = "ARROWS"
                obj.empty_display_size = self.sizes["frame"]
                if not self._visible["frame"][0]:
                    self._hide(obj)
                self.parents[frame] = obj
                pending.remove(frame)

    def _parent_of(self, element, body_obj=None):
        frame = getattr(element, "frame", None)
        if frame is not None:
            return self.parents[frame]
        if body_obj is not None:
            return body_obj
        return self.parents[element.parent]

    def _body_contents(self, body, body_obj):
        for joint in body.joints:
            obj = self._spatial(joint, "joint", None, self._parent_of(joint, body_obj))
            joint_type = mujoco.mjtJoint(joint.type).name[len("mjJNT_"):]
            obj.empty_display_type = JOINT_DISPLAY.get(joint_type, "PLAIN_AXES")
            obj.empty_display_size = joint_display_size(joint_type, self.sizes)
            if self._hidden("joint", joint.group):
                self._hide(obj)
        for geom in body.geoms:
            obj = self._spatial(geom, "geom", self._geom_data(geom), self._parent_of(geom, body_obj))
            self._geom_look(geom, obj)
        for site in body.sites:
            gid = site.id
            data = self.primitives.get(int(self.model.site_type[gid]), self.model.site_size[gid])
            obj = self._spatial(site, "site", data, self._parent_of(site, body_obj))
            set_material(obj, self.looks.site_material(gid))
            obj.display_type = "SOLID"
            if self._hidden("site", site.group):
                self._hide(obj)
        for camera in body.cameras:
            self._spatial(camera, "camera", self._camera_data(camera), self._parent_of(camera, body_obj))
        for light in body.lights:
            self._spatial(light, "light", self._light_data(light), self._parent_of(light, body_obj))

    # ----------------------------------------------------------- one element

    def _spatial(self, element, kind, data, parent):
        """An object for a spatial element, placed at its MJCF pose in `parent`."""
        label = parent.name if parent is not self.root else ""
        obj = self._new_object(element.name, data, kind, label, self.collection)
        obj.parent = parent  # (a new object's parent inverse is the identity already)
        obj.rotation_mode = "QUATERNION"
        pos, quat = self._local_pose(element, kind)
        obj.location = pos
        obj.rotation_quaternion = quat
        compiler = getattr(element, "compiler", None)
        if compiler is not None and bool(compiler.degree) != bool(self.spec.compiler.degree):
            # an included file with its own <compiler angle>: the scan needs to know
            getattr(obj.mujoco, kind)[DEGREE] = int(bool(compiler.degree))
            self.mixed_units = True
        # what the transform read back as: while it still does, the scan uses the exact pose.
        # Blender keeps float32 of what was written, clamped to +-FLT_MAX as RNA clamps it:
        # computed here, not read back (7 RNA reads)
        pose = np.clip(np.concatenate((pos, quat), dtype=float), -values.FLT_MAX, values.FLT_MAX)
        getattr(obj.mujoco, kind)[SEEN_POSE] = pose.astype(np.float32).tolist()
        self._register(element, obj, kind)
        return obj

    def _local_pose(self, element, kind):
        if kind in ("geom", "site") and frames.has_fromto(element.fromto):
            return frames.fromto_pose(element.fromto)
        pos = np.asarray(element.pos, dtype=float)
        if kind == "joint":
            return pos, frames.joint_rotation(element.axis)
        if kind == "light":
            return pos, frames.light_rotation(element.dir)
        # An included file may set its own <compiler angle=...>: each element knows its compiler.
        compiler = getattr(element, "compiler", None) or self.spec.compiler
        seq = compiler.eulerseq  # an MjCharVec: indexed, since iterating one costs ~90 us
        return pos, frames.resolve_orientation(element.quat, element.alt, bool(compiler.degree),
                                               "".join(seq[i] for i in range(len(seq))))

    def _new_object(self, mjcf_name, data, kind, parent_label, collection):
        name = names.object_name(self.object_names, mjcf_name, kind, parent_label)
        obj = bpy.data.objects.new(name, data)
        self.object_names.add(obj.name)
        collection.objects.link(obj)
        obj[ORDER] = self.order  # creation order; elements with a MuJoCo id use that instead
        self.order += 1
        set_element(obj, kind, mjcf_name)
        return obj

    def _class(self, holder, element):
        cls = spec_io.class_of(element)
        holder["classname"] = cls.name if cls is not None else ""  # raw: the import is quiet

    # ------------------------------------------------------------ geom looks

    def _geom_data(self, geom):
        """The Blender mesh a geom shows: its mesh asset, height field or primitive."""
        gid = geom.id
        gtype = int(self.model.geom_type[gid])
        dataid = int(self.model.geom_dataid[gid])
        if gtype in (MESH, SDF) and dataid >= 0:
            return self.by_id[("mesh", dataid)]
        if gtype == HFIELD and dataid >= 0:
            return self.by_id[("hfield", dataid)]
        return self.primitives.get(gtype, self.model.geom_size[gid])

    @functools.cached_property
    def _visible(self) -> dict:
        """Which groups of each kind show (scene/groups.py `visible`: the switches, and
        for joints and frames their overlay too), read once."""
        return {kind: groups.visible(self.scene, kind)
                for kind in ("geom", "site", "joint", "frame", "flex", "skin")}

    @functools.cached_property
    def sizes(self) -> dict:
        return helper_sizes(self.model)

    def _hidden(self, kind, group) -> bool:
        return not self._visible[kind][groups.clamp(group)]

    def _geom_look(self, geom, obj):
        gid = geom.id
        set_material(obj, self.looks.geom_material(gid))
        group = int(self.model.geom_group[gid])
        collides = int(self.model.geom_contype[gid]) or int(self.model.geom_conaffinity[gid])
        if self._hidden("geom", group):
            self._hide(obj)
        if group in HIDDEN_GROUPS and collides:
            obj.display_type = "WIRE"  # collision geometry, told apart from visual meshes

    # ------------------------------------------------------ cameras, lights

    def _camera_data(self, camera):
        cam = bpy.data.cameras.new(camera.name or "camera")
        cid = camera.id
        cam.sensor_fit = "VERTICAL"
        fovy = float(self.model.cam_fovy[cid])
        if int(self.model.cam_projection[cid]) == int(mujoco.mjtProjection.mjPROJ_ORTHOGRAPHIC):
            cam.type = "ORTHO"
            cam.ortho_scale = fovy  # MuJoCo: fovy is the view height in length units
        else:
            cam.angle_y = np.radians(fovy)
        cam.clip_start = max(float(self.model.vis.map.znear) * self.scale, 1e-4)
        cam.clip_end = float(self.model.vis.map.zfar) * self.scale
        cam.display_size = camera_display_size(self.model)
        return cam

    def _light_data(self, light):
        lid = light.id
        ltype = mujoco.mjtLightType(int(self.model.light_type[lid])).name.split("_", 1)[1]
        data = bpy.data.lights.new(light.name or "light", LIGHT_TYPES.get(ltype, "POINT"))
        data.color = tuple(float(c) for c in self.model.light_diffuse[lid])
        data.use_shadow = bool(self.model.light_castshadow[lid])
        # the radius Blender draws (and softens shadows with): MuJoCo's own light radius
        data.shadow_soft_size = float(self.model.light_bulbradius[lid])
        if data.type == "SUN":
            data.energy = 3.0
            return data
        if data.type == "SPOT":
            data.spot_size = min(np.radians(2 * float(self.model.light_cutoff[lid])), np.pi)
        # MuJoCo's lights do not fade with distance, Blender's do (inverse square): a
        # power that gives MuJoCo's brightness at the model, 4 pi^2 d^2 W at distance d
        distance = np.linalg.norm(self.data.light_xpos[lid] - self.model.stat.center)
        data.energy = float(4 * np.pi ** 2 * max(distance, 0.1 * self.scale) ** 2)
        return data

    # -------------------------------------------------- flex, skin, others

    def _deformables(self):
        """Flex and skin: mesh objects with world-space vertices, under the root, hidden
        where their group's switch is off (as geoms are)."""
        for kind, elements, make_mesh, look, group_of in (
                ("flex", self.spec.flexes, mujoco_meshes.flex_mesh, self.looks.flex_material,
                 self.model.flex_group),
                ("skin", self.spec.skins, mujoco_meshes.skin_mesh, self.looks.skin_material,
                 self.model.skin_group)):
            for element in elements:
                mesh = make_mesh(self.model, self.data, element.id, element.name or kind)
                obj = self._new_object(element.name, mesh, kind, "", self.collection)
                obj.parent = self.root
                set_material(obj, look(element.id))
                if self._hidden(kind, int(group_of[element.id])):
                    self._hide(obj)
                self._register(element, obj, kind)

    def _collected(self):
        """The kinds a child collection of the model holds (actuators, sensors, ...)."""
        for entry in ELEMENT_KINDS.values():
            if not entry.collection:
                continue
            kind = entry.name
            for i, element in enumerate(getattr(self.spec, entry.plural)):
                if i % STEP_ELEMENTS == 0:
                    yield 0.7
                collection = self._child_collection(entry.collection)
                data = self._tendon_curve(element) if kind == "tendon" else None
                obj = self._new_object(element.name, data, kind, "", collection)
                obj.parent = self.root
                if data is None:
                    obj.hide_viewport = True  # data, not geometry: pick it in the Outliner
                self._register(element, obj, kind)
                if kind == "tendon":
                    # indexed: iterating an MjsTendonPath ends on a raised IndexError (~180 us a tendon)
                    path, items = element.path, obj.mujoco.tendon.path
                    for i in range(len(path)):
                        items.add()
                        self.copies.append((path[i], obj, "wrap", i))

    def _register(self, element, block, kind):
        """What every imported element gets: its class, its place in the attribute
        pass, lookups by name and id, its MuJoCo order and its file, if any."""
        if element.id >= 0 and isinstance(block, bpy.types.Object):
            block[ORDER] = int(element.id)  # the scan adds siblings in this order: same ids
        path = self._resolved_path(kind, element.id)
        if path:  # where MuJoCo found the file (includes and attach change the base folder)
            getattr(block.mujoco, kind)[RESOLVED_PATH] = path
        self._class(block.mujoco, element)
        self.copies.append((element, block, kind, None))
        self.ids[(kind, element.name)] = block
        self.by_id[(kind, element.id)] = block
        self.counts[kind] += 1

    def _child_collection(self, title):
        if title not in self.child_collections:
            collection = bpy.data.collections.new(f"{self.collection.name} {title}")
            self.collection.children.link(collection)
            self.child_collections[title] = collection
        return self.child_collections[title]

    def _tendon_curve(self, tendon):
        """A poly line through the tendon's sites at qpos0 (spatial tendons)."""
        tid = tendon.id
        adr, num = int(self.model.tendon_adr[tid]), int(self.model.tendon_num[tid])
        site_type = int(mujoco.mjtWrap.mjWRAP_SITE)
        points = [self.data.site_xpos[int(self.model.wrap_objid[w])] for w in range(adr, adr + num)
                  if int(self.model.wrap_type[w]) == site_type]
        if len(points) < 2:
            return None
        curve = bpy.data.curves.new(tendon.name or "tendon", "CURVE")
        curve.dimensions = "3D"
        curve.bevel_depth = float(self.model.tendon_width[tid])
        spline = curve.splines.new("POLY")
        spline.points.add(len(points) - 1)
        coords = np.hstack([np.asarray(points), np.ones((len(points), 1))]).ravel()
        spline.points.foreach_set("co", coords)
        curve.materials.append(self.looks.tendon_material(tid))
        return curve

    def _aim_trackers(self) -> bool:
        """Cameras and lights that follow a target body (mode targetbody*) face it as
        MuJoCo aims them at qpos0. The authored orientation stays the exact pose the
        scan writes, since the transform reads back what is recorded here."""
        fixed = {int(mujoco.mjtCamLight.mjCAMLIGHT_FIXED), int(mujoco.mjtCamLight.mjCAMLIGHT_TRACK),
                 int(mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM)}
        aimed = []
        for i in range(self.model.ncam):
            if int(self.model.cam_mode[i]) not in fixed and ("camera", i) in self.by_id:
                world = Matrix(self.data.cam_xmat[i].reshape(3, 3).tolist())
                aimed.append((self.by_id[("camera", i)], "camera", world))
        for i in range(self.model.nlight):
            if int(self.model.light_mode[i]) not in fixed and ("light", i) in self.by_id:
                # a light shines along its local -Z: the rotation taking -Z to MuJoCo's dir
                world = Vector(self.data.light_xdir[i]).to_track_quat("-Z", "Y").to_matrix()
                aimed.append((self.by_id[("light", i)], "light", world))
        for obj, kind, world in aimed:
            parent = obj.parent.matrix_world.to_3x3() if obj.parent else Matrix.Identity(3)
            obj.rotation_quaternion = (parent.inverted() @ world).to_quaternion()
            getattr(obj.mujoco, kind)[SEEN_POSE] = list(obj.location) + list(obj.rotation_quaternion)
        return bool(aimed)

    def _choose_angle_unit(self):
        """Included files disagree on <compiler angle>. The scanned model has one
        compiler: the unit most angle-carrying elements were written in (joint
        ranges, euler / axis-angle orientations); the others are converted."""
        votes = Counter()
        for joint in self.spec.joints:
            if int(joint.type) in (HINGE, BALL) and (any(joint.range) or joint.ref or joint.springref):
                votes[bool(joint.compiler.degree)] += 1
        for listname in ("bodies", "geoms", "sites", "cameras", "frames"):
            for element in getattr(self.spec, listname):
                if int(element.alt.type) in (frames.EULER, frames.AXISANGLE):
                    votes[bool(element.compiler.degree)] += 1
        if votes:
            self.root.mujoco.model[ANGLE_UNIT] = int(votes.most_common(1)[0][0])
            # elements without their own DEGREE were written in the main file's unit
            self.root.mujoco.model[DEGREE] = int(bool(self.spec.compiler.degree))

    def _unmark_derived_materials(self):
        """Materials the looks derived (an MJCF material in a geom's own rgba) copy
        the asset's properties but are not MJCF elements: only assets keep the kind."""
        for material in bpy.data.materials:
            if material.get(LOOK) == "override":
                material.mujoco.kind = "NONE"

    def _world(self):
        world = self.looks.world()
        if world is not None:
            self.scene.world = world

    # -------------------------------------------------- attribute copies

    def _find(self, kind, name):
        if kind is None:  # a kind only known at run time: unique names across kinds
            hits = [block for (k, n), block in self.ids.items() if n == name]
            return hits[0] if len(hits) == 1 else None
        return self.ids.get((kind, name))

    def _copy_attributes(self):
        """Every element's attributes, references resolved to the new objects: only
        those it sets itself (storage format 2), i.e. those that differ from what its
        class gives it (a classed element) or from MuJoCo's defaults (the others). A
        reference its class sets is copied too, marked as the class's
        (values.show_class_ref): bpy pointers cannot be computed on reading."""
        for n, (element, block, kind, index) in enumerate(self.copies):
            if n % STEP_ELEMENTS == 0:  # (a step boundary: ImportSteps)
                yield 0.75 + 0.23 * n / len(self.copies)
            if kind == "wrap":  # (a tendon's path: every value of its few)
                group = block.mujoco.tendon.path[index]
                spec_io.element_to_props(element, group, kind, find=self._find)
                continue
            cls = spec_io.class_of(element)
            classed = cls is not None and (cls.name, kind) in self.class_values
            if classed:
                base = self.class_values[(cls.name, kind)]
                # the scan makes it from its class: it starts with the class's pose
                pose_start = self.class_poses[(cls.name, kind)]
            elif kind in DEFAULT_KINDS:
                base, pose_start = builtin_template(kind, None)[1], None
            else:
                base, pose_start = spec_io.new_element_values(kind), spec_io.new_element_pose(kind)
            mine = spec_io.values_of(element, kind)
            own = spec_io.differing(mine, base, kind)
            refs = _class_refs(kind) if classed else ()
            shown = [attr for attr in refs if attr.name not in own and base[attr.name]]
            if not own and not shown and kind not in _POSED:
                continue  # (no group made: it reads its class's and MuJoCo's values)
            group = getattr(block.mujoco, kind)
            spec_io.element_to_props(element, group, kind, find=self._find, only=set(own),
                                     pose_start=pose_start)
            for attr in shown:
                target = spec_io.target_of(attr, base[attr.name], self._find, element, kind)
                if target is not None:
                    values.show_class_ref(group, attr.prop, target)
        inherit.forget()  # (a new root: nothing resolved for it may linger)

    def _label(self):
        return os.path.basename(self.filepath)


_KIND_VALUES: dict[tuple[type, str], int] = {}


def set_element(block, kind: str, mjcf_name: str | None) -> None:
    """The kind and MJCF name of a new element's datablock, written as the raw ID
    properties the bpy properties keep: an import is quiet, and these setters' update
    callbacks would only record an edit."""
    holder = block.mujoco
    value = _KIND_VALUES.get((type(holder), kind))
    if value is None:
        items = holder.bl_rna.properties["kind"].enum_items
        value = _KIND_VALUES[(type(holder), kind)] = items[kind.upper()].value
    holder["kind"] = value
    holder["name"] = mjcf_name or ""


def helper_sizes(model) -> dict[str, float]:
    """How large MuJoCo's viewer draws the helpers of `model` (mjv_updateScene: a length
    of visual/scale times stat.meansize): "joint" (a hinge's or slide's arrow),
    "joint_mark" (a ball joint's sphere radius, a free joint's box half-size: three
    joint widths), "frame" (frame axes: MJCF frame empties) and "camera"
    (`camera_display_size`). (Lights: Blender draws their icon at a fixed size in
    pixels; the radius it draws is MuJoCo's `bulbradius`, `_light_data`.)"""
    meansize, scale = float(model.stat.meansize), model.vis.scale
    return {"joint": float(scale.jointlength) * meansize,
            "joint_mark": 3 * float(scale.jointwidth) * meansize,
            "frame": float(scale.framelength) * meansize,
            "camera": camera_display_size(model)}


def joint_display_size(joint_type: str, sizes: dict) -> float:
    """A joint empty's display size (`joint_type`: "HINGE", "SLIDE", "BALL", "FREE") as
    MuJoCo draws that joint (`helper_sizes`)."""
    return sizes["joint_mark"] if joint_type in ("BALL", "FREE") else sizes["joint"]


def camera_display_size(model) -> float:
    """How big the viewport draws a camera: as MuJoCo's renderer draws one (a box of
    visual/scale camera x stat.meansize, engine_vis_visualize.c), within what Blender's
    display_size allows. Both are lengths of the model (znear and zfar are fractions of
    stat.extent instead, hence `Builder.scale` there). Drawing only: renders and the
    camera's view never change with it (an orthographic camera is drawn at its
    ortho_scale, which is its view)."""
    size = float(model.vis.scale.camera) * float(model.stat.meansize)
    return min(max(size, CAMERA_DISPLAY_MIN), CAMERA_DISPLAY_MAX)


def hide(obj, scene=None, render: bool = True) -> None:
    """Hidden as MuJoCo's viewer hides a group switched off (or a helper it does not draw):
    in the viewport of each of `scene`'s view layers (an import's scene need not be the
    window's; None: the context's view layer) and, with `render`, in renders."""
    if scene is None:
        obj.hide_set(True)
    for layer in (scene.view_layers if scene is not None else ()):
        try:
            obj.hide_set(True, view_layer=layer)
        except RuntimeError:  # (a view layer that excludes the model's collection)
            pass
    if render:
        obj.hide_render = True


def set_material(obj, material) -> None:
    """Give `obj` its own material slot: geoms share meshes but not colours."""
    if not obj.material_slots:
        obj.data.materials.append(None)  # the mesh gets a slot; the object fills it
    slot = obj.material_slots[0]
    slot.link = "OBJECT"
    slot.material = material


_BUILTIN: dict[str, tuple[dict, dict]] = {}


def builtin_template(kind: str, classes=None) -> tuple[dict, dict]:
    """(raw ID properties, `values_of`) of a `kind` with MuJoCo's built-in defaults
    (what the main class starts from); made once. (`classes`: unused, kept for callers.)"""
    if kind not in _BUILTIN:
        element = getattr(mujoco.MjSpec().default, kind)
        _BUILTIN[kind] = inherit.defaults(kind), spec_io.values_of(element, kind)
    return _BUILTIN[kind]


@functools.cache
def _class_refs(kind: str) -> tuple:
    """The reference attributes of `kind` a class can set (each a bpy pointer)."""
    return tuple(attr for attr in spec_io.KINDS[kind].editable
                 if attr.type == "ref" and attr.ref != "default")


# kinds whose elements keep an exact pose (`_pose`, written by element_to_props) even when
# they set no attribute themselves
_POSED = frozenset(kind for kind in spec_io.KINDS if spec_io.KINDS[kind].spatial)

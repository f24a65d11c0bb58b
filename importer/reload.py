"""A model root reloaded from its file, in place (MuJoCo Studio's Reload, and what
"Follow File" does on every save: live/file_watch.py).

1. MuJoCo loads and compiles the file the root came from (`SOURCE`), as an import
   does: a file it refuses raises ImportFailed before any object is touched, so the
   last good model stays.
2. The ordinary importer builds the new model into a staging collection
   (`StagingBuilder`: only the names it asks for differ).
3. The staged objects are reconciled with the old ones by element identity: (kind,
   MJCF name), or for an unnamed element (kind, its parent's identity, its place among
   its unnamed siblings of that kind). A matched element keeps its old object (the
   same datablock, the same `as_pointer()`, which is how a running simulation carries
   its state over: live/simulation.py) and takes the staged one's attributes, class,
   order, pose and parent; meshes, materials and images stay the old datablocks while
   their content is the same, else the new ones replace them. Staged elements without
   a match move into the old collections; old elements without one are deleted.

No view is framed: the view stays where the user had it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import bpy
import mujoco

from ..components import changes, inherit
from ..components.kinds import ELEMENT_KINDS
from ..components.stored_keys import LOOK, ORDER, RESOLVED_PATH, SIGNATURE, SOURCE
from ..geometry import mujoco_meshes
from ..scene import preferences
from . import build, mujoco_load, names
from .build import ImportFailed

SHARED_DATA_KINDS = ("geom", "site")  # kinds whose meshes the importer shares (primitives, mesh assets)


@dataclass
class ReloadResult:
    root: bpy.types.Object
    kept: int = 0  # elements whose object stayed
    added: int = 0
    removed: int = 0
    replaced_data: int = 0  # kept objects that show new data (a mesh, a camera, ...)
    warnings: list[str] = field(default_factory=list)
    watched: list[str] = field(default_factory=list)  # the files the model is made from now
    simulation: bool = False  # a running simulation took the new model, its state carried (live/)

    def summary(self) -> str:
        return (f"Reloaded {self.root.name}: {self.kept} kept, {self.added} added, {self.removed} removed"
                + (f", {self.replaced_data} reshaped" if self.replaced_data else ""))


def source_of(root) -> str:
    """The file `root` was imported from ("" when it was made in Blender)."""
    return str(root.mujoco.model.get(SOURCE) or "")


def reload_model(scene, root, prefs: preferences.Settings = preferences.DEFAULTS,
                 before_change=None) -> ReloadResult:
    """Reload `root` from its file into `scene`, in place; ImportFailed (nothing changed)
    when there is no file or MuJoCo refuses it. `before_change()` is called once the new
    model is built, before the first old object changes (a running simulation puts its
    authored poses back: live/file_watch.py `reload`, which also carries the state over)."""
    path = source_of(root)
    if not path:
        raise ImportFailed(f"{root.name} has no source file to reload (it was not imported from one)")
    # MuJoCo's asset cache knows a file by its name and modification time in whole
    # seconds: a mesh saved again within the second would load as it was (measured, 4.0.1)
    mujoco.mj_clearCache(mujoco.mj_getCache())
    job = build.start_load(path, limits_=build.limits(prefs))
    job.run()

    class Staging(StagingBuilder):
        freed_names = {o.name for o in _model_objects(root)}

    old_world = scene.world  # (the build sets the model's skybox as the scene's world)
    staged = build.import_loaded(job, scene, builder=Staging)  # ImportFailed: nothing touched
    if before_change is not None:
        before_change()
    with changes.quiet():
        result = Reconcile(scene, root, staged, old_world).run()
    result.warnings = staged.warnings
    result.watched = watched_files(root)
    for view_layer in scene.view_layers:
        view_layer.update()
    return result


def watched_files(root) -> list[str]:
    """Every file the model of `root` is made from: its MJCF, the files it includes,
    and the asset files MuJoCo read (meshes, height fields, textures, skins)."""
    path = source_of(root)
    if not path:
        return []
    folder = os.path.dirname(path)
    files = [path, *mujoco_load.include_files(path)]
    for holder in _asset_holders(root):
        resolved = holder.get(RESOLVED_PATH)
        if resolved:
            files.append(resolved if os.path.isabs(resolved) else os.path.join(folder, resolved))
    return list(dict.fromkeys(os.path.normpath(f) for f in files))


def _asset_holders(root):
    """The property groups of the root's elements that may name a file."""
    for item in root.mujoco.model.assets:
        block = item.block
        if block is not None:
            kind = block.mujoco.kind.lower()
            if kind in ELEMENT_KINDS and ELEMENT_KINDS[kind].file_path:
                yield getattr(block.mujoco, kind)
    for obj in root.children_recursive:
        kind = obj.mujoco.kind.lower()
        if kind in ELEMENT_KINDS and ELEMENT_KINDS[kind].file_path:
            yield getattr(obj.mujoco, kind)


def _model_objects(root) -> list:
    return [root, *root.children_recursive]


class StagingBuilder(build.Builder):
    """The importer's Builder, asking for the names the old model's objects hold (they
    are freed by the reconcile); `wanted` remembers them for the rename after it."""

    freed_names: set = frozenset()

    def __init__(self, *args):
        super().__init__(*args)
        self.object_names -= set(self.freed_names)
        self.wanted: dict[int, str] = {}  # staged object's as_pointer() -> the name it asked for

    def _new_object(self, mjcf_name, data, kind, parent_label, collection):
        wanted = names.object_name(self.object_names, mjcf_name, kind, parent_label)
        obj = super()._new_object(mjcf_name, data, kind, parent_label, collection)
        self.object_names.add(wanted)
        self.wanted[obj.as_pointer()] = wanted
        return obj

    def steps(self):
        result = yield from super().steps()
        result.wanted = self.wanted
        return result


# ------------------------------------------------------------------ identity


def identities(root) -> dict:
    """{identity: object} of every MuJoCo element object of `root`'s model (the root is
    ("model",)). Objects of no MuJoCo kind (the user's own) are left out."""
    children: dict[int, list] = {}
    for obj in root.children_recursive:
        if obj.parent is not None and obj.mujoco.kind != "NONE":
            children.setdefault(obj.parent.as_pointer(), []).append(obj)
    out = {("model",): root}
    pending = [(root, ("model",))]
    while pending:
        parent, parent_key = pending.pop()
        unnamed: dict[str, int] = {}
        for obj in sorted(children.get(parent.as_pointer(), ()), key=lambda o: (_order(o), o.name)):
            kind, name = obj.mujoco.kind.lower(), obj.mujoco.name
            if name:
                key = (kind, name)
            else:
                key = (kind, parent_key, unnamed.get(kind, 0))
                unnamed[kind] = unnamed.get(kind, 0) + 1
            if key in out:  # (two elements one identity: a file MuJoCo would refuse)
                key = key + (obj.as_pointer(),)
            out[key] = obj
            pending.append((obj, key))
    return out


def _order(obj) -> int:
    return int(obj.get(ORDER, 1 << 30))


# ------------------------------------------------------------------ content


def _plain(value):
    """An ID property's value as comparable Python: datablocks by type and name."""
    if isinstance(value, bpy.types.ID):
        return (type(value).__name__, _mjcf_name(value) or value.name)
    if hasattr(value, "to_dict") or isinstance(value, bpy.types.PropertyGroup):  # (raw ID properties)
        return tuple(sorted((k, _plain(value[k])) for k in value.keys()))
    if hasattr(value, "to_list"):
        return tuple(_plain(v) for v in value.to_list())
    if isinstance(value, dict):
        return tuple(sorted((k, _plain(v)) for k, v in value.items()))
    if isinstance(value, (str, bytes)) or not (hasattr(value, "__iter__") or hasattr(value, "__len__")):
        return value
    return tuple(_plain(value[i]) for i in range(len(value))) if hasattr(value, "__len__") \
        else tuple(_plain(v) for v in value)


def _mjcf_name(block) -> str:
    """The MJCF name of an element's datablock ("" for others: a primitive mesh, a look)."""
    holder = getattr(block, "mujoco", None)
    return holder.name if holder is not None and holder.kind != "NONE" else ""


def _rna_values(block) -> tuple:
    """The simple settings of a datablock (a camera's lens, a light's power, ...)."""
    out = []
    for prop in block.bl_rna.properties:
        if prop.is_readonly or prop.type not in ("BOOLEAN", "INT", "FLOAT", "ENUM", "STRING") \
                or prop.identifier in ("name", "name_full"):
            continue
        out.append((prop.identifier, _plain(getattr(block, prop.identifier))))
    return tuple(out)


def content(block) -> tuple:
    """What a datablock the importer made shows: equal content, same look. (Not its name:
    Blender reads a name's trailing ".02" as its own numbering: "sphere r0.02" taken, the
    next is "sphere r0.003".)"""
    own = _plain(block.mujoco) if hasattr(block, "mujoco") else ()
    head = (type(block).__name__, str(block.get(LOOK, "")), own)
    if isinstance(block, bpy.types.Mesh):
        materials = tuple(_plain(m) for m in block.materials)
        return head + (mujoco_meshes.mesh_signature(block), materials)
    if isinstance(block, bpy.types.Image):
        return head + (tuple(block.size), str(block.mujoco.texture.get(SIGNATURE, "")))
    if isinstance(block, (bpy.types.Material, bpy.types.World)):  # (a world: the skybox)
        nodes = block.node_tree.nodes if block.node_tree else ()
        images = tuple(sorted(_plain(n.image) for n in nodes if getattr(n, "image", None) is not None))
        inputs = tuple((n.name, tuple((s.identifier, _plain(getattr(s, "default_value", None)))
                                      for s in n.inputs if not s.is_linked)) for n in nodes)
        return head + (tuple(block.diffuse_color) if hasattr(block, "diffuse_color") else (), images, inputs,
                       _rna_values(block))
    if isinstance(block, bpy.types.Curve):
        points = tuple(tuple(p.co) for s in block.splines for p in s.points)
        return head + (points, _rna_values(block), tuple(_plain(m) for m in block.materials))
    return head + (_rna_values(block),)


def _shared_data(root) -> list:
    """The images, materials and meshes a model's geoms, sites and assets use."""
    images, materials, meshes = {}, {}, {}
    for item in root.mujoco.model.assets:
        block = item.block
        if isinstance(block, bpy.types.Mesh):
            meshes[block.as_pointer()] = block
        elif isinstance(block, bpy.types.Material):
            materials[block.as_pointer()] = block
        elif isinstance(block, bpy.types.Image):
            images[block.as_pointer()] = block
    for obj in _model_objects(root):
        if obj.mujoco.kind.lower() in SHARED_DATA_KINDS and isinstance(obj.data, bpy.types.Mesh):
            meshes[obj.data.as_pointer()] = obj.data
        for slot in obj.material_slots:
            if slot.material is not None:
                materials[slot.material.as_pointer()] = slot.material
    for material in list(materials.values()):
        for node in (material.node_tree.nodes if material.node_tree else ()):
            image = getattr(node, "image", None)
            if image is not None:
                images[image.as_pointer()] = image
    return [*images.values(), *materials.values(), *meshes.values()]  # (what is used, first)


def _used_data(root) -> list:
    """Every datablock of the model's objects and assets (what may be orphaned)."""
    blocks = {b.as_pointer(): b for b in _shared_data(root)}
    for obj in _model_objects(root):
        if obj.data is not None:
            blocks[obj.data.as_pointer()] = obj.data
    return list(blocks.values())


# (type, its bpy.data collection) of every datablock kind a reload adds or removes
DATA_KINDS = (("Object", "objects"), ("Mesh", "meshes"), ("Material", "materials"), ("Image", "images"),
              ("Camera", "cameras"), ("Light", "lights"), ("Curve", "curves"), ("World", "worlds"),
              ("Collection", "collections"))


def _collection_of(block):
    for type_name, name in DATA_KINDS:
        if isinstance(block, getattr(bpy.types, type_name)):
            return getattr(bpy.data, name)
    return None


def _remove(block) -> None:
    _collection_of(block).remove(block)


def _unused(block) -> bool:
    return block.users - int(block.use_fake_user) <= 0


# ------------------------------------------------------------------ reconcile


class Reconcile:
    """The staged import merged into the old model (see the module's docstring)."""

    def __init__(self, scene, root, staged, old_world=None):
        self.scene, self.root, self.staged, self.old_world = scene, root, staged, old_world
        self.result = ReloadResult(root)

    def run(self) -> ReloadResult:
        root, staged_root = self.root, self.staged.root
        old_data = _used_data(root)
        old_world = self.old_world
        self._keep_same_data(root, staged_root)
        self._keep_same_world()
        staged_data = _used_data(staged_root)
        old = identities(root)
        new = identities(staged_root)
        pairs = [(old[key], obj) for key, obj in new.items() if key in old and old[key].type == obj.type]
        matched_old = {o.as_pointer() for o, _s in pairs}
        matched_new = {s.as_pointer() for _o, s in pairs}
        for kept, staged in pairs:
            self._take(kept, staged, is_root=staged is staged_root)
        added = [obj for obj in new.values() if obj.as_pointer() not in matched_new]
        self._move_into_old_collections(added)
        # every reference to a staged object turned to the kept one: parents and the
        # property groups' references (ID properties). (Not ID.user_remap: each call walks
        # the whole file, ~4 ms a call with a few thousand datablocks, per element.)
        kept_for = {staged.as_pointer(): kept for kept, staged in pairs}
        for obj in [*(kept for kept, _s in pairs), *added]:
            if obj.parent is not None and obj.parent.as_pointer() in kept_for:
                obj.parent = kept_for[obj.parent.as_pointer()]
            _retarget(obj.mujoco, kept_for)
        removed = [obj for obj in old.values() if obj.as_pointer() not in matched_old]
        bpy.data.batch_remove([*(staged for _k, staged in pairs), *removed,
                               *self.staged.collection.children_recursive, self.staged.collection])
        wanted = getattr(self.staged, "wanted", {})
        taken = set(bpy.data.objects.keys())
        for obj in added:
            name = wanted.get(obj.as_pointer())
            if name and obj.name != name and name not in taken:
                taken.discard(obj.name)
                obj.name = name
                taken.add(name)
        self._orphans(old_data + ([old_world] if old_world is not None else []), staged_data)
        self.result.kept, self.result.added, self.result.removed = len(pairs), len(added), len(removed)
        inherit.forget()  # (the classes were copied: members read them anew)
        return self.result

    def _keep_same_data(self, root, staged_root):
        """Staged images, materials and meshes with the content of one of the old model's:
        the old one instead (remapped everywhere), the staged one removed."""
        by_content = {}
        for block in _shared_data(root):
            by_content.setdefault(content(block), block)
        for block in _shared_data(staged_root):  # images first: a material's content names them
            same = by_content.get(content(block))
            if same is not None and same is not block:
                block.user_remap(same)
                _remove(block)

    def _keep_same_world(self):
        """The skybox world the build made, when the old one shows the same: the old one."""
        new, old = self.scene.world, self.old_world
        if new is not None and old is not None and new is not old and content(new) == content(old):
            self.scene.world = old
            bpy.data.worlds.remove(new)

    def _take(self, kept, staged, is_root: bool):
        """`kept` (the old object) becomes what `staged` is, staying the same datablock."""
        _copy_group(kept.mujoco, staged.mujoco)
        for key in staged.keys():  # the import's raw keys (its MuJoCo order); not the property
            if not hasattr(staged[key], "to_dict"):  # groups Blender < 5.0 lists here too
                kept[key] = staged[key]
        if is_root:  # the root stays where the user put it (the model's world frame)
            kept.empty_display_size = staged.empty_display_size
            return
        kept.parent = staged.parent  # (a staged parent: the remap turns it into the kept one)
        kept.matrix_parent_inverse.identity()
        kept.rotation_mode = staged.rotation_mode
        kept.location, kept.rotation_quaternion, kept.scale = staged.location, staged.rotation_quaternion, \
            staged.scale
        if staged.data is not None and kept.data is not staged.data:
            # shared data is the old datablock already where its content is the same
            shared = kept.mujoco.kind.lower() in SHARED_DATA_KINDS
            if shared or kept.data is None or content(kept.data) != content(staged.data):
                kept.data = staged.data
                self.result.replaced_data += 1
        for kept_slot, staged_slot in zip(kept.material_slots, staged.material_slots, strict=False):
            kept_slot.link = staged_slot.link
            if kept_slot.material is not staged_slot.material:
                kept_slot.material = staged_slot.material
        if kept.type == "EMPTY":
            kept.empty_display_type, kept.empty_display_size = staged.empty_display_type, \
                staged.empty_display_size
        kept.display_type = staged.display_type
        kept.hide_render, kept.hide_viewport = staged.hide_render, staged.hide_viewport
        for layer in self.scene.view_layers:
            try:
                kept.hide_set(staged.hide_get(view_layer=layer), view_layer=layer)
            except RuntimeError:  # (a view layer that excludes the model's collection)
                pass

    def _move_into_old_collections(self, added):
        """Added objects go where the import puts them: the model's collection, or its child
        collection of the same title (Actuators, Sensors, ...), made if missing."""
        home = self.root.users_collection[0] if self.root.users_collection else self.scene.collection
        staged_home = self.staged.collection
        for obj in added:
            for collection in list(obj.users_collection):
                if collection == staged_home:
                    target = home
                else:
                    title = collection.name[len(staged_home.name):].strip()
                    target = next((c for c in home.children if c.name.endswith(" " + title)), None)
                    if target is None:
                        target = bpy.data.collections.new(f"{home.name} {title}")
                        home.children.link(target)
                target.objects.link(obj)
                collection.objects.unlink(obj)

    def _orphans(self, old_data, staged_data):
        """Datablocks the old model used and nothing uses now, and staged ones nothing took,
        removed; a new asset takes its MJCF name again (Blender gave it ".001" beside the
        one it replaces)."""
        old = {b.as_pointer() for b in old_data}
        blocks = {b.as_pointer(): b for b in [*old_data, *staged_data]}
        for _ in range(3):  # (a material removed frees its images)
            unused = [p for p, b in blocks.items() if _unused(b)]
            if not unused:
                break
            bpy.data.batch_remove([blocks.pop(p) for p in unused])
        for pointer, block in blocks.items():
            name = _mjcf_name(block)
            if pointer not in old and name and block.name != name and name not in _collection_of(block):
                block.name = name


def _retarget(group, kept_for: dict) -> None:
    """References (ID properties, at any depth) to a staged object, to its kept one."""
    for key in group.keys():
        value = group[key]
        if isinstance(value, bpy.types.ID):
            kept = kept_for.get(value.as_pointer())
            if kept is not None:
                group[key] = kept
        elif hasattr(value, "keys"):
            _retarget(value, kept_for)
        elif isinstance(value, list):  # (a collection: a list of groups)
            for item in value:
                if hasattr(item, "keys"):
                    _retarget(item, kept_for)


def _copy_group(target, source) -> None:
    """Every raw ID property of `source` (a PropertyGroup) into `target`, replacing its own."""
    for key in set(target.keys()) - set(source.keys()):
        del target[key]
    for key in source.keys():
        if key in target:
            del target[key]
        target[key] = source[key]

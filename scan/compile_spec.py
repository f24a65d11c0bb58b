"""Compile the scanned scene: one spec for all model roots, MuJoCo's errors mapped to objects."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import mujoco

from ..components import spec_io
from ..engine import arena
from ..components.kinds import ELEMENT_KINDS
from ..components.schema import MODEL_SETTINGS
from . import scene_scan
from ..scene.errors import MJBlendError
from ..scene.names import first_free, numbered


class CompileError(MJBlendError):
    """The scene cannot become a compiled model (nothing to compile, or MuJoCo refuses it)."""


@dataclass
class SceneSpec:
    """The scene as one spec, and what only Blender has of it (the exporter writes those)."""

    spec: mujoco.MjSpec
    scanners: list  # each root's Scanner (their elements keep their ids after attach)
    # (prefixed) names of meshes made or edited in Blender, of textures painted or made there (-> Image)
    blender_meshes: set[str] = field(default_factory=set)
    blender_textures: dict = field(default_factory=dict)


def build_spec(roots, warnings: list[str], find_painted_textures: bool = False,
               held: dict | None = None, entity_prefixes: list[str] | None = None) -> SceneSpec:
    """One spec for the given model roots: the first as is, others attached with a
    prefix, each where its root stands. `find_painted_textures` reads every texture's
    pixels to find those painted or made in Blender (the export does; a simulation
    does not); `held` the authored poses of the objects a running simulation moves
    (see scene_scan.ScanCache). `entity_prefixes` (a simulation the bridge serves: each
    root's entity prefix, which the bridge's side decides): every root attached, even a
    single one, with its prefix and "_", as URLab's client finds an entity's elements
    (`<prefix>_<name>`)."""
    if not roots:
        raise CompileError("nothing to export: no MuJoCo model root (import a model or add one)")
    scanners = []
    for root in roots:
        try:
            scanners.append(scene_scan.Scanner(root, warnings, textures=find_painted_textures, held=held))
        except scene_scan.ScanError as error:
            raise CompileError(f"{root.name}: {error}", error.objects or [root]) from None
    if len(scanners) == 1 and entity_prefixes is None:
        (scanner,) = scanners
        return SceneSpec(scanner.spec, scanners, set(scanner.blender_meshes), dict(scanner.blender_textures))
    main = mujoco.MjSpec()
    main.modelname = "scene"
    # the file has one <compiler>, <option>, ...: the first model's
    model = roots[0].mujoco.model
    for kind in MODEL_SETTINGS:
        spec_io.props_to_settings(getattr(model, kind), main, kind)
    built = SceneSpec(main, scanners)
    for root, scanner, prefix in zip(roots, scanners, root_prefixes(roots, entity_prefixes), strict=True):
        built.blender_meshes.update(prefix + name for name in scanner.blender_meshes)
        built.blender_textures.update({prefix + name: image
                                       for name, image in scanner.blender_textures.items()})
        # each model where its root stands in the scene, so copies can stand side by side
        loc, rot, _scale = root.matrix_world.decompose()
        frame = main.worldbody.add_frame(pos=list(loc), quat=list(rot))
        main.attach(scanner.spec, prefix=prefix, frame=frame)
    return built


def root_prefixes(roots, entity_prefixes: list[str] | None = None) -> list[str]:
    """What `build_spec` puts before the names of each root's elements: nothing for a
    single root (unless `entity_prefixes`), else the root's name and "/" (numbered
    where two would be the same), or its entity prefix and "_"."""
    if entity_prefixes is not None:
        return [p + "_" for p in entity_prefixes]
    if len(roots) == 1:
        return [""]
    used: set[str] = set()
    return [_prefix(root.name, used) for root in roots]


def _prefix(name, used):
    base = re.sub(r"\W+", "_", name).strip("_") or "model"
    prefix = first_free(used, lambda n: numbered(base)(n) + "/")
    used.add(prefix)
    return prefix


# the element kinds, as MuJoCo's error messages name them
KIND_WORDS = frozenset(ELEMENT_KINDS)


def check(spec, scene_objects=(), scanners=(), warnings: list[str] | None = None) -> mujoco.MjModel:
    """The model of `compiled`."""
    return compiled(spec, scene_objects, scanners, warnings)[0]


def compiled(spec, scene_objects=(), scanners=(), warnings: list[str] | None = None):
    """(model, an MjData of it after a forward pass at qpos0): compiled, MuJoCo's error
    mapped back to the object it names (see culprits), with an arena large enough for a
    first forward pass (engine/arena.py; said in `warnings`)."""
    def compile_(spec):
        try:
            return spec.compile()
        except Exception as error:
            message = " ".join(str(error).split())
            elements = [(block, kind) for scanner in scanners
                        for block, kind, _e in scanner.elements.values()]
            elements = elements or [(o, o.mujoco.kind.lower()) for o in scene_objects]
            raise CompileError(f"MuJoCo cannot compile the scene: {message}",
                               culprits(message, elements)) from None
    try:
        model, data, added = arena.compiled_with_room(spec, compile_)
    except arena.ArenaTooSmall as error:
        raise CompileError(f"MuJoCo cannot run the scene: {error}") from None
    except mujoco.FatalError as error:
        raise CompileError("MuJoCo fails on the scene's first forward pass: "
                           + " ".join(str(error).split())) from None
    if added and warnings is not None:
        warnings.append(arena.grown_message(added, model))
    return model, data


def culprits(message: str, elements) -> list:
    """The objects MuJoCo's error names, among `elements` [(datablock, kind)]: by
    MJCF name and the kind the message speaks of, else by that kind and the id
    (when `elements` come from the scan, they are in MuJoCo's id order per kind)."""
    named = re.search(r"Element name '([^']*)', id (\d+)", message)
    if named is None:
        return []
    name, index = named.group(1), int(named.group(2))
    words = [w for w in re.findall(r"[a-z]+", message.split("Element name")[0]) if w in KIND_WORDS]
    kind = words[-1] if words else None
    candidates = [block for block, k in elements if kind is None or k == kind]
    if name:
        hits = [block for block in candidates if block.mujoco.name == name] \
            or [block for block, _k in elements if block.mujoco.name == name]
        return hits[:1]
    return [candidates[index]] if kind is not None and index < len(candidates) else []

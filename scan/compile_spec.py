"""Compile the scanned scene: one spec for all model roots, MuJoCo's errors mapped to objects."""

from __future__ import annotations

import re

import mujoco

from ..components import spec_io
from ..components.schema import DATA_KINDS, MODEL_SETTINGS, OBJECT_KINDS
from . import scene_scan
from ..scene.errors import MJBlendError
from ..scene.names import first_free


class CompileError(MJBlendError):
    """The scene cannot become a compiled model (nothing to compile, or MuJoCo refuses it)."""


def build_spec(roots, warnings: list[str], blender_meshes: list[str] | None = None,
               blender_textures: dict | None = None, scanners: list | None = None, held: dict | None = None):
    """One spec for the given model roots: the first as is, others attached with a prefix.
    `blender_meshes` collects the (prefixed) names of meshes made or edited in Blender;
    `blender_textures`, if given, {(prefixed) texture name: Image} of the textures
    painted or made in Blender (scene_scan.scan_model); `scanners` the Scanner of each root
    (their elements keep their ids after attach); `held` the authored poses of the
    objects a running simulation moves (see scene_scan.ScanCache)."""
    blender_meshes = blender_meshes if blender_meshes is not None else []
    if not roots:
        raise CompileError("nothing to export: no MuJoCo model root (import a model or add one)")
    specs = []
    for root in roots:
        try:
            scanner = scene_scan.Scanner(root, warnings, textures=blender_textures is not None, held=held)
        except scene_scan.ScanError as error:
            raise CompileError(f"{root.name}: {error}", error.objects or [root]) from None
        specs.append((root, scanner.spec, scanner.blender_meshes, scanner.blender_textures))
        if scanners is not None:
            scanners.append(scanner)
    if len(specs) == 1:
        blender_meshes.extend(specs[0][2])
        if blender_textures is not None:
            blender_textures.update(specs[0][3])
        return specs[0][1]
    main = mujoco.MjSpec()
    main.modelname = "scene"
    # the file has one <compiler>, <option>, ...: the first model's
    model = roots[0].mujoco.model
    for kind in MODEL_SETTINGS:
        spec_io.props_to_settings(getattr(model, kind), main, kind)
    used = set()
    for root, spec, made, painted in specs:
        prefix = _prefix(root.name, used)
        blender_meshes.extend(prefix + name for name in made)
        if blender_textures is not None:
            blender_textures.update({prefix + name: image for name, image in painted.items()})
        # each model where its root stands in the scene, so copies can stand side by side
        loc, rot, _scale = root.matrix_world.decompose()
        frame = main.worldbody.add_frame(pos=list(loc), quat=list(rot))
        main.attach(spec, prefix=prefix, frame=frame)
    return main


def _prefix(name, used):
    base = re.sub(r"\W+", "_", name).strip("_") or "model"
    prefix = first_free(used, lambda n: f"{base}/" if n == 1 else f"{base}{n}/")
    used.add(prefix)
    return prefix


# the element kinds, as MuJoCo's error messages name them
KIND_WORDS = frozenset(kind for kind in (*OBJECT_KINDS, *DATA_KINDS) if kind != "model")


def check(spec, scene_objects=(), scanners=()) -> mujoco.MjModel:
    """Compile, mapping MuJoCo's error back to the object it names (see culprits)."""
    try:
        return spec.compile()
    except Exception as error:
        message = " ".join(str(error).split())
        elements = [(block, kind) for scanner in scanners for block, kind, _e in scanner.elements.values()]
        elements = elements or [(o, o.mujoco.kind.lower()) for o in scene_objects]
        raise CompileError(f"MuJoCo cannot compile the scene: {message}",
                           culprits(message, elements)) from None


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

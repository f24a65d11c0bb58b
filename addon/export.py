"""Scene -> MJCF file: scan, check by compiling, write.

MuJoCo writes the MJCF (`MjSpec.to_xml`). With the compiler's `savecompiled`
and `savecanonical` switched off for the write, it keeps the authored notation
(euler in degrees, fromto, ...) and prints every double in its shortest
round-trip form, so an untouched import exports to a file MuJoCo compiles to
the same model bit for bit. (With MuJoCo's default settings to_xml writes 6
significant digits in canonical form: ARCHITECTURE.md's measured limits.)
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

import mujoco

from ..components import spec_io
from ..components.schema import MODEL_SETTINGS
from . import scan

ASSET_LISTS = ("meshes", "hfields", "textures", "skins")


class ExportFailed(Exception):
    """The scene cannot be written; `objects` are the Blender objects at fault."""

    def __init__(self, message, objects=()):
        super().__init__(message)
        self.objects = list(objects)


def build_spec(roots, warnings: list[str]) -> mujoco.MjSpec:
    """One spec for the given model roots: the first as is, others attached with a prefix."""
    if not roots:
        raise ExportFailed("nothing to export: no MuJoCo model root (import a model or add one)")
    specs = []
    for root in roots:
        try:
            specs.append((root, scan.scan_model(root, warnings)))
        except scan.ScanError as error:
            raise ExportFailed(f"{root.name}: {error}", error.objects or [root]) from None
    if len(specs) == 1:
        return specs[0][1]
    main = mujoco.MjSpec()
    main.modelname = "scene"
    # the file has one <compiler>, <option>, ...: the first model's
    model = roots[0].mujoco.model
    for kind in MODEL_SETTINGS:
        spec_io.props_to_settings(getattr(model, kind), main, kind)
    used = set()
    for root, spec in specs:
        prefix = _prefix(root.name, used)
        frame = main.worldbody.add_frame()
        main.attach(spec, prefix=prefix, frame=frame)
    return main


def _prefix(name, used):
    base = re.sub(r"\W+", "_", name).strip("_") or "model"
    prefix, n = base + "/", 1
    while prefix in used:
        n += 1
        prefix = f"{base}{n}/"
    used.add(prefix)
    return prefix


def check(spec, scene_objects) -> mujoco.MjModel:
    """Compile, mapping MuJoCo's error back to the object it names."""
    try:
        return spec.compile()
    except Exception as error:
        message = " ".join(str(error).split())
        named = re.search(r"Element name '([^']*)'", message)
        culprits = [o for o in scene_objects if named and named.group(1)
                    and o.mujoco.name == named.group(1)]
        raise ExportFailed(f"MuJoCo cannot compile the scene: {message}", culprits) from None


def relocate_assets(spec, folder: str, copy: bool) -> None:
    """Asset paths relative to the written file; with `copy`, the files are copied next to it."""
    spec.compiler.meshdir = ""
    spec.compiler.texturedir = ""
    taken: dict[str, str] = {}
    for listname in ASSET_LISTS:
        for element in getattr(spec, listname):
            source = getattr(element, "file", "")
            if not source:
                continue
            if not os.path.isabs(source):
                source = os.path.join(spec.modelfiledir or "", source)
            if copy:
                target = _unique_copy_name(os.path.join(folder, "assets"), source, taken)
                element.file = os.path.relpath(target, folder)
            else:
                element.file = os.path.relpath(os.path.abspath(source), folder)


def _unique_copy_name(folder, source, taken):
    """assets/<name>, numbered where two different files share a name."""
    key = os.path.abspath(source)
    if key in taken:
        return taken[key]
    stem, ext = os.path.splitext(os.path.basename(source))
    target, n = os.path.join(folder, stem + ext), 1
    while target in taken.values():
        n += 1
        target = os.path.join(folder, f"{stem}_{n}{ext}")
    taken[key] = target
    return target


def write(spec, filepath: str, copy_assets=False, as_zip=False, save_mjb=False, scene_objects=()):
    """Write `spec` to `filepath` (MJCF or zip); nothing is written unless all of it works."""
    folder = os.path.dirname(os.path.abspath(filepath))
    if not os.path.isdir(folder):
        raise ExportFailed(f"{folder}: no such folder")
    if not os.access(folder, os.W_OK):
        raise ExportFailed(f"{folder}: cannot write there (permission denied)")
    model = check(spec, scene_objects)
    sources = {}
    if copy_assets:
        for listname in ASSET_LISTS:
            for element in getattr(spec, listname):
                if getattr(element, "file", ""):
                    path = element.file if os.path.isabs(element.file) \
                        else os.path.join(spec.modelfiledir or "", element.file)
                    sources[id(element)] = os.path.abspath(path)
    relocate_assets(spec, folder, copy_assets)
    spec.compiler.savecompiled = False  # authored notation, full precision (see module doc)
    spec.compiler.savecanonical = False
    try:
        staging = tempfile.mkdtemp(prefix=".mjblend-export-", dir=folder)
    except OSError as error:
        raise ExportFailed(f"{folder}: cannot write there ({error.strerror})") from None
    try:
        staged = os.path.join(staging, os.path.basename(filepath))
        if copy_assets:
            for listname in ASSET_LISTS:
                for element in getattr(spec, listname):
                    if id(element) in sources:
                        target = os.path.join(staging, element.file)
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        shutil.copyfile(sources[id(element)], target)
        # to_xml compiles, so relative paths must resolve from where they will be
        spec.modelfiledir = (staging if copy_assets else folder) + os.sep
        try:
            if as_zip:
                spec.to_zip(staged)
            else:
                text = spec.to_xml()
                with open(staged, "w", encoding="utf-8") as fh:
                    fh.write(text)
        except Exception as error:  # ValueError, or mujoco.FatalError from its XML writer
            raise ExportFailed(f"MuJoCo cannot write the model: {' '.join(str(error).split())}") \
                from None
        if save_mjb:
            mujoco.mj_saveModel(model, os.path.join(staging, os.path.splitext(
                os.path.basename(filepath))[0] + ".mjb"))
        for name in os.listdir(staging):  # everything worked: move it into place
            target = os.path.join(folder, name)
            if os.path.isdir(os.path.join(staging, name)):
                shutil.copytree(os.path.join(staging, name), target, dirs_exist_ok=True)
            else:
                os.replace(os.path.join(staging, name), target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return model

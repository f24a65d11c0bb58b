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
import zipfile
from xml.sax.saxutils import escape

import mujoco
import numpy as np

from ..components import spec_io
from ..components.schema import MODEL_SETTINGS
from . import scan

ASSET_LISTS = ("meshes", "hfields", "textures", "skins")


class ExportFailed(Exception):
    """The scene cannot be written; `objects` are the Blender objects at fault."""

    def __init__(self, message, objects=()):
        super().__init__(message)
        self.objects = list(objects)


def build_spec(roots, warnings: list[str], blender_meshes: list[str] | None = None,
               scanners: list | None = None):
    """One spec for the given model roots: the first as is, others attached with a prefix.
    `blender_meshes` collects the (prefixed) names of meshes made or edited in Blender;
    `scanners` the Scanner of each root (their elements keep their ids after attach)."""
    blender_meshes = blender_meshes if blender_meshes is not None else []
    if not roots:
        raise ExportFailed("nothing to export: no MuJoCo model root (import a model or add one)")
    specs = []
    for root in roots:
        try:
            scanner = scan.Scanner(root, warnings)
        except scan.ScanError as error:
            raise ExportFailed(f"{root.name}: {error}", error.objects or [root]) from None
        specs.append((root, scanner.spec, scanner.blender_meshes))
        if scanners is not None:
            scanners.append(scanner)
    if len(specs) == 1:
        blender_meshes.extend(specs[0][2])
        return specs[0][1]
    main = mujoco.MjSpec()
    main.modelname = "scene"
    # the file has one <compiler>, <option>, ...: the first model's
    model = roots[0].mujoco.model
    for kind in MODEL_SETTINGS:
        spec_io.props_to_settings(getattr(model, kind), main, kind)
    used = set()
    for root, spec, made in specs:
        prefix = _prefix(root.name, used)
        blender_meshes.extend(prefix + name for name in made)
        # each model where its root stands in the scene, so copies can stand side by side
        loc, rot, _scale = root.matrix_world.decompose()
        frame = main.worldbody.add_frame(pos=list(loc), quat=list(rot))
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


def _unique_name(folder, filename, taken):
    """folder/filename, numbered where two different files would share it."""
    stem, ext = os.path.splitext(filename)
    target, n = os.path.join(folder, filename), 1
    while target in taken:
        n += 1
        target = os.path.join(folder, f"{stem}_{n}{ext}")
    taken.add(target)
    return target


def write_stl(path, vertices, triangles) -> None:
    """Binary STL of a triangle mesh (what MuJoCo reads fastest)."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    corners = v[t]  # (T, 3, 3)
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    lengths = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.divide(normals, lengths, out=np.zeros_like(normals), where=lengths > 0)
    record = np.zeros(len(t), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    record["n"], record["v"] = normals, corners
    with open(path, "wb") as fh:
        fh.write(b"MJBlend mesh".ljust(80, b" "))
        fh.write(np.uint32(len(t)).tobytes())
        fh.write(record.tobytes())


def write_obj(path, vertices, triangles, texcoords) -> None:
    """Wavefront OBJ with per-vertex texture coordinates (MuJoCo flips v on reading
    OBJ files, so v is written flipped back)."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3) + 1
    uv = np.asarray(texcoords, dtype=np.float64).reshape(-1, 2)
    lines = ["# MJBlend mesh"]
    lines += [f"v {x!r} {y!r} {z!r}" for x, y, z in v.tolist()]
    lines += [f"vt {a!r} {1.0 - b!r}" for a, b in uv.tolist()]
    lines += [f"f {a}/{a} {b}/{b} {c}/{c}" for a, b, c in t.tolist()]
    with open(path, "w", encoding="ascii") as fh:
        fh.write("\n".join(lines) + "\n")


def place_assets(spec, folder: str, staging: str, copy: bool, blender_meshes=()) -> dict[str, str]:
    """Give every asset an absolute file path that exists now (so MuJoCo's writer,
    which compiles, finds it) and return {that path: the path the written file uses}.

    Meshes made or edited in Blender (inline vertices, no file) become files in
    assets/ (binary STL, or OBJ to keep texture coordinates); with `copy`, every
    referenced file is copied there too."""
    spec.compiler.meshdir = ""
    spec.compiler.texturedir = ""
    final: dict[str, str] = {}
    taken: set[str] = set()
    copied: dict[str, str] = {}
    assets = os.path.join(staging, "assets")
    for listname in ASSET_LISTS:
        for element in getattr(spec, listname):
            source = getattr(element, "file", "")
            if listname == "meshes" and element.name in blender_meshes and len(element.userface):
                os.makedirs(assets, exist_ok=True)
                textured = len(element.usertexcoord) > 0  # UVs need OBJ; STL has none
                target = _unique_name(assets, f"{element.name or 'mesh'}.{'obj' if textured else 'stl'}",
                                      taken)
                if textured:
                    write_obj(target, element.uservert, element.userface, element.usertexcoord)
                else:
                    write_stl(target, element.uservert, element.userface)
                element.uservert, element.userface, element.usertexcoord = [], [], []
                element.file = target
                final[target] = os.path.relpath(target, staging)
                continue
            if not source:
                continue
            if not os.path.isabs(source):
                source = os.path.join(spec.modelfiledir or "", source)
            source = os.path.abspath(source)
            if copy:
                if source not in copied:
                    os.makedirs(assets, exist_ok=True)
                    copied[source] = _unique_name(assets, os.path.basename(source), taken)
                    shutil.copyfile(source, copied[source])
                element.file = copied[source]
                final[copied[source]] = os.path.relpath(copied[source], staging)
            else:
                element.file = source
                final[source] = os.path.relpath(source, folder)
    return final


def write(spec, filepath: str, copy_assets=False, as_zip=False, save_mjb=False, scene_objects=(),
          blender_meshes=()):
    """Write `spec` to `filepath` (MJCF or zip); nothing is written unless all of it works.
    A zip holds the MJCF and copies of all its asset files (MjSpec.from_zip reads it)."""
    folder = os.path.dirname(os.path.abspath(filepath))
    copy_assets = copy_assets or as_zip
    if not os.path.isdir(folder):
        raise ExportFailed(f"{folder}: no such folder")
    if not os.access(folder, os.W_OK):
        raise ExportFailed(f"{folder}: cannot write there (permission denied)")
    model = check(spec, scene_objects)
    try:
        staging = tempfile.mkdtemp(prefix=".mjblend-export-", dir=folder)
    except OSError as error:
        raise ExportFailed(f"{folder}: cannot write there ({error.strerror})") from None
    try:
        stem = os.path.splitext(os.path.basename(filepath))[0]
        staged = os.path.join(staging, stem + ".xml" if as_zip else os.path.basename(filepath))
        final = place_assets(spec, folder, staging, copy_assets, set(blender_meshes))
        spec.compiler.savecompiled = False  # authored notation, full precision (see module doc)
        spec.compiler.savecanonical = False
        try:
            text = spec.to_xml()
        except Exception as error:  # ValueError, or mujoco.FatalError from its XML writer
            raise ExportFailed(f"MuJoCo cannot write the model: {' '.join(str(error).split())}") \
                from None
        for now, later in final.items():  # the paths the written file will use
            text = text.replace(f'file="{escape(now)}"', f'file="{escape(later)}"')
        with open(staged, "w", encoding="utf-8") as fh:
            fh.write(text)
        if as_zip:  # the MJCF and its assets/ folder, and nothing else, in one file
            bundle = os.path.join(staging, os.path.basename(filepath))
            with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
                archive.write(staged, os.path.basename(staged))
                for path in final:
                    archive.write(path, final[path])
            os.remove(staged)
            shutil.rmtree(os.path.join(staging, "assets"), ignore_errors=True)
        if save_mjb:
            mujoco.mj_saveModel(model, os.path.join(staging, stem + ".mjb"))
        for name in os.listdir(staging):  # everything worked: move it into place
            target = os.path.join(folder, name)
            if os.path.isdir(os.path.join(staging, name)):
                shutil.copytree(os.path.join(staging, name), target, dirs_exist_ok=True)
            else:
                os.replace(os.path.join(staging, name), target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return model

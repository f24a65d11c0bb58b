"""Scene -> MJCF file: scan, check by compiling, write.

MuJoCo writes the MJCF (`MjSpec.to_xml`). With the compiler's `savecompiled`
and `savecanonical` switched off for the write, it keeps the authored notation
(euler in degrees, fromto, ...) and prints every double in its shortest
round-trip form, so an untouched import exports to a file MuJoCo compiles to
the same model bit for bit. (With MuJoCo's default settings to_xml writes 6
significant digits in canonical form: ARCHITECTURE.md's measured limits.)
"""

from __future__ import annotations

import filecmp
import itertools
import os
import re
import shutil
import stat
import zipfile
from xml.sax.saxutils import escape, unescape

import bpy
import mujoco
import numpy as np

from ..batch.randomization import randomization_path
from ..geometry import materials
from ..scan import randomization as scene_randomization
from ..scan.compile_spec import SceneSpec, check
from . import checks
from .target import ExportFailed, Staging, check_destinations, check_target, move_into, remove_stale

__all__ = ("ExportFailed", "write", "check_target", "remove_stale")

ASSET_LISTS = ("meshes", "hfields", "textures", "skins")
# an MJCF written here before is read for the asset files it refers to (replaceable);
# a larger one is taken to refer to none (its assets are then numbered, never replaced)
REFERENCES_READ_LIMIT = 64 << 20


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


def write_png(path, image) -> None:
    """The pixels of a Blender image as a PNG, written by Blender. Through a byte
    image in colour space sRGB, which Blender saves unchanged: the file holds the
    bytes `image.pixels` shows (MuJoCo's, as the import put them), whatever the
    colour space or buffer type of the image itself (a byte image in another colour
    space is converted on saving: measured)."""
    width, height = image.size
    rgba = materials.image_rgba(image)
    copy = bpy.data.images.new(".mjblend export", width, height, alpha=True)
    try:
        copy.colorspace_settings.name = "sRGB"
        copy.pixels.foreach_set((rgba.astype(np.float32) / np.float32(255)).reshape(-1))
        copy.filepath_raw = path
        copy.file_format = "PNG"
        copy.save()
    finally:
        bpy.data.images.remove(copy)


def _texture_from_png(element, image) -> None:
    """A texture the scan gave its Blender pixels (scan._texture_pixels) reads them
    from their PNG file instead (the file is set by the caller); a cube or skybox
    image is MuJoCo's layout, faces right, left, up, down, front, back from the top."""
    element.data = b""
    width, height = image.size
    if int(element.type) != int(mujoco.mjtTexture.mjTEXTURE_2D) and height == 6 * width:
        element.gridsize, element.gridlayout = [6, 1], "RLUDFB"
    else:
        element.gridsize, element.gridlayout = [1, 1], "." * 12


# compiler meshdir applies to the files of these lists, texturedir to textures'
DIR_OF = {"meshes": "meshdir", "hfields": "meshdir", "skins": "meshdir", "textures": "texturedir"}


def _inside(folder_rel: str) -> str | None:
    """A meshdir / texturedir usable for placed files (relative, inside the output
    folder), else None."""
    path = os.path.normpath(folder_rel) if folder_rel else ""
    if not path or path == "." or os.path.isabs(path) or path.split(os.sep)[0] == "..":
        return None
    return path


def referenced_files(filepath: str) -> set[str]:
    """Absolute paths of the asset files an MJCF written here earlier refers to (so
    that exporting over it again may replace them, and nothing else). Only a regular
    file of a sane size is read (check_target refuses any other)."""
    try:
        st = os.stat(filepath)
        if not stat.S_ISREG(st.st_mode) or st.st_size > REFERENCES_READ_LIMIT:
            return set()
        with open(filepath, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return set()
    folder = os.path.dirname(os.path.abspath(filepath))
    bases = [folder] + [os.path.join(folder, unescape(d)) for d in
                        re.findall(r'\b(?:meshdir|texturedir|assetdir)="([^"]*)"', text)]
    return {os.path.normpath(os.path.join(base, unescape(f)))
            for f in re.findall(r'\bfile="([^"]*)"', text) for base in bases}


class _Placer:
    """Chooses where each written asset file goes: staged now, moved to `folder`
    when everything worked. A name is never one used twice in this export, nor an
    existing file of the folder, unless that file is the same bytes or one the MJCF
    being replaced refers to (`replaceable`)."""

    def __init__(self, folder, staging, replaceable):
        self.folder, self.staging, self.replaceable = folder, staging, replaceable
        self.taken: set[str] = set()

    def _conflicts(self, staged, rel):
        if self.folder is None:  # a zip: nothing lands in the folder
            return False
        final = os.path.normpath(os.path.join(self.folder, rel))
        try:
            mode = os.stat(final).st_mode
        except (FileNotFoundError, NotADirectoryError):  # (the latter: check_destinations says)
            return False
        if not stat.S_ISREG(mode):  # a folder, a device, a pipe: never replaced nor read
            return True
        return final not in self.replaceable and not filecmp.cmp(staged, final, shallow=False)

    def place(self, subdir, filename, produce):
        """Stage a file made by produce(path) as subdir/filename (numbered if taken);
        its path relative to the output folder."""
        stem, ext = os.path.splitext(filename)
        os.makedirs(os.path.join(self.staging, subdir), exist_ok=True)
        made = None
        for n in itertools.count(1):
            rel = os.path.join(subdir, filename if n == 1 else f"{stem}_{n}{ext}")
            staged = os.path.join(self.staging, rel)
            if staged in self.taken:
                continue
            if made is None:
                produce(staged)
            else:  # written once, renamed while the name is taken
                os.replace(made, staged)
            made = staged
            if not self._conflicts(staged, rel):
                self.taken.add(staged)
                return rel
        raise AssertionError("unreachable")


def place_assets(spec, folder: str, staging: str, copy: bool, blender_meshes=(),
                 blender_textures=None, replaceable=frozenset(), in_zip=False) -> dict[str, str]:
    """Give every asset an absolute file path that exists now (so MuJoCo's writer,
    which compiles, finds it) and return {that path: the path the written file uses}.

    Meshes made or edited in Blender (inline vertices, no file) become binary STL
    files (OBJ to keep texture coordinates), textures painted or made in Blender
    ({name: Image}) PNG files; with `copy`, every referenced file is copied too.
    Placed files go under the model's meshdir / texturedir when that is a relative
    folder inside the output folder, else under assets/. The written meshdir /
    texturedir is the model's when every file of its kind lies under it, else ""
    (every file path relative to the MJCF)."""
    blender_textures = blender_textures or {}
    given = {key: getattr(spec.compiler, key) for key in ("meshdir", "texturedir")}
    own = {key: _inside(folder_rel) for key, folder_rel in given.items()}
    dirs = {key: folder_rel or "assets" for key, folder_rel in own.items()}
    spec.compiler.meshdir = ""
    spec.compiler.texturedir = ""
    placer = _Placer(None if in_zip else folder, staging, replaceable)
    base = staging if in_zip else folder
    placed: dict[str, tuple[str, str]] = {}  # path now -> (DIR_OF key, final absolute path)
    copied: dict[str, str] = {}

    def stage(key, filename, produce):
        rel = placer.place(dirs[key], filename, produce)
        now = os.path.join(staging, rel)
        placed[now] = (key, os.path.join(base, rel))
        return now

    for listname in ASSET_LISTS:
        key = DIR_OF[listname]
        for element in getattr(spec, listname):
            source = getattr(element, "file", "")
            if listname == "meshes" and element.name in blender_meshes and len(element.userface):
                textured = len(element.usertexcoord) > 0  # UVs need OBJ; STL has none
                verts, faces, uvs = element.uservert, element.userface, element.usertexcoord
                if textured:
                    element.file = stage(key, f"{_file_stem(element.name, 'mesh')}.obj",
                                         lambda path, v=verts, f=faces, t=uvs: write_obj(path, v, f, t))
                else:
                    element.file = stage(key, f"{_file_stem(element.name, 'mesh')}.stl",
                                         lambda path, v=verts, f=faces: write_stl(path, v, f))
                element.uservert, element.userface, element.usertexcoord = [], [], []
                continue
            if listname == "textures" and element.name in blender_textures:
                image = blender_textures[element.name]
                element.file = stage(key, f"{_file_stem(element.name or image.name, 'texture')}.png",
                                     lambda path, image=image: write_png(path, image))
                _texture_from_png(element, image)
                continue
            def refer(name, key=key, element=element, listname=listname):
                """A file the element names, where MuJoCo finds it; copied, or referred to."""
                source = os.path.abspath(os.path.join(spec.modelfiledir or "", given[key], name))
                if copy and not os.path.isfile(source):  # never copy from a device or a pipe
                    what = "does not exist" if not os.path.exists(source) else "is not a regular file"
                    raise ExportFailed(f"{listname[:-1]} {element.name!r}: its file {source} "
                                       f"{what}: it cannot be copied")
                if not copy:
                    placed[source] = (key, source)
                    return source
                if source not in copied:
                    copied[source] = stage(key, os.path.basename(source),
                                           lambda path, source=source: shutil.copyfile(source, path))
                return copied[source]

            if source:
                element.file = refer(source)
            if listname == "textures" and any(element.cubefiles):  # a cube from six files
                element.cubefiles = [refer(name) if name else "" for name in element.cubefiles]
    final: dict[str, str] = {}
    for key in ("meshdir", "texturedir"):
        mine = {now: where for now, (k, where) in placed.items() if k == key}
        home = os.path.join(base, own[key] or "")
        if own[key] and mine and all(where.startswith(home + os.sep) for where in mine.values()):
            setattr(spec.compiler, key, own[key])  # all of its files are there: MJCF's own way
        else:
            home = base
        final.update({now: os.path.relpath(where, home) for now, where in mine.items()})
    return final


def _file_stem(name: str, fallback: str) -> str:
    """An element name as a file name (a prefixed "robot/part" is not a folder)."""
    return re.sub(r'[\\/:*?"<>|\s]+', "_", name or "").strip("_") or fallback


def write(built: SceneSpec, filepath: str, copy_assets=False, as_zip=False, save_mjb=False,
          scene_objects=(), randomize=False):
    """Write the scene's spec to `filepath` (MJCF or zip), with the meshes and textures
    only Blender has as files; nothing is written unless all of it works. A zip holds
    the MJCF and copies of all its asset files (MjSpec.from_zip reads it).

    `randomize`: the domain randomization authored on the scene's elements goes
    next to the MJCF as `<stem>.randomization.json` (into the zip for a zip), where
    batch.open_pool finds it; with no entries none is written, and one an earlier
    export left next to the MJCF is removed (it would randomize this model).

    The target is checked first (exporter.target.check_target), the spec next
    (exporter.checks: what no MJCF file can keep), then MuJoCo compiles it."""
    spec = built.spec
    stem = os.path.splitext(os.path.basename(filepath))[0]
    roots = [scanner.root for scanner in built.scanners]
    stale_randomization = randomize and not as_zip  # (its removal, if there are no entries now)
    randomize = randomize and scene_randomization.has_entries(roots)
    extra = [stem + ".mjb"] if save_mjb else []
    if randomize and not as_zip:
        extra.append(_randomization_name(filepath))
    folder = check_target(filepath, extra)
    copy_assets = copy_assets or as_zip
    checks.check_names(built)
    if randomize:  # the entries on their own first (an unnamed element, a bad range)
        scene_randomization.scene_randomization(roots)
    model = check(spec, scene_objects)
    # each entry names an element of this model, one it can vary
    randomization = scene_randomization.checked(roots, model) if randomize else None
    with Staging(folder) as staging:
        try:
            _write_staged(built, filepath, folder, staging.path, model, copy_assets, as_zip, save_mjb,
                          randomization)
        except OSError as error:  # a full disk, a file vanished meanwhile, ...
            where = error.filename or folder
            raise ExportFailed(f"{where}: cannot write ({error.strerror or error})") from None
    if stale_randomization and randomization is None:
        _remove_stale_randomization(os.path.join(folder, _randomization_name(filepath)))
    return model


def _mjcf_text(spec, final: dict[str, str]) -> str:
    """MuJoCo's MJCF of `spec`, whose assets place_assets placed, with the paths the
    written files will use (`final`: {path now: path written})."""
    spec.compiler.savecompiled = False  # authored notation, full precision (see module doc)
    spec.compiler.savecanonical = False
    try:
        text = spec.to_xml()
    except Exception as error:  # ValueError, or mujoco.FatalError from its XML writer
        raise ExportFailed(f"MuJoCo cannot write the model: {' '.join(str(error).split())}") \
            from None
    for now, later in final.items():
        # file=, and a cube texture's fileright= ... fileback=
        text = re.sub(rf'(\sfile(?:right|left|up|down|front|back)?)="{re.escape(escape(now))}"',
                      lambda match, later=later: f'{match.group(1)}="{escape(later)}"', text)
    return text


def flat_files(built: SceneSpec, staging: str) -> tuple[str, dict[str, bytes]]:
    """The exporter's MJCF of `built` (its spec changed here: pass a copy) as one text
    whose asset files are named by bare file name, and {bare name: bytes} of every one:
    what a client compiles with `MjModel.from_xml_string(text, files)` (URLab's
    `include_assets`). Meshes and textures only Blender has are written as for an
    export, into `staging` (a folder of the caller's, emptied by it); the others are
    copied there first (ExportFailed names a file that is missing). Blender data is
    read only for `built`'s scanners and painted textures (none: no main thread needed)."""
    checks.check_names(built)
    spec = built.spec
    placed = place_assets(spec, staging, staging, True, built.blender_meshes, built.blender_textures,
                          in_zip=True)
    spec.compiler.meshdir = spec.compiler.texturedir = ""  # (every file by its bare name)
    bare: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for now in placed:
        with open(now, "rb") as handle:
            data = handle.read()
        stem, extension = os.path.splitext(os.path.basename(now))
        name, number = stem + extension, 1
        while name in files and files[name] != data:  # (the same name in the mesh and texture folders)
            number += 1
            name = f"{stem}_{number}{extension}"
        bare[now], files[name] = name, data
    text = _mjcf_text(spec, bare)
    checks.check_text(text, built)
    return text, files


def _randomization_name(filepath: str) -> str:
    """The randomization file of an MJCF file, as batch.open_pool looks for it."""
    return randomization_path(os.path.basename(filepath))


def _remove_stale_randomization(path: str) -> None:
    """A randomization file an earlier export wrote, left from before the entries went."""
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.remove(path)
    except OSError:
        pass


def _write_staged(built, filepath, folder, staging, model, copy_assets, as_zip, save_mjb,
                  randomization=None):
    """`write`'s work, into the `staging` folder, then moved into `folder`."""
    spec = built.spec
    stem = os.path.splitext(os.path.basename(filepath))[0]
    staged = os.path.join(staging, stem + ".xml" if as_zip else os.path.basename(filepath))
    staged_randomization = None
    if randomization is not None:
        staged_randomization = os.path.join(staging, _randomization_name(staged))
        randomization.save(staged_randomization)
    replaceable = set() if as_zip else referenced_files(filepath)
    final = place_assets(spec, folder, staging, copy_assets, built.blender_meshes,
                         built.blender_textures, replaceable, in_zip=as_zip)
    text = _mjcf_text(spec, final)
    checks.check_text(text, built)
    with open(staged, "w", encoding="utf-8") as fh:
        fh.write(text)
    if as_zip:  # the MJCF and its asset folders, and nothing else, in one file
        bundle = os.path.join(staging, os.path.basename(filepath))
        with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(staged, os.path.basename(staged))
            if staged_randomization is not None:
                archive.write(staged_randomization, os.path.basename(staged_randomization))
                os.remove(staged_randomization)
            for path in final:
                archive.write(path, os.path.relpath(path, staging))
        os.remove(staged)
        for name in os.listdir(staging):
            if os.path.isdir(os.path.join(staging, name)):
                shutil.rmtree(os.path.join(staging, name), ignore_errors=True)
    if save_mjb:
        mujoco.mj_saveModel(model, os.path.join(staging, stem + ".mjb"))
    check_destinations(staging, folder)  # everything worked: move it into place
    move_into(staging, folder)

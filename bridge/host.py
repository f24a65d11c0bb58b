"""What a bridge serves: the simulation's runner and how the scene is named.

`Host` is the interface the dispatcher reads (from its own thread: nothing
here may touch Blender data). `ModelHost` serves an MJCF file or a compiled
model with no Blender at all: the bpy-free tier's tests, the benchmark, and
scripts. The Blender side (live/bridge_host.py) serves a scene.
"""

from __future__ import annotations

import os
import re
import tempfile

import mujoco
import numpy as np

from ..engine import commands
from ..engine.runner import Runner
from ..engine.session import EngineSession
from .wire import ProtocolError

VERSION = "0.1.0"


def prefix_of(name: str) -> str:
    """An entity prefix from a model root's name: word characters only."""
    return re.sub(r"\W+", "_", name).strip("_") or "model"


class Host:
    name = ""
    version = VERSION
    remote_stop = False  # whether a client may stop the server (`shutdown`): headless serving only
    recording_bytes = 1 << 30

    def runner(self) -> Runner | None:
        raise NotImplementedError

    def root_prefixes(self) -> list[str]:
        raise NotImplementedError

    def compiled_files(self) -> tuple[str, dict] | None:
        """(MJCF text, {bare file name: bytes}) of the model served, or None."""
        return None

    def recordings_dir(self) -> str | None:
        return os.path.join(tempfile.gettempdir(), "mjblend_recordings")

    def uploads_dir(self) -> str:
        """Where uploaded models are staged, one folder per upload (bridge/uploads.py)."""
        return os.path.join(tempfile.gettempdir(), "mjblend_uploads")

    def import_model(self, path: str, staged: bool = False, job: bool = False) -> dict:
        """(A bridge thread, the simulation not lent) Serve the MJCF at `path` (ModelHost:
        in place of its model; SceneHost: imported into the scene, under the importer's
        guard, and the scene recompiled). `staged`: the file is an upload's, whose folder goes
        afterwards unless the result says `keep_folder`. `job`: a host that imports on
        Blender's main thread answers {"job_id"} at once (URLab's op_started) instead
        of waiting. The result: model_root, entity, imported_now, warnings and the
        served model's sizes and mjb (`model_fields`). ProtocolError import_failed with
        MuJoCo's message when it refuses the file (the model served unchanged)."""
        raise ProtocolError("unsupported", "this server cannot import models")

    blender_frames = None  # bridge/blender_frames.BlenderFrames where Blender can render (a scene's host)
    main_thread = None  # bridge/main_thread.MainThread where a Blender scene is served (its jobs)
    scene_edits = None  # live/bridge_scene.SceneEdits where a Blender scene is served (bridge/scene_ops.py)

    def camera_settings(self) -> dict:
        """{camera name: {"mode": real | depth | semantic | instance, "resolution": (w, h),
        "renderer": "mujoco" | "blender"}}: how the bridge serves a camera where it
        should differ from the MJCF (mode real, the camera's resolution, MuJoCo's renderer)."""
        return {}

    def camera_renderer(self) -> str:
        """The renderer of a camera neither the client nor camera_settings named one for
        (read from the bridge's threads: a plain value, never Blender data)."""
        return "mujoco"


# <size> attributes (MjSpec fields) a served model keeps from its file
SIZES = ("memory", "nstack", "njmax", "nconmax", "nkey", "nuser_body", "nuser_jnt", "nuser_geom",
         "nuser_site", "nuser_cam", "nuser_tendon", "nuser_actuator", "nuser_sensor")


def prefixed_spec(spec: mujoco.MjSpec, prefix: str) -> mujoco.MjSpec:
    """`spec` attached to an empty one with `prefix + "_"`: every named element is
    then `<prefix>_<name>`, as URLab's client finds an entity's elements."""
    main = mujoco.MjSpec()
    main.copy_during_attach = True
    # (the file's own <compiler>, <option>, <size>, <visual> settings are the scene's:
    # attach keeps the parent's sizes, so they are the file's before it)
    main.option = spec.option
    main.compiler = spec.compiler
    main.visual = spec.visual
    main.stat = spec.stat
    for size in SIZES:
        setattr(main, size, getattr(spec, size))
    frame = main.worldbody.add_frame()
    main.attach(spec, prefix=prefix + "_", frame=frame)
    main.modelname = spec.modelname or prefix  # (after: the same name on both is an attach conflict)
    return main


def flattened(original: mujoco.MjSpec, served: mujoco.MjSpec) -> tuple[str, dict]:
    """URLab's `include_assets`: the served spec as one MJCF text whose asset files
    (meshes, height fields, skins, textures) are named by bare file name, and those
    files' bytes, read where `original` (the file's own spec) finds them. (MuJoCo's
    own to_zip leaves an attached spec's files out.)"""
    names: dict = {}  # the name a file is written with -> its bare name
    files: dict = {}

    def take(name: str, folder: str) -> None:
        if not name or name in names:
            return
        data = original.assets.get(name) if original.assets else None
        if data is None:
            path = os.path.join(original.modelfiledir or "", folder or "", name)  # (an absolute name stays)
            with open(path, "rb") as handle:
                data = handle.read()
        stem, extension = os.path.splitext(os.path.basename(name))
        bare, number = stem + extension, 1
        while bare in files and files[bare] != data:  # (two files of one name in two folders)
            number += 1
            bare = f"{stem}_{number}{extension}"
        names[name], files[bare] = bare, bytes(data)

    try:
        for element in (*original.meshes, *original.hfields, *original.skins):
            take(element.file, original.meshdir)  # (MuJoCo's meshdir holds height fields and skins too)
        for texture in original.textures:
            take(texture.file, original.texturedir)
            for name in texture.cubefiles:
                take(name, original.texturedir)
    except OSError as error:  # (gone since the load; a file of an attached model, in that model's folder)
        raise ProtocolError("path_not_readable", f"the model cannot be shipped as MJCF: an asset file cannot "
                            f"be read where the model names it: {error}") from None
    copy = served.copy()
    for element in (*copy.meshes, *copy.hfields, *copy.skins):
        element.file = names.get(element.file, element.file)
    for texture in copy.textures:
        texture.file = names.get(texture.file, texture.file)
        texture.cubefiles = [names.get(name, name) for name in texture.cubefiles]
    copy.meshdir = copy.texturedir = ""
    copy.assets = files  # (the compile to_xml needs finds them by their new names)
    copy.compile()
    return copy.to_xml(), files


def model_fields(model: mujoco.MjModel) -> dict:
    """URLab's upload_model_commit sizes and compiled model of what is served now."""
    buffer = np.empty(mujoco.mj_sizeModel(model), dtype=np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return {"nq": int(model.nq), "nv": int(model.nv), "nu": int(model.nu), "nbody": int(model.nbody),
            "ngeom": int(model.ngeom), "mjb": buffer.tobytes()}


def folder_files(folder: str, but: str) -> dict:
    """{file name: bytes} of the regular files in `folder` (an upload's assets), `but` one."""
    found = {}
    for entry in os.scandir(folder):
        if entry.name != but and entry.is_file(follow_symlinks=False):
            with open(entry.path, "rb") as handle:
                found[entry.name] = handle.read()
    return found


class ModelHost(Host):
    """A model served without Blender: its own session and physics thread."""

    def __init__(self, model: mujoco.MjModel, prefix: str, name: str = "", keyframe: int = -1,
                 files: tuple[str, dict] | None = None, recordings: str | None = None, play: bool = False,
                 cameras: dict | None = None, uploads: str | None = None):
        """`play`: start playing in real time (live mode, as a URLab server does); else paused
        until a client asks. `cameras`: Host.camera_settings. `uploads`: Host.uploads_dir."""
        self.name = name or prefix
        self._cameras = dict(cameras or {})
        self._prefix = prefix
        self._served = ((model, prefix),)  # (model, its prefix), the one before: see root_prefixes
        self._files = files
        self._recordings = recordings
        self._uploads = uploads
        self.session = EngineSession(model, keyframe=keyframe)
        self._runner = Runner(self.session, threaded=True, name="MJBlend bridge physics")
        self._runner.start()
        if play:
            self._runner.send(commands.Play())

    @classmethod
    def from_file(cls, path, keyframe: int = -1, **kwargs) -> ModelHost:
        """An MJCF (or URDF) file served with its root's prefix (the file's model
        name, else its stem)."""
        spec = mujoco.MjSpec.from_file(os.fspath(path))
        prefix = prefix_of(spec.modelname or os.path.splitext(os.path.basename(path))[0])
        served = prefixed_spec(spec, prefix)
        host = cls(served.compile(), prefix, keyframe=keyframe, **kwargs)
        host._specs = (spec, served)
        return host

    def runner(self) -> Runner:
        return self._runner

    def root_prefixes(self) -> list[str]:
        """The prefix of the model the runner runs (after an import, the new model may
        reach the runner a moment after its prefix is set: the one before is kept too)."""
        model = self._runner.session.model
        for served, prefix in self._served:
            if served is model:
                return [prefix]
        return [self._prefix]

    def uploads_dir(self) -> str:
        return self._uploads or super().uploads_dir()

    def import_model(self, path: str, staged: bool = False, job: bool = False) -> dict:
        """The model served replaced by the file's (prefixed by its name, as from_file does):
        the physics thread swaps it between two steps (commands.Replace, then a reset to
        qpos0), so the runner, the state stream and the cameras stay; sessions of the old
        model expire. An upload's files are read into the spec (its folder then goes).
        MuJoCo loads it in this process, as from_file does (the importer's guard, a probe
        process with limits, is a Blender scene's: the bridge imports no importer/)."""
        label = os.path.basename(path)
        try:
            spec = mujoco.MjSpec.from_file(path)
            spec.compile()  # (MuJoCo's message in the file's own names, before the prefix)
            root = spec.modelname or os.path.splitext(label)[0]
            prefix = prefix_of(root)
            served = prefixed_spec(spec, prefix)
            if staged:  # (after the attach, which renames the files of a spec that has assets)
                spec.assets = served.assets = folder_files(os.path.dirname(path), label)
            model = served.compile()
        except Exception as error:  # noqa: BLE001 -- MuJoCo's message, the model served unchanged
            raise ProtocolError("import_failed", f"{label}: MuJoCo cannot load it: "
                                f"{' '.join(str(error).split())}") from None
        self._served = ((model, prefix), *self._served[:1])
        runner = self._runner
        runner.send(commands.Replace(model, {}))
        if not runner.wait(runner.send(commands.Reset(-1)), 10.0):
            raise ProtocolError("step_timeout", "the physics thread did not take the new model within 10 s")
        self.name = self._prefix = prefix
        self._specs, self._files = (spec, served), None
        return {"model_root": root, "entity": prefix, "imported_now": True, "warnings": [],
                **model_fields(model)}

    def compiled_files(self):
        if self._files is None and getattr(self, "_specs", None) is not None:
            self._files = flattened(*self._specs)  # (once: the model served does not change)
        return self._files

    def recordings_dir(self):
        return self._recordings or super().recordings_dir()

    def camera_settings(self) -> dict:
        return self._cameras

    def close(self) -> bool:
        return self._runner.stop()

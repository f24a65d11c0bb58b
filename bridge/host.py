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

from ..engine import commands
from ..engine.runner import Runner
from ..engine.session import Session

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


def prefixed_spec(spec: mujoco.MjSpec, prefix: str) -> mujoco.MjSpec:
    """`spec` attached to an empty one with `prefix + "_"`: every named element is
    then `<prefix>_<name>`, as URLab's client finds an entity's elements."""
    main = mujoco.MjSpec()
    main.modelname = spec.modelname or prefix
    main.copy_during_attach = True
    # (the file's own <compiler>, <option>, <size>, <visual> settings are the scene's)
    main.option = spec.option
    main.compiler = spec.compiler
    main.visual = spec.visual
    main.stat = spec.stat
    main.memory = spec.memory
    main.nstack = spec.nstack
    frame = main.worldbody.add_frame()
    main.attach(spec, prefix=prefix + "_", frame=frame)
    return main


class ModelHost(Host):
    """A model served without Blender: its own session and physics thread."""

    def __init__(self, model: mujoco.MjModel, prefix: str, name: str = "", keyframe: int = -1,
                 files: tuple[str, dict] | None = None, recordings: str | None = None, play: bool = False):
        """`play`: start playing in real time (live mode, as a URLab server does); else paused
        until a client asks."""
        self.name = name or prefix
        self._prefix = prefix
        self._files = files
        self._recordings = recordings
        self.session = Session(model, keyframe=keyframe)
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
        return cls(prefixed_spec(spec, prefix).compile(), prefix, keyframe=keyframe, **kwargs)

    def runner(self) -> Runner:
        return self._runner

    def root_prefixes(self) -> list[str]:
        return [self._prefix]

    def compiled_files(self):
        return self._files

    def recordings_dir(self):
        return self._recordings or super().recordings_dir()

    def close(self) -> bool:
        return self._runner.stop()

"""Follow File: a scene's imported models reloaded in place when their files change on
disk (the MJCF, a file it includes, a mesh, height field, texture or skin file).

`FileWatch.poll` compares each file's (mtime, size) with what the last reload saw; a
change is acted on once it reads the same in two consecutive polls (an editor's save
may be half written at the first), so one save is one reload. A file MuJoCo refuses
keeps the last good model and its message in `error` (the Model panel shows it) until
a good save clears it. In a window a timer polls every `POLL_SECONDS` while a scene has
Follow File on; scripts and tests call `poll` themselves (timers never fire there).
"""

from __future__ import annotations

import os

import bpy

from ..importer import build, reload
from ..scan import scene_scan
from ..scene import preferences
from . import scene_session

POLL_SECONDS = 0.5


def _stamp(path: str):
    try:
        stat = os.stat(path)
    except OSError:
        return None  # (missing: a change too, and a reload says why)
    return stat.st_mtime_ns, stat.st_size


def reload_in_place(scene, root, prefs: preferences.Settings = preferences.DEFAULTS) -> reload.ReloadResult:
    """importer/reload.py's reload of `root`, and a running simulation of the scene on
    with the new model, its state carried over by object where the model still fits
    (live/simulation.py's recompile); ImportFailed when MuJoCo refuses the file."""
    live = scene_session.simulation(scene)
    result = reload.reload_model(scene, root, prefs, before_change=live.restore if live is not None else None)
    owner = scene_session.existing(scene)
    if owner is not None:
        owner.scans.entries.pop(root.as_pointer(), None)  # scanned afresh
    if live is not None and not live.ended:
        result.simulation = live.compile(edited=True)
        if not result.simulation:
            live.reapply()  # (the last good model runs on: its poses again)
    return result


class FileWatch:
    """The files of every model root of `scene` that came from a file, watched."""

    def __init__(self, scene, prefs: preferences.Settings = preferences.DEFAULTS):
        self.scene, self.prefs = scene, prefs
        self.error = ""  # the last refused reload's message ("" after a good one)
        self.reloads = 0  # reloads done (one per change)
        self.last = None  # the last ReloadResult
        self._seen: dict[int, tuple] = {}  # root pointer -> (files, stamps) the model is made from
        self._pending: dict[int, tuple] = {}  # root pointer -> stamps changed at the last poll
        for root in self.roots():
            self._remember(root)

    def roots(self) -> list:
        return [r for r in scene_scan.model_roots(self.scene) if reload.source_of(r)]

    def files(self, root) -> list[str]:
        entry = self._seen.get(root.as_pointer())
        return list(entry[0]) if entry else reload.watched_files(root)

    def _remember(self, root, files=None, stamps=None) -> None:
        files = files if files is not None else reload.watched_files(root)
        self._seen[root.as_pointer()] = (files, stamps if stamps is not None else [_stamp(f) for f in files])

    def poll(self) -> bool:
        """Reload each model whose files changed (and have settled); True if one was."""
        reloaded = False
        for root in self.roots():
            key = root.as_pointer()
            if key not in self._seen:  # (a model imported since)
                self._remember(root)
                continue
            files, seen = self._seen[key]
            now = [_stamp(f) for f in files]
            if now == seen:
                self._pending.pop(key, None)
                continue
            if self._pending.get(key) != now:  # first seen: wait for the save to settle
                self._pending[key] = now
                continue
            self._pending.pop(key, None)
            try:
                self.last = reload_in_place(self.scene, root, self.prefs)
            except build.ImportFailed as error:
                self.error = str(error)
                self._seen[key] = (files, now)  # tried: the next save tries again
                continue
            self.error = ""
            self.reloads += 1
            reloaded = True
            self._remember(root, self.last.watched)
        return reloaded


# ------------------------------------------------------------ in a window


def watch_of(scene) -> FileWatch | None:
    """The scene's watch while Follow File is on (made when first asked)."""
    if not scene.mujoco_simulation.follow_file:
        return None
    owner = scene_session.of(scene)
    if owner.file_watch is None:
        owner.file_watch = FileWatch(scene, preferences.settings(bpy.context))
    return owner.file_watch


def _tick():
    """The timer (always on: a look at each scene's switch costs nothing): every scene
    with Follow File on polled; the watches start here too, so a .blend saved with it
    on follows again once opened."""
    for scene in bpy.data.scenes:
        watch = watch_of(scene)
        if watch is not None and watch.poll():
            bpy.ops.ed.undo_push(message="Reload from File")  # (as the button's: Ctrl+Z takes it back)
            for window in bpy.context.window_manager.windows:
                for area in window.screen.areas:
                    area.tag_redraw()
    return POLL_SECONDS


def follow_changed(scene) -> None:
    """Follow File switched: on, the watch starts from the files as they are now; off,
    the scene's watch ends."""
    if scene.mujoco_simulation.follow_file:
        watch_of(scene)
    else:
        owner = scene_session.existing(scene)
        if owner is not None:
            owner.file_watch = None


def register():
    if not bpy.app.timers.is_registered(_tick):
        bpy.app.timers.register(_tick, first_interval=POLL_SECONDS, persistent=True)


def unregister():
    if bpy.app.timers.is_registered(_tick):
        bpy.app.timers.unregister(_tick)

"""Where an export may write, and the staging folder it writes into first.

An export writes everything into a staging folder inside the target folder, then
moves it into place: on one file system, the move of each file is an atomic
rename, so a failed or killed export never leaves a half-written target. The
staging folder is named `.mjblend-export-*` and holds an `owner` file its export
keeps open and locked while it works; the operating system releases the lock
when the process ends, however it ends (even SIGKILL). An export removes the
staging folders it finds in its target folder whose owner is gone. This tells a
dead export from a live one without process ids, which a new process may reuse
and which Windows cannot probe (`os.kill(pid, 0)` terminates the process there).
Staging in the system's temporary folder instead would let the OS clean up only
at a reboot, and its move into the target folder would be a copy across file
systems, no longer atomic.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time

try:  # POSIX: an advisory lock; Windows has no fcntl, and an open file cannot be deleted there
    import fcntl
except ImportError:  # pragma: no cover (Windows)
    fcntl = None

from ..scene.errors import MJBlendError

PREFIX = ".mjblend-export-"
OWNER = "owner"
# a staging folder with no owner file yet may be one an export has just made: left alone
# for this long (seconds), then taken for a leftover (of an MJBlend before the owner file)
GRACE = 60.0


class ExportFailed(MJBlendError):
    """The model cannot be written where and how the user asked."""


_WHAT = ((stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
         (stat.S_ISSOCK, "a socket"))


def _what(mode) -> str:
    """What a file system entry is, in a user's words."""
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a folder"
    return next((what for test, what in _WHAT if test(mode)), "not a regular file")


def _read_only(st) -> bool:
    """No write permission bit for anyone: read-only as its owner meant it, even to a
    process that may write anyway (root)."""
    return not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def check_target(filepath: str, extra_names=()) -> str:
    """The absolute folder an export to `filepath` writes into, or ExportFailed saying
    why it cannot: no file name, a folder, an existing entry that is not a regular
    file (a device, a FIFO, a socket: never opened), a read-only file, a folder that
    does not exist or cannot be written. `extra_names`: other files the export
    writes next to it (the compiled model), checked the same way. Nothing is opened
    or read."""
    if not filepath or not filepath.strip():
        raise ExportFailed("no file to export to: choose a file name")
    path = os.path.abspath(filepath)
    if filepath.endswith(("/", os.sep)) or not os.path.basename(path):
        raise ExportFailed(f"{filepath}: is a folder: add a file name (model.xml)")
    folder = os.path.dirname(path)
    for target in (path, *(os.path.join(folder, name) for name in extra_names)):
        try:
            st = os.stat(target)  # follows a link: what a write would reach
        except FileNotFoundError:
            continue  # a new file, or a dangling link (replaced, never followed)
        except OSError as error:
            if not os.path.isdir(folder):
                break  # said below
            raise ExportFailed(f"{target}: cannot be replaced ({error.strerror})") from None
        if target == path and stat.S_ISDIR(st.st_mode):
            raise ExportFailed(f"{target}: is a folder: add a file name (model.xml)")
        if not stat.S_ISREG(st.st_mode):
            raise ExportFailed(f"{target}: is {_what(st.st_mode)}, not a file: "
                               "MJBlend only replaces regular files; choose another name")
        if _read_only(st) or not os.access(target, os.W_OK):
            raise ExportFailed(f"{target}: the file is read-only: make it writable or "
                               "choose another name")
    if not os.path.isdir(folder):
        what = "is not a folder" if os.path.exists(folder) else "no such folder"
        raise ExportFailed(f"{folder}: {what}: choose an existing folder")
    try:
        st = os.stat(folder)
    except OSError as error:
        raise ExportFailed(f"{folder}: cannot write there ({error.strerror})") from None
    if _read_only(st) or not os.access(folder, os.W_OK | os.X_OK):
        raise ExportFailed(f"{folder}: cannot write there (the folder is read-only or "
                           "permission is denied): choose another folder")
    return folder


class Staging:
    """A staging folder in `folder`, owned (locked) by this process until `close`."""

    def __init__(self, folder: str):
        remove_stale(folder)
        try:
            self.path = tempfile.mkdtemp(prefix=PREFIX, dir=folder)
            self._owner = open(os.path.join(self.path, OWNER), "wb")  # noqa: SIM115 (held open)
        except OSError as error:
            if getattr(self, "path", None):
                shutil.rmtree(self.path, ignore_errors=True)
            raise ExportFailed(f"{folder}: cannot write there ({error.strerror})") from None
        if fcntl is not None:
            try:
                fcntl.flock(self._owner.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # a file system without locks: the export works, its leftovers stay
                pass

    def close(self) -> None:
        self._owner.close()
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.close()


def remove_stale(folder: str) -> list[str]:
    """Remove the staging folders in `folder` whose export is gone; their paths."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(PREFIX)]
    except OSError:
        return []
    removed = []
    for name in names:
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path) and not _owned(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _owned(staging: str) -> bool:
    """True while the export that made `staging` may still be working in it."""
    owner = os.path.join(staging, OWNER)
    try:
        if fcntl is None:  # Windows: the owner's open file cannot be deleted
            os.remove(owner)
            return False
        with open(owner, "rb") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True  # locked: its export is alive
            return False
    except FileNotFoundError:  # no owner file (yet): an export that has just begun, or old
        try:
            return time.time() - os.stat(staging).st_mtime < GRACE
        except OSError:
            return False
    except OSError:
        return True  # cannot tell: leave it


def check_destinations(staging: str, folder: str) -> None:
    """Before anything moves: every staged entry's destination in `folder` is absent or
    of the same sort (a file over a regular file, a folder over a folder), so that the
    move neither fails halfway nor writes into a device or a pipe."""
    for root, dirs, files in os.walk(staging):
        rel = os.path.relpath(root, staging)
        for name in dirs + files:
            if rel == "." and name == OWNER:
                continue
            target = os.path.normpath(os.path.join(folder, rel, name))
            try:
                st = os.stat(target)
            except FileNotFoundError:
                continue
            except OSError as error:
                raise ExportFailed(f"{target}: cannot be replaced ({error.strerror})") from None
            if name in dirs and not stat.S_ISDIR(st.st_mode):
                raise ExportFailed(f"{target}: is {_what(st.st_mode)}, where the export puts a "
                                   "folder: move it away or choose another folder")
            if name in files and not stat.S_ISREG(st.st_mode):
                raise ExportFailed(f"{target}: is {_what(st.st_mode)}, not a file: "
                                   "MJBlend only replaces regular files; choose another folder")


def move_into(staging: str, folder: str) -> None:
    """Move everything staged (but the owner file) into `folder`, file by file, each an
    atomic rename (never opening what it replaces)."""
    for root, dirs, files in os.walk(staging):
        rel = os.path.relpath(root, staging)
        for name in dirs:
            os.makedirs(os.path.join(folder, rel, name), exist_ok=True)
        for name in files:
            if rel == "." and name == OWNER:
                continue
            os.replace(os.path.join(root, name), os.path.normpath(os.path.join(folder, rel, name)))

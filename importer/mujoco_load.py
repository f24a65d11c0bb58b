"""MuJoCo reads and compiles a file for the import without putting Blender at risk.

MuJoCo's own load of a hostile or absurd file can take hours (a replicate of
10^6, parsed in quadratic time) or ask for more memory than the computer has
(`<size nkey="100000000">`), and MuJoCo has no way to stop it once started.
So every load runs twice, the first time where it can be stopped:

1. `read_source`: the file's bytes. A regular, readable, non-empty file;
   text that is not UTF-8 (MuJoCo reads bytes, Python's bindings want UTF-8)
   is read with each invalid byte as its Latin-1 character, the file and its
   includes handed to MuJoCo as text, and each change named in a warning.
2. The probe: MuJoCo parses, compiles and runs a first forward pass in
   another process, under the memory limit, watched for the time limit and for
   Esc. It finds the arena the model needs (engine/arena.py). Killing it loses
   nothing. The process comes from the probe helper (below), started ahead of
   the imports: on Linux a child it forked before the request came.
3. The load itself, in this process, sized as the probe found; in a window on
   a worker thread (MuJoCo releases the GIL while parsing and compiling), so
   Blender keeps drawing. Its cost is now known to be bounded.

The probe doubles MuJoCo's share of an import (measured in bench/import_bench:
see docs/developing.md); it is what makes Esc, the limits and a clear message
possible at all.

This file uses only the standard library, mujoco and engine/: a helper
started as a fresh process (platforms without fork) runs it as a script, which
imports the engine folder by path.
"""

from __future__ import annotations

import atexit
import codecs
import dataclasses
import io
import os
import pickle
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import mujoco

if __package__:
    from ..engine import arena
    from ..engine.errors import MJBlendError
else:  # the probe process on platforms without fork: this file run as a script, the
    # engine folder (mujoco and the standard library only) imported as a package of its own
    import importlib
    import importlib.util
    _engine = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine")
    _spec = importlib.util.spec_from_file_location("mjblend_engine", os.path.join(_engine, "__init__.py"),
                                                   submodule_search_locations=[_engine])
    sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_spec.name])
    arena = importlib.import_module("mjblend_engine.arena")
    MJBlendError = importlib.import_module("mjblend_engine.errors").MJBlendError


class LoadError(MJBlendError):
    """MuJoCo cannot load the file, or the load was stopped; the message is for the user."""


class Cancelled(LoadError):
    """The user pressed Esc."""


@dataclass(frozen=True)
class Limits:
    memory_bytes: int  # 0: none
    seconds: float  # 0: none


def default_memory_limit() -> int:
    """Half of this computer's memory (0 where it cannot be read: no limit)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 0


# --------------------------------------------------------------------------- the file


@dataclass
class Source:
    """What MuJoCo is given: the file itself, or (when some file is not UTF-8) its text."""

    path: str
    raw: bytes
    text: str | None = None  # the main file as UTF-8 text, when any file needed fixing
    includes: dict[str, bytes] = field(default_factory=dict)  # include file attribute -> UTF-8 bytes
    changes: list[str] = field(default_factory=list)  # what was changed to fit, for the user


def read_source(path: str) -> Source:
    """The file's bytes, checked; raises LoadError naming the file and the cause."""
    if not path:
        raise LoadError("no file given")
    if os.path.isdir(path):
        raise LoadError(f"{path}: is a folder, not an MJCF or URDF file")
    if not os.path.exists(path):
        raise LoadError(f"{path}: no such file")
    if not os.path.isfile(path):  # a device, a FIFO, a socket: reading may never end
        raise LoadError(f"{path}: is not a regular file (a device, pipe or socket)")
    label = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as error:
        raise LoadError(f"{label}: cannot read it: {error.strerror}") from None
    if not raw.strip():
        raise LoadError(f"{label}: the file is empty")
    source = Source(path, raw)
    text = _without_bad_references(_as_utf8(raw, label, source.changes), label, source.changes)
    includes = _includes(text, os.path.dirname(path), source.changes)
    if source.changes:  # MuJoCo reads bytes; the bindings need UTF-8: hand it fixed text
        source.text, source.includes = text, includes
    return source


def include_files(path: str) -> list[str]:
    """The files `path` includes, recursively, as MuJoCo finds them (Follow File watches
    them: importer/reload.py); [] when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            text = _as_utf8(fh.read(), os.path.basename(path), [])
    except (OSError, LoadError):
        return []
    folder = os.path.dirname(path)
    return [os.path.join(folder, name) for name in _includes(text, folder, [])]


def _latin1_for_invalid(error: UnicodeDecodeError):
    return error.object[error.start:error.end].decode("latin-1"), error.end


codecs.register_error("mjblend-latin-1", _latin1_for_invalid)


def _as_utf8(raw: bytes, label: str, changes: list[str]) -> str:
    """`raw` as text: UTF-8, each invalid byte read as Latin-1 (and named in `changes`)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise LoadError(f"{label}: is UTF-16 text; MuJoCo reads UTF-8 (save it as UTF-8)")
    text = raw.decode("utf-8", errors="mjblend-latin-1")
    fixed = []
    for number, line_raw in enumerate(raw.split(b"\n"), 1):
        try:
            line_raw.decode("utf-8")
        except UnicodeDecodeError as error:
            byte = line_raw[error.start]
            fixed.append(f"line {number}: byte 0x{byte:02X} read as {chr(byte)!r}")
            if len(fixed) == 3:
                break
    count = sum(1 for _ in _invalid_bytes(raw))
    changes.append(f"{label} is not UTF-8: {count} byte{'s' if count != 1 else ''} read as Latin-1 "
                   f"characters ({'; '.join(fixed)}{'; ...' if count > len(fixed) else ''}); names "
                   "and text containing them are kept as those characters")
    return text


_REFERENCE = re.compile(r"&#(x[0-9a-fA-F]+|[0-9]+);")


def _without_bad_references(text: str, label: str, changes: list[str]) -> str:
    """`text` with each character reference to no character (a UTF-16 surrogate such as
    &#xD800;, or beyond U+10FFFF) as U+FFFD: MuJoCo's XML reader turns those into bytes
    that are not UTF-8, which no Blender name can hold."""
    bad = []

    def replace(match):
        token = match.group(1)
        code = int(token[1:], 16) if token[0] in "xX" else int(token)
        if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            bad.append(match.group(0))
            return "\ufffd"
        return match.group(0)

    if "&#" not in text:
        return text
    fixed = _REFERENCE.sub(replace, text)
    if bad:
        changes.append(f"{label}: {len(bad)} character reference{'s' if len(bad) > 1 else ''} to no "
                       f"character ({', '.join(sorted(set(bad))[:3])}) read as '\ufffd'")
    return fixed


def _invalid_bytes(raw: bytes):
    position = 0
    while position < len(raw):
        try:
            raw[position:].decode("utf-8")
            return
        except UnicodeDecodeError as error:
            yield position + error.start
            position += error.end


def _includes(text: str, folder: str, changes: list[str], seen: frozenset = frozenset()) -> dict:
    """Every file `text` includes (recursively), as UTF-8 bytes keyed as written. MuJoCo
    resolves includes against the main file's folder; loops and unreadable files are left
    for MuJoCo to report."""
    found: dict[str, bytes] = {}
    if "<include" not in text:
        return found
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return found  # MuJoCo's parser will say what is wrong, and where
    for element in root.iter("include"):
        name = element.get("file")
        if not name or name in seen or name in found:
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as fh:
                raw = fh.read() if os.path.isfile(path) else b""
        except OSError:
            continue
        included = _without_bad_references(_as_utf8(raw, name, changes), name, changes)
        found[name] = included.encode("utf-8")
        found.update(_includes(included, folder, changes, seen | {name}))
    return found


# --------------------------------------------------------------------------- MuJoCo's load


def parse(source: Source) -> mujoco.MjSpec:
    if source.text is None:
        return mujoco.MjSpec.from_file(source.path)
    spec = mujoco.MjSpec.from_string(source.text, include=source.includes)
    spec.modelfiledir = os.path.dirname(source.path) + os.sep  # assets resolve as from the file
    return spec


def load(source: Source, memory: int | None = None, stage=lambda _name: None):
    """(spec, model, data at qpos0 after mj_forward, arena bytes added) in this process.
    `memory`: the arena the probe found (None: find it here)."""
    try:
        spec = parse(source)
    except Exception as error:  # MuJoCo's parser message names the element and line
        raise _failure("MuJoCo cannot read it", error) from None
    stage("compiling")

    def compile_(spec):
        try:
            return spec.compile()
        except Exception as error:
            raise _failure("MuJoCo cannot compile it", error) from None

    authored = spec.memory
    if memory is not None:
        spec.memory = memory
    try:
        model, data, added = arena.compiled_with_room(spec, compile_)
    except arena.ArenaTooSmall as error:
        raise LoadError(str(error)) from None
    except mujoco.FatalError as error:
        raise _failure("MuJoCo fails on the model's first forward pass", error) from None
    finally:
        spec.memory = authored
    return spec, model, data, added


# tinyxml2's error names (MuJoCo passes them on as they are), in a reader's words
XML_ERRORS = {
    "XML_ERROR_EMPTY_DOCUMENT": "there is no XML element in it",
    "XML_ERROR_PARSING_ELEMENT": "an element is malformed",
    "XML_ERROR_PARSING_ATTRIBUTE": "an attribute is malformed (a missing quote or '=')",
    "XML_ERROR_PARSING_TEXT": "there is text where an element should be",
    "XML_ERROR_PARSING_CDATA": "a CDATA section is malformed",
    "XML_ERROR_PARSING_COMMENT": "a comment is not closed",
    "XML_ERROR_PARSING_DECLARATION": "the <?xml ...?> declaration is malformed",
    "XML_ERROR_PARSING_UNKNOWN": "a <! ...> construct is not understood",
    "XML_ERROR_MISMATCHED_ELEMENT": "an element is closed by a different tag",
    "XML_ERROR_PARSING": "the XML is malformed or ends early",
    "XML_ELEMENT_DEPTH_EXCEEDED": "elements are nested too deeply",
}
_XML_ERROR = re.compile(r"XML parse error \d+: Error=(\w+) ErrorID=\d+ \(0x[0-9a-f]+\) "
                        r"Line number=(\d+)(?:: XMLElement name=(\S+))?")


def _xml_words(text: str) -> str:
    """tinyxml2's "XML parse error 7: Error=XML_ERROR_PARSING_ATTRIBUTE ErrorID=7 (0x7) Line
    number=4: XMLElement name=geom" said as "line 4, in <geom>: an attribute is malformed"."""
    match = _XML_ERROR.search(text)
    if match is None or match.group(1) not in XML_ERRORS:
        return text
    where = f"line {match.group(2)}" + (f", in <{match.group(3)}>" if match.group(3) else "")
    return f"{where}: {XML_ERRORS[match.group(1)]} ({match.group(1)})"


class OutOfMemory(LoadError):
    """An allocation failed (the memory limit, or the computer's memory)."""


def _failure(what: str, error: BaseException) -> LoadError:
    text = " ".join(str(error).split())
    # MuJoCo's own "Could not allocate", and C++'s std::bad_alloc (which pybind11 passes on
    # as "Caught an unknown exception!": the only C++ exception MuJoCo's parser lets through)
    if isinstance(error, MemoryError) or "Could not allocate memory" in text \
            or "Caught an unknown exception" in text:
        return OutOfMemory(f"{what}: it needs more memory than it may use")
    if isinstance(error, UnicodeError):
        return LoadError(f"{what}: a name or text in it is not valid UTF-8")
    return LoadError(f"{what}: {_xml_words(text)}")


# --------------------------------------------------------------------------- the probe


def probe_in_this_process(source: Source, report) -> dict:
    """What the probe process runs: MuJoCo's whole load; `report(stage)` as it goes."""
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda _text: None)  # the real load reports them
    try:
        started = time.monotonic()
        spec, model, _data, added = load(source, stage=report)
        return {"ok": True, "memory": int(model.narena) if added else None, "added": int(added),
                "asset_files": _reads_asset_files(spec), "seconds": time.monotonic() - started}
    except OutOfMemory:
        return {"ok": False, "memory_exceeded": True}
    except LoadError as error:
        return {"ok": False, "error": str(error)}
    except MemoryError:
        return {"ok": False, "memory_exceeded": True}
    finally:
        mujoco.set_mju_user_warning(previous)


def _reads_asset_files(spec) -> bool:
    """Whether MuJoCo read mesh, texture, height field or skin files for `spec` (what its
    asset cache keeps within a process)."""
    return (any(mesh.file for mesh in spec.meshes) or any(hfield.file for hfield in spec.hfields)
            or any(texture.file or any(texture.cubefiles) for texture in spec.textures)
            or any(skin.file for skin in spec.skins))


def _child_main(source: Source, write_fd: int, memory_limit: int, taken=lambda: None,
                warm=lambda _source, _limit: None) -> bool:
    """The probe: say which process it is, limit memory, load, write (stage / result)
    messages; True if MuJoCo loaded the file. `taken()` once Blender knows the pid;
    `warm(source, memory_limit)` after a load that read asset files."""
    out = os.fdopen(write_fd, "wb", buffering=0)

    def send(message):
        data = pickle.dumps(message)
        out.write(len(data).to_bytes(8, "little") + data)

    result = {"ok": False}
    previous = _soft_memory_limit()
    try:
        send(("pid", os.getpid()))  # first, so that Blender can kill it from here on
        taken()
        if memory_limit:
            _limit_memory(memory_limit)
        result = probe_in_this_process(source, lambda stage: send(("stage", stage)))
    except MemoryError:
        result = {"ok": False, "memory_exceeded": True}
    except BrokenPipeError:  # Blender stopped waiting (Esc): nothing to say
        return False
    except BaseException as error:  # anything else: said, never a traceback on Blender's console
        result = {"ok": False, "error": str(_failure("MuJoCo's load failed", error))}
    finally:
        _restore_memory_limit(previous)
    try:
        send(("result", result))
    except OSError:
        return False
    finally:
        out.close()
    if result.get("ok") and result.get("asset_files"):
        warm(source, memory_limit)
    return bool(result.get("ok"))


def _soft_memory_limit():
    try:
        import resource
        return resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None


def _restore_memory_limit(previous) -> None:
    """Back to the limit before a request (the helper serving in itself lives on)."""
    if previous is not None:
        import resource
        try:
            resource.setrlimit(resource.RLIMIT_AS, previous)  # a soft limit may rise to the hard one
        except (OSError, ValueError):
            pass


def _limit_memory(limit: int) -> None:
    """Cap this process's address space at what it has now plus `limit` bytes."""
    import resource
    try:
        with open("/proc/self/statm") as fh:
            have = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        have = 0
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)  # a hard limit cannot be raised
    cap = have + limit if hard == resource.RLIM_INFINITY else min(have + limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


USE_FORK = hasattr(os, "fork") and sys.platform.startswith("linux")  # fork is unsafe on macOS


# --------------------------------------------------------------------------- the helper
#
# The probe process is not made per import from Blender: a helper process, started ahead
# of time (at register, or at first use, and again whenever it died), makes it. On Linux
# the helper is forked from Blender once and keeps one child forked ahead and waiting for
# the next request, so an import's probe pays neither a fork of Blender nor a reap: it
# sends the request and reads the answer. Elsewhere (no fork) the helper is this file run
# as a script, started once, and loads the requests itself, one after the other.
#
# Wire: a Unix stream socket between Blender and the helper. A request is an 8-byte
# length with the result pipe's write end attached (SCM_RIGHTS), then the pickled
# (Source fields in plain types, memory limit). Whoever runs the probe writes to that
# pipe ("pid", its pid) first, then ("stage", ...) and ("result", ...), as before. The
# helper sends back on the socket ("exit", pid, wait status) for each child of its that
# ended abnormally (killed, crashed): Blender reads it to tell the OOM killer from a crash
# and to know a killed probe is gone.

_HEADER = 8  # a request's message: the memory limit; an exit report's length
_BLENDER_GONE = 3  # exit code of an idle child whose socket closed: the helper ends too
_NOSIGNAL = getattr(socket, "MSG_NOSIGNAL", 0)


def _receive_request(sock):
    """(Source, memory limit, result fd) of the next request; EOFError when Blender closed.
    A request is one small fixed-size message (whole, or not at all: a reader that dies
    cannot leave half of one for the next) with two files: the result pipe and an unlinked
    file holding the pickled Source."""
    header, fds, _flags, _address = socket.recv_fds(sock, _HEADER, 2)
    if not header:
        raise EOFError
    if len(header) != _HEADER or len(fds) != 2:
        for fd in fds:
            os.close(fd)
        raise OSError("a malformed request")
    result_fd, body_fd = fds
    with os.fdopen(body_fd, "rb") as body:
        fields = pickle.load(body)
    return Source(**fields), int.from_bytes(header, "little"), result_fd


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the thread that made it ends (a probe child whose
    helper is gone has no one to report to)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _helper_main(fd: int, forking: bool) -> None:
    """The helper process's life: serve requests until Blender closes the socket."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C in Blender's terminal is Blender's
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a closed pipe is an error, not death
    sock = socket.socket(fileno=fd)
    ready = pickle.dumps(("ready", 0, 0))
    sock.send(len(ready).to_bytes(_HEADER, "little") + ready)
    if not forking:
        while True:
            try:
                source, memory_limit, result_fd = _receive_request(sock)
            except (EOFError, OSError):
                return
            if not _child_main(source, result_fd, memory_limit):
                return  # after a failure (or an allocation failing) start afresh: Blender restarts it
    import gc
    gc.freeze()  # Blender's objects copied by the fork are never collected here (their fds are closed)
    taken_read, taken_write = os.pipe()
    wake_read, wake_write = os.pipe()
    warm_read, warm_write = os.pipe()  # paths to load here first (see _warm)
    for end in (wake_read, wake_write, warm_read):
        os.set_blocking(end, False)
    warmed: dict[str, float] = {}

    def ask_to_warm(source: Source, memory_limit: int, seconds: float) -> None:
        message = pickle.dumps((source.path, memory_limit))
        if source.text is None and seconds < _WARM_SECONDS and len(message) < 4000:
            os.write(warm_write, message)  # (under PIPE_BUF: written at once)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the select below

    def fork_idle() -> int:
        pid = os.fork()
        if pid:
            return pid
        code = 0
        try:  # the idle child: waits for one request, runs it, ends
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for end in (taken_read, wake_read, wake_write, warm_read):
                os.close(end)
            _die_with_parent()
            if os.getppid() == 1:
                os._exit(_BLENDER_GONE)
            try:
                source, memory_limit, result_fd = _receive_request(sock)
            except (EOFError, OSError):
                os._exit(_BLENDER_GONE)
            began = time.monotonic()
            taken = os.getpid().to_bytes(4, "little")
            _child_main(source, result_fd, memory_limit, taken=lambda: os.write(taken_write, taken),
                        warm=lambda source, limit: ask_to_warm(source, limit, time.monotonic() - began))
        except BaseException:
            code = 1
        finally:
            os._exit(code)

    # One idle child waits on the socket. The next one is forked once the busy one has
    # ended (its answer sent: off the import's path), or at once when a request waits and
    # no child is idle (two imports at a time).
    idle: int | None = fork_idle()
    busy: set[int] = set()
    while True:
        watched = [taken_read, wake_read] + ([sock] if idle is None else [])
        ready = select.select(watched, [], [])[0]
        try:
            while os.read(wake_read, 512):
                pass
        except BlockingIOError:
            pass
        if taken_read in ready:
            data = os.read(taken_read, 512)
            for start in range(0, len(data) - 3, 4):
                pid = int.from_bytes(data[start:start + 4], "little")
                if pid == idle:  # (a report of one already reaped is old news)
                    busy.add(idle)
                    idle = None
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            busy.discard(pid)
            if pid == idle:
                idle = None
                if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _BLENDER_GONE:
                    for child in busy:  # Blender closed the socket: unregister, exit or death
                        try:
                            os.kill(child, signal.SIGKILL)
                            os.waitpid(child, 0)
                        except OSError:
                            pass
                    os._exit(0)
            if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
                message = pickle.dumps(("exit", pid, status))
                try:
                    sock.send(len(message).to_bytes(_HEADER, "little") + message, socket.MSG_DONTWAIT)
                except OSError:
                    pass  # Blender's side is full or gone: it does not wait for this one
        if idle is None and (not busy or sock in select.select([sock], [], [], 0)[0]):
            _warm(warm_read, warmed)  # before the fork: the next child inherits MuJoCo's cache
            idle = fork_idle()


_WARM_SECONDS = 10.0  # a probe longer than this is not run again in the helper


def _warm(warm_read: int, warmed: dict) -> None:
    """Load in the helper the files whose probe read asset files (meshes, textures, ...),
    once per file version: MuJoCo keeps the decoded assets in a per-process cache, which
    each probe child forked afterwards inherits, so probing the same model again costs
    MuJoCo's repeat load, not its first (the Franka Panda: ~0.2 s against ~1.8 s). The
    probe just loaded the file within the limits, so this load is bounded too."""
    try:
        data = os.read(warm_read, 1 << 16)
    except BlockingIOError:
        return
    stream = io.BytesIO(data)
    while stream.tell() < len(data):
        try:
            path, memory_limit = pickle.load(stream)  # (a pickle ends itself: read them in turn)
        except Exception:
            return
        try:
            version = os.stat(path).st_mtime
        except OSError:
            continue
        if warmed.get(path) == version or len(warmed) > 256:
            continue
        warmed[path] = version
        previous = _soft_memory_limit()
        silent = mujoco.get_mju_user_warning()
        mujoco.set_mju_user_warning(lambda _text: None)
        try:
            if memory_limit:
                _limit_memory(memory_limit)
            load(Source(path, b""))
        except BaseException:
            pass  # the probes go on without a warm cache
        finally:
            mujoco.set_mju_user_warning(silent)
            _restore_memory_limit(previous)


class _DirectFork:
    """Until the helper has started (its first fraction of a second: importing mujoco), a
    probe on Linux is forked from Blender itself, as before there was a helper."""

    unreaped: set[int] = set()  # probes that answered, reaped at the next request

    def request(self, source: Source, memory_limit: int) -> tuple[int, int]:
        self.reap()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into Blender
            code = 0
            try:
                os.close(read)
                _child_main(source, write, memory_limit)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(write)
        self.unreaped.add(pid)
        return read, pid

    def exit_status(self, pid: int, timeout: float = 0.0) -> int | None:
        self.unreaped.discard(pid)
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            return None

    @classmethod
    def reap(cls, wait: bool = False) -> None:
        for pid in list(cls.unreaped):
            try:
                if os.waitpid(pid, 0 if wait else os.WNOHANG)[0]:
                    cls.unreaped.discard(pid)
            except ChildProcessError:
                cls.unreaped.discard(pid)

    def kill(self) -> None:
        pass


class _Helper:
    """Blender's end of one helper process."""

    def __init__(self, forking: bool):
        self.forking = forking
        self.lock = threading.Lock()
        self.statuses: dict[int, int] = {}  # child pid -> wait status, as the helper reported
        self.buffer = b""
        # (several children read requests one after another: whole messages; macOS has no
        # SOCK_SEQPACKET, but there the helper alone reads them)
        kind = socket.SOCK_SEQPACKET if forking else socket.SOCK_STREAM
        ours, theirs = socket.socketpair(socket.AF_UNIX, kind)
        self.ready = forking and FORK_HELPER_FROM_BLENDER
        if self.ready:
            self.process = None
            self.pid = os.fork()
            if self.pid == 0:  # the helper: never returns into Blender
                try:
                    keep = theirs.fileno()
                    os.closerange(3, keep)  # Blender's files, sockets and ports are not its
                    os.closerange(keep + 1, _MAX_FD)
                    _helper_main(keep, True)
                finally:
                    os._exit(0)
        else:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
            self.process = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "helper", str(theirs.fileno()),
                 str(int(forking))],
                stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), env=env)
            self.pid = self.process.pid
        theirs.close()
        self.sock = ours
        self.ended = None  # the helper's wait status once it ended and was reaped

    def alive(self) -> bool:
        if self.ended is None:
            if self.process is not None:
                code = self.process.poll()
                self.ended = None if code is None else code
            else:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    pid, status = self.pid, 0
                if pid:
                    self.ended = status
        return self.ended is None

    def request(self, source: Source, memory_limit: int) -> tuple[int, None]:
        """Send one probe request; the read end of its result pipe and None (the probe says
        its pid), OSError if the helper is gone."""
        fields = dict(dataclasses.asdict(source), raw=b"")  # MuJoCo reads the path or the text
        read, write = os.pipe()
        try:
            with tempfile.TemporaryFile() as body:
                pickle.dump(fields, body)
                body.flush()
                body.seek(0)
                with self.lock:
                    self._drain()
                    socket.send_fds(self.sock, [memory_limit.to_bytes(_HEADER, "little")],
                                    [write, body.fileno()], _NOSIGNAL)
        except OSError:
            os.close(read)
            raise
        finally:
            os.close(write)
        return read, None

    def _drain(self, timeout: float = 0.0) -> None:
        """Read the helper's exit reports waiting on the socket (up to `timeout` for one)."""
        while select.select([self.sock], [], [], timeout)[0]:
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.buffer += chunk
            while len(self.buffer) >= _HEADER:
                size = int.from_bytes(self.buffer[:_HEADER], "little")
                if len(self.buffer) < _HEADER + size:
                    break
                kind, pid, status = pickle.loads(self.buffer[_HEADER:_HEADER + size])
                self.buffer = self.buffer[_HEADER + size:]
                if kind == "ready":
                    self.ready = True
                else:
                    self.statuses[pid] = status
            timeout = 0.0

    def exit_status(self, pid: int, timeout: float = 2.0) -> int | None:
        """The wait status of a probe process of this helper that ended abnormally (None: it
        ended normally, or no report came within `timeout`)."""
        if pid == self.pid:  # the helper ran the probe itself
            if self.process is not None:
                try:
                    code = self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    return None
                return (-code) & 0x7F if code < 0 else code << 8  # as a wait status
            self.alive()
            return self.ended
        deadline = time.monotonic() + timeout
        with self.lock:
            while pid not in self.statuses and self.alive():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._drain(min(left, 0.1))
            return self.statuses.pop(pid, None)

    def stop(self) -> None:
        """The helper and every process of it gone (it reaps its children first)."""
        self.sock.close()  # its idle child reads the end of the socket: the helper ends
        if self.process is not None:
            try:
                self.process.wait(2)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        elif self.alive():
            deadline = time.monotonic() + 2
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.005)
            if self.alive():
                os.kill(self.pid, signal.SIGKILL)  # its children die with it (PDEATHSIG)
                _pid, self.ended = os.waitpid(self.pid, 0)

    def kill(self) -> None:
        """Stop it now (a probe that never said its pid); the next request starts another."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.alive() if self.process is None else self.process.wait()
        if self.process is None and self.ended is None:
            _pid, self.ended = os.waitpid(self.pid, 0)
        self.sock.close()


try:
    _MAX_FD = os.sysconf("SC_OPEN_MAX")
except (ValueError, OSError, AttributeError):
    _MAX_FD = 1 << 16
# On Linux the helper is forked from Blender (at register: no start-up, MuJoCo loaded);
# MJBLEND_FORK_HELPER=0 starts it as a fresh process instead, as elsewhere. Measured
# (docs/developing.md, "Speed: the import's guard"): a fresh helper makes smaller, cheaper
# probe children, but its start (importing mujoco, ~0.1-0.2 s of CPU) slows an import made
# right after register, and a first import is what the benchmark's target counts.
FORK_HELPER_FROM_BLENDER = os.environ.get("MJBLEND_FORK_HELPER", "1") == "1"
_helper: _Helper | None = None
_helper_lock = threading.Lock()


def helper() -> _Helper:
    """The running helper, started (again) if there is none, it died, or the platform's way
    of starting it changed (tests switch USE_FORK)."""
    global _helper
    with _helper_lock:
        if _helper is not None and (not _helper.alive() or _helper.forking != USE_FORK):
            _helper.stop()
            _helper = None
        if _helper is None:
            _helper = _Helper(USE_FORK)
        return _helper


def start_helper() -> None:
    """At register: the helper ready before the first import."""
    helper()


def stop_helper() -> None:
    """At unregister and at exit: no process of MJBlend's left."""
    global _helper
    with _helper_lock:
        if _helper is not None:
            _helper.stop()
            _helper = None
    _DirectFork.reap(wait=True)


atexit.register(stop_helper)


class _Probe:
    """One probe: a request to the helper, and the messages its probe process sends."""

    def __init__(self, source: Source, limits: Limits):
        self.stage, self.result, self.signal, self.helper_died = "reading", None, None, False
        self.buffer = b""
        self._pid = None
        for attempt in range(2):
            self.helper = helper()
            if not self.helper.ready and self.helper.forking:
                with self.helper.lock:
                    self.helper._drain()
                if not self.helper.ready:
                    self.helper = _DirectFork()
            try:
                self.read, self._pid = self.helper.request(source, limits.memory_bytes)
                break
            except OSError:  # it died just now: once more, with a new one
                self.helper.kill()
                if attempt:
                    raise LoadError("MJBlend's probe process cannot be started") from None
        os.set_blocking(self.read, False)

    @property
    def pid(self) -> int | None:
        """The probe process (it says so first; waited for up to 10 s: a helper starting)."""
        deadline = time.monotonic() + 10
        while self._pid is None and self.read is not None and time.monotonic() < deadline:
            self.wait(0.05)
            self.poll()
        return self._pid

    def poll(self) -> bool:
        """Read what the probe sent; True once it has ended (self.result set, or None if it died)."""
        while self.read is not None:
            try:
                chunk = os.read(self.read, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                return self._ended()
            self.buffer += chunk
            self._messages()
            if self.result is not None:
                return self._ended()
        return self.read is None

    def wait(self, timeout: float) -> None:
        if self.read is not None:
            select.select([self.read], [], [], timeout)

    def _messages(self):
        while len(self.buffer) >= 8:
            size = int.from_bytes(self.buffer[:8], "little")
            if len(self.buffer) < 8 + size:
                return
            kind, value = pickle.loads(self.buffer[8:8 + size])
            self.buffer = self.buffer[8 + size:]
            if kind == "pid":
                self._pid = value
            elif kind == "stage":
                self.stage = value
            else:
                self.result = value

    def _ended(self) -> bool:
        """Done reading. With a result the process ends by itself (the helper reaps it, off
        the import's path); without one it died: how, the helper says."""
        os.close(self.read)
        self.read = None
        self.helper_died = self.result is None
        if self.result is None and self._pid is not None:
            status = self.helper.exit_status(self._pid)
            self.helper_died = status is None  # no word from it: it went first, taking its probe
            self.signal = os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None
        return True

    def kill(self):
        if self.read is None:
            return
        pid = self.pid
        if pid is None:  # no process said it took the request: stop the helper, and all of it
            self.helper.kill()
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.helper.exit_status(pid)  # reaped by the helper: gone when this returns
        os.close(self.read)
        self.read = None


class Load:
    """One file's load for the import: the probe, then this process. Call `poll()` until it
    returns True (from a modal timer, or `run()` in a loop); `cancel()` stops it. Then
    `outcome()` is (spec, model, data, warnings) or raises LoadError."""

    def __init__(self, source: Source, limits: Limits, threaded: bool):
        self.source, self.limits, self.threaded = source, limits, threaded
        self.label = os.path.basename(source.path)
        self.started = time.monotonic()
        self.probe = _Probe(source, limits)
        self.retried = False
        self.thread = None
        self._result = self._error = None
        self.done = False
        self.warnings: list[str] = list(source.changes)

    @property
    def status(self) -> str:
        seconds = time.monotonic() - self.started
        if self.probe is not None:
            return f"MuJoCo {self.probe.stage} {self.label} ({seconds:.0f} s)"
        return f"MuJoCo loading {self.label} ({seconds:.0f} s)"

    def run(self) -> None:
        """To the end, in this thread (scripts, --background)."""
        while not self.poll():
            if self.probe is not None:
                self.probe.wait(0.05)
            elif self.thread is not None:
                self.thread.join(0.05)

    def poll(self) -> bool:
        if self.done:
            return True
        if self.probe is not None:
            self._poll_probe()
        elif self.thread is not None and not self.thread.is_alive():
            self.done = True
        return self.done

    def _poll_probe(self):
        probe = self.probe
        if not probe.poll():
            elapsed = time.monotonic() - self.started
            if self.limits.seconds and elapsed > self.limits.seconds:
                probe.kill()
                self._fail(LoadError(
                    f"MuJoCo was still {probe.stage} it after "
                    f"{self.limits.seconds:.0f} s and was stopped (raise Load Time Limit in MJBlend's "
                    "preferences to give it longer)"))
            return
        self.probe = None
        result = probe.result
        if result is None and probe.helper_died and not self.retried:
            self.retried = True  # the helper died (killed by hand?) before the probe could answer
            self.probe = _Probe(self.source, self.limits)
            return
        if result is None:  # it died without a word: the kernel's OOM killer, or a crash
            if probe.signal == signal.SIGKILL:
                self._fail(OutOfMemory("MuJoCo ran out of memory loading it (the system stopped it)"))
            else:
                self._fail(LoadError(f"MuJoCo crashed loading it (signal {probe.signal})"))
        elif result.get("memory_exceeded"):
            limit = self.limits.memory_bytes
            self._fail(OutOfMemory(
                f"MuJoCo needs more than {limit / 2**30:.1f} GB to load it (raise Load Memory Limit in "
                "MJBlend's preferences if this computer has more)" if limit else
                "MuJoCo needs more memory than this computer has to load it"))
        elif not result["ok"]:
            self._fail(LoadError(result["error"]))
        else:
            self._start_load(result["memory"], result["added"])

    def _start_load(self, memory, added):
        if self.threaded:
            self.thread = threading.Thread(target=self._load, args=(memory, added), daemon=True,
                                           name=f"MJBlend load ({self.label})")
            self.thread.start()
        else:
            self._load(memory, added)
            self.done = True

    def _load(self, memory, added):
        warnings: list[str] = []
        previous = mujoco.get_mju_user_warning()
        mujoco.set_mju_user_warning(lambda text: warnings.append(str(text).strip()))
        try:
            spec, model, data, added_here = load(self.source, memory)
            added = added or added_here
            if added:
                warnings.append(arena.grown_message(added, model))
            self._result = (spec, model, data)
        except LoadError as error:
            self._error = error
        except BaseException as error:  # never a traceback from a thread
            self._error = _failure("MuJoCo's load failed", error)
        finally:
            mujoco.set_mju_user_warning(previous)
            self.warnings += warnings

    def _fail(self, error: LoadError):
        self._error, self.done = error, True

    def cancel(self):
        """Stop: the probe is killed; a load already in this process finishes on its thread
        (its cost is bounded: the probe measured it) and is dropped."""
        if self.probe is not None:
            self.probe.kill()
            self.probe = None
        self._fail(Cancelled("cancelled"))

    def outcome(self):
        if self._error is not None:
            raise self._error
        return (*self._result, self.warnings)


if __name__ == "__main__":  # the helper where there is no fork: `mujoco_load.py helper FD`
    _helper_main(int(sys.argv[2]), forking=sys.argv[3] == "1")

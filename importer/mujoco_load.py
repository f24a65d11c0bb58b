"""MuJoCo reads and compiles a file for the import without putting Blender at risk.

MuJoCo's own load of a hostile or absurd file can take hours (a replicate of
10^6, parsed in quadratic time) or ask for more memory than the computer has
(`<size nkey="100000000">`), and MuJoCo has no way to stop it once started.
So every load runs twice, the first time where it can be stopped:

1. `read_source`: the file's bytes. A regular, readable, non-empty file;
   text that is not UTF-8 (MuJoCo reads bytes, Python's bindings want UTF-8)
   is read with each invalid byte as its Latin-1 character, the file and its
   includes handed to MuJoCo as text, and each change named in a warning.
2. The probe: MuJoCo parses, compiles and runs a first forward pass in a
   child process (forked where the platform allows: no start-up cost, MuJoCo
   already loaded), under the memory limit, watched for the time limit and for
   Esc. It finds the arena the model needs (engine/arena.py). Killing it loses
   nothing.
3. The load itself, in this process, sized as the probe found; in a window on
   a worker thread (MuJoCo releases the GIL while parsing and compiling), so
   Blender keeps drawing. Its cost is now known to be bounded.

The probe doubles MuJoCo's share of an import (measured in bench/import_bench:
see docs/developing.md); it is what makes Esc, the limits and a clear message
possible at all.

This file uses only the standard library, mujoco and engine/: the probe
process on platforms without fork runs it as a script, which imports the engine
folder by path.
"""

from __future__ import annotations

import codecs
import dataclasses
import os
import pickle
import re
import select
import signal
import subprocess
import sys
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
        _spec, model, _data, added = load(source, stage=report)
        return {"ok": True, "memory": int(model.narena) if added else None, "added": int(added)}
    except OutOfMemory:
        return {"ok": False, "memory_exceeded": True}
    except LoadError as error:
        return {"ok": False, "error": str(error)}
    except MemoryError:
        return {"ok": False, "memory_exceeded": True}
    finally:
        mujoco.set_mju_user_warning(previous)


def _child_main(source: Source | None, write_fd: int, memory_limit: int) -> None:
    """The probe process: limit memory, load, write (stage / result) messages, exit."""
    out = os.fdopen(write_fd, "wb", buffering=0)

    def send(message):
        data = pickle.dumps(message)
        out.write(len(data).to_bytes(8, "little") + data)

    try:
        if memory_limit:
            _limit_memory(memory_limit)
        if source is None:  # spawned: the request comes on stdin, in plain types (the
            # parent's classes may live in a package this process cannot import)
            source = Source(**pickle.load(sys.stdin.buffer))
        send(("result", probe_in_this_process(source, lambda stage: send(("stage", stage)))))
    except MemoryError:
        send(("result", {"ok": False, "memory_exceeded": True}))
    except BaseException as error:  # anything else: said, never a traceback on Blender's console
        send(("result", {"ok": False, "error": str(_failure("MuJoCo's load failed", error))}))
    finally:
        out.close()


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


class _Probe:
    """The probe process and the messages it sends."""

    def __init__(self, source: Source, limits: Limits):
        self.stage, self.result = "reading", None
        self.buffer = b""
        read, write = os.pipe()
        if USE_FORK:
            self.pid = os.fork()
            if self.pid == 0:  # the child: never returns into Blender
                code = 0
                try:
                    os.close(read)
                    _child_main(source, write, limits.memory_bytes)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            self.process = None
        else:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
            self.process = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), str(write), str(limits.memory_bytes)],
                stdin=subprocess.PIPE, pass_fds=(write,), env=env)
            self.process.stdin.write(pickle.dumps(dataclasses.asdict(source)))
            self.process.stdin.close()
            self.pid = self.process.pid
        os.close(write)
        self.read = read
        os.set_blocking(read, False)

    def poll(self) -> bool:
        """Read what the probe sent; True once it has ended (self.result set, or None if it died)."""
        while True:
            try:
                chunk = os.read(self.read, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                return self._reap()
            self.buffer += chunk
            self._messages()
        return False

    def wait(self, timeout: float) -> None:
        select.select([self.read], [], [], timeout)

    def _messages(self):
        while len(self.buffer) >= 8:
            size = int.from_bytes(self.buffer[:8], "little")
            if len(self.buffer) < 8 + size:
                return
            kind, value = pickle.loads(self.buffer[8:8 + size])
            self.buffer = self.buffer[8 + size:]
            if kind == "stage":
                self.stage = value
            else:
                self.result = value

    def _reap(self) -> bool:
        os.close(self.read)
        self.read = None
        _pid, status = os.waitpid(self.pid, 0)
        self.signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        return True

    def kill(self):
        if self.read is None:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
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
            if self.probe is not None and self.probe.read is not None:
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


if __name__ == "__main__":  # the probe process where there is no fork
    _child_main(None, int(sys.argv[1]), int(sys.argv[2]))

"""URLab's model upload (`upload_model_manifest` / `_chunk` / `_commit`) and `import_xml`.

An upload is staged in a folder of its own (one per upload id, under the host's
uploads folder): the client declares the MJCF's hash and every asset's bare file
name, hash and size (the manifest), sends the bytes in chunks, and commits. Each
finished file is checked against its declared sha256; names are bare file names,
so nothing is ever written outside the upload's folder. The commit imports the
staged MJCF through the host (`Host.import_model`: MuJoCo's load under the
importer's time and memory limits, then a model served without Blender replaced,
or a Blender scene's import and recompile). Any refusal of an open upload ends it
and removes its folder; so does the end of its time to live (a thread sweeps
while uploads are open) and the bridge's stop. After a commit a model served
without Blender keeps nothing on disk (its assets are in memory); a Blender scene
keeps the folder, whose files its imported meshes and textures refer to.

URLab keeps a content-addressed cache of blobs across uploads; MJBlend keeps
none, so every manifest asks for every blob (`need_xml` true, `need_assets` all).

Nothing here imports bpy; the staging runs on the bridge's thread under the
dispatcher's lock (and the uploads' own, which the sweeper takes).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import os
import shutil
import threading
import time
import uuid

from . import fields
from .op import Op
from .wire import ProtocolError

MiB = 1 << 20
READ_BLOCK = 4 * MiB  # bytes hashed at a time


@dataclasses.dataclass
class Limits:
    """URLab's caps (RpcHandlers_ModelUpload.cpp), advertised in the manifest's reply."""

    asset_bytes: int = 64 * MiB  # one blob (the MJCF or an asset)
    total_bytes: int = 512 * MiB  # one upload, all blobs
    assets: int = 4096
    open_uploads: int = 16
    ttl: float = 300.0  # seconds an upload may stay idle before it is discarded


def bare_name(name) -> bool:
    """A file name that stays inside the upload's folder: no separators, no '..', no
    drive letter or other colon, no NUL or other control character, not absolute."""
    if not isinstance(name, str) or not name or name in (".", ".."):
        return False
    if any(c in name for c in "/\\:") or ".." in name or any(ord(c) < 32 for c in name):
        return False
    return not os.path.isabs(name) and len(name.encode("utf-8", "surrogatepass")) <= 255


def _sha256(value, what: str) -> str:
    if not isinstance(value, str) or len(value) != 64:
        raise ProtocolError("bad_request", f"{what} must be a sha256 in hex (64 characters)")
    try:
        bytes.fromhex(value)
    except ValueError:
        raise ProtocolError("bad_request", f"{what} must be a sha256 in hex (64 characters)") from None
    return value.lower()


@dataclasses.dataclass
class Blob:
    """One file of an upload: where it is written, what it must hash to, how much came."""

    file: str  # its name in the upload's folder
    sha: str
    size: int  # declared (assets); the MJCF's, once its first chunk says (-1 before)
    received: int = 0
    complete: bool = False


@dataclasses.dataclass
class Upload:
    id: str
    folder: str
    xml: Blob
    assets: dict  # bare name -> Blob
    step_mode: str = ""
    touched: float = dataclasses.field(default_factory=time.monotonic)

    def declared_bytes(self) -> int:
        return max(self.xml.size, 0) + sum(blob.size for blob in self.assets.values())


def discard_folder(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)


class Uploads:
    """The open uploads of one bridge, and the ops that stage, commit and import models."""

    def __init__(self, dispatcher, limits: Limits | None = None):
        self.d = dispatcher
        self.limits = limits or Limits()
        self.open: dict[str, Upload] = {}
        self._lock = threading.Lock()  # the open uploads and their files (the sweeper takes it too)
        self._sweeper: threading.Thread | None = None
        self._closed = threading.Event()

    def ops(self) -> dict:
        return {
            "upload_model_manifest": Op(self.op_manifest, "no_manager", "scene", required=("xml_sha256",),
                                        reply=("upload_id:string", "need_xml:bool", "need_assets:array",
                                               "max_asset_bytes:int", "max_total_bytes:int")),
            "upload_model_chunk": Op(self.op_chunk, "no_manager", "scene", required=("upload_id", "kind"),
                                     reply=("name:string", "received:int", "complete:bool")),
            "upload_model_commit": Op(self.op_commit, "no_manager", "scene", required=("upload_id",),
                                      reply=("imported:bool", "warnings:array", "nq:int", "nv:int", "nu:int",
                                             "nbody:int", "ngeom:int", "mjb:bin",
                                             "blueprint_class_path:string", "blueprint_short_name:string")),
            "import_xml": Op(self.op_import_xml, "editor_only", "scene", ("path",),
                             reply=("blueprint_class_path:string", "blueprint_short_name:string",
                                    "imported_now:bool")),
        }

    @property
    def root(self) -> str:
        return self.d.host.uploads_dir()

    # ------------------------------------------------------------- manifest

    def op_manifest(self, request) -> dict:
        limits = self.limits
        xml_sha = _sha256(request.get("xml_sha256"), "'xml_sha256'")
        listed = request.get("assets") or []
        if not isinstance(listed, list):
            raise ProtocolError("bad_request", "'assets' is a list of {name, sha256, size}")
        if len(listed) > limits.assets:
            raise ProtocolError("bad_request", f"the manifest lists {len(listed)} assets; at most "
                                f"{limits.assets} are taken")
        total = request.get("total_bytes", 0)
        if isinstance(total, bool) or not isinstance(total, (int, float)) or total < 0:
            raise ProtocolError("bad_request", "'total_bytes' is a number of bytes")
        if total > limits.total_bytes:
            raise ProtocolError("payload_too_large", f"total_bytes {total:.0f} exceeds max_total_bytes "
                                f"{limits.total_bytes}")
        step_mode = fields.string(request, "step_mode", "") or ""
        from .dispatcher import MODES
        if step_mode and step_mode not in MODES:
            raise ProtocolError("bad_mode", f"unknown step_mode {step_mode[:40]!r}: live, direct, puppet "
                                "(or freerun, stepped, statepushed)")
        assets: dict[str, Blob] = {}
        folded: set[str] = set()
        for number, entry in enumerate(listed):
            if not isinstance(entry, dict):
                raise ProtocolError("bad_request", f"manifest asset[{number}] is not a map")
            name = entry.get("name")
            if not bare_name(name):
                raise ProtocolError("bad_request", f"asset name {str(name)[:80]!r} is not a bare file name "
                                    "(no folders, '..', drive letters, colons or control characters)")
            if name.casefold() in folded:  # (one file on a file system that ignores case)
                raise ProtocolError("bad_request", f"asset {name!r} is listed twice (names are compared "
                                    "ignoring case)")
            folded.add(name.casefold())
            sha = _sha256(entry.get("sha256"), f"asset {name!r}'s sha256")
            size = entry.get("size")
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise ProtocolError("bad_request", f"asset {name!r}'s size must be a whole number of bytes")
            if size > limits.asset_bytes:
                raise ProtocolError("payload_too_large", f"asset {name!r} size {size} exceeds "
                                    f"max_asset_bytes {limits.asset_bytes}")
            assets[name] = Blob(name, sha, size)
        declared = sum(blob.size for blob in assets.values())
        if declared > limits.total_bytes:
            raise ProtocolError("payload_too_large", f"the assets come to {declared} bytes, over "
                                f"max_total_bytes {limits.total_bytes}")
        xml_file = "model.xml"
        while xml_file.casefold() in folded:  # (an asset of that name: the MJCF takes another)
            xml_file = "_" + xml_file
        with self._lock:
            self._sweep()
            if len(self.open) >= limits.open_uploads:
                raise ProtocolError("bad_request", f"too many uploads open at once (at most "
                                    f"{limits.open_uploads}): commit one, or retry later")
            upload_id = str(uuid.uuid4())
            folder = os.path.join(self.root, upload_id)
            try:
                os.makedirs(self.root, exist_ok=True)
                os.mkdir(folder, 0o700)
            except OSError as error:
                raise ProtocolError("path_not_writable", f"the upload cannot be staged in {self.root}: "
                                    f"{error.strerror or error}") from None
            self.open[upload_id] = Upload(upload_id, folder, Blob(xml_file, xml_sha, -1), assets, step_mode)
            self._watch()
        return {"op": "upload_model_manifest_ok", "upload_id": upload_id, "need_xml": True,
                "need_assets": list(assets), "max_asset_bytes": limits.asset_bytes,
                "max_total_bytes": limits.total_bytes, "max_assets": limits.assets, "ttl_s": limits.ttl}

    # ---------------------------------------------------------------- chunk

    def op_chunk(self, request) -> dict:
        upload_id = fields.string(request, "upload_id")
        with self._lock:
            upload = self._open_upload(upload_id)
            try:
                return self._chunk(upload, request)
            except ProtocolError as problem:  # (a refused chunk ends its upload: nothing is left)
                self._discard(upload)
                raise ProtocolError(problem.code, f"{problem.message} (upload {upload_id} discarded: "
                                    "start again with upload_model_manifest)") from None
            except OSError as error:
                self._discard(upload)
                raise ProtocolError("path_not_writable", f"the upload's file cannot be written: "
                                    f"{error.strerror or error} (upload {upload_id} discarded)") from None

    def _chunk(self, upload: Upload, request: dict) -> dict:
        limits = self.limits
        kind = request.get("kind")
        if kind not in ("xml", "asset"):
            raise ProtocolError("bad_request", "upload_model_chunk's kind is 'xml' or 'asset'")
        offset, total = request.get("offset", 0), request.get("total")
        for key, value in (("offset", offset), ("total", total)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ProtocolError("bad_request", f"'{key}' must be a whole number of bytes, 0 or more")
        if total > limits.asset_bytes:
            raise ProtocolError("payload_too_large", f"blob total {total} exceeds max_asset_bytes "
                                f"{limits.asset_bytes}")
        data = _chunk_bytes(request)
        if offset + len(data) > total:
            raise ProtocolError("bad_request", f"the chunk ends at {offset + len(data)}, past the blob's "
                                f"total {total}")
        if kind == "xml":
            blob, label = upload.xml, "<xml>"
            if blob.size < 0:
                blob.size = total
                if upload.declared_bytes() > limits.total_bytes:
                    raise ProtocolError("payload_too_large", f"the MJCF and assets come to "
                                        f"{upload.declared_bytes()} bytes, over max_total_bytes "
                                        f"{limits.total_bytes}")
        else:
            name = request.get("name")
            blob, label = upload.assets.get(name) if isinstance(name, str) else None, name
            if blob is None:
                raise ProtocolError("bad_request",
                                    f"asset {str(name)[:80]!r} was not declared in the manifest")
        if total != blob.size:
            raise ProtocolError("bad_request", f"{label}: chunk total {total} is not its declared size "
                                f"{blob.size}")
        if not blob.complete:
            path = os.path.join(upload.folder, blob.file)
            # (O_NOFOLLOW: the folder is the upload's own, made empty; no link is ever followed)
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
            try:
                os.lseek(handle, offset, os.SEEK_SET)
                view = memoryview(data)
                while view:  # (os.write may write less than it is given)
                    view = view[os.write(handle, view):]
            finally:
                os.close(handle)
            blob.received += len(data)
            if blob.received >= blob.size:
                found = _file_sha256(path)
                if found != blob.sha:
                    raise ProtocolError("hash_mismatch", f"{label} sha256 {found} does not match the "
                                        f"declared {blob.sha}")
                blob.complete = True
        upload.touched = time.monotonic()
        return {"op": "upload_model_chunk_ok", "name": label,
                "received": blob.size if blob.complete else blob.received, "complete": blob.complete}

    # --------------------------------------------------------------- commit

    def op_commit(self, request) -> dict:
        upload_id = fields.string(request, "upload_id")
        # (whose commit: its step_mode is applied as that client's set_mode, which a lease
        # another client holds refuses; the sessions expire with the old model)
        sid = request.get("session_id")
        session = (self.d.sessions.get(sid) if isinstance(sid, str) else None) or _NO_SESSION
        with self._lock:
            upload = self._open_upload(upload_id)
            del self.open[upload_id]  # (committing: the sweeper leaves it alone)
        keep = False
        try:
            missing = [name for name, blob in upload.assets.items() if not blob.complete]
            if not upload.xml.complete:
                missing.insert(0, "the MJCF")
            if missing:
                raise ProtocolError("bad_request", f"commit before every blob arrived (missing: "
                                    f"{', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})")
            result = self.import_model(os.path.join(upload.folder, upload.xml.file), staged=True)
            keep = bool(result.pop("keep_folder", False))
        except ProtocolError as problem:
            raise ProtocolError(problem.code, f"{problem.message} (the upload was discarded)") from None
        finally:
            if not keep:
                discard_folder(upload.folder)
        reply = {"op": "upload_model_commit_ok", "imported": True, **import_reply(result)}
        if upload.step_mode:
            try:
                self.d.op_set_mode({"mode": upload.step_mode}, session)
            except ProtocolError as problem:  # (imported all the same: said, as URLab's warnings)
                reply["warnings"].append(f"step_mode {upload.step_mode!r} not applied: {problem.message}")
        if keep:
            reply["folder"] = upload.folder
        return reply

    def import_model(self, path: str, staged: bool = False, job: bool = False) -> dict:
        """Host.import_model, after the bridge lets go of the simulation (the host's
        recompile, or a Blender job, applies the new model: a replay ends, a recording
        of the old model stops and is kept, as recording_stop keeps it; a simulation lent
        to the bridge is given back and borrowed again on the next request). Sessions of
        the old model expire when it is replaced."""
        recordings = self.d.recordings
        recordings.stop_replay()
        if recordings.recorder is not None and self.d.host.runner() is not None:
            recordings.op_recording_stop({}, None)
        self.d._give_back()
        return self.d.host.import_model(path, staged=staged, job=job)

    # ----------------------------------------------------------- import_xml

    def op_import_xml(self, request, session=None) -> dict:
        path = fields.string(request, "path")
        fields.boolean(request, "force_reimport", False)  # (every import makes a model root of its own)
        if not path or not os.path.isfile(path):
            raise ProtocolError("import_failed", f"{path[:200]!r} is not a file on the server's machine "
                                "(import_xml reads a path there; upload_model_* ships a model)")
        result = self.import_model(os.path.abspath(path), job=True)
        if "job_id" in result:  # (a Blender scene: the import is a job of its main thread)
            return {"op": "op_started", "job_id": result["job_id"], "for_op": "import_xml"}
        return import_xml_reply(result)

    # ------------------------------------------------------------- upkeep

    def _open_upload(self, upload_id: str) -> Upload:
        """(Lock held) An open upload, or unknown_upload (never opened, ended, or expired)."""
        self._sweep()
        upload = self.open.get(upload_id)
        if upload is None:
            raise ProtocolError("unknown_upload", f"upload_id {upload_id[:60]!r} is unknown or expired "
                                f"(an upload lives {self.limits.ttl:g} s after its last chunk)")
        return upload

    def _discard(self, upload: Upload) -> None:
        """(Lock held) The upload ended, its folder removed."""
        self.open.pop(upload.id, None)
        discard_folder(upload.folder)

    def _sweep(self) -> None:
        """(Lock held) Discard the uploads idle past their time to live."""
        now = time.monotonic()
        for upload in [u for u in self.open.values() if now - u.touched > self.limits.ttl]:
            self._discard(upload)

    def _watch(self) -> None:
        """(Lock held) A thread that sweeps while uploads are open (an abandoned upload
        goes when its time is up, whether or not a client comes back)."""
        if self._sweeper is not None and self._sweeper.is_alive():
            return
        self._sweeper = threading.Thread(target=self._sweeping, name="MJBlend bridge uploads", daemon=True)
        self._sweeper.start()

    def _sweeping(self) -> None:
        while not self._closed.wait(min(max(self.limits.ttl / 4, 0.02), 5.0)):
            with self._lock:
                self._sweep()
                if not self.open:
                    self._sweeper = None
                    return

    def close(self) -> None:
        """The bridge stops: every open upload discarded."""
        self._closed.set()
        with self._lock:
            for upload in list(self.open.values()):
                self._discard(upload)
        sweeper = self._sweeper
        if sweeper is not None:
            sweeper.join(2.0)


class _NoSession:
    id = None  # (a commit sent without a live session: no lease holder's)


_NO_SESSION = _NoSession()


def _chunk_bytes(request: dict) -> bytes:
    """A chunk's bytes: msgpack bin, or base64 text (JSON clients; `data__b64__` as URLab's)."""
    data = request.get("data")
    if data is None:
        data = request.get("data__b64__")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, str):
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise ProtocolError("bad_request", "a chunk's 'data' text must be base64") from None
    raise ProtocolError("bad_request", "upload_model_chunk needs binary 'data'")


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(READ_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def import_reply(result: dict) -> dict:
    """Host.import_model's result in URLab's words (import_xml's and the commit's): MJBlend
    has no Blueprint asset; the model root (a Blender object, or the model's name) stands
    in for its class path and the entity prefix clients find it by for its short name."""
    reply = {key: value for key, value in result.items() if key not in ("model_root", "entity")}
    reply.update(blueprint_class_path=result.get("model_root", ""),
                 blueprint_short_name=result.get("entity", ""),
                 model_root=result.get("model_root", ""), entity=result.get("entity", ""))
    reply.setdefault("imported_now", True)
    reply.setdefault("warnings", [])
    return reply


def import_xml_reply(result: dict) -> dict:
    """import_xml's reply (or its job's result) from Host.import_model's."""
    reply = import_reply(result)
    reply.pop("mjb", None)  # (URLab's import_xml sends none; hello has it)
    return {"op": "import_xml_ok", **reply}

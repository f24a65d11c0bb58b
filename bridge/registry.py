"""The entry URLab's pool finds a server by: `{registry_dir}/{instance_id}_{pid}.json`
(URLab's InstanceRegistry; read by urlab_client.pool.read_registry / URLabPool.discover).

URLabPool.discover lists the entries whose process is alive, whose file is younger
than 30 s and that are not busy; so the Bridge writes its entry when it starts,
rewrites it every REFRESH seconds and at once when its lease is taken or ends
(`busy`), from a small thread of its own, and removes it when it stops. The folder
is URLab's: $URLAB_REGISTRY_DIR, else the platform cache's URLab/registry.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import threading

REFRESH = 5.0  # seconds between rewrites (URLab's pool drops an entry older than 30 s)
log = logging.getLogger(__name__)


def default_directory() -> str:
    """URLab's: $URLAB_REGISTRY_DIR, else %LOCALAPPDATA%/URLab/registry on Windows,
    $XDG_CACHE_HOME (or ~/.cache)/URLab/registry elsewhere."""
    override = os.environ.get("URLAB_REGISTRY_DIR")
    if override:
        return override
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "URLab", "registry")


def capabilities(dispatcher) -> list[str]:
    """URLab's capability words that hold for this server (a pool filters on them):
    cameras rendered for the step that asked (render_sync) and streamed, shared memory
    when it is served, model upload when it is."""
    found = ["render_sync", "stream_cameras"]
    if dispatcher.shm is not None:
        found.append("shm_rpc")
    if "upload_model_commit" in dispatcher.ops:
        found.append("model_upload")
    return found


def connectable(address: str) -> str:
    """The host a client on this machine connects to (the pool makes `tcp://{host}`):
    the bound address, or the loopback one for a wildcard bind."""
    return "127.0.0.1" if address in ("0.0.0.0", "*", "", "::") else address


class Registry:
    """One server's registry entry, kept fresh by its own thread while the server runs."""

    def __init__(self, dispatcher, address: str, directory: str | None = None, period: float = REFRESH):
        self.d = dispatcher
        self.address = address
        self.directory = directory or default_directory()
        self.period = period
        self.problem = ""  # why the entry could not be written (the server serves on regardless)
        self.writes = 0
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None

    @property
    def path(self) -> str:
        return os.path.join(self.directory, f"{self.d.instance['instance_id']}_{os.getpid()}.json")

    def entry(self) -> dict:
        instance = self.d.instance
        return {"instance_id": instance["instance_id"], "index": instance["index"], "pid": os.getpid(),
                "host": connectable(self.address), "step_port": instance["step_port"],
                "state_port": instance["state_port"], "cam_base_port": instance["cam_base_port"],
                "manager_present": self.d.host.runner() is not None, "busy": self.d.leases.busy(),
                "urlab_version": f"mjblend/{self.d.host.version}", "capabilities": capabilities(self.d),
                "registry_written_at": datetime.datetime.now(datetime.timezone.utc).isoformat()}

    def write(self) -> None:
        """The entry, whole: written beside it and moved into place (a reader never
        sees half of it; the pool reads `*.json` only)."""
        path = self.path
        partial = os.path.join(self.directory, f".{os.path.basename(path)}.partial")
        try:
            os.makedirs(self.directory, exist_ok=True)
            with open(partial, "w", encoding="utf-8") as out:
                json.dump(self.entry(), out)
            os.replace(partial, path)
            self.writes += 1
            self.problem = ""
        except OSError as problem:
            if not self.problem:
                log.warning("the URLab registry entry %s could not be written: %s", path, problem)
            self.problem = f"{path}: {problem}"

    def wake(self) -> None:
        """Rewrite now (the lease changed: `busy`)."""
        self._wake.set()

    def start(self) -> None:
        self.write()
        self.d.leases.on_change.append(self.wake)
        self._thread = threading.Thread(target=self._run, name="mjblend-registry", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait(self.period)
            self._wake.clear()
            if self._stopping:
                return
            self.write()

    def stop(self) -> None:
        """The thread joined, the entry removed."""
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.wake in self.d.leases.on_change:
            self.d.leases.on_change.remove(self.wake)
        try:
            os.remove(self.path)
        except OSError:
            pass

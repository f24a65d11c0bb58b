"""URLab's recording and replay ops, on the timeline's machinery: a recording is
an engine Recorder capturing one frame per step (URLab records per step), saved
by engine/trajectory as .npz or .csv; a replay pushes recorded states back at
their own pace, as a puppet client would.

Files are named by the client with a bare file name and live in the host's
recordings folder: a client never reads or writes anywhere else."""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from ..engine import commands, trajectory
from ..engine.recording import Recorder
from . import fields
from .wire import ProtocolError


class Recordings:
    """The recording running (if any), those kept by name, and the replay playing."""

    def __init__(self, dispatcher):
        self.d = dispatcher
        self.recorder: Recorder | None = None
        self.kept: dict = {}  # name -> engine Recording or trajectory (recorded or loaded)
        self.active = ""
        self._name = "live"
        self._replay: threading.Thread | None = None
        self._replay_stop = threading.Event()

    def op_recording_start(self, request, session) -> dict:
        if self.recorder is not None:
            raise ProtocolError("recording_already_active", "a recording is already running: stop it first")
        name = fields.string(request, "name", "live")
        limit = fields.number(request, "max_duration_s", 3600.0)
        model = self.d.model
        # one frame per step, as URLab records
        frames = max(2, int(limit / model.opt.timestep) + 1)
        recorder = Recorder(model, 1.0 / model.opt.timestep, 0, max_bytes=self.d.host.recording_bytes)
        recorder.max_frames = min(recorder.max_frames, frames)
        self.d._send(self.d._runner(), commands.StartRecording(recorder), "recording_start")
        self.recorder, self._name = recorder, name
        return {"op": "recording_start_ok", "name": name, "max_duration_s": limit}

    def op_recording_stop(self, request, session) -> dict:
        if self.recorder is None:
            raise ProtocolError("recording_not_active", "no recording is running")
        self.d._send(self.d._runner(), commands.StopRecording(), "recording_stop")
        recording = self.recorder.recording()
        self.recorder = None
        self.kept[self._name] = recording
        self.active = self._name
        duration = float(recording.time[-1] - recording.time[0]) if len(recording) else 0.0
        return {"op": "recording_stop_ok", "name": self._name, "frame_count": len(recording),
                "sim_duration_s": duration}

    def _path(self, request, must_exist: bool) -> str:
        """A recordings-folder path from a client's bare file name: a client never
        reads or writes anywhere else on this machine."""
        name = fields.string(request, "path")
        folder = self.d.host.recordings_dir()
        if folder is None:
            raise ProtocolError("path_not_writable", "this server keeps no recordings folder")
        bare = os.path.basename(name)
        if not bare or bare != name or bare in (".", ".."):
            raise ProtocolError("path_not_writable" if not must_exist else "path_not_readable",
                                f"{name[:80]!r}: give a bare file name; recordings live in {folder}")
        path = os.path.join(folder, bare)
        if must_exist and not os.path.isfile(path):
            raise ProtocolError("path_not_readable", f"no recording {bare!r} in {folder}")
        return path

    def op_recording_save(self, request, session) -> dict:
        name = self._name
        recording = self.kept.get(name)
        if recording is None:
            raise ProtocolError("recording_not_active",
                                "nothing recorded yet: recording_start, then recording_stop")
        path = self._path(request, must_exist=False)
        if path.endswith(".json"):
            path = path[:-5] + ".npz"  # (URLab's .json name: saved as MJBlend's .npz, said in the reply)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        writer = trajectory.save_csv if path.endswith(".csv") else trajectory.save_npz
        try:
            writer(path, recording, self.d.model)
        except trajectory.TrajectoryError as problem:
            raise ProtocolError("path_not_writable", str(problem)) from None
        return {"op": "recording_save_ok", "absolute_path": os.path.abspath(path),
                "frame_count": len(recording)}

    def op_recording_clear(self, request, session) -> dict:
        if self.recorder is not None:
            self.d._send(self.d._runner(), commands.StopRecording(), "recording_clear")
            self.recorder = None
        self.kept.clear()
        return {"op": "recording_clear_ok"}

    def op_replay_load(self, request, session) -> dict:
        path = self._path(request, must_exist=True)
        try:
            loaded = trajectory.read(path, self.d.model)
        except trajectory.TrajectoryError as problem:
            raise ProtocolError("path_not_readable", str(problem)) from None
        name = os.path.splitext(os.path.basename(path))[0]
        self.kept[name] = loaded
        return {"op": "replay_load_ok", "name": name, "total_frames": len(loaded)}

    def op_replay_list(self, request, session) -> dict:
        return {"op": "replay_list_sessions_ok", "sessions": list(self.kept)}

    def op_replay_set_active(self, request, session) -> dict:
        name = fields.string(request, "name")
        if name not in self.kept:
            raise ProtocolError("replay_session_not_found", f"no recording {name!r} (loaded: "
                                f"{', '.join(self.kept) or 'none'})")
        self.active = name
        return {"op": "replay_set_active_ok"}

    def op_replay_start(self, request, session) -> dict:
        if self.d.mode == "live":
            raise ProtocolError("replay_requires_stepped",
                                "replay needs direct or puppet mode (set_mode first)")
        recorded = self.kept.get(self.active)
        if recorded is None:
            raise ProtocolError("replay_session_not_found",
                                "no recording to replay: record or replay_load one")
        self.stop_replay()
        qpos = recorded.qpos
        qvel = recorded.part("qvel") if hasattr(recorded, "part") else recorded.qvel
        ctrl = recorded.part("ctrl") if hasattr(recorded, "part") else recorded.ctrl
        times = np.asarray(recorded.time)
        runner = self.d._runner()
        stop = self._replay_stop = threading.Event()  # (this replay's own: an older one may still end)

        def play():  # one pushed state per recorded frame, at the recording's own pace
            start = time.perf_counter()
            for row in range(len(times)):
                due = start + (times[row] - times[0])
                if stop.wait(max(0.0, due - time.perf_counter())):
                    return
                push = commands.PushState(qpos[row], None if qvel is None else qvel[row],
                                          None if ctrl is None else ctrl[row], float(times[row]))
                with self.d.lock:  # (as a request would: the lent simulation is the lock holder's)
                    if stop.is_set():  # (stopped while this waited for the lock)
                        return
                    try:
                        self.d._send(runner, push, "a replayed state")
                    except ProtocolError:  # (the simulation went away or stalled: the replay ends)
                        return
        self._replay = threading.Thread(target=play, name="MJBlend bridge replay", daemon=True)
        self._replay.start()
        return {"op": "replay_start_ok", "active_session": self.active,
                "total_frames": int(len(times))}

    def stop_replay(self, wait: bool = False) -> None:
        """End the replay: at once (the ops call this holding the dispatcher's lock,
        which the replay's thread takes for each state: it sees the stop and ends),
        or, with `wait`, until its thread has ended (the lock not held)."""
        self._replay_stop.set()
        if self._replay is not None and wait:
            self._replay.join(2.0)
        self._replay = None

    def op_replay_stop(self, request, session) -> dict:
        self.stop_replay()
        return {"op": "replay_stop_ok"}

    def close(self) -> None:
        """The server stops: a replay ends, a recording stops."""
        self.stop_replay(wait=True)
        runner = self.d.host.runner()
        if self.recorder is not None and runner is not None:
            runner.send(commands.StopRecording())
            self.recorder = None

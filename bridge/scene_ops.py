"""URLab's scene, outliner and sim ops against a Blender scene: its actors listed, found,
measured, selected, moved and destroyed, a snapshot of them, the simulation played
and stopped (URLab's PIE), long ops followed with `op_status`.

An *actor* is a model root: its `actor_id` is the root's entity prefix on the bridge
(what `hello` lists), its name the root object's name. Locations are in MuJoCo's world
(the bridge attaches each model where its root stands, so it is Blender's world, in
metres), quaternions URLab's xyzw.

Nothing here touches Blender: requests are read and checked on the bridge's thread
(a refused request changes nothing), then the host's `scene_edits` (live/bridge_scene.py)
does the work on Blender's main thread (bridge/main_thread.py). A host without Blender
(ModelHost) has no scene: these ops are answered `unsupported`, and `meta` says why.
"""

from __future__ import annotations

import time

from . import debug_ops, entities, fields
from .main_thread import run_call
from .op import Op
from .wire import ProtocolError

NEEDS_BLENDER = ("an op on a Blender scene: this server serves a model without Blender (serve the scene "
                 "from Blender, or with `blender --command mjblend_serve`)")
TARGET_BY = ("actor_id", "actor_name")
# URLab's error code for a target that names no actor, op by op (its editor handlers)
NO_ACTOR = {"get_actor_bounds": "get_actor_bounds_failed", "select_actor": "select_failed",
            "set_actor_transform": "set_actor_transform_failed", "destroy_actor": "destroy_failed",
            "remove_actor": "destroy_failed"}
MAX_PIE_TIMEOUT = 600.0  # seconds a begin_pie may wait for the main thread (URLab's default: 30)


class UnknownActor(ProtocolError):
    """A target that names no actor (answered with the op's URLab code)."""

    def __init__(self, message: str):
        super().__init__("unknown_actor", message)


class _Asker:
    """The session a sessionless op names (for the lease's check)."""

    def __init__(self, sid):
        self.id = sid


class SceneOps:
    """The ops of this file, as the dispatcher's catalogue takes them (Dispatcher.parts)."""

    def __init__(self, dispatcher):
        self.d = dispatcher
        # Functions run on the main thread after a snapshot's actors are listed,
        # `function(request, reply)`: each may add to the reply (a PNG of the 3D view).

    @property
    def edits(self):
        return self.d.host.scene_edits

    def ops(self) -> dict:
        if self.d.host.scene_edits is None:
            return {}
        target, listed = ("target",), ("actors:array", "in_pie:bool")
        return {
            "list_actors": Op(self.op_list_actors, "editor_only", "outliner", reply=listed),
            "find_actors": Op(self.op_find_actors, "editor_only", "outliner", reply=listed),
            "get_actor_bounds": Op(self.op_get_actor_bounds, "editor_only", "outliner", target,
                                   ("actor_name:string", "min:array", "max:array", "center:array",
                                    "extents:array")),
            "select_actor": Op(self.op_select_actor, "editor_only", "outliner", target,
                               ("target:string", "actor_name:string")),
            "set_actor_transform": Op(self.op_set_actor_transform, "editor_only", "scene", target,
                                      ("target:string", "actor_name:string", "requires_pie_restart:bool")),
            "destroy_actor": Op(self.op_destroy_actor, "editor_only", "scene", target,
                                ("target:string", "actor_name:string", "requires_pie_restart:bool")),
            "remove_actor": Op(self.op_remove_actor, "editor_only", "scene", target,
                               ("job_id:string",)),
            "snapshot": Op(self.op_snapshot, "editor_only", "scene", reply=("job_id:string",)),
            "op_status": Op(self.op_op_status, "editor_only", "scene", ("job_id",),
                            ("job_id:string", "state:string", "progress:float", "result:object?")),
            "begin_pie": Op(self.op_begin_pie, "editor_only", "sim",
                            reply=("state:string", "compile_error:string", "handshake_payload:object?")),
            "stop_pie": Op(self.op_stop_pie, "editor_only", "sim", reply=("was_running:bool",)),
            "pie_status": Op(self.op_pie_status, "editor_only", "sim",
                             reply=("state:string", "compile_error:string", "sim_time:float?")),
        }

    def not_served(self) -> dict:
        """{op: why} where these ops cannot be served (no Blender scene)."""
        if self.d.host.scene_edits is not None:
            return {}
        return dict.fromkeys(("list_actors", "find_actors", "get_actor_bounds", "select_actor",
                              "set_actor_transform", "destroy_actor", "remove_actor", "snapshot",
                              "op_status", "begin_pie", "stop_pie", "pie_status"), NEEDS_BLENDER)

    # ------------------------------------------------------------- helpers

    def _call(self, function, what: str, timeout: float | None = None):
        """`function()` run on the main thread, its result. While the bridge steps the
        simulation itself (direct and puppet modes: the runner is lent to this thread)
        it keeps applying what others send meanwhile, so a job that recompiles (a moved
        or destroyed actor) never waits on this thread, which waits on it."""
        main = self.d.host.main_thread
        runner = self.d._borrowed
        if runner is None or main is None:
            return run_call(main, function, what, timeout)
        job = main.start(function, what)
        deadline = time.monotonic() + (main.timeout if timeout is None else timeout)
        while True:
            status = main.status(job)
            if status["state"] in ("done", "failed"):
                break
            if status["state"] == "queued" and time.monotonic() > deadline:
                raise ProtocolError("main_thread_timeout", f"'{what}' needs Blender's main thread, which "
                                    "did not take it in time: Blender is busy, or nothing serves it")
            runner.serve_queue()
            time.sleep(0.002)
        runner.serve_queue()  # (what the job sent: applied before the reply, as in live mode)
        if status["state"] == "failed":
            raise ProtocolError(status["code"], status["error"])
        return status["result"]

    @staticmethod
    def _target(request) -> tuple[str, bool]:
        """(target, by name): URLab's `target` and `target_by` (actor_id, the default, or actor_name)."""
        target = fields.string(request, "target")
        if not target:
            raise ProtocolError("missing_field", f"'{request.get('op')}' needs a non-empty 'target'")
        by = fields.string(request, "target_by", "actor_id").lower()
        if by not in TARGET_BY:
            raise ProtocolError("bad_value", f"'target_by' is actor_id or actor_name, not {by!r:.40}")
        return target, by == "actor_name"

    def _on_actor(self, name: str, function, long: bool = False):
        """`function()` on the main thread, a target naming no actor answered with URLab's
        code for `name`; with `long`, started as a job (URLab's op_started)."""
        def run():
            try:
                return function()
            except UnknownActor as problem:
                raise ProtocolError(NO_ACTOR[name], problem.message) from None
        if long:
            main = self.d.host.main_thread
            return {"op": "op_started", "job_id": main.start(run, name), "started_op": name}
        return self._call(run, name)

    def _in_pie(self) -> bool:
        return self.d.host.runner() is not None

    # -------------------------------------------------------------- outliner

    def op_list_actors(self, request) -> dict:
        actors = self._call(self.edits.list_actors, "list_actors")
        return {"op": "list_actors_ok", "actors": actors, "in_pie": self._in_pie()}

    def op_find_actors(self, request) -> dict:
        wanted = {key: fields.string(request, key, None) for key in ("class_filter", "tag", "name_prefix")}
        fields.boolean(request, "in_pie", False)  # (one scene: its objects are what the simulation runs)
        actors = self._call(lambda: self.edits.find_actors(**wanted), "find_actors")
        return {"op": "find_actors_ok", "actors": actors, "in_pie": self._in_pie()}

    def op_get_actor_bounds(self, request) -> dict:
        target, by_name = self._target(request)
        only = fields.boolean(request, "components_only", False)
        bounds = self._on_actor("get_actor_bounds", lambda: self.edits.bounds(target, by_name, only))
        return {"op": "get_actor_bounds_ok", **bounds}

    def op_select_actor(self, request) -> dict:
        target, by_name = self._target(request)
        name = self._on_actor("select_actor", lambda: self.edits.select(target, by_name))
        return {"op": "select_actor_ok", "target": target, "actor_name": name}

    # ----------------------------------------------------------------- scene

    def op_set_actor_transform(self, request) -> dict:
        target, by_name = self._target(request)
        location = fields.vector(request, "location", 3, None)
        quat = fields.vector(request, "rotation_quat", 4, None)  # (URLab's xyzw; it wins over euler)
        euler = fields.vector(request, "rotation_euler", 3, None) if quat is None else None
        if quat is not None:
            norm = float((quat ** 2).sum()) ** 0.5
            if norm == 0:
                raise ProtocolError("bad_value", "'rotation_quat' must not be zero")
            quat = [quat[3] / norm, quat[0] / norm, quat[1] / norm, quat[2] / norm]  # (wxyz: Blender's)
        location = None if location is None else location.tolist()
        euler = None if euler is None else euler.tolist()
        done = self._on_actor("set_actor_transform",
                              lambda: self.edits.set_transform(target, by_name, location, quat, euler))
        return {"op": "set_actor_transform_ok", "target": target, **done}

    def op_destroy_actor(self, request) -> dict:
        target, by_name = self._target(request)
        done = self._on_actor("destroy_actor", lambda: self.edits.destroy(target, by_name))
        return {"op": "destroy_actor_ok", "target": target, **done}

    def op_remove_actor(self, request) -> dict:
        """URLab's newer destroy_actor: a long op (a big model's objects, then a recompile)."""
        target, by_name = self._target(request)

        def remove():
            return {"op": "remove_actor_ok", "target": target, **self.edits.destroy(target, by_name)}
        return self._on_actor("remove_actor", remove, long=True)

    def op_snapshot(self, request) -> dict:
        """Every actor with its pose and, while a simulation is served, its articulation's
        element names (URLab's `urlab` block); a long op. MJBlend's `image: true` adds
        `image` {png, width, height}: the 3D view as it draws next (taken here, on the
        bridge's thread, before the job: the screenshot waits for a draw of the view,
        which a main-thread job would hold up)."""
        articulations = self._articulations()
        image = None
        if fields.boolean(request, "image", False):
            png, width, height = debug_ops.viewport_png(self.d.host)
            image = {"png": png, "width": width, "height": height}

        def snapshot():
            reply = {"op": "snapshot_ok", **self.edits.snapshot(articulations)}
            if image is not None:
                reply["image"] = image
            return reply
        return {"op": "op_started", "job_id": self.d.host.main_thread.start(snapshot, "snapshot"),
                "started_op": "snapshot"}

    def _articulations(self) -> dict:
        """{actor_id: URLab's `urlab` block} of the model served now (read here: the
        entities are the dispatcher's, worked out from the compiled model)."""
        runner = self.d.host.runner()
        if runner is None:
            return {}
        model = runner.session.model
        camera_names = entities.names(model, entities.OBJ.mjOBJ_CAMERA, model.ncam)
        out = {}
        for entity in self.d.scene.of(model):
            if entity.kind != "articulation":
                continue
            cameras = [entities.short(name, entity.prefix) for name in camera_names
                       if entities.matches(name, entity.prefix)]
            out[entity.prefix] = {"mj_class": "articulation", "joints": list(entity.joint_names),
                                  "actuators": list(entity.actuator_names),
                                  "sensors": [name for name, _start, _stop in entity.sensor_slices],
                                  "bodies": list(entity.body_names), "cameras": cameras}
        return out

    def op_op_status(self, request) -> dict:
        job_id = fields.string(request, "job_id")
        status = self.d.host.main_thread.status(job_id)
        if status["state"] == "queued":  # (URLab's client polls while "running", and stops on anything else)
            status["state"] = "running"
        if status["state"] == "failed":  # (URLab's client reads the failure from `result`)
            status["result"] = {"code": status["code"], "message": status["error"]}
        return {"op": "op_status_ok", **status}

    # ------------------------------------------------------------------- sim

    def _release(self, request) -> None:
        """The simulation handed back to its physics thread (live mode), a replay ended:
        a main-thread job that ends or recompiles the simulation must never wait on this
        thread, which waits on it (a lent runner is applied by its borrower only). While
        another client holds the server's lease, that changes its mode: refused, as its
        set_mode would be (bridge/leases.py)."""
        leases = getattr(self.d, "leases", None)
        if leases is not None:
            sid = request.get("session_id")
            leases.check_mode(request, _Asker(sid if isinstance(sid, str) else None), self.d.mode != "live")
        self.d.recordings.stop_replay()
        self.d._give_back()
        self.d.mode = self.d.status.mode = "live"

    def op_begin_pie(self, request) -> dict:
        """URLab's PIE start: the scene's simulation compiled and played (freerun), served
        by this bridge; a scene that does not compile answers state compile_failed with
        MuJoCo's (or the scan's) message. Already playing: ready at once."""
        timeout = min(max(fields.number(request, "timeout_s", 30.0), 1.0), MAX_PIE_TIMEOUT)
        level = fields.string(request, "level_path", "")
        if level and level != self.d.host.name:
            raise ProtocolError("unsupported", f"'level_path' {level[:80]!r}: this bridge serves the scene "
                                f"{self.d.host.name!r} (name it to restart its simulation; another scene is "
                                "served from Blender)")
        restart = bool(level)
        self._release(request)  # (it plays: freerun, the physics thread's)
        outcome = self._call(lambda: self.edits.begin(restart), "begin_pie", timeout)
        reply = {"op": "begin_pie_ok", **outcome}
        if outcome["state"] == "ready":
            reply["handshake_payload"] = self.d.op_hello({"op": "hello", "encoding": self._encoding(request)})
        return reply

    def _encoding(self, request) -> str:
        session = self.d.sessions.get(request.get("session_id")) if isinstance(request.get("session_id"),
                                                                               str) else None
        return session.encoding if session is not None else "msgpack"

    def op_stop_pie(self, request) -> dict:
        """URLab's PIE end: the simulation stopped as Blender's Stop does (objects back
        where they were authored, its physics thread ended) while this bridge keeps
        serving (begin_pie plays again). A recording the bridge was making is kept."""
        recordings = self.d.recordings
        self._release(request)
        if recordings.recorder is not None and self.d.host.runner() is not None:
            recordings.op_recording_stop({}, None)  # (kept by name, as recording_stop keeps it)
        was_running = self._call(self.edits.stop, "stop_pie")
        return {"op": "stop_pie_ok", "was_running": bool(was_running)}

    def op_pie_status(self, request) -> dict:
        """off | compile_failed | ready, the compile error, the simulation's time (plain
        values the host keeps: no main thread needed)."""
        host = self.d.host
        runner = host.runner()
        error = self.edits.compile_error
        reply = {"op": "pie_status_ok", "state": "ready" if runner is not None else
                 ("compile_failed" if error else "off"), "compile_error": error if runner is None else ""}
        if runner is not None:
            reply["sim_time"] = float(runner.latest.time)
            reply["recompile_error"] = self.edits.recompile_error()  # (the last good model runs on)
        return reply

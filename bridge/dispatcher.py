"""URLab's wire protocol: one request map in, one reply map out.

The dispatcher holds the protocol (sessions, step modes, the op catalogue) and
drives the simulation only through its runner's commands. In live mode it sends
them and waits for the snapshot after them; in direct and puppet modes the
runner lends it the simulation (Runner.lend) and it runs them on its own thread
(Runner.run_here), reading replies from the state itself. Replies are built by
bridge/observations.py. Every transport calls `handle_frame` under one lock, so
requests are served one at a time in arrival order, and only the lock's holder
touches a lent simulation.

The host (bridge/host.py) says what is served: the runner of the simulation
now, the prefixes of the scene's model roots, where recordings go.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections import OrderedDict

import mujoco
import numpy as np

from ..engine import commands
from ..engine.session import QPOS_WIDTH
from . import fields, observations, sim_options
from .camera_streams import CameraStreams, Delay
from .controllers import Controllers
from .debug_ops import DebugViewport
from .entities import OBJ, SceneEntities
from .leases import Leases
from .op import Op
from .recordings import Recordings
from .registry import capabilities
from .scene_ops import SceneOps
from .uploads import Uploads
from .wire import JSON, MSGPACK, ProtocolError, decode, encode, encoding_of, error

PROTOCOL_VERSION = "mjblend-urlab/1"
MAX_SESSIONS = 32  # sessions kept; an older id is stale (session_expired)
STEP_TIMEOUT = 5.0  # seconds a step may take before `step_timeout` (URLab's)
MAX_STEPS = 1_000_000  # one request's n_steps
# URLab's op categories served without a session (its editor's ops work with no
# simulation running; `hello` itself is pre_session): their handlers take the request only
SESSIONLESS = ("no_manager", "editor_only", "pre_session")

# Step modes in both of URLab's vocabularies: the docs' (live / direct / puppet)
# and its newest client's (freerun / stepped / statepushed). Internally the first.
MODES = {"live": "live", "direct": "direct", "puppet": "puppet",
         "freerun": "live", "stepped": "direct", "statepushed": "puppet"}
NEW_WORDS = {"live": "freerun", "direct": "stepped", "puppet": "statepushed"}

# URLab ops MJBlend does not serve: each answered `unsupported` with why, never
# `unknown_op` (tests/bridge/data/urlab_ops.json is URLab's whole table, from its
# newest dispatcher, editor handlers, client and protocol reference).
_EDITOR = "an Unreal editor op; MJBlend serves a running simulation only"
_SCENE_EDIT = "editing the Blender scene over the bridge is not served yet: edit it in Blender"
_FASTPATH = ("URLab's fast-path renderer (a second process drawing the owner's model) "
             "has no MJBlend counterpart")
NOT_SERVED = {
    "set_possess": "Unreal's pawn possession (keyboard / gamepad driving) has no MJBlend counterpart",
    "set_user_channels": "user channels in the state stream are not served yet",
    "resolve_geom": "Unreal's live geom materials (visual randomization) are not served: "
                    "MJBlend's geoms are Blender objects",
    "set_geom_appearance": "Unreal's live geom materials (visual randomization) are not served: "
                           "MJBlend's geoms are Blender objects",
    "fastpath_hello": _FASTPATH,
    "fastpath_load": _FASTPATH,
    "fastpath_perturb": _FASTPATH,
    **{op: _SCENE_EDIT for op in (
        "spawn_actor", "spawn_grid", "spawn_light", "duplicate_actor", "actor_hierarchy")},
    **{op: _EDITOR for op in (
        "create_level", "load_level", "save_level", "current_level", "ensure_manager", "destroy_asset",
        "list_blueprints", "add_quick_convert", "remove_quick_convert")},
}

@dataclasses.dataclass
class ClientSession:
    id: str
    encoding: str = MSGPACK
    observations: str = "standard"


@dataclasses.dataclass
class Status:
    """What the Bridge panel shows (read from any thread; written under the lock)."""

    requests: int = 0
    errors: int = 0
    last_op: str = ""
    last_error: str = ""
    sessions: int = 0
    mode: str = "live"


class Dispatcher:
    def __init__(self, host, step_timeout: float = STEP_TIMEOUT, cameras: CameraStreams | None = None):
        self.host = host
        self.step_timeout = step_timeout
        self.lock = threading.Lock()
        self.sessions: OrderedDict[str, ClientSession] = OrderedDict()
        self.mode = "live"
        self.status = Status()
        self.model = None  # the model the sessions were given (a recompile expires them)
        self.scene = SceneEntities(host.root_prefixes)
        # the served cameras' streams and their render thread (bridge/camera_streams.py)
        self.cameras = cameras or CameraStreams(settings=host.camera_settings, blender=host.blender_frames,
                                                default_renderer=host.camera_renderer)
        self.shm = None  # the shared-memory transport, when the Bridge serves one (its hello fields)
        self.instance: dict = {}  # hello's `instance` block: who answers, on which ports (set by the Bridge)
        self.recordings = Recordings(self)
        self.stop_requested = threading.Event()  # a client asked the (headless) server to stop
        self.on_state = lambda state: None  # each state the bridge steps itself (-> the state stream)
        self._borrowed = None  # the runner lent to the bridge (direct and puppet modes)
        # the op groups kept in files of their own: each has `ops() -> {name: Op}`
        self.scene_ops = SceneOps(self)  # (the scene, outliner and sim namespaces: bridge/scene_ops.py)
        self.parts: list = [self.scene_ops]
        self.leases = Leases(self)  # URLab's farm lease and control claims (bridge/leases.py)
        self.parts.append(self.leases)
        self.controllers = Controllers(self)  # URLab's controllers, twist, control source
        self.parts.append(self.controllers)
        self.uploads = Uploads(self)  # URLab's model upload and import_xml (bridge/uploads.py)
        self.parts.append(self.uploads)
        self.debug = DebugViewport(self)  # URLab's debug markers and the 3D view (bridge/debug_ops.py)
        self.parts.append(self.debug)
        self.ops = self._catalogue()
        # URLab's ops answered `unsupported`, with why: NOT_SERVED, and those a part cannot
        # serve on this host (`not_served()`: e.g. scene ops on a model served without Blender)
        self.not_served = dict(NOT_SERVED)
        for part in self.parts:
            self.ops.update(part.ops())
            self.not_served.update(part.not_served() if hasattr(part, "not_served") else {})

    # ------------------------------------------------------------------ entry

    def handle_frame(self, frame: bytes | None, transport: str = "", limit: int | None = None) -> bytes:
        """One request frame -> one reply frame. Never raises: a bad frame gets an
        error reply in the request's own encoding (msgpack if it has none)."""
        encoding = MSGPACK
        with self.lock:
            self.status.requests += 1
            try:
                if frame is None:
                    raise ProtocolError("bad_request", "a request is one frame (this had several)")
                encoding = encoding_of(frame)  # (a JSON frame that does not parse: a JSON error)
                request, encoding = decode(frame, limit) if limit else decode(frame)
                reply, encoding = self._handle(request, encoding)
            except ProtocolError as problem:
                reply = self._failed(problem.code, problem.message, problem.fields)
            except Exception as bug:  # noqa: BLE001 (a client never takes the server down)
                reply = self._failed("internal_error", f"{type(bug).__name__}: {bug}")
            try:
                return encode(reply, encoding)
            except (TypeError, ValueError) as bug:
                failed = self._failed("internal_error", f"the reply could not be encoded: {bug}")
                return encode(failed, MSGPACK)

    def handle(self, request: dict) -> dict:
        """A decoded request -> its reply map (tests and in-process callers)."""
        with self.lock:
            try:
                return self._handle(request, MSGPACK)[0]
            except ProtocolError as problem:
                return self._failed(problem.code, problem.message, problem.fields)

    def _failed(self, code: str, message: str, fields: dict | None = None) -> dict:
        self.status.errors += 1
        self.status.last_error = f"{code}: {message}"
        return error(code, message, fields)

    def _handle(self, request: dict, encoding: str) -> tuple[dict, str]:
        name = request["op"]
        self.status.last_op = name
        self.leases.note(name, request)  # (the lease holder's activity keeps its lease)
        op = self.ops.get(name)
        if op is None:
            if name in self.not_served:
                raise ProtocolError("unsupported",
                                    f"'{name}' is not served by MJBlend: {self.not_served[name]}")
            raise ProtocolError("unknown_op", f"no op '{name}' (send 'meta' for the catalogue)")
        session = None
        if op.category not in SESSIONLESS:
            session = self._session_of(request)
            encoding = session.encoding
        for key in op.required:
            if request.get(key) is None:
                raise ProtocolError("missing_field", f"'{name}' needs the field '{key}'")
        reply = op.handler(request, session) if session is not None else op.handler(request)
        if name == "hello":
            encoding = self.sessions[reply["session_id"]].encoding
        return reply, encoding

    def _session_of(self, request: dict) -> ClientSession:
        sid = request.get("session_id")
        if not isinstance(sid, str) or sid not in self.sessions:
            raise ProtocolError("session_expired", "unknown or expired session_id: send 'hello' first"
                                if sid is None
                                else f"session {str(sid)[:40]!r} is not active: send 'hello' again")
        runner = self._runner()
        if runner.session.model is not self.model:
            self.sessions.clear()
            self.status.sessions = 0
            raise ProtocolError("session_expired", "the scene was recompiled (the model changed): "
                                "send 'hello' again for the new model")
        self.sessions.move_to_end(sid)
        return self.sessions[sid]

    def _runner(self):
        runner = self.host.runner()
        if runner is None:
            raise ProtocolError("not_ready",
                                "no simulation is running (start it in Blender, or restart the bridge)")
        if self.mode != "live" and not runner.lent:  # (a new runner: Blender restarted the simulation)
            self._borrow(runner)
        return runner

    def _borrow(self, runner) -> None:
        """Direct and puppet modes: the bridge steps the simulation on its own thread
        (Runner.lend), two thread switches per request fewer."""
        if not runner.lend(self.step_timeout):
            raise ProtocolError("step_timeout", f"the simulation stayed busy for {self.step_timeout:g} s "
                                "(a long step or simulate in Blender?): try again")
        self._borrowed = runner

    def _give_back(self) -> None:
        runner, self._borrowed = self._borrowed, None
        if runner is not None:
            runner.give_back()

    @property
    def entities(self) -> list:
        """The entities of the model the sessions were given."""
        return self.scene.of(self.model) if self.model is not None else []

    @property
    def by_prefix(self) -> dict:
        return self.scene.by_prefix(self.model) if self.model is not None else {}

    def _state(self, runner):
        """The state now: read directly while lent, else the newest snapshot."""
        return observations.LiveState(runner) if runner.lent else runner.latest

    @property
    def lent(self) -> bool:
        """Whether the bridge owns the simulation now (transports then call `idle` often)."""
        return self._borrowed is not None

    def idle(self) -> None:
        """A transport has had no request for a moment: while the bridge owns the
        simulation, apply what others sent it (Blender's UI: a drag, Reset, Play).
        Play hands the simulation back (live mode): the user in Blender wins."""
        with self.lock:
            runner = self._borrowed
            if runner is None or runner is not self.host.runner():
                return
            runner.serve_queue()
            if runner.session.playing:
                self._give_back()
                self.mode = self.status.mode = "live"

    # ------------------------------------------------------------- catalogue

    def _catalogue(self) -> dict[str, Op]:
        rec = self.recordings
        step_reply = ("op:string", "time:float", "step:int", "frame_id:int", "sim_time:object",
                      "wall_time:object", "arts:object", "per_articulation:object", "scene:object")
        return {
            "hello": Op(self.op_hello, "pre_session",
                        reply=("session_id:string", "urlab_version:string", "mujoco_version:string",
                               "mujoco_version_int:int", "manager_present:bool", "mjb:bin",
                               "entities:array")),
            "meta": Op(self.op_meta, "pre_session", reply=("ops:array", "unsupported:object")),
            "shutdown": Op(self.op_shutdown, namespace="mjblend", reply=("stopping:bool",)),
            "step": Op(self.op_step, reply=step_reply),
            "reset": Op(self.op_reset, reply=step_reply),
            "forward": Op(self.op_forward, reply=step_reply),
            "get_state": Op(self.op_get_state, namespace="mjblend", reply=step_reply),
            "set_mode": Op(self.op_set_mode, namespace="runtime", required=("mode",),
                           reply=("previous_mode:string", "current_mode:string")),
            "set_paused": Op(self.op_set_paused, namespace="runtime", required=("paused",),
                             reply=("paused:bool",)),
            "set_sim_speed": Op(self.op_set_sim_speed, namespace="runtime", required=("percent",),
                                reply=("percent:float",)),
            "set_qpos": Op(self.op_set_qpos, namespace="runtime", required=("qpos",),
                           reply=("target:string", "actor_id:string", "qpos:array",
                                  "free_base_shortcut:bool")),
            "set_mocap_pose": Op(self.op_set_mocap_pose, namespace="runtime", required=("body",),
                                 reply=("body:string", "pos:array", "quat:array")),
            "read_mocap_pose": Op(self.op_read_mocap_pose, namespace="runtime", required=("body",),
                                  reply=("body:string", "pos:array", "quat:array")),
            "get_contacts": Op(self.op_get_contacts, namespace="runtime",
                               reply=("n_contacts:int", "truncated:bool", "contacts:array")),
            "list_keyframes": Op(self.op_list_keyframes, namespace="runtime", reply=("keyframes:array",)),
            "set_sim_options": Op(self.op_set_sim_options, namespace="runtime", required=("options",),
                                  reply=("options:object",)),
            "set_camera_streaming": Op(self.op_set_camera_streaming, namespace="runtime",
                                       required=("cameras",), reply=("cameras:object",)),
            "set_camera_delay": Op(self.op_set_camera_delay, namespace="runtime", required=("cameras",),
                                   reply=("cameras:object",)),
            "recording_start": Op(rec.op_recording_start, namespace="recording",
                                  reply=("name:string", "max_duration_s:float")),
            "recording_stop": Op(rec.op_recording_stop, namespace="recording",
                                 reply=("name:string", "frame_count:int", "sim_duration_s:float")),
            "recording_save": Op(rec.op_recording_save, namespace="recording", required=("path",),
                                 reply=("absolute_path:string",)),
            "recording_clear": Op(rec.op_recording_clear, namespace="recording"),
            "replay_load": Op(rec.op_replay_load, namespace="replay", required=("path",),
                              reply=("name:string", "total_frames:int")),
            "replay_list_sessions": Op(rec.op_replay_list, namespace="replay", reply=("sessions:array",)),
            "replay_set_active": Op(rec.op_replay_set_active, namespace="replay", required=("name",)),
            "replay_start": Op(rec.op_replay_start, namespace="replay",
                               reply=("active_session:string", "total_frames:int")),
            "replay_stop": Op(rec.op_replay_stop, namespace="replay"),
        }

    # ------------------------------------------------------------- handshake

    def op_hello(self, request: dict) -> dict:
        encoding = fields.string(request, "encoding", MSGPACK)
        if encoding not in (MSGPACK, JSON):
            raise ProtocolError("bad_value", f"'encoding' must be 'msgpack' or 'json', not {encoding!r:.40}")
        level = self._level(request, "standard")
        include_assets = fields.boolean(request, "include_assets", False)
        runner = self._runner()
        model = runner.session.model
        files = self._compiled_files() if include_assets else None  # (first: a refused hello changes nothing)
        if model is not self.model:  # a new model: every older session is of another one
            self.sessions.clear()
            self.model = model
        session = ClientSession(uuid.uuid4().hex, encoding, level)
        self.sessions[session.id] = session
        while len(self.sessions) > MAX_SESSIONS:
            self.sessions.popitem(last=False)
        self.status.sessions = len(self.sessions)
        buffer = np.empty(mujoco.mj_sizeModel(model), dtype=np.uint8)
        mujoco.mj_saveModel(model, None, buffer)
        self.cameras.serve(model, self.entities)
        entities = [dict(e.handshake(model), camera_topics=self.cameras.topics(e.prefix),
                         **self.controllers.handshake(e))
                    for e in self.entities]
        reply = {
            "op": "hello_ok", "session_id": session.id, "urlab_version": f"mjblend/{self.host.version}",
            "server": "mjblend", "protocol": PROTOCOL_VERSION,
            "mujoco_version": mujoco.mj_versionString(), "mujoco_version_int": int(mujoco.mj_version()),
            "manager_present": True, "step_mode": self._word(self.mode, request),
            "observations": level, "mjb": buffer.tobytes(), "mjb_size": int(buffer.size),
            "entities": entities,
            "articulations": [e for e, entity in zip(entities, self.entities, strict=True)
                              if entity.kind == "articulation"],
            "global_cameras": self.cameras.topics("global"), "scene": self.host.name,
        }
        # (URLab's pool and discover_static read the ports here; no `host` unless shared memory
        # is served: URLab's client with transport "auto" moves to it on its own host)
        instance = dict(self.instance, manager_present=True, busy=self.leases.busy(),
                        urlab_version=reply["urlab_version"], capabilities=capabilities(self))
        if self.shm is not None:  # (empty unless it serves: URLab's client moves to what this names)
            shm_fields = self.shm.handshake_fields()
            instance.update(shm_fields.pop("instance", {}))
            reply.update(shm_fields)
        reply["instance"] = instance
        if files is not None:
            reply["mjcf_compiled"], reply["vfs_assets"] = files
        return reply

    def _compiled_files(self) -> tuple[str, dict]:
        """URLab's include_assets: (MJCF text, {bare file name: bytes}) of the model served."""
        try:
            files = self.host.compiled_files()
        except ValueError as problem:
            raise ProtocolError("unsupported", f"the model cannot be shipped as MJCF: {problem}") from None
        if files is None:
            raise ProtocolError("unsupported", "this server cannot ship the model as MJCF with assets")
        return files

    def op_meta(self, request: dict) -> dict:
        ops = [{"name": name, "category": op.category, "namespace": op.namespace,
                "required_fields": list(op.required), "reply_fields": list(op.reply)}
               for name, op in self.ops.items()]
        return {"op": "meta_ok", "ops": ops, "modes": ["live", "direct", "puppet"],
                "not_served": sorted(self.not_served), "unsupported": dict(sorted(self.not_served.items()))}

    def op_shutdown(self, request, session) -> dict:
        if not self.host.remote_stop:
            raise ProtocolError("unsupported", "this server is stopped from Blender, not by clients")
        self.stop_requested.set()
        return {"op": "shutdown_ok", "stopping": True}

    # ------------------------------------------------------------------ step

    def _level(self, request: dict, default: str) -> str:
        level = fields.string(request, "observations", default)
        if level not in observations.LEVELS:
            raise ProtocolError("bad_value",
                                f"'observations' must be one of {', '.join(observations.LEVELS)}")
        return level

    def _reply(self, op: str, shot, request: dict, session) -> dict:
        reply = observations.observation(op, shot, self.entities, self._level(request, session.observations),
                                         self.controllers.observed())
        wanted = self._included_cameras(request)
        if wanted:  # (this state's frames, rendered off this thread: the reply waits for them)
            snapshot = None
            runner = self._borrowed
            drawn_by = [self.cameras.renderer_of(self.cameras.find(name), renderer)
                        for name, renderer in wanted.items()]
            if runner is not None and "blender" in drawn_by:
                snapshot = runner.publish_now()  # (what Blender's objects show: this state)
            reply["cameras"] = self.cameras.capture(shot, wanted, snapshot=snapshot)
        return reply

    def _check_level(self, request: dict) -> None:
        """A bad observation level, or a camera that cannot be included, is refused
        before anything is applied."""
        self._level(request, "standard")
        asked = self._included_cameras(request)
        included = [self.cameras.find(name) for name in asked]
        for camera in included:
            self.cameras.check(camera, asked[camera.name])
        drawn_by = {c.name: self.cameras.renderer_of(c, asked[c.name]) for c in included}
        if included:
            self.cameras.prepare([c for c in included if drawn_by[c.name] == "mujoco"])
            self.cameras.prepare_blender([c for c in included if drawn_by[c.name] == "blender"])

    def _included_cameras(self, request: dict) -> dict:
        """URLab's include_cameras as {name: renderer or None (the camera's)}: true (every
        camera), a name, a list of names, or {name: "sync" | "latest" (both render this
        state) | {"renderer": "mujoco" | "blender"}}."""
        asked = request.get("include_cameras")
        if asked is None or asked is False:
            return {}
        if asked is True:
            return dict.fromkeys(self.cameras.cameras)
        if isinstance(asked, str):
            return {asked: None}
        if isinstance(asked, list):
            return dict.fromkeys(asked)
        if isinstance(asked, dict):
            wanted = {}
            for name, value in asked.items():
                if isinstance(value, dict):
                    renderer = value.get("renderer")
                    if renderer is not None and not isinstance(renderer, str):
                        raise ProtocolError("bad_value", f"include_cameras[{str(name)[:60]!r}].renderer is "
                                            "'mujoco' or 'blender'")
                    wanted[name] = renderer
                else:
                    wanted[name] = None
            return wanted
        raise ProtocolError("bad_value", "include_cameras is true, a camera name, a list of names or a map")

    def _send(self, runner, command, what: str):
        """Apply `command` and return the state after it: a snapshot published after
        it, or (direct and puppet modes, the simulation lent to the bridge) the
        state itself, the command run on this thread. step_timeout if the physics
        thread does not get to it in time."""
        if runner.lent:
            try:
                runner.run_here(command)
            except ValueError as problem:
                raise ProtocolError("bad_value", f"{what}: {problem}") from None
            if self.cameras.blender_streaming:  # (Blender's objects show snapshots: this state's)
                runner.publish_now()
            state = observations.LiveState(runner)
            self.on_state(state)
            self.cameras.offer(state)
            return state
        seq = runner.send(command)
        if not runner.wait(seq, self.step_timeout):
            raise ProtocolError("step_timeout", f"{what} did not finish within {self.step_timeout:g} s "
                                "(it goes on; its reply is lost)")
        shot = runner.latest
        if shot.message_id and shot.message and shot.applied == seq and "not applied" in shot.message:
            raise ProtocolError("bad_value", shot.message)
        return shot

    def _controls(self, request: dict):
        """(control values, their actuator ids, body ids, (n, 6) wrenches, control law
        changes) of the request's per-entity ctrl / ctrl_map / control_mode /
        xfrc_applied (None, None, (), None, None for none). Checked whole before
        anything is applied; the controllers (bridge/controllers.py) take the
        targets of the articulations they drive."""
        blocks = (fields.mapping(request, "per_articulation", None) or fields.mapping(request, "arts", None)
                  or {})
        index, values, bodies, wrenches, plans = [], [], [], [], []
        by_prefix = self.by_prefix
        for prefix, block in blocks.items():
            entity = by_prefix.get(prefix)
            if entity is None:
                raise ProtocolError("unknown_articulation", f"no entity {prefix!r} (known: "
                                    f"{', '.join(by_prefix) or 'none'})")
            if not isinstance(block, dict):
                raise ProtocolError("bad_value", f"per_articulation[{prefix!r}] must be a map")
            ids, sent = None, None
            if block.get("ctrl") is not None:
                sent = fields.as_vector(block["ctrl"], f"{prefix}.ctrl", len(entity.actuators))
                ids = entity.actuators
            ctrl_map = block.get("ctrl_map")
            if ctrl_map is not None:
                if not isinstance(ctrl_map, dict):
                    raise ProtocolError("bad_value", f"{prefix}.ctrl_map must be a map of name: value")
                named, given = [], []
                for name, value in ctrl_map.items():
                    if name not in entity.actuator_names:
                        raise ProtocolError("unknown_actuator", f"{prefix} has no actuator {name!r}")
                    named.append(int(entity.actuators[entity.actuator_names.index(name)]))
                    given.append(float(fields.as_vector([value], f"{prefix}.ctrl_map[{name!r}]")[0]))
                ids = np.concatenate([ids, named]).astype(np.int64) if ids is not None \
                    else np.asarray(named, dtype=np.int64)
                sent = np.concatenate([sent, given]) if sent is not None else np.asarray(given)
            raw_ids, raw_values, plan = self.controllers.route(entity, block, ids, sent)
            if plan is not None:
                plans.append(plan)
            if raw_ids is not None and len(raw_ids):
                index.append(raw_ids)
                values.append(raw_values)
            xfrc = block.get("xfrc_applied")
            if xfrc is not None:
                if not isinstance(xfrc, dict):
                    raise ProtocolError("bad_value", f"{prefix}.xfrc_applied must be a map of body: 6 values")
                for name, wrench in xfrc.items():
                    if not isinstance(name, str):
                        raise ProtocolError("bad_value", f"a body name must be a string, not {name!r:.40}")
                    body = self._named(OBJ.mjOBJ_BODY, name, entity)
                    if body <= 0:
                        raise ProtocolError("unknown_body", f"no body {name!r} in {prefix}")
                    bodies.append(body)
                    wrenches.append(fields.as_vector(wrench, f"{prefix}.xfrc_applied[{name!r}]", 6))
        if len(index) > 1:
            index, values = [np.concatenate(index)], [np.concatenate(values)]
        return ((values[0] if index else None), (index[0] if index else None),
                tuple(bodies), (np.asarray(wrenches) if bodies else None), plans)

    @staticmethod
    def _controlled(request: dict) -> list[str]:
        """The entities a step's per-entity blocks write (ctrl, ctrl_map, xfrc_applied):
        the ones a control claim gates (an observation-only block writes nothing)."""
        blocks = (fields.mapping(request, "per_articulation", None) or fields.mapping(request, "arts", None)
                  or {})
        return [prefix for prefix, block in blocks.items() if isinstance(block, dict) and any(
            block.get(key) is not None for key in ("ctrl", "ctrl_map", "xfrc_applied"))]

    def op_step(self, request, session) -> dict:
        self._check_level(request)
        runner = self._runner()
        asked = request.get("mode")
        if asked is not None:
            if not isinstance(asked, str) or asked not in MODES:
                raise ProtocolError("bad_mode", f"unknown mode {str(asked)[:40]!r}")
            if MODES[asked] != self.mode:
                raise ProtocolError("mode_mismatch", f"the step says mode {asked!r} but the server is in "
                                    f"{self._word(self.mode, request)!r}: send set_mode first")
        count = fields.integer(request, "n_steps", 1, low=0, high=MAX_STEPS)
        if self.mode == "puppet":
            model = self.model
            qpos = fields.vector(request, "qpos", model.nq, None)
            qvel = fields.vector(request, "qvel", model.nv, None)
            ctrl = fields.vector(request, "ctrl", model.nu, None)
            when = fields.number(request, "time", None)
            if qpos is None:
                raise ProtocolError("missing_field",
                                    "a puppet step sends the full qpos (and qvel, ctrl, time)")
            self.leases.check_control(request, session, self.by_prefix)  # (it writes every entity)
            command = commands.PushState(qpos, qvel, ctrl, when)
            shot = self._send(runner, command, "the pushed state")
            reply = self._reply("step_ok", shot, request, session)
            pert = command.result.get("perturbation")
            if pert is not None:
                body, wrench = pert
                reply["perturbation"] = {"body": mujoco.mj_id2name(model, OBJ.mjOBJ_BODY, body) or "",
                                         "body_id": int(body), "xfrc_applied": wrench,
                                         "force": wrench[:3], "torque": wrench[3:]}
            return reply
        values, index, bodies, wrenches, plans = self._controls(request)
        self.leases.check_control(request, session, self._controlled(request))
        if bodies and self.mode == "live":
            raise ProtocolError("unsupported", "xfrc_applied in live mode: switch to direct mode "
                                "(a wrench must last a known number of steps)")
        laws = self.controllers.commit(plans)
        if self.mode == "direct":
            shot = self._send(runner, commands.DirectStep(count, values, index, bodies, wrenches, laws),
                              f"{count} steps")
            return self._reply("step_ok", shot, request, session)
        # live: the scene plays on its own; apply the controls, wait for n new snapshots
        start = runner.latest.frame
        if values is not None or laws:
            shot = self._send(runner, commands.SetControls(values, index, laws), "the controls")
            start = shot.frame
        if not runner.playing or count == 0:
            return self._reply("step_ok", self._state(runner), request, session)
        shot = runner.wait_frame(start + count, self.step_timeout)
        if shot is None:
            raise ProtocolError("step_timeout", f"no {count} new snapshots within {self.step_timeout:g} s "
                                "(is the simulation paused or very slow?)")
        return self._reply("step_ok", shot, request, session)

    def op_reset(self, request, session) -> dict:
        self._check_level(request)
        runner = self._runner()
        model = self.model
        keyframe = -1
        name = fields.string(request, "keyframe_name", None)
        if name is not None:
            keyframe = self._named(OBJ.mjOBJ_KEY, name)
            if keyframe < 0:
                known = [mujoco.mj_id2name(model, OBJ.mjOBJ_KEY, k) or f"#{k}" for k in range(model.nkey)]
                raise ProtocolError("unknown_keyframe", f"no keyframe {name!r} (the model has: "
                                    f"{', '.join(known) or 'none'})")
        if request.get("seed") is not None:
            fields.integer(request, "seed")  # (recorded by URLab, not used by MuJoCo: checked only)
        index, values = self._qpos_overrides(request)
        self._send(runner, commands.Reset(keyframe), "the reset")
        shot = self._send(runner, commands.SetQpos(index, values), "the qpos") if index is not None \
            else self._state(runner)
        return self._reply("reset_ok", shot, request, session)

    def _named(self, obj, name: str, entity=None) -> int:
        """An element by its compiled name, or by its name in its model root (a
        served scene's elements carry their root's prefix): `entity`'s root, else
        any; -1 if none."""
        roots = [entity] if entity is not None else [e for e in self.entities if e.kind == "articulation"]
        for candidate in (name, *(f"{e.prefix}_{name}" for e in roots)):
            found = mujoco.mj_name2id(self.model, obj, candidate)
            if found >= 0:
                return found
        return -1

    def _qpos_overrides(self, request):
        per = fields.mapping(request, "per_articulation_qpos", None)
        if not per:
            return None, None
        by_prefix = self.by_prefix
        index, values = [], []
        for prefix, joints in per.items():
            entity = by_prefix.get(prefix)
            if entity is None:
                raise ProtocolError("unknown_articulation", f"no entity {prefix!r}")
            if not isinstance(joints, dict):
                raise ProtocolError("bad_value",
                                    f"per_articulation_qpos[{prefix!r}] must be a map of joint: qpos")
            for joint, value in joints.items():
                if joint not in entity.joint_names:
                    raise ProtocolError("unknown_joint", f"{prefix} has no joint {joint!r}")
                j = int(entity.joints[entity.joint_names.index(joint)])
                width = QPOS_WIDTH[int(self.model.jnt_type[j])]
                vector = fields.as_vector(value if isinstance(value, list) else [value],
                                          f"{prefix}.{joint}", width)
                start = int(self.model.jnt_qposadr[j])
                index.extend(range(start, start + width))
                values.extend(vector.tolist())
        return np.asarray(index, dtype=np.int64), np.asarray(values)

    def op_forward(self, request, session) -> dict:
        self._check_level(request)
        runner = self._runner()
        shot = self._send(runner, commands.Forward(), "mj_forward")
        return self._reply("forward_ok", shot, request, session)

    def op_get_state(self, request, session) -> dict:
        return self._reply("get_state_ok", self._state(self._runner()), request, session)

    # -------------------------------------------------------------- runtime

    def _word(self, mode: str, request: dict) -> str:
        """`mode` in the vocabulary the request used (URLab's newest: freerun, ...)."""
        asked = request.get("mode")
        new = (isinstance(asked, str) and asked in NEW_WORDS.values()) or request.get("vocabulary") == "new"
        return NEW_WORDS[mode] if new else mode

    def op_set_mode(self, request, session) -> dict:
        asked = fields.string(request, "mode")
        if asked not in MODES:
            raise ProtocolError("bad_mode", f"unknown mode {asked[:40]!r}: live, direct, puppet "
                                "(or freerun, stepped, statepushed)")
        runner = self._runner()
        self.leases.check_mode(request, session, MODES[asked] != self.mode)
        previous, self.mode = self.mode, MODES[asked]
        self.status.mode = self.mode
        if self.mode != "puppet":
            self.recordings.stop_replay()
        if self.mode == "live":
            self._give_back()
            self._send(runner, commands.Play(), "the mode change")
        else:
            self._send(runner, commands.Pause(), "the mode change")
            if not runner.lent:
                self._borrow(runner)
        return {"op": "set_mode_ok", "previous_mode": self._word(previous, request),
                "current_mode": self._word(self.mode, request)}

    def op_set_paused(self, request, session) -> dict:
        paused = fields.boolean(request, "paused")
        self._send(self._runner(), commands.Pause() if paused else commands.Play(), "pause")
        return {"op": "set_paused_ok", "paused": paused}

    def op_set_sim_speed(self, request, session) -> dict:
        percent = min(max(fields.number(request, "percent"), 5.0), 100.0)  # (URLab's clamp)
        self._send(self._runner(), commands.SetSpeed(percent / 100.0), "the speed")
        return {"op": "set_sim_speed_ok", "percent": percent}

    def op_set_qpos(self, request, session) -> dict:
        target = fields.string(request, "target", None) or fields.string(request, "articulation", None)
        by_prefix = self.by_prefix
        if target is None and len(by_prefix) == 1:
            target = next(iter(by_prefix))
        entity = by_prefix.get(target)
        if entity is None:
            raise ProtocolError("unknown_articulation",
                                f"no entity {target!r} (known: {', '.join(by_prefix)})")
        if not len(entity.joints):
            raise ProtocolError("no_joints", f"{target} has no joints")
        qpos = request.get("qpos")
        free = entity.free_joint >= 0 and int(entity.joints[0]) == entity.free_joint
        shortcut = free and isinstance(qpos, list) and len(qpos) == 7 and len(entity.qpos_index) != 7
        if shortcut:
            start = int(self.model.jnt_qposadr[entity.free_joint])
            index = np.arange(start, start + 7)
        else:
            index = entity.qpos_index
            if isinstance(qpos, list) and len(qpos) != len(index):
                raise ProtocolError("dim_mismatch",
                                    f"qpos has {len(qpos)} values; {target} takes {len(index)}"
                                    + (" (or 7 for its free base)" if free else ""))
        values = fields.as_vector(qpos, "'qpos'", len(index))
        self.leases.check_control(request, session, [target])
        self._send(self._runner(), commands.SetQpos(index, values), "set_qpos")
        return {"op": "set_qpos_ok", "target": target, "actor_id": target, "qpos": values,
                "free_base_shortcut": bool(shortcut)}

    def _mocap(self, request) -> tuple[str, int, int]:
        name = fields.string(request, "body")
        body = self._named(OBJ.mjOBJ_BODY, name)
        if body < 0:
            raise ProtocolError("unknown_body", f"no body {name!r}")
        mocap = int(self.model.body_mocapid[body])
        if mocap < 0:
            raise ProtocolError("not_mocap_body", f"body {name!r} is not a mocap body")
        return name, mocap, body

    def op_set_mocap_pose(self, request, session) -> dict:
        name, mocap, body = self._mocap(request)
        shot = self._state(self._runner())
        pos = fields.vector(request, "pos", 3, None)
        quat = fields.vector(request, "quat", 4, None)
        if pos is None and quat is None:
            raise ProtocolError("missing_field", "set_mocap_pose needs 'pos' or 'quat'")
        pos = shot.mocap_pos[mocap] if pos is None else pos
        if quat is not None:
            norm = np.linalg.norm(quat)
            if norm == 0:
                raise ProtocolError("bad_value", "'quat' must not be zero")
            quat = quat / norm
        quat = shot.mocap_quat[mocap] if quat is None else quat
        self.leases.check_control(request, session, [e.prefix for e in self.entities if body in e.bodies])
        shot = self._send(self._runner(), commands.SetMocap((mocap,), np.array([pos]), np.array([quat])),
                          "the mocap pose")
        return {"op": "set_mocap_pose_ok", "body": name, "pos": shot.mocap_pos[mocap].tolist(),
                "quat": shot.mocap_quat[mocap].tolist()}

    def op_read_mocap_pose(self, request, session) -> dict:
        name, mocap, _ = self._mocap(request)
        shot = self._state(self._runner())
        return {"op": "read_mocap_pose_ok", "body": name, "pos": shot.mocap_pos[mocap],
                "quat": shot.mocap_quat[mocap]}

    def op_get_contacts(self, request, session) -> dict:
        limit = fields.integer(request, "max_contacts", 64, low=0, high=100_000)
        wanted = fields.mapping(request, "filter", None) or {}
        for key in wanted:
            if key not in ("body1", "body2", "geom1", "geom2") or not isinstance(wanted[key], str):
                raise ProtocolError("bad_value",
                                    f"filter keys are body1, body2, geom1, geom2 (names); not {key!r}")
        found: dict = {}

        def read(sim):  # (on the runner's thread: mj_contactForce reads MjData)
            found["rows"], found["truncated"] = observations.contact_rows(sim.model, sim.data, wanted, limit)
        self._send(self._runner(), commands.Call(read, what="get_contacts"), "get_contacts")
        return {"op": "get_contacts_ok", "n_contacts": len(found["rows"]), "truncated": found["truncated"],
                "contacts": found["rows"]}

    def op_list_keyframes(self, request, session) -> dict:
        model = self.model
        keys = []
        for k in range(model.nkey):
            keys.append({"name": mujoco.mj_id2name(model, OBJ.mjOBJ_KEY, k) or "", "id": k,
                         "time": float(model.key_time[k]), "qpos": model.key_qpos[k],
                         "qvel": model.key_qvel[k],
                         "ctrl": model.key_ctrl[k], "mocap_pos": model.key_mpos[k].ravel(),
                         "mocap_quat": model.key_mquat[k].ravel()})
        return {"op": "list_keyframes_ok", "keyframes": keys}

    def op_set_sim_options(self, request, session) -> dict:
        changes = sim_options.parse(fields.mapping(request, "options"))

        def apply(sim):
            sim_options.apply(sim.model.opt, changes)
        self._send(self._runner(), commands.Call(apply, what="set_sim_options"), "set_sim_options")
        return {"op": "set_sim_options_ok", "options": sim_options.echo(self.model.opt)}

    # --------------------------------------------------------------- cameras

    def _camera_entries(self, request) -> dict:
        cameras = fields.mapping(request, "cameras")
        if not cameras:
            raise ProtocolError("bad_request", "'cameras' had no entries")
        self._runner()
        self.cameras.serve(self.model, self.entities)
        for name in cameras:
            self.cameras.find(name)
        return cameras

    def op_set_camera_streaming(self, request, session) -> dict:
        """{cameras: {name: bool | {zmq, shm, renderer}}}; idempotent. As URLab: a map
        that names neither transport turns both on, one that names one leaves the other off."""
        wanted = {}
        for name, value in self._camera_entries(request).items():
            renderer = None
            if isinstance(value, bool):
                zmq_on = shm_on = value
            elif isinstance(value, dict):
                renderer = value.get("renderer")
                if renderer is not None and not isinstance(renderer, str):
                    raise ProtocolError("bad_value", f"cameras[{name!r}].renderer is 'mujoco' or 'blender'")
                named = [key for key in ("zmq", "shm") if key in value]
                if any(not isinstance(value[key], bool) for key in named):
                    raise ProtocolError("bad_value", f"cameras[{name!r}]: zmq and shm are true or false")
                zmq_on, shm_on = (value.get("zmq", False), value.get("shm", False)) if named else (True, True)
            else:
                raise ProtocolError("bad_value", f"cameras[{name!r}] is true, false or {{zmq, shm}}")
            wanted[name] = (zmq_on, shm_on and self.shm is not None, renderer)
        cameras = self.cameras.set_streaming(wanted)
        runner = self._runner()
        if runner.lent:  # (a camera switched on streams the state now, not only the next step's)
            self.cameras.offer(observations.LiveState(runner))
        return {"op": "set_camera_streaming_ok", "cameras": cameras}

    def op_set_camera_delay(self, request, session) -> dict:
        """{cameras: {name: delay_s | {delay_s, jitter_s, clock, seed, on_state_change, max_fps}}}."""
        wanted = {}
        for name, value in self._camera_entries(request).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = {"delay_s": value}
            if not isinstance(value, dict):
                raise ProtocolError("bad_value", f"cameras[{name!r}] is a delay in seconds or a map")
            where = f"cameras[{name!r}]"
            delay = Delay(delay_s=fields.number(value, "delay_s", 0.0),
                          jitter_s=fields.number(value, "jitter_s", 0.0),
                          clock=fields.string(value, "clock", "sim").lower(),
                          seed=fields.integer(value, "seed", 0),
                          on_state_change=fields.boolean(value, "on_state_change", True),
                          max_fps=fields.number(value, "max_fps", 0.0))
            if min(delay.delay_s, delay.jitter_s, delay.max_fps) < 0:
                raise ProtocolError("bad_value", f"{where}: delay_s, jitter_s and max_fps are >= 0")
            if delay.clock not in ("sim", "wall"):
                raise ProtocolError("bad_value", f"{where}.clock is 'sim' or 'wall', not {delay.clock!r:.40}")
            wanted[name] = delay
        return {"op": "set_camera_delay_ok", "cameras": self.cameras.set_delay(wanted)}

    def close(self) -> None:
        """The server stops: the simulation given back, a replay ended, a recording stopped,
        the cameras' streams closed."""
        with self.lock:
            self._give_back()
        self.recordings.close()
        self.uploads.close()
        self.cameras.stop()

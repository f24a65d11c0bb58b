"""A scene's live simulation: scan -> compile -> bind -> run -> show.

The simulation runs in an `engine.runner.Runner` (a physics thread in a window,
inline in scripts and `--background`); `LiveSimulation` is its Blender side, on
the main thread only, owned by the scene's `SceneSession` (live/scene_session.py):

- bind: after each compile, a new `Binding` (live/binding.py): every element's
  MuJoCo id by its object, what the display writes, where MuJoCo's world sits;
- commands: what the user does (play, pause, step, reset, controls, a moved
  free body or mocap object, an edit's recompiled model) is sent to the runner;
- show: the runner's latest snapshot, through live/display.py (Objects, Fast
  or Auto), flex and skin vertices to their meshes;
- hold: the authored transform of every object the simulation moves is kept in
  the scene session's `held` table, which the scan reads (never a simulated
  pose as an authored one); stop puts it back exactly;
- edits: a property edit or a moved element recompiles, carrying the state
  over (EngineSession.replace, sent to the runner); a failed recompile keeps
  the last good model running.
"""

from __future__ import annotations

import contextlib
import time

import bpy
import mujoco
import numpy as np
from mathutils import Quaternion, Vector

from ..components import changes, spec_io
from ..engine import commands
from ..engine.runner import Runner
from ..engine.recording import Recorder, steps_for_frames
from ..engine.session import (EngineSession, TooManySteps, check_keyframe, check_step_count, check_timestep,
                              clamped_control, steps_for)
from ..scan import compile_spec, scene_scan
from ..scene import preferences
from ..scene.errors import MJBlendError
from ..scene.transforms import HeldPose, baked, transform
from ..sync import timeline
from ..sync.objects import put_transform
from . import binding as binding_, view_follow
from .binding import Binding, is_identity
from .display import Display

STRUCTURE_CHECK_INTERVAL = 1.0  # seconds between checks for added / deleted objects
SCALAR_JOINTS = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))  # simulate's sliders
STOP_TIMEOUT = 2.0  # seconds to wait for the physics thread to end
SHOW_WAIT = 0.5  # seconds an operator waits for a paused runner to show its command
THREADED: bool | None = None  # None: the preference, in a window; inline without one
RAISE_LIMIT = "raise it in Edit > Preferences > Add-ons > MJBlend > Step Limit"


class SimulationError(MJBlendError):
    """The scene cannot simulate."""


class SimulationEnded(SimulationError):
    """The simulation ended itself (objects it is bound to were deleted and the scene
    without them does not compile): it has been dropped, objects back as authored."""


def threaded_default(prefs: preferences.Settings) -> bool:
    """A physics thread in a window (unless the preference turns it off); inline in
    `--background` and the bpy module, where nothing else would keep time."""
    if THREADED is not None:
        return THREADED
    return not bpy.app.background and prefs.physics_thread


class LiveSimulation:
    """The simulation of one scene: its runner, the commands sent to it, the edits it
    follows, the authored poses it holds, and the Binding of its current model. Made
    by `SceneSession.start_simulation`."""

    def __init__(self, owner, prefs: preferences.Settings, threaded: bool | None = None,
                 for_bridge: bool = False, entity_prefixes=None):
        self.owner = owner  # the scene's SceneSession
        self.prefs = prefs  # what the simulation keeps of the preferences it started with
        self.scene = owner.scene
        self.name = owner.scene.name
        self.threaded = threaded_default(prefs) if threaded is None else threaded
        # served over the bridge: every model root attached with its entity prefix
        # (`entity_prefixes`: roots -> prefixes, decided by the bridge's side); see `serve_bridge`
        self.for_bridge = for_bridge
        self.entity_prefixes = entity_prefixes
        # ((model, its roots' entity prefixes), the one before): what the bridge reads
        # from its own thread, made here on the main thread (a recompile's model may
        # reach the runner a moment after it is bound)
        self.served_prefixes: tuple = ()
        # ((model, the SceneSpec it compiled from), the one before): the bridge's
        # `include_assets` writes the spec the served model came from (main thread)
        self.served_specs: tuple = ()
        self._built = None  # the SceneSpec of the last build of several roots (or for the bridge)
        self.runner: Runner | None = None
        self.binding: Binding | None = None  # of the current model
        self.error = ""  # the last failed recompile, shown in the panels
        self.error_objects: list[str] = []
        self.warnings: list[str] = []  # scan warnings of the last compile
        self.held = owner.held  # as_pointer() -> HeldPose (the scene session's table)
        self.held_vertices: dict[int, tuple] = {}  # as_pointer() -> (object, authored coords)
        self.modal_running = False
        self.display = Display(self.scene)
        self.moving_pointers: set = set()  # what the simulation writes (its depsgraph reports are not edits)
        self.profile = None  # live/profile.py's Profile, made when first shown
        self.plot_request = None  # the plots' last engine.plots.Request sent (ui/plots)
        self.readout_request = None  # the (watch, figures) requests last sent (ui/readouts.ask)
        self.reported_message = 0  # message_id of the last snapshot message reported
        self._pending_controls: dict[int, tuple[int, float]] = {}  # actuator -> (seq, value)
        self._pending_positions: dict[int, tuple[int, float]] = {}  # joint -> (seq, value)
        self._sent_mocap = None
        self._shown_frame = -1
        self._scanners: list = []
        self._signature = None  # of several model roots' structure, at the last build
        self._next_structure_check = 0.0
        self._object_count = len(owner.scene.objects)
        self._edits = changes.Cursor()  # edits of the model since this simulation last looked
        # attached models (several roots, or served over the bridge): where each model root
        # stood at the last compile, {as_pointer(): (root, (location, rotation))} (see moved_roots)
        self._root_frames: dict = {}
        self._visual_root = None  # the one model root of a model not attached (see _copy_visual)
        self.recorder: Recorder | None = None  # recording while it runs (see start_recording)
        self.started_from_frame: int | None = None  # the baked frame whose state it started from
        self.compile()

    @property
    def model(self) -> mujoco.MjModel | None:
        """The model of the current binding."""
        return self.binding.model if self.binding is not None else None

    @property
    def scanners(self) -> list:
        """The scanners of the running model's compile: their `elements` bind every
        scanned object to its MuJoCo id (geoms, sites and cameras too, which the
        Binding leaves out)."""
        return self._scanners

    @property
    def session(self) -> EngineSession | None:
        """The engine session (its MjData is the runner's: read it only inline)."""
        return self.runner.session if self.runner is not None else None

    @property
    def latest(self):
        """The runner's latest snapshot: what every view shows."""
        return self.runner.latest

    @property
    def playing(self) -> bool:
        return self.runner is not None and self.runner.playing

    @property
    def ended(self) -> bool:
        """Whether the simulation has ended (its runner stopped)."""
        return self.runner is None

    @property
    def threaded_runner(self) -> bool:
        """Whether the runner steps on a physics thread (False: inline, or none)."""
        return self.runner is not None and self.runner.threaded

    def wait(self, seq: int, timeout: float | None) -> bool:
        """Wait for command `seq` (None: as long as it takes); False on the timeout."""
        return self.runner.wait(seq, timeout)

    def cancel(self, seq: int) -> None:
        """Stop command `seq` (a long Step or Record) at the next step boundary."""
        self.runner.cancel(seq)

    # ------------------------------------------------------------ compile

    def _build(self, edited: bool):
        """(spec, updated, scanners, roots, warnings); updated as `ScanCache.spec`
        says: 0 when nothing changed."""
        roots = scene_scan.model_roots(self.scene)
        if not roots:
            raise SimulationError("Nothing to simulate: the scene has no MuJoCo model "
                                  "(File > Import > MuJoCo, or add a model root)")
        warnings: list[str] = []
        try:
            if len(roots) == 1 and not self.for_bridge:
                try:
                    spec, updated = self.owner.scans.spec(roots[0], warnings)
                except scene_scan.ScanError as error:  # named like build_spec names it
                    raise SimulationError(f"{roots[0].name}: {error}", error.objects or [roots[0]]) from None
                return spec, updated, [self.owner.scans.scanner_of(roots[0])], roots, warnings
            # several models: attached into one spec, rebuilt on every change
            signature = tuple(scene_scan.structure_signature(r) for r in roots)
            if not edited and signature == self._signature:
                return None, 0, self._scanners, roots, warnings
            prefixes = self.entity_prefixes(roots) if self.for_bridge else None
            built = compile_spec.build_spec(roots, warnings, held=self.held, entity_prefixes=prefixes)
            spec, scanners = built.spec, built.scanners
            self._built = built
            self._signature = signature
            return spec, None, scanners, roots, warnings
        except (scene_scan.ScanError, compile_spec.CompileError) as error:
            raise SimulationError(str(error), error.objects) from None

    def compile(self, edited: bool = True) -> bool:
        """(Re)compile the scene if it changed; True if a new model now runs.
        Raises SimulationError when there is no runner yet and it cannot start;
        a running simulation keeps its last good model and records the error."""
        try:
            spec, updated, scanners, roots, warnings = self._build(edited or self.runner is None)
            if updated == 0 and self.runner is not None:
                return False
            model, data = compile_spec.compiled(spec, self.scene.objects, scanners, warnings)
        except (SimulationError, compile_spec.CompileError) as error:
            if self.runner is None:
                raise SimulationError(str(error), error.objects) from None
            self.error = str(error)
            self.error_objects = [o.name for o in error.objects]
            return False
        self.error, self.error_objects, self.warnings = "", [], warnings
        self._scanners = scanners
        for attr, value in self._overrides():  # (the model is not shared yet)
            spec_io.set_attr(model.opt, attr, value)
        self.display.clear()  # its groups are of the old binding
        ids = self._bind(model, scanners, roots, data)
        attached = len(roots) > 1 or self.for_bridge
        self._root_frames = {r.as_pointer(): (r, root_frame(r)) for r in roots} if attached else {}
        self._visual_root = roots[0] if len(roots) == 1 and not attached else None  # (_copy_visual)
        if self.for_bridge:
            self.served_prefixes = ((model, self.entity_prefixes(roots)), *self.served_prefixes[:1])
            self.served_specs = ((model, self._built), *self.served_specs[:1])
        if self.runner is None:
            keyframe = self.settings.keyframe if self.settings.keyframe < model.nkey else -1
            session = EngineSession(model, ids, keyframe=keyframe, data=data)
            baked = timeline.recorded_state(self.scene, model, self.scene.frame_current)
            if baked is not None:  # a baked scene: on from the current frame's recorded state
                session.load_state(baked)
                self.started_from_frame = self.scene.frame_current
            session.set_speed(self.settings.realtime)
            session.set_fast_forward(self.settings.fast_forward)
            settings = self.settings
            session.set_noise(settings.noise_scale, settings.noise_rate, settings.noise_seed)
            prefs = self.prefs
            self.runner = Runner(session, threaded=self.threaded, history_seconds=prefs.history_seconds,
                                 history_bytes=prefs.history_megabytes << 20,
                                 name=f"MJBlend physics ({self.name})")
            # keyframe -1 or a key: its mocap poses are MuJoCo's, not the objects'
            self.send_mocap()
            self.runner.start()
        else:
            seq = self.runner.send(commands.Replace(model, ids, data))
            self.send_mocap()
            if not self.runner.lent:  # (lent to the bridge, only its thread applies it: never wait on it)
                self.runner.wait(seq, SHOW_WAIT)
        self.show(force=True)
        return True

    def serve_bridge(self, entity_prefixes) -> None:
        """Compile for the bridge from now on (every model root attached with the entity
        prefix `entity_prefixes(roots)` gives it), the state carried over as for any edit;
        SimulationError (and the model as it was) if the scene does not compile now."""
        if self.for_bridge:
            return
        self.for_bridge, self.entity_prefixes = True, entity_prefixes
        if not self.compile(edited=True):
            self.for_bridge, self.entity_prefixes = False, None
            objects = [self.scene.objects[n] for n in self.error_objects if n in self.scene.objects]
            raise SimulationError(self.error or "The scene does not compile for the bridge", objects)

    @property
    def settings(self):
        return self.scene.mujoco_simulation

    def _overrides(self) -> list[tuple]:
        return option_overrides(self.scene)

    def apply_overrides(self) -> None:
        """The overrides again, on the running model (between two steps)."""
        values = self._overrides()

        def apply(session):
            for attr, value in values:
                spec_io.set_attr(session.model.opt, attr, value)
        self.runner.send(commands.Call(apply, what="Option overrides"))

    # --------------------------------------------------------------- bind

    def _bind(self, model, scanners, roots, data) -> dict:
        """A new Binding of `model` (`data`: the compile's MjData of it, at qpos0, not
        shared yet); the ids by object the engine session keeps."""
        attached = len(roots) > 1 or self.for_bridge  # (build_spec attached them where they stand)
        self.binding = binding_.bind(model, data, scanners, roots, attached, self.scene.objects)
        self._sent_mocap = None
        self._hold()
        return self.binding.ids

    def regroup(self) -> None:
        """The objects that move with each driven body, as they are shown now (after a
        group switch showed or hid some: sync/groups.py; the Fast display's next
        instancer draws these)."""
        self.binding = self.binding.with_groups(self.scene.objects)

    def _hold(self) -> None:
        """Keep the authored transform of every object the simulation now moves;
        put back objects it no longer moves."""
        bound = self.binding
        moving = {o.as_pointer(): o for o, _b in bound.driven}
        moving.update({o.as_pointer(): o for o, *_rest in bound.mocap})
        for pointer in list(self.held):
            if pointer not in moving:
                self._restore_one(pointer)
        for pointer, obj in moving.items():
            if pointer not in self.held:
                self.held[pointer] = HeldPose(obj, baked(obj) or transform(obj))
        for obj, _kind, _i, _w in bound.deformed:
            pointer = obj.data.as_pointer()
            if pointer not in self.held_vertices:
                coords = np.empty(len(obj.data.vertices) * 3)
                obj.data.vertices.foreach_get("co", coords)
                self.held_vertices[pointer] = (obj.data, coords)
        self.moving_pointers = set(moving) | {o.as_pointer() for o, *_r in bound.deformed} \
            | set(self.held_vertices)

    # --------------------------------------------------------------- tick

    def tick(self, now: float, selected=()) -> bool:
        """One display frame: take edits (`selected`: the selected objects, which
        the user may have moved) and mocap moves, step if inline, show the latest
        snapshot. True if it showed a new one."""
        self.take_edits(selected, now)
        self.send_mocap()
        if self.runner.playing:
            self.runner.tick(now)  # (a threaded runner steps on its own)
        return self.show()

    def show(self, force: bool = False) -> bool:
        """Show the latest snapshot if it is new (and of the bound model). Raises
        SimulationEnded if bound objects were deleted and the scene no longer compiles."""
        shot = self.runner.latest
        if shot.model is not self.model or (shot.frame == self._shown_frame and not force):
            return False
        self._shown_frame = shot.frame
        try:
            self.display.show(shot, self.binding, self.held, self.settings.display)
        except ReferenceError:  # a bound object was deleted since the last structure check
            self.lost_objects()  # (its compile shows the new binding)
        view_follow.shown(self.owner, shot, self.binding.world, self.model)  # (the view with the objects)
        return True

    def show_snapshot(self, shot) -> bool:
        """Show snapshot `shot` now, latest or not (Blender's renderer draws the very state
        a bridge client stepped; the next `show` shows the latest again). False if it is
        of another model than the one bound."""
        if shot.model is not self.model:
            return False
        if shot.frame != self._shown_frame:
            self._shown_frame = shot.frame
            try:
                self.display.show(shot, self.binding, self.held, self.settings.display)
            except ReferenceError:
                self.lost_objects()
                return False
        return True

    # ----------------------------------------------------- deleted objects

    def deleted(self) -> list[str]:
        """Names of the objects of the current binding that were deleted."""
        return self.binding.deleted()

    def forget_deleted(self) -> None:
        """If the scene has fewer objects than at the last structure check: deleted
        objects out of the look-up tables panels and overlays read, until the next
        structure check recompiles without them (cheap: nothing is written)."""
        try:
            fewer = len(self.scene.objects) < self._object_count
        except ReferenceError:  # its scene was deleted
            return
        if fewer and self.deleted():
            self.binding = self.binding.without_deleted()

    def lost_objects(self) -> None:
        """Bound objects were deleted (a ReferenceError on the way): recompile without
        them now; if the scene no longer compiles, end the simulation, saying why."""
        gone = self.deleted()
        self.compile(edited=True)
        if self.deleted():  # the recompile failed: the binding is the old one
            self.end_for_deleted(gone)

    def end_for_deleted(self, gone: list[str]) -> None:
        """Drop the simulation (objects back as authored) and raise SimulationEnded."""
        names = ", ".join(repr(n) for n in gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
        it = "it" if len(gone) == 1 else "them"
        why = f": {self.error}" if self.error else ""
        self.owner.end_simulation(self, restore=True)
        raise SimulationEnded(f"The simulation stopped: {names} {'was' if len(gone) == 1 else 'were'} "
                              f"deleted and the scene without {it} does not simulate{why}")

    def take_message(self) -> str:
        """A message of the runner not reported yet (why it paused, a refused command)."""
        shot = self.runner.latest
        if shot.message_id == self.reported_message or not shot.message:
            return ""
        self.reported_message = shot.message_id
        return shot.message

    def take_edits(self, selected=(), now: float | None = None) -> bool:
        """Hand moves of simulated bodies, then edits of the model (see check_edits)."""
        self.take_user_moves(selected)
        return self.check_edits(now)

    def check_edits(self, now: float | None = None) -> bool:
        """Recompile if an element was edited or moved (not by the simulation),
        or, every STRUCTURE_CHECK_INTERVAL, if objects were added or removed."""
        touched, visual, moved = self._edits.read_visual_apart()
        if visual and not self._copy_visual(visual):
            touched |= visual  # (not the running model's single root: recompiled as any edit)
        roots_moved = self.moved_roots()
        try:
            edited = bool(touched) or bool(roots_moved) \
                or any(self._moved_itself(p) for p in moved - self.moving_pointers)
        except ReferenceError:  # an object reported as moved was deleted since
            edited = True
        count = len(self.scene.objects)  # (an added or deleted object changes it: checked at once)
        due = now is None or now >= self._next_structure_check or count != self._object_count
        if not (edited or due):
            return False
        start = time.perf_counter()
        compiled = self.compile(edited)
        if compiled and roots_moved:
            self._carry_free_bodies(roots_moved)
        self._object_count = count
        if not compiled and self.error:  # the last good model runs on, unless it lost objects
            gone = self.deleted()
            if gone:
                self.end_for_deleted(gone)
        if due and now is not None:
            # a big scene's check costs: at most ~2% of the main thread on it
            spent = time.perf_counter() - start
            self._next_structure_check = now + max(STRUCTURE_CHECK_INTERVAL, 50 * spent)
        return compiled

    def _copy_visual(self, visual: set[int]) -> bool:
        """Edits of only the model root's `<visual>` settings, copied into the running
        model's `vis` between two steps, without a recompile: MuJoCo's mjVisual only
        draws (the overlays' colours and sizes follow with the next snapshot), so the
        state goes on as it would have. The scene still scans to the same model. False
        where this is not the one root the running model was compiled from."""
        root = self._visual_root
        try:
            if root is None or visual != {root.as_pointer()}:
                return False
            found = scene_scan.visual_values(root)
        except ReferenceError:  # (deleted since: the structure check recompiles)
            return False
        if found is None:
            return False

        def copy_visual(session):  # (the runner's thread)
            scene_scan.put_visual(session.model.vis, found)
        self.runner.send(commands.Call(copy_visual, what="Visual settings"))
        return True

    def moved_roots(self) -> dict:
        """Attached models (several roots, or the bridge's): the model roots moved since
        the last compile, {as_pointer(): (the frame it stood in, the frame it stands in)}.
        A single model's MuJoCo world is its root's frame: moving that root moves the
        world with it, nothing to recompile."""
        out = {}
        for pointer, (root, before) in self._root_frames.items():
            try:
                now = root_frame(root)
            except ReferenceError:  # (deleted: the structure check recompiles without it)
                continue
            if now != before:
                out[pointer] = (before, now)
        return out

    def _carry_free_bodies(self, roots_moved: dict) -> None:
        """After a recompile for moved model roots: each moved model's free bodies of the
        world (their pose is qpos, in MuJoCo's world, which the new attach frame does not
        move) carried by the root's motion, linear velocity turned with them; joints,
        fixed bodies and mocap bodies follow the recompile itself. As a user who moves a
        model root in Blender sees it: the model moves where the root went, mid-motion."""
        model, moves = self.model, []
        for obj, body in self.binding.driven:
            joint = self.binding.free_joint(body)
            root = scene_scan.model_of(obj)
            if joint is None or model.body_parentid[body] != 0 or root is None:
                continue
            move = roots_moved.get(root.as_pointer())
            if move is not None:
                (loc0, rot0), (loc1, rot1) = move
                turn = rot1 @ rot0.inverted()
                shift = loc1 - turn @ loc0
                moves.append((int(model.jnt_qposadr[joint]), int(model.jnt_dofadr[joint]),
                              np.array(turn), np.array(shift)))
        if not moves:
            return

        def carry(session):  # (the runner's thread: it owns MjData)
            qpos, qvel = session.data.qpos, session.data.qvel
            for adr, dof, turn, shift in moves:
                pos, quat = np.empty(3), np.empty(4)
                mujoco.mju_rotVecQuat(pos, qpos[adr:adr + 3], turn)
                mujoco.mju_mulQuat(quat, turn, qpos[adr + 3:adr + 7])
                qpos[adr:adr + 3], qpos[adr + 3:adr + 7] = pos + shift, quat
                velocity = np.empty(3)
                mujoco.mju_rotVecQuat(velocity, qvel[dof:dof + 3], turn)
                qvel[dof:dof + 3] = velocity
            session.forward()
        self.runner.send(commands.Call(carry, what="Models carried with their moved roots"))

    def _moved_itself(self, pointer) -> bool:
        """A depsgraph 'moved' report is an edit only if the object's own
        transform changed (children of simulated bodies are reported too)."""
        for scanner in self._scanners:
            entry = scanner.elements.get(pointer)
            if entry is not None:
                block, kind, _element = entry
                return scanner.placements.get(pointer) != scene_scan._placement(block, kind, self.held)
        return False

    def take_user_moves(self, selected) -> int:
        """Simulated bodies the user moved since the last Objects sync (only
        selected objects can be moved by hand: only those are compared). A free
        body is put where the user put it, at rest; any other body's authored pose
        shifts by the move (its joints keep their state). Returns how many moved."""
        if self.display.written is None:
            return 0
        pos, quat = self.display.written
        bound = self.binding
        moved = 0
        for obj in selected:
            row = bound.row_of.get(obj.as_pointer())
            if row is None:
                continue
            location = Vector(obj.location)
            rotation = obj.rotation_quaternion.copy()
            written_loc = Vector(pos[row].astype(np.float32).tolist())
            written_rot = Quaternion(quat[row].astype(np.float32).tolist())
            if location == written_loc and rotation == written_rot:
                continue
            moved += 1
            joint = bound.free_joint(int(bound.driven_ids[row]))
            if joint is not None:
                self.runner.send(commands.SetJointQpos(joint, tuple(location) + tuple(rotation.normalized())))
                continue
            held_obj, authored = self.held[obj.as_pointer()]
            turn = rotation @ written_rot.inverted()
            new_location = Vector(authored.location) + (location - written_loc)
            new_rotation = turn @ Quaternion(authored.rotation_quaternion)
            authored = authored._replace(location=tuple(new_location),
                                         rotation_quaternion=tuple(new_rotation.normalized()))
            self.held[obj.as_pointer()] = HeldPose(held_obj, authored)
            changes.touch(obj)
        if moved:
            self.display.forget_written()  # shown again from the next snapshot
        return moved

    def send_mocap(self) -> None:
        """Mocap bodies follow their objects: their poses, sent when they changed."""
        if not self.binding.mocap:
            return
        try:
            self._send_mocap()
        except ReferenceError:  # a mocap object was deleted since the last structure check
            self.lost_objects()  # (the new binding's mocap poses are sent by its compile)

    def _send_mocap(self) -> None:
        model, key = self.model, self.runner.session.keyframe
        index, pos, quat = [], [], []
        for obj, mocap, body, to_mujoco in self.binding.mocap:
            index.append(mocap)
            if transform(obj) == self.held[obj.as_pointer()].transform:
                # where it was authored: the exact (double) pose of the model or keyframe
                pos.append(model.key_mpos[key, 3 * mocap:3 * mocap + 3] if key >= 0 else model.body_pos[body])
                quat.append(model.key_mquat[key, 4 * mocap:4 * mocap + 4] if key >= 0
                            else model.body_quat[body])
            elif is_identity(to_mujoco):
                pos.append(np.array(obj.location))
                rotation = obj.rotation_quaternion if obj.rotation_mode == "QUATERNION" \
                    else obj.matrix_basis.to_quaternion()
                quat.append(np.array(rotation.normalized()))
            else:
                loc, rot, _scale = (to_mujoco @ obj.matrix_basis).decompose()
                pos.append(np.array(loc))
                quat.append(np.array(rot))
        state = (tuple(index), np.array(pos, dtype=float), np.array(quat, dtype=float))
        sent = self._sent_mocap
        if sent is not None and np.array_equal(sent[1], state[1]) and np.array_equal(sent[2], state[2]):
            return
        self._sent_mocap = state
        self.runner.send(commands.SetMocap(*state))

    # ---------------------------------------------------------- commands

    def send(self, command, wait: float | None = 0.0) -> int:
        """Send a command; with `wait` (seconds, None: as long as it takes) wait
        for it and show the result (a paused runner answers at once; inline,
        it is already applied)."""
        seq = self.runner.send(command)
        if wait is None or wait > 0 or not self.runner.threaded:
            if self.runner.wait(seq, wait):
                self.show()
        return seq

    def queue(self, command) -> int:
        """Send a command without waiting for it or showing its result."""
        return self.runner.send(command)

    def play(self) -> None:
        with _refused():
            check_timestep(self.model)
        self.send_mocap()
        self.runner.send(commands.Play())

    def pause(self) -> None:
        self.runner.send(commands.Pause())

    def steps_for(self, duration: float, step_limit: int | None = None) -> int:
        """The steps `duration` takes: round(duration / timestep). SimulationError
        (saying why) for a duration or timestep that cannot be stepped, or more
        steps than the step limit (None: the preferences' the simulation started with)."""
        with _refused():
            return steps_for(self.model, duration, step_limit or self.prefs.step_limit)

    def check_steps(self, count: int, step_limit: int | None = None) -> None:
        """SimulationError (saying why) unless `count` steps can run: a timestep MuJoCo
        can step with, and no more than the step limit (as in `steps_for`)."""
        with _refused():
            check_timestep(self.model)
            check_step_count(count, step_limit or self.prefs.step_limit, "Stepping ")

    def simulate(self, duration: float, step_limit: int | None = None) -> int:
        """Exactly round(duration / timestep) steps (mocap poses read first), shown,
        waited for; SimulationError (nothing run) for what `steps_for` refuses."""
        return self.step(self.steps_for(duration, step_limit), wait=None)

    def step(self, count: int, wait: float | None = SHOW_WAIT, step_limit: int | None = None) -> int:
        """`count` steps (mocap poses read first), shown; the steps taken (inline).
        SimulationError (nothing run) for what `check_steps` refuses."""
        before = self.runner.latest.steps
        self.send(self.start_steps(count, step_limit), wait)
        return self.runner.latest.steps - before

    def start_steps(self, count: int, step_limit: int | None = None) -> commands.Step:
        """Checked (`check_steps`), mocap poses sent: the Step command to send."""
        self.check_steps(count, step_limit)
        self.send_mocap()
        return commands.Step(count)

    def reset(self, keyframe: int | None = None) -> None:
        if keyframe is not None:
            check_keyframe(self.model, keyframe)  # (here: a threaded runner could only report it)
        self._sent_mocap = None
        self.send(commands.Reset(keyframe), SHOW_WAIT)
        self.send_mocap()

    def set_control(self, actuator: int, value: float) -> None:
        seq = self.runner.send(commands.SetControl(actuator, value))
        self._pending_controls[actuator] = (seq, clamped_control(self.model, actuator, value))

    def control(self, actuator: int) -> float:
        """An actuator's control: the latest snapshot's, or one sent and not applied yet."""
        shot = self.runner.latest
        pending = self._pending_controls.get(actuator)
        if pending is not None:
            if pending[0] > shot.applied:
                return pending[1]
            del self._pending_controls[actuator]
        return float(shot.ctrl[actuator]) if actuator < len(shot.ctrl) else 0.0

    def set_joint_position(self, joint: int, value: float) -> bool:
        """simulate's joint slider: a hinge or slide joint's qpos set while paused (clamped to its
        range when limited, as the slider is), velocities kept, then mj_forward (commands.SetQpos:
        simulate runs mj_forward while paused; SetJointQpos would zero the joint's velocity).
        False, nothing sent, while playing or for a joint of another type."""
        model = self.model
        if self.runner.playing or int(model.jnt_type[joint]) not in SCALAR_JOINTS:
            return False
        value = float(value)
        if model.jnt_limited[joint]:
            low, high = model.jnt_range[joint]
            value = min(max(value, float(low)), float(high))
        seq = self.send(commands.SetQpos(int(model.jnt_qposadr[joint]), value), SHOW_WAIT)
        self._pending_positions[joint] = (seq, value)
        return True

    def joint_position(self, joint: int) -> float:
        """A hinge or slide joint's qpos: the latest snapshot's, or one sent and not applied yet."""
        shot = self.runner.latest
        pending = self._pending_positions.get(joint)
        if pending is not None:
            if pending[0] > shot.applied:
                return pending[1]
            del self._pending_positions[joint]
        adr = int(shot.model.jnt_qposadr[joint]) if joint < shot.model.njnt else -1
        return float(shot.qpos[adr]) if 0 <= adr < len(shot.qpos) else 0.0

    # ---------------------------------------------------------- recording

    def bake_steps(self, frames: int, fps: float, step_limit: int | None = None) -> int:
        """The steps a bake of `frames` frames takes; SimulationError (saying why) when
        it cannot run (a bad timestep, beyond the step limit: as in `steps_for`)."""
        with _refused():  # (the limit checked on the duration: its message gives the numbers)
            steps_for(self.model, max(frames - 1, 0) / fps, step_limit or self.prefs.step_limit)
        return steps_for_frames(frames, fps, self.model.opt.timestep)

    def start_bake(self, frames: int, fps: float, frame_start: int, step_limit: int | None = None
                   ) -> tuple[int, Recorder]:
        """Record `frames` frames from the state now (paused: stepping as fast as it can);
        (the command's sequence number, the recorder filling)."""
        self.bake_steps(frames, fps, step_limit)
        self.send_mocap()
        recorder = Recorder(self.model, fps, frame_start, frames)
        return self.runner.send(commands.Record(recorder)), recorder

    def start_recording(self, fps: float, frame_start: int) -> None:
        """Record every frame from now on, whatever runs the simulation (play, step, the
        mouse spring), until `stop_recording`."""
        if self.recorder is not None:
            return
        self.recorder = Recorder(self.model, fps, frame_start, max_bytes=self.prefs.recording_megabytes << 20)
        self.send(commands.StartRecording(self.recorder), SHOW_WAIT)

    def stop_recording(self):
        """End recording; the engine.recording.Recording made (None if none ran)."""
        recorder, self.recorder = self.recorder, None
        if recorder is None:
            return None
        self.send(commands.StopRecording(), None)
        return recorder.recording()

    # ------------------------------------------------------------ ending

    def stop_runner(self) -> bool:
        """End the physics thread; False (and a console note) if MuJoCo is stuck in a step."""
        if self.runner is None or self.runner.stop(STOP_TIMEOUT):
            return True
        print(f"MJBlend: the physics thread of {self.name!r} is still inside a MuJoCo step after "
              f"{STOP_TIMEOUT:g} s; it ends when that step returns")
        return False

    def restore(self) -> None:
        """Every object the simulation moved back to its authored transform, exactly;
        no instancer left."""
        self.display.clear()
        for pointer in list(self.held):
            self._restore_one(pointer)
        for pointer, (mesh, coords) in list(self.held_vertices.items()):
            try:
                if len(mesh.vertices) * 3 == len(coords):
                    mesh.vertices.foreach_set("co", coords)
                    mesh.update()
            except ReferenceError:
                pass
            del self.held_vertices[pointer]

    def _restore_one(self, pointer) -> None:
        obj, authored = self.held.pop(pointer)
        try:
            put_transform(obj, authored)
        except ReferenceError:  # deleted during the simulation
            pass

    def reapply(self) -> None:
        """After a save: the simulated poses again (the file got the authored ones)."""
        self._hold()
        self.display.forget_written()
        self.show(force=True)

    def end(self, restore: bool = True) -> bool:
        """The physics thread joined, no instancer left; with `restore`, objects back at
        their authored poses. False if the thread would not end (MuJoCo stuck in a step:
        it ends when the step returns)."""
        ended = self.stop_runner()
        try:
            if restore:
                self.restore()
            else:
                self.display.clear()
        except ReferenceError:
            pass
        self.held.clear()
        self.runner = None
        return ended


def root_frame(root) -> tuple:
    """(location, rotation) of a model root in the world: the frame its model is attached in
    (compile_spec.build_spec: scale left out)."""
    location, rotation, _scale = root.matrix_world.decompose()
    return location.freeze(), rotation.freeze()


def option_overrides(scene) -> list[tuple]:
    """The scene's option overrides (only those switched on): (attribute, MuJoCo value)."""
    override = scene.mujoco_simulation.override
    return [(attr, spec_io.to_mujoco(attr, spec_io.read_value(override, attr)))
            for attr in spec_io.KINDS["option"].attrs if getattr(override, "use_" + attr.prop, False)]


@contextlib.contextmanager
def _refused():
    """The engine's refusals (ValueError in a user's words) as SimulationError; beyond the
    step limit, with where to raise it."""
    try:
        yield
    except TooManySteps as error:
        raise SimulationError(f"{error}: {RAISE_LIMIT}") from None
    except ValueError as error:
        raise SimulationError(str(error)) from None

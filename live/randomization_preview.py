"""The randomization preview: K randomized environments of the scene's model side
by side in the viewport, stepping live with the same controls, so the user sees
what a randomization does before training with it.

A `RandomizationPreview` compiles the scene as the live simulation does (every
model root, the scene's option overrides), owns a `batch.BatchPool` of K
environments of that model (each with its own drawn values) and their states,
and draws them with one Fast display instancer (sync/instancer.py) holding K
copies of every moving object: environment e is laid out at `offsets[e]` on a
square grid in Blender's X / Y. Each `tick` steps every environment by the
time since the last (one frame of the scene's frame rate, without a window;
times the simulation's Speed), then
writes each body's displacement from its authored pose, plus its environment's
offset, into the instancer. The authored objects stay where they were authored,
hidden while it runs, and show again when it stops; what the world body holds
(floor, lights) is drawn once, shared by every environment.

One preview per scene, kept here (outside bpy data) like the scene sessions:

    randomization_preview.start(scene, randomization, count=4)   # refuses what it cannot
    randomization_preview.get(scene).tick()                      # the operator's timer does this
    randomization_preview.stop(scene)

The scene's SceneSession keeps it and ends it with the session (file load,
undo, redo, add-on disable). It refuses to start while the scene's simulation
runs, and the simulation refuses to start while it runs
(SceneSession.start_simulation): both would show the same objects.
"""

from __future__ import annotations

import math

import bpy
import numpy as np
from mathutils import Matrix

from ..batch import BatchError, BatchPool, Randomization, RandomizationError
from ..components import spec_io
from ..components.scene_settings import PREVIEW_MAX_COUNT
from ..engine import frames
from ..engine.session import check_timestep, clamped_control
from ..scan import compile_spec, scene_scan
from ..scene.errors import MJBlendError
from ..sync import timeline
from ..sync.instancer import Instancer
from . import binding, scene_session, simulation
from .display import GEOMETRY_TYPES

SPACING_PER_EXTENT = 1.5  # automatic spacing: this many times the model's extent (model.stat.extent)
LONGEST_TICK = 0.25  # wall seconds one tick may catch up (a slow frame, a pause): the rest is skipped


class PreviewError(MJBlendError):
    """The preview cannot start (no model, a model that does not compile, a
    randomization that does not fit it, a count out of range, a running simulation)."""


# ------------------------------------------------------------ layout


def grid_offsets(count: int, spacing: float) -> np.ndarray:
    """(count, 3): where each environment stands, on a square grid of `spacing`
    metres in X and Y (environment 0 where the model was authored, rows along +Y)."""
    columns = math.ceil(math.sqrt(count))
    index = np.arange(count)
    return np.stack([(index % columns) * spacing, (index // columns) * spacing, np.zeros(count)], axis=1)


def automatic_spacing(model) -> float:
    """SPACING_PER_EXTENT times the model's extent (MuJoCo's own measure of its size)."""
    extent = float(model.stat.extent)
    return SPACING_PER_EXTENT * extent if extent > 0 and math.isfinite(extent) else 1.0


def steps_for(model, seconds: float, speed: float = 1.0) -> int:
    """The steps `seconds` of wall time advance at `speed` simulated seconds per second
    (at least one)."""
    return max(1, round(speed * seconds / model.opt.timestep))


def scene_fps(scene) -> float:
    return scene.render.fps / scene.render.fps_base


# ------------------------------------------------------------ the preview


class RandomizationPreview:
    """K environments of `scene`'s model drawn side by side (see the module's docstring).

    randomization: a batch.Randomization (None or empty: K identical environments);
    seed: its generator's seed (None: the randomization's own); spacing: metres between
    environments (0: `automatic_spacing`); view_layer: one showing the scene's collection
    (default: the context's if it is the scene's, else the scene's first)."""

    def __init__(self, scene, randomization: Randomization | None, count: int = 4, seed: int | None = None,
                 spacing: float = 0.0, view_layer=None):
        if not isinstance(count, (int, np.integer)) or not 1 <= count <= PREVIEW_MAX_COUNT:
            raise PreviewError(f"The preview shows 1 to {PREVIEW_MAX_COUNT} environments, not {count}")
        if not spacing >= 0 or not math.isfinite(spacing):
            raise PreviewError("The spacing between environments must be 0 (automatic) or more, "
                               f"not {spacing}")
        _check_free(scene)
        self.scene = scene
        self.count = int(count)
        model, data, scanners, roots = _compile(scene)
        try:
            check_timestep(model)
        except ValueError as error:
            raise PreviewError(str(error)) from None
        self.model = model
        self.randomization = randomization
        keyframe = scene.mujoco_simulation.keyframe
        try:
            self.pool = BatchPool(model, self.count, randomization=randomization or None, seed=seed,
                                  keyframe=keyframe if 0 <= keyframe < model.nkey else None)
        except (BatchError, RandomizationError) as error:
            raise PreviewError(f"The randomization does not fit the model: {error}") from None
        self.state = self.pool.initial_states()
        self.ctrl = np.zeros(model.nu)
        self.steps = 0  # steps taken by each environment since the start or the last redraw
        self.spacing = float(spacing) if spacing > 0 else automatic_spacing(model)
        self.offsets = grid_offsets(self.count, self.spacing)
        self._bind(model, data, scanners, roots)
        self.instancer: Instancer | None = None
        try:
            self._draw(view_layer)
        except BaseException:
            self.pool.close()
            raise

    # ------------------------------------------------------------ binding

    def _bind(self, model, data, scanners, roots) -> None:
        """Which objects move with which body, the bodies' authored poses, the
        actuators' objects, and how MuJoCo's world sits in Blender's."""
        bodies, actuators = [], {}
        for scanner in scanners:
            for block, kind, element in scanner.elements.values():
                if kind == "body" and element.id > 0:  # (the world body's objects are drawn once)
                    bodies.append((block, element.id))
                elif kind == "actuator" and element.id >= 0:
                    actuators[element.id] = block
        bodies.sort(key=lambda pair: pair[1])
        self.actuator_objects = actuators  # actuator id -> its object
        self.actuator_of = {obj.as_pointer(): i for i, obj in actuators.items()}
        self.body_ids = np.array([body for _obj, body in bodies], dtype=int)
        self._bodies = bodies
        self.regroup()
        self.authored_pos = data.xpos[self.body_ids].copy()
        self.authored_conj = frames.conjugate(data.xquat[self.body_ids].copy())
        # MuJoCo's world in Blender's: the root's frame for one model, the identity for
        # several (compile_spec.build_spec attached them where they stand)
        if len(roots) == 1:
            loc, rot, _scale = roots[0].matrix_world.decompose()
            world = Matrix.LocRotScale(loc, rot, None)
        else:
            world = Matrix.Identity(4)
        loc, rot, _scale = world.decompose()
        self.world_quat, self.world_pos = np.array(rot), np.array(loc)

    def regroup(self) -> None:
        """The objects drawn for each body, as they are shown now (at the start, and
        after a group switch showed or hid some: sync/groups.py; drawn by the next
        instancer, `resume`)."""
        bodies = self._bodies
        driven = {obj.as_pointer() for obj, _body in bodies}
        groups = binding.moving_groups(bodies, driven, self.scene.objects)
        self.drawn = [[o for o in group if o.type in GEOMETRY_TYPES] for group in groups]
        self.also_hidden = [o for group in groups for o in group if o.type not in GEOMETRY_TYPES]

    # ------------------------------------------------------------ drawing

    def _draw(self, view_layer=None) -> None:
        """The instancer (K copies of every moving object), the sources hidden behind it."""
        scene = self.scene
        if view_layer is None:
            context = bpy.context
            view_layer = context.view_layer if context.scene == scene and context.view_layer \
                else scene.view_layers[0]
        self.instancer = Instancer(f"{scene.name} (randomization preview)", self.drawn, scene.collection,
                                   view_layer, also_hidden=self.also_hidden, copies=self.count)
        self.instancer.hide_sources(True)
        self.show()

    def displacements(self) -> tuple[np.ndarray, np.ndarray]:
        """Each environment's body displacements from their authored poses, in Blender's
        world, each environment moved to its place: (K * bodies, 3) positions and
        (K * bodies, 4) quaternions, as Instancer.write takes them."""
        xpos, xquat = self.pool.body_poses(self.state)
        count, bodies = self.count, len(self.body_ids)
        shift, turn = frames.displacements(
            xpos[:, self.body_ids].reshape(-1, 3), xquat[:, self.body_ids].reshape(-1, 4),
            np.tile(self.authored_pos, (count, 1)), np.tile(self.authored_conj, (count, 1)),
            self.world_quat, self.world_pos)
        shift += np.repeat(self.offsets, bodies, axis=0)
        return shift, turn

    def show(self) -> None:
        """The environments' current states drawn (not while suspended)."""
        if self.instancer is not None:
            self.instancer.write(*self.displacements())

    # ------------------------------------------------------------ stepping

    def steps_for(self, seconds: float) -> int:
        """The steps `seconds` of wall time take at the simulation's Speed (at most
        LONGEST_TICK's: a slow frame is caught up, a long pause is not)."""
        return steps_for(self.model, min(seconds, LONGEST_TICK), self.scene.mujoco_simulation.realtime)

    def steps_per_tick(self) -> int:
        """The steps of one frame at the scene's frame rate."""
        return self.steps_for(1 / scene_fps(self.scene))

    def tick(self, nstep: int | None = None) -> int:
        """One display frame: every environment steps `nstep` times (default: one frame
        at the scene's frame rate, `steps_per_tick`; the Start operator's timer gives
        the wall time since its last tick, `steps_for`) with the same controls, then
        is drawn. Returns the steps taken."""
        nstep = self.steps_per_tick() if nstep is None else nstep
        self.state = self.pool.step(self.state, self.ctrl, nstep)
        self.steps += nstep
        self.show()
        return nstep

    def redraw(self) -> None:
        """Every environment back to its initial state with newly drawn values."""
        self.state = self.pool.reset(self.state)
        self.steps = 0
        self.show()

    @property
    def time(self) -> float:
        """The simulated time of the environments (they step together)."""
        return float(self.state[0, 0])

    def set_control(self, actuator: int, value: float) -> None:
        self.ctrl[actuator] = clamped_control(self.model, actuator, value)

    # ------------------------------------------------------------ ending

    def suspend(self) -> None:
        """No instancer, the sources shown as they were (before a save: the file gets
        the authored scene); `resume` draws it again."""
        if self.instancer is not None:
            self.instancer.remove()
            self.instancer = None

    def resume(self) -> None:
        if self.instancer is None:
            self._draw()

    def close(self) -> None:
        """Everything the preview made removed, the objects as they were, the pool's
        threads ended."""
        try:
            self.suspend()
        finally:
            self.pool.close()


def _check_free(scene) -> None:
    """PreviewError unless the scene's objects are as authored: no simulation running
    (it moves them), no bake (the timeline moves them)."""
    running = scene_session.simulation(scene)
    if running is not None:
        state = "playing" if running.playing else "paused, its objects where it left them"
        raise PreviewError(f"The scene's simulation is {state}: stop it (the square button in "
                           "Sidebar > MuJoCo > Simulation) before previewing the randomization")
    if timeline.is_baked(scene):
        raise PreviewError("The scene is baked (its objects follow the timeline): clear the bake "
                           "(Sidebar > MuJoCo > Timeline) before previewing the randomization")


def _compile(scene):
    """(model, an MjData at qpos0 after a forward pass, scanners, roots): every model
    root compiled as the live simulation compiles them, with the scene's option
    overrides."""
    roots = scene_scan.model_roots(scene)
    if not roots:
        raise PreviewError("Nothing to preview: the scene has no MuJoCo model (File > Import > MuJoCo, "
                           "or add a model root)")
    warnings: list[str] = []
    try:
        built = compile_spec.build_spec(roots, warnings, held=scene_session.of(scene).held)
        model, data = compile_spec.compiled(built.spec, scene.objects, built.scanners, warnings)
    except compile_spec.CompileError as error:
        raise PreviewError(str(error), error.objects) from None
    for attr, value in simulation.option_overrides(scene):
        spec_io.set_attr(model.opt, attr, value)
    return model, data, built.scanners, roots


# ------------------------------------------------------------ the scene's preview
# (kept by its SceneSession, which ends it with the scene's other unsaved parts)


def get(scene) -> RandomizationPreview | None:
    """The scene's preview, or None."""
    owner = scene_session.existing(scene)
    return owner.preview if owner is not None else None


def start(scene, randomization: Randomization | None, count: int = 4, seed: int | None = None,
          spacing: float = 0.0, view_layer=None) -> RandomizationPreview:
    """The scene's preview, started anew (one already running stops first). PreviewError
    (saying why) if it cannot start; then nothing is left of it."""
    owner = scene_session.of(scene)
    owner.end_preview()
    owner.preview = RandomizationPreview(scene, randomization, count, seed, spacing, view_layer)
    return owner.preview


def stop(scene) -> bool:
    """End the scene's preview (False if none ran)."""
    owner = scene_session.existing(scene)
    return owner is not None and owner.end_preview()


def all_previews() -> list[RandomizationPreview]:
    return [owner.preview for owner in scene_session.all_sessions() if owner.preview is not None]


def stop_all() -> None:
    for owner in scene_session.all_sessions():
        owner.end_preview()


def is_current(preview: RandomizationPreview) -> bool:
    """Is `preview` still its scene's preview? (False once stopped, replaced, or its
    scene deleted: then it is ended.)"""
    try:
        return get(preview.scene) is preview
    except ReferenceError:  # its scene was deleted: its session lets it go
        for owner in scene_session.all_sessions():
            if owner.preview is preview:
                owner.end_preview()
        return False



"""How a running simulation shows itself in the viewport: one class per display mode.

- Objects: every simulated body's object gets the snapshot's pose each frame.
  Blender's depsgraph then costs 28-170 us per moved object (measured), fine
  for robots of tens of bodies.
- Fast: one instancer object (sync/instancer.py) draws every geom that moves
  from the snapshot, ~1.4 us per body for 1000 bodies (bench/loop_bench.py);
  the authored objects stay where they were authored, hidden while the
  simulation plays, and show the simulated state again (synced once) when it
  pauses or stops.
- Auto: Fast when writing the objects would not fit the frame budget.

Flex and skin vertices are written to their meshes in every mode. Only
Blender's main thread runs this; it reads a Binding (live/binding.py) and
snapshots, never MjData.

A mode is a small class with `show(shot, binding, held)` and `end()` (plus what
picking asks of it); MODES maps the scene's Display setting to it, so a new mode
is a new class and an entry there (and in the setting's items).
"""

from __future__ import annotations

import statistics
import time

import bpy

from ..components import changes
from ..engine import frames
from ..sync.instancer import Instancer
from ..sync.objects import put_transform, write_body_poses
from ..sync.vertices import write_vertices

FRAME_BUDGET = 0.010  # seconds of a 60 Hz frame the objects' sync may take (the rest: drawing, UI)
OBJECT_COST = 60e-6  # seconds Blender takes per moved object per frame (measured: 28-170 us)
AUTO_WINDOW = 20  # frames of measured Objects-mode cost before Auto changes its mind
GEOMETRY_TYPES = {"MESH", "CURVE", "SURFACE", "META", "FONT", "CURVES", "POINTCLOUD", "VOLUME"}


class ObjectsDisplay:
    """Every simulated body's object gets the snapshot's pose."""

    instancer: Instancer | None = None
    fast_now = False  # an instancer shows the simulation (its sources hidden)

    def __init__(self, scene):
        self.scene = scene
        self.written = None  # (pos, quat) float32 body-local poses of the last Objects sync

    def show(self, shot, binding, held) -> None:
        self.write_objects(shot, binding)

    def end(self) -> None:
        """Nothing of the mode left in the scene (stop, save, a new binding)."""

    def source_of(self, obj, matrix):
        """The object a ray hit (see FastDisplay)."""
        return obj

    def selected(self, obj, view_layer) -> None:
        """`obj` was selected (see FastDisplay)."""

    def write_objects(self, shot, binding) -> None:
        if not len(binding.driven):
            return
        pos, quat = frames.float32_locals(shot.xpos, shot.xquat, shot.model.body_parentid, binding.levels)
        pos, quat = pos[binding.driven_ids], quat[binding.driven_ids]
        self.written = (pos, quat)
        layer = view_layer_of(self.scene)
        if layer is None:
            write_body_poses(binding.plain_objects, binding.fixed, pos, quat, binding.plain_rows)
            return
        # The depsgraph reports every moved object and its children to the edit
        # tracking (~3 us each, a fifth of a big scene's frame) though the simulation
        # moved them: evaluate the user's pending edits first, as usual, then the
        # simulation's writes quietly (the redraw would evaluate them anyway).
        layer.update()
        with changes.quiet():
            write_body_poses(binding.plain_objects, binding.fixed, pos, quat, binding.plain_rows)
            layer.update()


class FastDisplay(ObjectsDisplay):
    """While playing, one instancer draws every geom that moves; paused, the objects."""

    def __init__(self, scene):
        super().__init__(scene)
        self.instancer = None
        self.fast_now = False

    def shows_instances(self, shot, binding) -> bool:
        return bool(shot.playing and len(binding.driven))

    def show(self, shot, binding, held) -> None:
        if self.shows_instances(shot, binding):
            if not self.fast_now:
                self._start(binding, held)
            self._write_instances(shot, binding)
        else:
            if self.fast_now:
                self.instancer.hide_sources(False)
                self.fast_now = False
            self.write_objects(shot, binding)

    def end(self) -> None:
        """No instancer left, sources visible again."""
        if self.instancer is not None:
            self.instancer.remove()
        self.instancer = None
        self.fast_now = False

    def source_of(self, obj, matrix):
        """Under the Fast display, an instance of a shape shared by several objects names
        the shape's first object; its matrix tells which."""
        if self.fast_now and self.instancer is not None:
            return self.instancer.source_at(obj, matrix)
        return obj

    def selected(self, obj, view_layer) -> None:
        """While the Fast display hides `obj`, Blender ignores its selection: it is
        selected when the objects show again."""
        if self.fast_now and self.instancer is not None:
            self.instancer.select_only(obj, view_layer)

    def _start(self, binding, held) -> None:
        """Objects back at their authored poses (the instancer moves them from there),
        then hidden behind the instancer."""
        for obj, _body in binding.driven:
            put_transform(obj, held[obj.as_pointer()].transform)
        if self.instancer is None:
            scene = self.scene
            view_layer = view_layer_of(scene) or scene.view_layers[0]
            drawn = [[o for o in group if o.type in GEOMETRY_TYPES] for group in binding.groups]
            others = [o for group in binding.groups for o in group if o.type not in GEOMETRY_TYPES]
            self.instancer = Instancer(f"{scene.name} (fast display)", drawn, scene.collection, view_layer,
                                       also_hidden=others)
        self.instancer.hide_sources(True)
        self.fast_now = True
        self.written = None

    def _write_instances(self, shot, binding) -> None:
        """Each body's displacement from its authored pose, in Blender's world:
        world @ (pose now) @ (authored pose)^-1 @ world^-1."""
        body = binding.driven_ids
        self.instancer.write(*frames.displacements(
            shot.xpos[body], shot.xquat[body], binding.authored_pos[body], binding.authored_conj[body],
            binding.world_quat, binding.world_pos))


class AutoDisplay(FastDisplay):
    """Fast when writing the objects would not fit the frame budget (estimated from
    the objects that move, then measured)."""

    def __init__(self, scene):
        super().__init__(scene)
        self._object_costs: list[float] = []
        self._auto_fast = False  # the measured choice

    def shows_instances(self, shot, binding) -> bool:
        return super().shows_instances(shot, binding) and (
            self._auto_fast or binding.moving_count * OBJECT_COST > FRAME_BUDGET)

    def write_objects(self, shot, binding) -> None:
        """Objects are too slow when writing them and evaluating what moved takes more
        than the frame budget (median of recent frames)."""
        start = time.perf_counter()
        super().write_objects(shot, binding)
        if shot.playing:
            self._object_costs.append(time.perf_counter() - start)
            if len(self._object_costs) >= AUTO_WINDOW:
                self._auto_fast = statistics.median(self._object_costs) > FRAME_BUDGET
                self._object_costs.clear()


MODES = {"OBJECTS": ObjectsDisplay, "FAST": FastDisplay, "AUTO": AutoDisplay}


class Display:
    """Shows one scene's snapshots in the mode its Display setting names (switched
    when the setting changes), and the deformable meshes in every mode."""

    def __init__(self, scene):
        self.scene = scene
        self.mode: ObjectsDisplay | None = None

    def show(self, shot, binding, held, choice: str) -> None:
        mode = self.mode
        if type(mode) is not MODES[choice]:
            if mode is not None:
                mode.end()
            mode = self.mode = MODES[choice](self.scene)
        mode.show(shot, binding, held)
        write_deformed(shot, binding)

    def clear(self) -> None:
        """Nothing of the mode left in the scene, sources visible (stop, save, a new
        binding); a measuring mode keeps what it measured."""
        if self.mode is not None:
            self.mode.end()

    @property
    def written(self):
        """(pos, quat) of the last objects written, None when none since (or shown since
        through an instancer)."""
        return self.mode.written if self.mode is not None else None

    def forget_written(self) -> None:
        """The objects are written again from the next snapshot."""
        if self.mode is not None:
            self.mode.written = None

    @property
    def fast_now(self) -> bool:
        return self.mode is not None and self.mode.fast_now

    @property
    def instancer(self) -> Instancer | None:
        return self.mode.instancer if self.mode is not None else None

    def source_of(self, obj, matrix):
        return self.mode.source_of(obj, matrix) if self.mode is not None else obj

    def selected(self, obj, view_layer) -> None:
        if self.mode is not None:
            self.mode.selected(obj, view_layer)


def write_deformed(shot, binding) -> None:
    """Flex and skin vertices to their meshes; not to those of a group switched off
    (hidden in renders too: sync/groups.py), which get them when their group is shown
    (live/groups.py shows the snapshot again)."""
    model = shot.model
    for obj, kind, index, world in binding.deformed:
        if obj.hide_render:
            continue
        if kind == "flex":
            adr, num = model.flex_vertadr[index], model.flex_vertnum[index]
            verts = shot.flexvert_xpos[adr:adr + num]
        else:
            verts = shot.skin_vertices[index]
        write_vertices(obj.data, verts, world)  # (an edited mesh of another shape is left)


def view_layer_of(scene):
    """The view layer the viewport evaluates, if it is `scene`'s."""
    context = bpy.context
    return context.view_layer if context.scene == scene and context.view_layer else None

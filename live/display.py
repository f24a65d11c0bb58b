"""How a running simulation shows itself in the viewport: Objects, Fast or Auto.

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
Blender's main thread runs this; it reads snapshots, never MjData.
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


class Display:
    """Shows the snapshots of one LiveSimulation (its binding: `live`)."""

    def __init__(self, live):
        self.live = live
        self.instancer: Instancer | None = None
        self.fast_now = False  # the instancer shows the simulation (sources hidden)
        self.written = None  # (pos, quat) float32 body-local poses of the last Objects sync
        self._object_costs: list[float] = []
        self._auto_fast = False  # Auto's measured choice

    # ------------------------------------------------------------ choose

    def wants_fast(self, shot) -> bool:
        """Whether this snapshot shows through the instancer: playing, and Fast
        (chosen, or Auto with objects too slow for a frame)."""
        if not shot.playing or not len(self.live.driven):
            return False
        mode = self.live.settings.display
        if mode == "FAST":
            return True
        if mode == "OBJECTS":
            return False
        return self._auto_fast or self.live.moving_count * OBJECT_COST > FRAME_BUDGET

    def source_of(self, obj, matrix):
        """The object a ray hit: under the Fast display, an instance of a shape shared
        by several objects names the shape's first object; its matrix tells which."""
        if self.fast_now and self.instancer is not None:
            return self.instancer.source_at(obj, matrix)
        return obj

    def selected(self, obj, view_layer) -> None:
        """`obj` was selected: while the Fast display hides it, Blender ignores that,
        so it is selected when the objects show again."""
        if self.fast_now and self.instancer is not None:
            self.instancer.select_only(obj, view_layer)

    # -------------------------------------------------------------- show

    def show(self, shot) -> None:
        if self.wants_fast(shot):
            if not self.fast_now:
                self._start_fast()
            self._write_instances(shot)
        else:
            if self.fast_now:
                self._stop_fast()
            start = time.perf_counter()
            self.write_objects(shot)
            if shot.playing and self.live.settings.display == "AUTO":
                self._measure(time.perf_counter() - start)
        self._write_vertices(shot)

    def write_objects(self, shot) -> None:
        live = self.live
        if not len(live.driven):
            return
        pos, quat = frames.float32_locals(shot.xpos, shot.xquat, shot.model.body_parentid, live.levels)
        pos, quat = pos[live.driven_ids], quat[live.driven_ids]
        self.written = (pos, quat)
        layer = self._view_layer()
        if layer is None:
            write_body_poses(live.plain_objects, live.fixed, pos, quat, live.plain_rows)
            return
        # The depsgraph reports every moved object and its children to the edit
        # tracking (~3 us each, a fifth of a big scene's frame) though the simulation
        # moved them: evaluate the user's pending edits first, as usual, then the
        # simulation's writes quietly (the redraw would evaluate them anyway).
        layer.update()
        with changes.quiet():
            write_body_poses(live.plain_objects, live.fixed, pos, quat, live.plain_rows)
            layer.update()

    def _view_layer(self):
        """The view layer the viewport evaluates, if it is the simulated scene's."""
        context = bpy.context
        return context.view_layer if context.scene == self.live.scene and context.view_layer else None

    def _measure(self, seconds: float) -> None:
        """Auto: objects are too slow when writing them and evaluating what moved
        (write_objects evaluates it) takes more than the frame budget (median of
        recent frames)."""
        self._object_costs.append(seconds)
        if len(self._object_costs) >= AUTO_WINDOW:
            self._auto_fast = statistics.median(self._object_costs) > FRAME_BUDGET
            self._object_costs.clear()

    def _write_vertices(self, shot) -> None:
        model = shot.model
        for obj, kind, index, world in self.live.deformed:
            if kind == "flex":
                adr, num = model.flex_vertadr[index], model.flex_vertnum[index]
                verts = shot.flexvert_xpos[adr:adr + num]
            else:
                verts = shot.skin_vertices[index]
            write_vertices(obj.data, verts, world)  # (an edited mesh of another shape is left)

    # -------------------------------------------------------------- fast

    def _start_fast(self) -> None:
        """Objects back at their authored poses (the instancer moves them from there),
        then hidden behind the instancer."""
        live = self.live
        for obj, _body in live.driven:
            put_transform(obj, live.held[obj.as_pointer()].transform)
        if self.instancer is None:
            scene = live.scene
            view_layer = self._view_layer() or scene.view_layers[0]
            drawn = [[o for o in group if o.type in GEOMETRY_TYPES] for group in live.groups]
            others = [o for group in live.groups for o in group if o.type not in GEOMETRY_TYPES]
            self.instancer = Instancer(f"{live.name} (fast display)", drawn, scene.collection, view_layer,
                                       also_hidden=others)
        self.instancer.hide_sources(True)
        self.fast_now = True
        self.written = None

    def _stop_fast(self) -> None:
        self.instancer.hide_sources(False)
        self.fast_now = False

    def _write_instances(self, shot) -> None:
        """Each body's displacement from its authored pose, in Blender's world:
        world @ (pose now) @ (authored pose)^-1 @ world^-1."""
        live = self.live
        body = live.driven_ids
        self.instancer.write(*frames.displacements(shot.xpos[body], shot.xquat[body], live.authored_pos[body],
                                                   live.authored_conj[body], live.world_quat, live.world_pos))

    # ------------------------------------------------------------ ending

    def clear(self) -> None:
        """No instancer left, sources visible again (stop, save, a new binding)."""
        if self.instancer is not None:
            self.instancer.remove()
        self.instancer = None
        self.fast_now = False

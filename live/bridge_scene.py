"""The Blender side of URLab's scene, outliner and sim ops (bridge/scene_ops.py): what a
client asks of the served scene, done on Blender's main thread (the bridge's threads
queue it: bridge/main_thread.py).

An actor is a model root, named on the wire by its entity prefix (`actor_id`, what the
bridge's `hello` lists: bridge_host.entity_prefixes) or by its object's name. The
bridge attaches every model where its root stands, so MuJoCo's world is Blender's
world: locations and bounds are read and written there, in metres.

Edits are a user's: undo steps, and a simulation that runs follows them as it follows
a user's edit in Blender (a moved root carries its model: LiveSimulation.moved_roots;
deleted objects recompile the scene without them). The simulation (URLab's PIE) is
started and stopped here too, and the bridge keeps serving while it is stopped (see
`SceneEdits.stop`).
"""

from __future__ import annotations

import math

import bpy
from mathutils import Euler, Matrix, Quaternion, Vector

from ..bridge.scene_ops import UnknownActor
from ..scan import scene_scan
from ..scene import preferences
from . import scene_session, simulation

ACTOR_CLASS = "MjArticulation"  # (URLab's class of a model's actor: its clients filter by it)
GEOMETRY = {"MESH", "CURVE", "SURFACE", "META", "FONT"}  # object types with a bounding box of their own


def actors(scene) -> list[tuple[str, object]]:
    """(actor_id, model root) of every model root in the scene, in the bridge's order."""
    from .bridge_host import entity_prefixes  # (it imports this module)
    roots = scene_scan.model_roots(scene)
    return list(zip(entity_prefixes(roots), roots, strict=True))


def find_actor(scene, target: str, by_name: bool = False) -> tuple[str, object]:
    """(actor_id, root) of the actor `target` names (its actor_id; `by_name`: its root's
    object name); UnknownActor (naming those there are) if none."""
    found = actors(scene)
    for actor_id, root in found:
        if (root.name if by_name else actor_id) == target:
            return actor_id, root
    known = ", ".join(root.name if by_name else actor_id for actor_id, root in found) or "none"
    what = "actor named" if by_name else "actor with actor_id"
    raise UnknownActor(f"no {what} {target[:80]!r} in scene {scene.name!r} (its actors: {known}; an actor "
                       "is a model root)")


def actor_bounds(scene, target: str, by_name: bool = False, components_only: bool = False) -> dict:
    """URLab's get_actor_bounds of an actor: the axis-aligned box of its objects as
    shown (world, metres: MuJoCo's world on the bridge) as actor_name, min, max, center,
    extents (half sizes). Every object of the model with geometry of its own counts
    (hidden ones too: collision geoms) but infinite planes; `components_only`: its MuJoCo
    geoms only. A model with none is its root's point. (frame_actor frames this box.)"""
    _actor_id, root = find_actor(scene, target, by_name)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    corners = []
    for obj in root.children_recursive:
        if obj.type not in GEOMETRY or (components_only and obj.mujoco.kind != "GEOM") or infinite(obj):
            continue
        shown = obj.evaluated_get(depsgraph)
        corners.extend(shown.matrix_world @ Vector(corner) for corner in shown.bound_box)
    if not corners:
        corners = [root.matrix_world.translation]
    low = [min(c[i] for c in corners) for i in range(3)]
    high = [max(c[i] for c in corners) for i in range(3)]
    return {"actor_name": root.name, "min": low, "max": high,
            "center": [(a + b) / 2 for a, b in zip(low, high, strict=True)],
            "extents": [(b - a) / 2 for a, b in zip(low, high, strict=True)]}


def infinite(obj) -> bool:
    """An infinite plane (MuJoCo's plane of size 0): its mesh is only a size to draw it at."""
    if obj.mujoco.kind != "GEOM" or obj.mujoco.geom.type != "PLANE":
        return False
    size = obj.mujoco.geom.size
    return size[0] <= 0 or size[1] <= 0


def actor_row(actor_id: str, root) -> dict:
    """URLab's list_actors row of a model root (pose in the world; quaternion xyzw)."""
    location, rotation, _scale = root.matrix_world.decompose()
    return {"name": root.name, "label": root.name, "class": ACTOR_CLASS, "actor_id": actor_id,
            "is_articulation": True, "has_quick_convert": False, "is_static_mesh_actor": False,
            "is_light": False, "location": list(location),
            "rotation_quat": [rotation.x, rotation.y, rotation.z, rotation.w],
            "tags": [collection.name for collection in root.users_collection]}


def undo_step(message: str) -> None:
    """An undo step of the edit just made, as an operator's would be (none where Blender
    keeps no undo: a factory-startup without undo, some background runs)."""
    try:
        bpy.ops.ed.undo_push(message=message)
    except RuntimeError:
        pass


class SceneEdits:
    """The served scene's actors and simulation, as the bridge's scene ops reach them
    (main thread only, but for the plain values `compile_error` and `recompile_error`)."""

    def __init__(self, host):
        self.host = host  # live.bridge_host.SceneHost
        self.compile_error = ""  # why the last begin_pie did not compile ("" once it did)
        # whether a client stopped the simulation (stop_pie): the bridge then serves on
        # without one (bridge_host.watch keeps it) until begin_pie or Blender's Play
        self.stopped = False

    @property
    def scene(self):
        return self.host.scene

    def recompile_error(self) -> str:
        """(Any thread) Why the last recompile of the running simulation failed (its last
        good model runs on), or ""."""
        live = self.host.live
        return live.error if live is not None else ""

    # ----------------------------------------------------------- outliner

    def list_actors(self) -> list[dict]:
        return [actor_row(actor_id, root) for actor_id, root in actors(self.scene)]

    def find_actors(self, class_filter=None, tag=None, name_prefix=None) -> list[dict]:
        """The actors every given filter matches: class (case-insensitive, a part of it),
        tag (a collection the root is in), name prefix (of its name or actor_id)."""
        rows = []
        for row in self.list_actors():
            if class_filter and class_filter.lower() not in row["class"].lower():
                continue
            if tag and tag not in row["tags"]:
                continue
            if name_prefix and not (row["name"].startswith(name_prefix)
                                    or row["actor_id"].startswith(name_prefix)):
                continue
            rows.append(row)
        return rows

    def bounds(self, target: str, by_name: bool, components_only: bool = False) -> dict:
        return actor_bounds(self.scene, target, by_name, components_only)

    def select(self, target: str, by_name: bool) -> str:
        """The actor's root selected and active, alone, in the view layer; its name."""
        _actor_id, root = find_actor(self.scene, target, by_name)
        layer = bpy.context.view_layer
        if root.name not in layer.objects:
            raise UnknownActor(f"{root.name!r} is not in the view layer {layer.name!r} (its collection "
                               "is excluded): it cannot be selected")
        for obj in layer.objects.selected:
            obj.select_set(False)
        root.select_set(True)
        layer.objects.active = root
        return root.name

    # -------------------------------------------------------------- scene

    def set_transform(self, target: str, by_name: bool, location=None, quat_wxyz=None,
                      euler_degrees=None) -> dict:
        """Move the actor's root in the world (what the request gives: location, a
        rotation; its scale kept), an undo step. A simulation that runs follows at once,
        as it follows a user's move of the root: the model is recompiled where the root
        now stands, its free bodies carried along (LiveSimulation.moved_roots)."""
        _actor_id, root = find_actor(self.scene, target, by_name)
        old_location, old_rotation, scale = root.matrix_world.decompose()
        location = Vector(location) if location is not None else old_location
        if quat_wxyz is not None:
            rotation = Quaternion(quat_wxyz)
        elif euler_degrees is not None:
            rotation = Euler([math.radians(a) for a in euler_degrees], "XYZ").to_quaternion()
        else:
            rotation = old_rotation
        root.matrix_world = Matrix.LocRotScale(location, rotation, scale)
        bpy.context.view_layer.update()
        undo_step(f"Move {root.name} (bridge)")
        live = self._live()
        if live is not None:
            live.check_edits()  # (what the next display frame would do: follow the move now)
        return {"actor_name": root.name, "requires_pie_restart": False}

    def destroy(self, target: str, by_name: bool) -> dict:
        """The actor's root and every object under it deleted, an undo step. A simulation
        that runs goes on without it (recompiled); without the last model, or if the
        scene without it does not compile, it stops (as stop_pie: the bridge serves on)."""
        _actor_id, root = find_actor(self.scene, target, by_name)
        name = root.name
        live = self._live()
        if live is not None and len(scene_scan.model_roots(self.scene)) == 1:
            self.stop()  # (nothing would be left to simulate)
            live = None
        bpy.data.batch_remove([*root.children_recursive, root])  # (one relations update, not one each)
        undo_step(f"Delete {name} (bridge)")
        stopped = False
        if live is not None and not live.compile(edited=True):
            self.compile_error = live.error  # (its objects are gone: it cannot go on)
            self.stop()
            stopped = True
        return {"actor_name": name, "requires_pie_restart": stopped}

    def snapshot(self, articulations: dict) -> dict:
        """URLab's scene snapshot: every actor's row with its tags, and (`articulations`,
        by actor_id, while a simulation is served) its `urlab` block of element names."""
        rows = []
        for row in self.list_actors():
            block = articulations.get(row["actor_id"])
            if block is not None:
                row["urlab"] = block
            rows.append(row)
        return {"actors": rows, "in_pie": self._live() is not None, "level_path": self.scene.name}

    # ---------------------------------------------------------- simulation

    def _live(self):
        """The simulation the bridge serves, if it runs."""
        live = self.host.live
        return live if live is not None and live.runner is not None else None

    def begin(self, restart: bool = False) -> dict:
        """URLab's begin_pie: the scene's simulation compiled (for the bridge: on a physics
        thread, every model root attached with its prefix) and played, served from now on;
        {state: ready | compile_failed, compile_error}. Running already: ready (with
        `restart`, stopped and started anew)."""
        if self._live() is not None:
            if not restart:
                self.host.live.play()  # (freerun, as URLab's PIE runs)
                return {"state": "ready", "compile_error": ""}
            self.stop()
        from . import bridge_host  # (it imports this module)
        try:
            live = bridge_host.served_simulation(self.scene, preferences.settings(bpy.context))
            live.play()
        except simulation.SimulationError as error:
            self.compile_error = str(error)
            return {"state": "compile_failed", "compile_error": self.compile_error}
        self.compile_error, self.stopped = "", False
        served = live.owner.bridge
        self.host.follow(live)
        if served is not None:
            served.bridge.follow(live.runner)
        return {"state": "ready", "compile_error": ""}

    def stop(self) -> bool:
        """URLab's stop_pie: the simulation ended as Blender's Stop ends it (objects back
        where they were authored, its physics thread joined), but not the bridge
        answering: it is detached first (SceneSession.end_simulation ends a bridge only
        with the simulation it serves) and serves on without one. False if none ran."""
        self.stopped = True
        live = self._live()
        served = scene_session.of(self.scene).bridge
        self.host.follow(None)
        if served is not None:
            served.bridge.follow(None)
        if live is None:
            return False
        scene_session.end_simulation(live, restore=True)
        return True

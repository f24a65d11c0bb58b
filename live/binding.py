"""A compiled model bound to the scene's objects: one value, made by `bind` per compile.

What every view of a running simulation needs besides a snapshot: which object
is which MuJoCo element (read through each scanner's `MjsElement.id`, never
looked up by name), which bodies the simulation moves and how (written straight
or through a fixed matrix), the mocap and deformable objects, and where MuJoCo's
world sits in Blender's. The display, the timeline, the overlays, the mouse
spring and the sidebar read a Binding and a snapshot only; the live simulation
swaps in a new Binding on each compile (as dm_control's `physics.bind()` makes
one value by one function).

The binding is immutable but for what a group switch changes: `with_groups`
and `without_deleted` return new values.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
from mathutils import Matrix, Vector

from ..components.kinds import BOUND_KINDS
from ..engine import frames
from ..scan import scene_scan
from ..sync import timeline


@dataclasses.dataclass(frozen=True, eq=False)
class Binding:
    model: mujoco.MjModel
    ids: dict  # as_pointer() -> (kind, MuJoCo id), for every bound element (the engine's keys)
    objects: dict  # as_pointer() -> object, for every bound element
    by_id: dict  # (kind, MuJoCo id) -> object
    body_ids: dict  # as_pointer() -> body id
    actuator_ids: dict  # as_pointer() -> actuator id
    roots: list  # the model roots compiled
    # MuJoCo's world in Blender's: the root's frame for one model, the identity for
    # attached ones; world_quat / world_pos: None when it is the identity
    world: Matrix
    world_quat: np.ndarray | None
    world_pos: np.ndarray | None
    # the bodies the simulation moves (a joint's), in rows: (object, body id)
    driven: list
    driven_ids: np.ndarray
    driven_parents: np.ndarray
    # plain rows (most): Location / Rotation written straight; others through a matrix
    plain_rows: np.ndarray
    plain_objects: list
    row_of: dict  # as_pointer() -> row, of the plain rows
    fixed: list  # (object, row, matrix)
    levels: list  # frames.depth_levels of the model's bodies
    mocap: list  # (object, mocap id, body id, matrix to MuJoCo's frame)
    deformed: list  # (object, "flex" | "skin", index, world frame or None)
    # every body's authored pose (MuJoCo's kinematics at qpos0): the Fast display
    # moves the authored objects from there
    authored_pos: np.ndarray
    authored_conj: np.ndarray
    # what moves with each driven body as shown now (see `with_groups`)
    groups: list = dataclasses.field(default_factory=list)
    moving_count: int = 0  # (Auto's estimate of the objects written per frame)
    # every object the binding reads or writes, with its name (a deleted object can
    # no longer say it)
    touched: list = dataclasses.field(default_factory=list)

    # ------------------------------------------------------------ derived

    def with_groups(self, scene_objects) -> Binding:
        """The binding with the objects that move with each driven body as they are
        shown now (at a binding, and after a group switch showed or hid some)."""
        driven = self.driven
        groups = moving_groups(driven, {o.as_pointer() for o, _b in driven}, scene_objects)
        touched = {**{root.as_pointer(): root for root in self.roots}, **self.objects,
                   **{o.as_pointer(): o for group in groups for o in group}}
        return dataclasses.replace(self, groups=groups, moving_count=sum(len(group) for group in groups),
                                   touched=[(obj, obj.name) for obj in touched.values()])

    def deleted(self) -> list[str]:
        """Names of the bound objects that were deleted."""
        return [name for obj, name in self.touched if not exists(obj)]

    def without_deleted(self) -> Binding:
        """Deleted objects out of the look-up table panels and overlays read (until the
        next compile binds without them)."""
        return dataclasses.replace(self, by_id={key: obj for key, obj in self.by_id.items() if exists(obj)})

    # ------------------------------------------------------------ questions

    def targets(self) -> timeline.Targets:
        """What a bake of this binding's simulation animates."""
        fix_of = {row: fix for _obj, row, fix in self.fixed}
        model = self.model
        return timeline.Targets(
            bodies=[(obj, body, fix_of.get(row)) for row, (obj, body) in enumerate(self.driven)],
            parents=model.body_parentid.copy(), levels=self.levels,
            mocap=[(obj, mocap, to_mujoco) for obj, mocap, _body, to_mujoco in self.mocap],
            deformed=list(self.deformed),
            flex_ranges=list(zip(model.flex_vertadr.tolist(), model.flex_vertnum.tolist(), strict=True)))

    def body_of(self, obj) -> int | None:
        """The MuJoCo body an object belongs to (a geom, site or mesh of it, however
        deep), or None for the world and for objects outside the model."""
        while obj is not None:
            body = self.body_ids.get(obj.as_pointer())
            if body is not None:
                return body
            if obj.mujoco.kind == "MODEL":
                return None
            obj = obj.parent
        return None

    def free_joint(self, body: int) -> int | None:
        """The body's free joint, if its first joint is one."""
        model = self.model
        first = model.body_jntadr[body]
        return int(first) if first >= 0 and model.jnt_type[first] == mujoco.mjtJoint.mjJNT_FREE else None

    def to_mujoco(self, point) -> np.ndarray:
        """A Blender world point in MuJoCo's world."""
        return np.array(self.world.inverted() @ Vector(point))

    def to_blender(self, point) -> Vector:
        return self.world @ Vector(tuple(point))


def bind(model, data, scanners, roots, attached: bool, scene_objects) -> Binding:
    """`model` bound to the scanned objects (`data`: the compile's MjData of `model`,
    at qpos0; `attached`: the roots were attached into one spec where they stand)."""
    ids, objects = {}, {}
    body_object = {0: None}
    for scanner in scanners:
        for pointer, (block, kind, element) in scanner.elements.items():
            if kind in BOUND_KINDS and element.id >= 0:
                ids[pointer] = (kind, element.id)
                objects[pointer] = block
                if kind == "body":
                    body_object[element.id] = block
    world_frames = {root.as_pointer(): _world_frame(root, attached) for root in roots}
    loc, rot, _scale = roots[0].matrix_world.decompose()
    world = Matrix.LocRotScale(loc, rot, None) if not attached else Matrix.Identity(4)
    moved = not attached and not is_identity(world)

    driven, parents, fixes, mocap = [], [], [], []
    for pointer, (kind, body) in ids.items():
        if kind != "body":
            continue
        obj = objects[pointer]
        chain = _chain_to(obj, body_object.get(int(model.body_parentid[body])))
        if chain is None:
            continue
        root = scene_scan.model_of(obj)
        frame = world_frames.get(root.as_pointer()) if model.body_parentid[body] == 0 else None
        if model.body_mocapid[body] >= 0:
            to_mujoco = chain if frame is None else frame.inverted() @ chain
            mocap.append((obj, int(model.body_mocapid[body]), body, to_mujoco))
        elif model.body_jntnum[body] > 0:
            fix = chain.inverted() if frame is None else chain.inverted() @ frame
            plain = obj.rotation_mode == "QUATERNION" and is_identity(fix)
            driven.append((obj, body))
            parents.append(int(model.body_parentid[body]))
            fixes.append(None if plain else fix)
    plain_rows = np.array([i for i, f in enumerate(fixes) if f is None], dtype=int)
    binding = Binding(
        model=model, ids=ids, objects=objects, by_id={(kind, i): objects[p] for p, (kind, i) in ids.items()},
        body_ids={p: i for p, (kind, i) in ids.items() if kind == "body"},
        actuator_ids={p: i for p, (kind, i) in ids.items() if kind == "actuator"},
        roots=list(roots), world=world, world_quat=np.array(rot) if moved else None,
        world_pos=np.array(loc) if moved else None,
        driven=driven, driven_ids=np.array([b for _o, b in driven], dtype=int),
        driven_parents=np.array(parents, dtype=int), plain_rows=plain_rows,
        plain_objects=[driven[i][0] for i in plain_rows],
        row_of={driven[i][0].as_pointer(): int(i) for i in plain_rows},
        fixed=[(driven[i][0], i, f) for i, f in enumerate(fixes) if f is not None],
        levels=frames.depth_levels(model.body_parentid), mocap=mocap,
        deformed=[(objects[p], kind, i, world_frames.get(scene_scan.model_of(objects[p]).as_pointer()))
                  for p, (kind, i) in ids.items() if kind in ("flex", "skin")],
        authored_pos=data.xpos.copy(), authored_conj=frames.conjugate(data.xquat.copy()))
    return binding.with_groups(scene_objects)


def exists(obj) -> bool:
    """False once `obj` was deleted (its Python wrapper outlives it)."""
    try:
        return obj.name is not None
    except ReferenceError:
        return False


def moving_groups(driven, driven_pointers, objects) -> list[list]:
    """For each driven body (row), the visible objects that move with it: the body
    object and everything below it down to the next driven body (`objects`: the
    scene's; one map of children, since Object.children walks every object in the file)."""
    children: dict[int, list] = {}
    for obj in objects:
        if obj.parent is not None:
            children.setdefault(obj.parent.as_pointer(), []).append(obj)
    groups = []
    for obj, _body in driven:
        group, todo = [], [obj]
        while todo:
            node = todo.pop()
            if node.visible_get():
                group.append(node)
            below = children.get(node.as_pointer(), ())
            todo.extend(c for c in below if c.as_pointer() not in driven_pointers)
        groups.append(group)
    return groups


def _chain_to(obj, parent_body):
    """The matrix from the frame of `parent_body` (None: the model root) to
    `obj`'s parent space, through frames and plain objects; None if `obj` is
    not below it."""
    matrix = obj.matrix_parent_inverse.copy()
    node = obj.parent
    while node is not None:
        if node == parent_body or (parent_body is None and node.mujoco.kind == "MODEL"):
            return matrix
        matrix = node.matrix_basis @ node.matrix_parent_inverse @ matrix
        node = node.parent
    return None


def _world_frame(root, attached: bool) -> Matrix | None:
    """How MuJoCo's world sits in the root's frame: the identity for one model
    (None), the inverse of where `build_spec` attached it for several."""
    if not attached:
        return None
    loc, rot, _scale = root.matrix_world.decompose()
    return Matrix.LocRotScale(loc, rot, None).inverted()


def is_identity(matrix, tolerance=1e-9) -> bool:
    return all(abs(matrix[i][j] - (i == j)) <= tolerance for i in range(4) for j in range(4))

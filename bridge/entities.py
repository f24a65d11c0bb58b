"""The scene as URLab's client sees it: entities found by name prefix.

URLab's client builds one wrapper per handshake entity and gives it every
joint, actuator, sensor and body whose compiled name is the entity's `prefix`
or starts with `prefix + "_"`, in id order; it reads its per-entity reply
block (qpos, qvel, ctrl, ...) in that same order. So the server computes each
entity's elements by exactly that rule, and serves a model whose model roots
are attached with their prefix (`<root>_...`).

Entities: one per model root (its prefix), and one per free body (a body of
the world with a free joint and no actuator in its subtree: a prop), named by
the body's name.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from ..engine.session import DOF_WIDTH, QPOS_WIDTH

OBJ = mujoco.mjtObj


def names(model, obj, count: int) -> list[str]:
    return [mujoco.mj_id2name(model, obj, i) or "" for i in range(count)]


def matches(name: str, prefix: str) -> bool:
    return bool(name) and (name == prefix or name.startswith(prefix + "_"))


def short(name: str, prefix: str) -> str:
    return name[len(prefix) + 1:] if name.startswith(prefix + "_") else name


@dataclass(frozen=True, eq=False)
class Entity:
    """One entity's elements (ids, id order) and where its state lies in MjData."""

    prefix: str
    kind: str  # "articulation" (a model root) or "body" (a free body)
    joints: np.ndarray
    actuators: np.ndarray
    sensors: np.ndarray
    bodies: np.ndarray
    qpos_index: np.ndarray  # into qpos, the entity's joints' slots in order
    qvel_index: np.ndarray
    sensor_slices: tuple  # (short name, start, stop) into sensordata
    joint_names: tuple  # short names
    actuator_names: tuple
    body_names: tuple
    actuator_act: np.ndarray  # act address of each actuator, -1 for a stateless one
    root_body: int  # the free joint's body, else the first body (-1: none)
    free_joint: int  # id of the free joint among `joints`, or -1

    def handshake(self, model) -> dict:
        """The entity's `hello_ok` map (URLab's articulation / entity block)."""
        out = {"prefix": self.prefix, "name": self.prefix, "actor_id": self.prefix,
               "kind": self.kind, "default_control_mode": "raw",
               "actuator_types": {name: "general" for name in self.actuator_names},
               "original_names": {"actuators": {}, "joints": {}, "sensors": {}, "bodies": {}},
               "camera_topics": {}, "id": int(self.root_body),
               "has_free_base": self.free_joint >= 0}
        if self.free_joint >= 0:
            out.update(free_joint=mujoco.mj_id2name(model, OBJ.mjOBJ_JOINT, self.free_joint) or "",
                       free_joint_id=int(self.free_joint),
                       qpos_offset=int(model.jnt_qposadr[self.free_joint]),
                       qvel_offset=int(model.jnt_dofadr[self.free_joint]))
        return out


def entity(model, prefix: str, kind: str) -> Entity:
    joint_names = names(model, OBJ.mjOBJ_JOINT, model.njnt)
    actuator_names = names(model, OBJ.mjOBJ_ACTUATOR, model.nu)
    sensor_names = names(model, OBJ.mjOBJ_SENSOR, model.nsensor)
    body_names = names(model, OBJ.mjOBJ_BODY, model.nbody)
    joints = [i for i, n in enumerate(joint_names) if matches(n, prefix)]
    actuators = [i for i, n in enumerate(actuator_names) if matches(n, prefix)]
    sensors = [i for i, n in enumerate(sensor_names) if matches(n, prefix)]
    bodies = [i for i, n in enumerate(body_names) if matches(n, prefix)]
    qpos, qvel = [], []
    for j in joints:
        kind_j = int(model.jnt_type[j])
        qpos.extend(range(model.jnt_qposadr[j], model.jnt_qposadr[j] + QPOS_WIDTH[kind_j]))
        qvel.extend(range(model.jnt_dofadr[j], model.jnt_dofadr[j] + DOF_WIDTH[kind_j]))
    free = next((j for j in joints if model.jnt_type[j] == 0), -1)
    root = int(model.jnt_bodyid[free]) if free >= 0 else (bodies[0] if bodies else -1)
    slices = tuple((short(sensor_names[s], prefix), int(model.sensor_adr[s]),
                    int(model.sensor_adr[s] + model.sensor_dim[s])) for s in sensors)
    act = [int(model.actuator_actadr[a]) if model.actuator_actnum[a] else -1 for a in actuators]
    ints = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
    return Entity(prefix, kind, ints(joints), ints(actuators), ints(sensors), ints(bodies), ints(qpos),
                  ints(qvel), slices, tuple(short(joint_names[j], prefix) for j in joints),
                  tuple(short(actuator_names[a], prefix) for a in actuators),
                  tuple(short(body_names[b], prefix) for b in bodies), ints(act), root, free)


def free_bodies(model) -> list[int]:
    """Bodies of the world with a free joint and no actuator acting in their subtree."""
    acting = set()
    for a in range(model.nu):
        target = int(model.actuator_trnid[a, 0])
        kind = int(model.actuator_trntype[a])
        if kind in (0, 1):  # joint, joint in parent
            acting.add(int(model.body_rootid[model.jnt_bodyid[target]]))
        elif kind == 4:  # site
            acting.add(int(model.body_rootid[model.site_bodyid[target]]))
        elif kind == 5:  # body
            acting.add(int(model.body_rootid[target]))
        else:  # a tendon or slider-crank may reach any body: no body is sure to be a prop
            return []
    return [b for b in _free_roots(model) if b not in acting]


def _free_roots(model) -> list[int]:
    out = []
    for b in range(1, model.nbody):
        if model.body_parentid[b] != 0 or model.body_jntnum[b] < 1:
            continue
        if model.jnt_type[model.body_jntadr[b]] == 0:
            out.append(b)
    return out


def scene_entities(model, root_prefixes) -> list[Entity]:
    """The model roots' entities (`root_prefixes`, in order), then each named free
    body's whose name is not a root's prefix."""
    found = [entity(model, prefix, "articulation") for prefix in root_prefixes]
    taken = set(root_prefixes)
    for b in free_bodies(model):
        name = mujoco.mj_id2name(model, OBJ.mjOBJ_BODY, b) or ""
        if name and name not in taken:
            taken.add(name)
            found.append(entity(model, name, "body"))
    return found


class SceneEntities:
    """The entities of the model served now, worked out once per model (the
    dispatcher's replies and the state stream read the same ones)."""

    def __init__(self, root_prefixes):
        self._root_prefixes = root_prefixes  # () -> the scene's model root prefixes, in order
        self._of = (None, [], {})  # (model, its entities, them by prefix)

    def _memo(self, model):
        if self._of[0] is not model:  # (one tuple swapped whole: safe to read from any thread)
            found = scene_entities(model, self._root_prefixes())
            self._of = (model, found, {e.prefix: e for e in found})
        return self._of

    def of(self, model) -> list:
        return self._memo(model)[1]

    def by_prefix(self, model) -> dict:
        return self._memo(model)[2]

"""Replies built from a snapshot: what `step_ok` (and `reset_ok`, `forward_ok`,
the state stream) carry at each observation level, as URLab's reply does.

- minimal: per entity qpos, qvel (+ time, step, frame_id, sim_time, wall_time);
- standard: + ctrl, act (one value per actuator, 0 for a stateless one),
  sensors by short name;
- full: + bodies {short name: {xpos, xquat}} and actuator_forces;
- at every level, an articulation's twist {linear, angular} and actions (URLab's
  UMjTwistController: bridge/controllers.py).

Per-entity blocks go under `arts` (URLab's newest client) and
`per_articulation` (its documentation); free bodies' poses (and their free
joint's qpos, qvel) also under `scene` and `entities`.
"""

from __future__ import annotations

import time

import mujoco
import numpy as np

OBJ = mujoco.mjtObj

LEVELS = ("minimal", "standard", "full")


def stamp(seconds: float) -> dict:
    """ROS-Time-style {sec, nsec}."""
    nanoseconds = int(round(seconds * 1e9))
    return {"sec": nanoseconds // 1_000_000_000, "nsec": nanoseconds % 1_000_000_000}


class LiveState:
    """The state now, read straight from MjData by the thread that owns it (a
    borrower of the runner, see Runner.lend): what `observation` reads of a
    Snapshot, without copying everything a snapshot copies."""

    def __init__(self, runner):
        session = runner.session
        data = session.data
        session.kinematics()  # (poses of this state, as a snapshot's are)
        self.model, self.frame, self.time = session.model, runner.frame, float(data.time)
        self.steps, self.playing = session.steps_taken, session.playing
        self.qpos, self.qvel, self.act, self.ctrl = data.qpos, data.qvel, data.act, data.ctrl
        self.sensordata, self.actuator_force = data.sensordata, data.actuator_force
        self.xpos, self.xquat = data.xpos, data.xquat
        self.mocap_pos, self.mocap_quat = data.mocap_pos, data.mocap_quat


def entity_block(entity, shot, level: str) -> dict:
    # (lists here: msgpack's hook for numpy costs more than tolist, and a LiveState's
    # arrays change with the next step)
    block = {"qpos": shot.qpos[entity.qpos_index].tolist(), "qvel": shot.qvel[entity.qvel_index].tolist()}
    if level == "minimal":
        return block
    block["ctrl"] = shot.ctrl[entity.actuators].tolist()
    act = np.zeros(len(entity.actuators))
    stateful = entity.actuator_act >= 0
    if shot.act.size and stateful.any():
        act[stateful] = shot.act[entity.actuator_act[stateful]]
    block["act"] = act.tolist()
    block["sensors"] = {name: shot.sensordata[start:stop].tolist()
                        for name, start, stop in entity.sensor_slices}
    if level == "full":
        block["bodies"] = {name: {"xpos": shot.xpos[b].tolist(), "xquat": shot.xquat[b].tolist()}
                           for name, b in zip(entity.body_names, entity.bodies, strict=True)}
        block["actuator_forces"] = shot.actuator_force[entity.actuators].tolist()
    return block


def scene_block(entity, shot) -> dict:
    """A free body's pose, and (as URLab's newest server) its free joint's qpos (7)
    and qvel (6) when its first joint is that free joint."""
    block = {"xpos": shot.xpos[entity.root_body].tolist(), "xquat": shot.xquat[entity.root_body].tolist()}
    if entity.free_joint >= 0 and len(entity.joints) and int(entity.joints[0]) == entity.free_joint:
        block["qpos"] = shot.qpos[entity.qpos_index[:7]].tolist()
        block["qvel"] = shot.qvel[entity.qvel_index[:6]].tolist()
    return block


def observation(op: str, shot, entities, level: str, extra: dict | None = None) -> dict:
    """`<op>` reply of snapshot `shot` for `entities` at `level`; `extra`: what an
    entity's block adds, by prefix (an articulation's twist, bridge/controllers.py)."""
    arts = {e.prefix: entity_block(e, shot, level) for e in entities}
    for prefix, more in (extra or {}).items():
        if prefix in arts:
            arts[prefix].update(more)
    scene = {e.prefix: scene_block(e, shot) for e in entities if e.kind == "body" and e.root_body >= 0}
    return {"op": op, "time": shot.time, "step": shot.steps, "frame_id": shot.frame,
            "sim_time": stamp(shot.time), "wall_time": stamp(time.time()),
            "paused": not shot.playing, "arts": arts, "per_articulation": arts,
            "scene": scene, "entities": scene}


def contact_rows(model, data, wanted: dict, limit: int) -> tuple[list, bool]:
    """URLab's contact maps for the active contacts matching `wanted` (exact names),
    at most `limit`: geoms, bodies, pos, normal (the frame's first row), frame,
    dist (negative: penetrating) and the 6-vector force in the contact frame
    (mj_contactForce)."""
    name = lambda obj, i: mujoco.mj_id2name(model, obj, int(i)) or ""  # noqa: E731
    rows, force = [], np.zeros(6)
    for i in range(data.ncon):
        contact = data.contact[i]
        g1, g2 = int(contact.geom[0]), int(contact.geom[1])
        row = {"geom1": name(OBJ.mjOBJ_GEOM, g1), "geom2": name(OBJ.mjOBJ_GEOM, g2),
               "body1": name(OBJ.mjOBJ_BODY, model.geom_bodyid[g1]),
               "body2": name(OBJ.mjOBJ_BODY, model.geom_bodyid[g2])}
        if any(row[key] != value for key, value in wanted.items()):
            continue
        if len(rows) == limit:
            return rows, True
        mujoco.mj_contactForce(model, data, i, force)
        row.update(geom1_id=g1, geom2_id=g2, pos=contact.pos.copy(), normal=contact.frame[:3].copy(),
                   frame=contact.frame.copy(), dist=float(contact.dist), force=force.copy())
        rows.append(row)
    return rows, False

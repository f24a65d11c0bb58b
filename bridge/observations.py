"""Replies built from a snapshot: what `step_ok` (and `reset_ok`, `forward_ok`,
the state stream) carry at each observation level, as URLab's reply does.

- minimal: per entity qpos, qvel (+ time, step, frame_id, sim_time, wall_time);
- standard: + ctrl, act (one value per actuator, 0 for a stateless one),
  sensors by short name;
- full: + bodies {short name: {xpos, xquat}} and actuator_forces.

Per-entity blocks go under `arts` (URLab's newest client) and
`per_articulation` (its documentation); free bodies' poses also under `scene`
and `entities`.
"""

from __future__ import annotations

import time

import numpy as np

LEVELS = ("minimal", "standard", "full")


def stamp(seconds: float) -> dict:
    """ROS-Time-style {sec, nsec}."""
    nanoseconds = int(round(seconds * 1e9))
    return {"sec": nanoseconds // 1_000_000_000, "nsec": nanoseconds % 1_000_000_000}


def entity_block(entity, shot, level: str) -> dict:
    block = {"qpos": shot.qpos[entity.qpos_index], "qvel": shot.qvel[entity.qvel_index]}
    if level == "minimal":
        return block
    block["ctrl"] = shot.ctrl[entity.actuators]
    act = np.zeros(len(entity.actuators))
    stateful = entity.actuator_act >= 0
    if shot.act.size and stateful.any():
        act[stateful] = shot.act[entity.actuator_act[stateful]]
    block["act"] = act
    block["sensors"] = {name: shot.sensordata[start:stop] for name, start, stop in entity.sensor_slices}
    if level == "full":
        block["bodies"] = {name: {"xpos": shot.xpos[b], "xquat": shot.xquat[b]}
                           for name, b in zip(entity.body_names, entity.bodies, strict=True)}
        block["actuator_forces"] = shot.actuator_force[entity.actuators]
    return block


def observation(op: str, shot, entities, level: str) -> dict:
    """`<op>` reply of snapshot `shot` for `entities` at `level`."""
    arts = {e.prefix: entity_block(e, shot, level) for e in entities}
    scene = {e.prefix: {"xpos": shot.xpos[e.root_body], "xquat": shot.xquat[e.root_body]}
             for e in entities if e.kind == "body" and e.root_body >= 0}
    return {"op": op, "time": shot.time, "step": shot.steps, "frame_id": shot.frame,
            "sim_time": stamp(shot.time), "wall_time": stamp(time.time()),
            "paused": not shot.playing, "arts": arts, "per_articulation": arts,
            "scene": scene, "entities": scene}

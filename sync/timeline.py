"""Recordings -> Blender's timeline (a bake), and back out of it.

A bake is plain Blender animation, so Blender's own play, scrubbing, frame
stepping and Render Animation show it, and a saved .blend keeps it:

- every simulated body's object (and a mocap body's object that moved) gets an
  Action of its own with keys on location and rotation_quaternion, one per scene
  frame, written in bulk (`keyframe_points.foreach_set`);
- a flex or skin mesh gets absolute shape keys, one per frame, and its Key an
  Action whose evaluation time lands on frame k's shape at scene frame k, so
  the mesh replays and renders (and moves smoothly between two frames);
- the recording itself (times, full states, sensor values) is kept with the bake
  on an Action of its own ("<scene> MuJoCo recording", kept with a fake user); the
  scene's `mujoco_bake` (components/scene_settings.py) says which frames are baked.

Every Action a bake makes remembers what it replaced (the object's previous
Action, whether it had animation data, its rotation mode and authored transform),
so Clear Bake puts back exactly what was there, and the scan reads a baked
body's authored pose, never the frame's (scene/transforms.baked).
"""

from __future__ import annotations

from typing import NamedTuple

import bpy
import mujoco
import numpy as np
from mathutils import Matrix, Quaternion, Vector

from ..blender_compat import SLOTTED_ACTIONS
from ..components.stored_keys import BAKE, RECORDING
from ..engine import frames as mjframes
from ..engine.recording import STATE, Recording
from ..scene.transforms import from_record, to_record, transform
from .objects import put_transform


class Targets(NamedTuple):
    """What a bake animates, from a simulation's binding (live/scene_session.py)."""

    bodies: list  # (object, body id, fix Matrix | None): fix @ local pose is the object's basis
    parents: np.ndarray  # model.body_parentid
    levels: list  # engine.frames.depth_levels of the model
    mocap: list  # (object, mocap id, to_mujoco Matrix): to_mujoco @ basis is MuJoCo's mocap pose
    deformed: list  # (object, "flex" | "skin", index, world Matrix | None)
    flex_ranges: list  # (vertadr, vertnum) per flex


class Baked(NamedTuple):
    frames: int
    objects: int  # body and mocap objects keyed
    meshes: int  # flex and skin meshes given shape keys
    skipped: list  # why some were left out


def is_baked(scene) -> bool:
    return scene.mujoco_bake.recording is not None


# ------------------------------------------------------------------ write

def write(scene, recording: Recording, targets: Targets, model, source: str) -> Baked:
    """The recording as keys on the targets (any earlier bake of the scene must be
    cleared first), and kept with the bake."""
    frame_numbers = np.arange(len(recording), dtype=np.float32) + np.float32(recording.frame_start)
    skipped: list[str] = []
    keyed = _key_bodies(scene, recording, targets, frame_numbers)
    keyed += _key_mocap(scene, recording, targets, frame_numbers, model)
    meshes = 0
    for obj, kind, index, world in targets.deformed:
        if kind == "flex":
            adr, num = targets.flex_ranges[index]
            verts = recording.flexvert_xpos[:, adr:adr + num]
        else:
            verts = recording.skin_vertices[index]
        why = _shape_keys(scene, obj, verts, world, frame_numbers)
        if why:
            skipped.append(why)
        else:
            meshes += 1
    _keep_recording(scene, recording, model, source)
    return Baked(len(recording), keyed, meshes, skipped)


def _key_bodies(scene, recording, targets, frame_numbers) -> int:
    if not targets.bodies:
        return 0
    local_pos, local_quat = mjframes.float32_locals_frames(recording.xpos, recording.xquat, targets.parents,
                                                           targets.levels)
    for obj, body, fix in targets.bodies:
        pos, quat = local_pos[:, body], local_quat[:, body]
        if fix is not None:
            pos, quat = _through(fix, pos, quat, obj)
        _key_transform(scene, obj, frame_numbers, pos, quat)
    return len(targets.bodies)


def _key_mocap(scene, recording, targets, frame_numbers, model) -> int:
    """Mocap bodies whose pose changed during the recording (their objects drove it)."""
    keyed = 0
    pos_all = recording.part("mocap_pos").reshape(len(recording), -1, 3)
    quat_all = recording.part("mocap_quat").reshape(len(recording), -1, 4)
    for obj, mocap, to_mujoco in targets.mocap:
        pos, quat = pos_all[:, mocap], quat_all[:, mocap]
        if (pos == pos[0]).all() and (quat == quat[0]).all():
            continue
        pos, quat = _through(to_mujoco.inverted(), pos, quat, obj)
        _key_transform(scene, obj, frame_numbers, pos, quat)
        keyed += 1
    return keyed


def _through(fix: Matrix, pos, quat, obj):
    """Location and rotation of basis = fix @ (pos, quat) @ the object's scale, per frame."""
    loc, rot, scale = fix.decompose()
    if all(abs(s - 1.0) < 1e-9 for s in scale):  # rigid (frames, a moved model root): vectorised
        count = len(pos)
        turn = np.broadcast_to(np.array(rot), (count, 4))
        return (np.array(loc) + mjframes.rotate(turn, pos), mjframes.quat_multiply(turn, quat))
    out_pos, out_quat = np.empty_like(pos), np.empty_like(quat)
    keep = Matrix.Diagonal(obj.scale.to_4d())
    for i, (p, q) in enumerate(zip(pos, quat, strict=True)):
        basis = fix @ Matrix.LocRotScale(Vector(p), Quaternion(q), None) @ keep
        loc_i, rot_i, _s = basis.decompose()
        out_pos[i], out_quat[i] = loc_i, rot_i
    return out_pos, out_quat


def _key_transform(scene, obj, frame_numbers, pos, quat) -> None:
    """An Action of keys on `obj`'s location and rotation_quaternion, remembering what it replaces."""
    animation = obj.animation_data
    record = {"scene": scene, "object": obj, "made_animation_data": animation is None,
              "previous": animation.action if animation is not None and animation.action else None,
              "authored": to_record(transform(obj))}
    if record["previous"] is None:
        del record["previous"]  # (an ID property cannot hold None)
    obj.rotation_mode = "QUATERNION"
    quat = mjframes.continuous_quaternions(quat)
    channels = [("location", i, pos[:, i]) for i in range(3)]
    channels += [("rotation_quaternion", i, quat[:, i]) for i in range(4)]
    action = _animate(obj, f"{obj.name} (MuJoCo bake)", channels, frame_numbers)
    action[BAKE] = record


def _animate(id_block, name: str, channels, frame_numbers):
    """A new Action on `id_block`: one F-Curve per (data path, index, values (F,)), a key
    per frame; Blender's auto-clamped Bezier between keys (through every key exactly)."""
    action = bpy.data.actions.new(name)
    animation = id_block.animation_data or id_block.animation_data_create()
    id_type = id_block.id_type  # ("KEY" or "OBJECT")
    if SLOTTED_ACTIONS:
        slot = action.slots.new(id_type=id_type, name=id_block.name)
        animation.action = action
        animation.action_slot = slot
        fcurves = action.layers.new("Layer").strips.new(type="KEYFRAME").channelbags.new(slot).fcurves
    else:
        action.id_root = id_type
        animation.action = action
        fcurves = action.fcurves
    co = np.empty((len(frame_numbers), 2), dtype=np.float32)
    co[:, 0] = frame_numbers
    for path, index, values in channels:
        fcurve = fcurves.new(path, index=index)
        points = fcurve.keyframe_points
        points.add(len(frame_numbers))
        co[:, 1] = values
        points.foreach_set("co", co.ravel())
        fcurve.update()  # (handles: a smooth curve through the keys, for motion blur)
    return action


def _shape_keys(scene, obj, verts, world, frame_numbers) -> str:
    """Absolute shape keys of world-space vertices (F, n, 3); why not, or ""."""
    mesh = obj.data
    if mesh.shape_keys is not None:
        return f"{obj.name}: its mesh has shape keys of its own (not baked)"
    if verts.shape[1] != len(mesh.vertices):
        return (f"{obj.name}: its mesh was edited to {len(mesh.vertices)} vertices, MuJoCo has "
                f"{verts.shape[1]} (not baked)")
    if world is not None:
        matrix = np.array(world)
        verts = verts @ matrix[:3, :3].T + matrix[:3, 3]
    verts = np.ascontiguousarray(verts, dtype=np.float32)
    obj.shape_key_add(name="Authored", from_mix=False)
    key = mesh.shape_keys
    key.use_relative = False  # absolute: the evaluation time picks (and blends) the frames' shapes
    for row, frame in enumerate(frame_numbers):
        block = obj.shape_key_add(name=f"Frame {int(frame)}", from_mix=False)
        block.interpolation = "KEY_LINEAR"
        block.data.foreach_set("co", verts[row].ravel())
    positions = np.array([block.frame for block in key.key_blocks[1:]], dtype=np.float32)
    action = _animate(key, f"{obj.name} (MuJoCo bake)", [("eval_time", 0, positions)], frame_numbers)
    action[BAKE] = {"scene": scene, "object": obj}
    return ""


def _keep_recording(scene, recording: Recording, model, source: str) -> None:
    holder = bpy.data.actions.new(f"{scene.name} MuJoCo recording")
    holder.use_fake_user = True  # (nothing animates with it: kept for its data)
    holder[RECORDING] = {
        "scene": scene, "fps": recording.fps, "frame_start": recording.frame_start,
        "time": recording.time, "state": recording.state.ravel(), "state_width": recording.state.shape[1],
        "sensordata": recording.sensordata.ravel(), "nsensordata": recording.sensordata.shape[1],
        "fingerprint": fingerprint(model),
        "slices": {name: [part.start, part.stop] for name, part in recording.slices.items()},
    }
    bake = scene.mujoco_bake
    bake.recording = holder
    bake.frame_start, bake.frame_end = recording.frame_start, recording.frame_end
    bake.fps, bake.source = recording.fps, source


def fingerprint(model) -> list[int]:
    """Sizes a recorded state must match to belong to a model."""
    return [model.nq, model.nv, model.na, model.nu, model.nmocap, model.nbody, model.njnt,
            mujoco.mj_stateSize(model, STATE)]


def fingerprint_of(scene) -> list[int] | None:
    """The fingerprint of the model the scene's bake was recorded with (None: not baked)."""
    holder = scene.mujoco_bake.recording
    data = holder.get(RECORDING) if holder is not None else None
    return list(data["fingerprint"]) if data is not None else None


# ------------------------------------------------------------------- read

def recorded(scene) -> Recording | None:
    """The bake's recording (times, states, sensor values; no poses), or None."""
    holder = scene.mujoco_bake.recording
    data = holder.get(RECORDING) if holder is not None else None
    if data is None:
        return None
    time = np.array(data["time"], dtype=float)
    count = len(time)
    state = np.array(data["state"], dtype=float).reshape(count, int(data["state_width"]))
    sensordata = np.array(data["sensordata"], dtype=float).reshape(count, int(data["nsensordata"]))
    empty = np.empty((count, 0, 3))
    slices = {name: slice(*part) for name, part in data["slices"].items()}
    return Recording(fps=float(data["fps"]), frame_start=int(data["frame_start"]), time=time, state=state,
                     sensordata=sensordata, xpos=empty, xquat=np.empty((count, 0, 4)), flexvert_xpos=empty,
                     slices=slices)


def recorded_state(scene, model, frame: int) -> np.ndarray | None:
    """The full state baked at scene frame `frame` if it is baked and of `model`'s
    layout (a model edited since into other sizes has none)."""
    holder = scene.mujoco_bake.recording
    data = holder.get(RECORDING) if holder is not None else None
    if data is None or list(data["fingerprint"]) != fingerprint(model):
        return None
    row = frame - int(data["frame_start"])
    width = int(data["state_width"])
    if not 0 <= row < len(data["time"]):
        return None
    return np.array(data["state"][row * width:(row + 1) * width], dtype=float)


# ------------------------------------------------------------------ clear

def clear(scene) -> int:
    """Remove everything the scene's bake added, putting back what it replaced;
    the number of Actions removed (0: nothing was baked)."""
    made = []
    for action in bpy.data.actions:
        record = action.get(BAKE)
        if record is None or record.get("scene") != scene:
            continue
        owner = record.get("object")
        if owner is not None:
            if "authored" in record:
                _unkey_object(owner, action, record)
            elif owner.data is not None and owner.data.shape_keys is not None:
                owner.shape_key_clear()
        made.append(action)
    bake = scene.mujoco_bake
    if bake.recording is not None:
        made.append(bake.recording)
    bake.recording = None
    # one removal for all (each remove() alone walks every ID's properties: ~20 ms apiece
    # in an imported scene, measured)
    bpy.data.batch_remove(made)
    removed = len(made)
    bake.frame_start = bake.frame_end = 0
    bake.fps, bake.source = 0.0, ""
    return removed


def _unkey_object(obj, action, record) -> None:
    animation = obj.animation_data
    if animation is not None and animation.action == action:
        if record.get("made_animation_data"):
            obj.animation_data_clear()
        else:
            animation.action = record.get("previous")
    put_transform(obj, from_record(obj, record["authored"]))


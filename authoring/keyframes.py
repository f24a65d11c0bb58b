"""Keyframes made in Blender: store the current state (simulated, or the model's
reference pose when nothing runs) as an MJCF <key>, load one into the
simulation, list, rename and delete them."""

from __future__ import annotations

import mujoco

import bpy

from ..components import changes
from . import authoring, validation
from ..live import scene_session
from ..scan import scene_scan
from ..scene import preferences


def keys_of(root):
    """The model's keyframe objects, in MuJoCo's order (the scan's)."""
    found = [o for o in root.children_recursive if o.mujoco.kind == "KEY"]
    return sorted(found, key=scene_scan._order)


def store(context, name: str = ""):
    """A keyframe of the running simulation's state, or of the model's qpos0."""
    root = authoring.model_root(context)
    running = scene_session.simulation(context.scene)
    if running is not None and not running.ended:
        data = running.latest  # (a snapshot has the state's time, qpos, qvel, act, ctrl, mocap)
    else:
        outcome = validation.validate(context.scene)
        if not outcome.ok:
            raise authoring.AuthoringError(f"The model does not compile: {outcome.message}")
        model = outcome.models[root.name]
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
    key = mujoco.MjSpec().add_key()
    key.time = float(data.time)
    key.qpos, key.qvel = data.qpos.tolist(), data.qvel.tolist()
    key.act, key.ctrl = data.act.tolist(), data.ctrl.tolist()
    key.mpos, key.mquat = data.mocap_pos.ravel().tolist(), data.mocap_quat.ravel().tolist()
    name = name or authoring.unique_name(root, "key", "key")
    key.name = name
    obj = authoring._new_section_object(context, root, "key", key, name, {})
    changes.touch(obj)
    return obj


def load(context, obj) -> int:
    """Reset the simulation (started, paused, if none runs) to keyframe `obj`; its index."""
    root = scene_scan.model_of(obj)
    running = scene_session.start_simulation(context.scene, preferences.settings(context))
    running.check_edits()  # a keyframe stored since the last compile
    index = next((i for (kind, i), o in running.binding.by_id.items() if kind == "key" and o == obj), None)
    if index is None:
        index = keys_of(root).index(obj)
    context.scene.mujoco_simulation.keyframe = index
    running.reset(index)
    return index


def delete(obj) -> None:
    changes.touch(scene_scan.model_of(obj))
    bpy.data.objects.remove(obj)


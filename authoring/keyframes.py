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


def current_state(context):
    """The state a keyframe is made of: the running simulation's latest snapshot (it has the
    state's time, qpos, qvel, act, ctrl and mocap poses), else the model's reference pose
    (an MjData of the checked model after mj_forward)."""
    running = scene_session.simulation(context.scene)
    if running is not None and not running.ended:
        return running.latest
    root = authoring.model_root(context)
    outcome = validation.validate(context.scene)
    if not outcome.ok:
        raise authoring.AuthoringError(f"The model does not compile: {outcome.message}")
    model = outcome.models[root.name]
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return data


def store(context, name: str = "", data=None):
    """A keyframe of `data` (default: `current_state`): the running simulation's state, or
    the model's qpos0."""
    root = authoring.model_root(context)
    if data is None:
        data = current_state(context)
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


def key_text(data, full: bool = False) -> str:
    """`data`'s state as a `<key>` element, laid out as MuJoCo simulate's "Copy state"
    (CopyKey, simulate.cc): time, qpos, qvel, then act, ctrl, mpos and mquat when the model
    has them, values printed with C's %g (Python's % is C's printf); `full`: each value's
    shortest text that reads back as the same double (simulate's Shift-copy prints
    %-22.16g, padded and not always exact)."""
    number = repr if full else (lambda value: "%g" % value)

    def values(array):
        return " ".join(number(float(v)) for v in array.ravel())
    rows = [("time", number(float(data.time))), ("qpos", values(data.qpos)), ("qvel", values(data.qvel))]
    if data.act.size:
        rows.append(("act", values(data.act)))
    if data.ctrl.size:
        rows.append(("ctrl", values(data.ctrl)))
    if data.mocap_pos.size:
        rows += [("mpos", values(data.mocap_pos)), ("mquat", values(data.mocap_quat))]
    return "<key\n" + "\n".join(f'  {name}="{text}"' for name, text in rows) + "\n/>"


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


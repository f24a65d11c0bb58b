"""The one place that converts poses between MuJoCo and Blender.

Both are right-handed, Z-up, metres, and write quaternions (w, x, y, z): the
axis conversion is the identity. What differs is which local axis an object
"points" along:

- a joint object's local +Z is the joint axis (Blender's single-arrow empty
  points along +Z);
- a light object shines along its local -Z, as Blender lights do; MuJoCo's
  light `dir` is that direction;
- a camera looks along -Z with +Y up in both.

Orientation alternatives (euler, axisangle, xyaxes, zaxis) are resolved the
way MuJoCo's compiler resolves them, with MuJoCo's own math functions.
bpy-free.
"""

from __future__ import annotations

import math
from array import array

import mujoco
import numpy as np

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])

# mjtOrientation values
QUAT, AXISANGLE, XYAXES, ZAXIS, EULER = (int(mujoco.mjtOrientation.mjORIENTATION_QUAT),
                                         int(mujoco.mjtOrientation.mjORIENTATION_AXISANGLE),
                                         int(mujoco.mjtOrientation.mjORIENTATION_XYAXES),
                                         int(mujoco.mjtOrientation.mjORIENTATION_ZAXIS),
                                         int(mujoco.mjtOrientation.mjORIENTATION_EULER))


def normalized(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    n = math.sqrt(v.dot(v))  # np.linalg.norm's own formula, without its checks (~5 us)
    return v / n if n > 0 else v


def quat_z_to(vec) -> np.ndarray:
    """The minimal rotation taking +Z to `vec` (MuJoCo's mju_quatZ2Vec)."""
    quat = np.zeros(4)
    mujoco.mju_quatZ2Vec(quat, np.asarray(vec, dtype=float))
    return quat


def resolve_orientation(quat, alt, degree: bool, eulerseq: str) -> np.ndarray:
    """The quaternion an element's orientation stands for.

    `alt` is the element's MjsOrientation; `degree` and `eulerseq` are the
    model's compiler settings, as MuJoCo's compiler uses them.
    """
    kind = int(alt.type)
    if kind == QUAT:
        return normalized(quat)
    if kind == AXISANGLE:
        axis, angle = normalized(alt.axisangle[:3]), float(alt.axisangle[3])
        if degree:
            angle = math.radians(angle)
        return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])
    if kind == XYAXES:
        x = normalized(alt.xyaxes[:3])
        y = normalized(np.asarray(alt.xyaxes[3:]) - x * np.dot(x, alt.xyaxes[3:]))
        z = normalized(np.cross(x, y))
        out = np.zeros(4)
        mujoco.mju_mat2Quat(out, np.column_stack([x, y, z]).ravel())
        return out
    if kind == ZAXIS:
        return quat_z_to(normalized(alt.zaxis))
    if kind == EULER:
        euler = np.radians(alt.euler) if degree else np.asarray(alt.euler, dtype=float)
        out = np.zeros(4)
        mujoco.mju_euler2Quat(out, euler, eulerseq)
        return out
    raise ValueError(f"unknown orientation type {kind}")


def fromto_pose(fromto) -> tuple[np.ndarray, np.ndarray]:
    """(pos, quat) of a geom or site given by `fromto`: centred, its +Z pointing
    from the "to" end back to the "from" end, as MuJoCo's compiler orients it."""
    start, end = np.asarray(fromto[:3], dtype=float), np.asarray(fromto[3:], dtype=float)
    return (start + end) / 2, quat_z_to(normalized(start - end))


def has_fromto(fromto) -> bool:
    """MuJoCo marks an unused fromto with NaN in its first component."""
    return not math.isnan(fromto[0])


def joint_rotation(axis) -> np.ndarray:
    """Rotation of a joint object: its local +Z is the joint axis."""
    return quat_z_to(normalized(axis))


def light_rotation(direction) -> np.ndarray:
    """Rotation of a light object: it shines along its local -Z."""
    return quat_z_to(-normalized(direction))


def axis_of(rotation_quat) -> np.ndarray:
    """The local +Z of a rotation, in its parent frame (joint axis)."""
    out = np.zeros(3)
    mujoco.mju_rotVecQuat(out, np.array([0.0, 0.0, 1.0]), np.asarray(rotation_quat, dtype=float))
    return out


# ------------------------------------------------------- simulation sync


# a * b == (a[:, _QI] * _QS) @ b for quaternions (w, x, y, z): one gather, one einsum
_QI = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]])
_QS = np.array([[1.0, -1, -1, -1], [1, 1, -1, 1], [1, 1, 1, -1], [1, -1, 1, 1]])
_CONJ = np.array([1.0, -1.0, -1.0, -1.0])


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise Hamilton products a * b of (n, 4) quaternion arrays (w, x, y, z)."""
    return np.einsum("nij,nj->ni", a[:, _QI] * _QS, b)


def conjugate(quat: np.ndarray) -> np.ndarray:
    """Row-wise conjugates (inverse rotations of unit quaternions)."""
    return quat * _CONJ


def rotate(quat: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """Row-wise rotation of (n, 3) vectors by (n, 4) unit quaternions: v + 2w(u x v) +
    u x 2(u x v). The cross products by component: 10x faster than an einsum with the
    Levi-Civita tensor for a thousand rows (the Fast display's every frame), 2x for 50."""
    w, u = quat[:, :1], quat[:, 1:]
    twice = 2.0 * _cross(u, vec)
    return vec + w * twice + _cross(u, twice)


def displacements(xpos, xquat, authored_pos, authored_conj, world_quat=None, world_pos=None):
    """Each body's displacement from its authored pose, in Blender's world (what the
    Fast display instancer moves its sources by): world @ (pose now) @ (authored
    pose)^-1 @ world^-1, as positions (n, 3) and quaternions (n, 4). `authored_conj`:
    the authored orientations' conjugates; world_quat / world_pos: where MuJoCo's
    world stands in Blender's (None: at the origin)."""
    turn = quat_multiply(xquat, authored_conj)
    shift = xpos - rotate(turn, authored_pos)
    if world_quat is not None:
        count = len(turn)
        world_q = np.broadcast_to(world_quat, (count, 4))
        world_p = np.broadcast_to(world_pos, (count, 3))
        turn = quat_multiply(quat_multiply(world_q, turn), conjugate(world_q))
        shift = rotate(world_q, shift) + world_p - rotate(turn, world_p)
    return shift, turn


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax, ay, az = a[:, 0], a[:, 1], a[:, 2]
    bx, by, bz = b[:, 0], b[:, 1], b[:, 2]
    return np.stack((ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx), axis=1)


def depth_levels(parents: np.ndarray) -> list[np.ndarray]:
    """Body ids grouped by depth below the world (ids 1..n-1), shallowest first."""
    depth = np.zeros(len(parents), dtype=int)
    for body in range(1, len(parents)):  # MuJoCo numbers parents before children
        depth[body] = depth[parents[body]] + 1
    return [np.flatnonzero(depth == d) for d in range(1, int(depth.max(initial=0)) + 1)]


def float32_locals(xpos: np.ndarray, xquat: np.ndarray, parents: np.ndarray,
                   levels: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Local (parent-frame) poses of every body, for objects that keep them in
    float32 and compose them in float32 as Blender does.

    Each level is made relative to the parent's pose *as Blender will have it*
    (its own float32-rounded local composed on its parent's), not to MuJoCo's
    exact parent pose, so rounding does not pile up down a long chain: on the
    Cassie legs this keeps every world matrix within 1e-6 of MuJoCo's.

    A level costs ~30 numpy calls whatever its size, a body ~5 us in plain
    Python: deep trees of few bodies (a humanoid: 16 bodies, 6 levels) go body
    by body, wide ones (a thousand free bodies: 1 level) level by level."""
    if len(xpos) < SCALAR_BODIES_PER_LEVEL * max(1, len(levels)):
        return _float32_locals_scalar(xpos, xquat, parents)
    local_pos, local_quat = float32_locals_frames(xpos[None], xquat[None], parents, levels)
    return local_pos[0], local_quat[0]


def float32_locals_frames(xpos: np.ndarray, xquat: np.ndarray, parents: np.ndarray,
                          levels: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """`float32_locals` of many frames at once: xpos (F, nbody, 3), xquat (F, nbody, 4)
    -> local positions (F, nbody, 3) and quaternions (F, nbody, 4), level by level with
    every frame's bodies of a level in one array (a bake's thousands of poses)."""
    frames, count = xpos.shape[:2]
    world_pos, world_quat = np.zeros((frames, count, 3)), np.zeros((frames, count, 4))
    world_quat[:, 0, 0] = 1.0
    local_pos, local_quat = np.zeros((frames, count, 3)), np.zeros((frames, count, 4))
    last = len(levels) - 1
    for depth, level in enumerate(levels):
        if not parents[level].any():  # children of the world (a level of free bodies): local is world
            pos, quat = xpos[:, level].reshape(-1, 3), xquat[:, level].reshape(-1, 4)
            local_pos[:, level], local_quat[:, level] = xpos[:, level], xquat[:, level]
            if depth < last:  # (what Blender will hold, for the level below)
                quat32 = quat.astype(np.float32).astype(np.float64)
                quat32 /= np.linalg.norm(quat32, axis=1)[:, None]
                world_pos[:, level] = pos.astype(np.float32).astype(np.float64).reshape(frames, -1, 3)
                world_quat[:, level] = quat32.reshape(frames, -1, 4)
            continue
        rows = frames * len(level)
        parent_pos = world_pos[:, parents[level]].reshape(rows, 3)
        parent_quat = world_quat[:, parents[level]].reshape(rows, 4)
        back = parent_quat * _CONJ
        quat = quat_multiply(back, xquat[:, level].reshape(rows, 4))
        pos = rotate(back, xpos[:, level].reshape(rows, 3) - parent_pos)
        local_pos[:, level], local_quat[:, level] = pos.reshape(frames, -1, 3), quat.reshape(frames, -1, 4)
        if depth == last:
            break  # (nothing reads the last level's world poses)
        pos32 = pos.astype(np.float32).astype(np.float64)
        quat32 = quat.astype(np.float32).astype(np.float64)
        quat32 /= np.linalg.norm(quat32, axis=1)[:, None]
        world_quat[:, level] = quat_multiply(parent_quat, quat32).reshape(frames, -1, 4)
        world_pos[:, level] = (parent_pos + rotate(parent_quat, pos32)).reshape(frames, -1, 3)
    return local_pos, local_quat


def continuous_quaternions(quat: np.ndarray) -> np.ndarray:
    """Quaternions over time (F, ..., 4) with each one's sign chosen nearest the one
    before (q and -q are the same rotation; keys that flip make the motion between
    two frames spin the long way round)."""
    flips = np.sum(quat[1:] * quat[:-1], axis=-1) < 0
    sign = np.where(np.cumsum(flips, axis=0) % 2 == 1, -1.0, 1.0)
    out = quat.copy()
    out[1:] *= sign[..., None]
    return out


SCALAR_BODIES_PER_LEVEL = 8  # below this many bodies per level, the scalar path is faster


def _float32_locals_scalar(xpos, xquat, parents) -> tuple[np.ndarray, np.ndarray]:
    """`float32_locals` body by body (MuJoCo numbers parents before children)."""
    positions, quats, parent_ids = xpos.tolist(), xquat.tolist(), parents.tolist()
    world = [((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))]  # Blender's composed pose per body
    local_pos, local_quat = [(0.0, 0.0, 0.0)], [(0.0, 0.0, 0.0, 0.0)]
    for body in range(1, len(positions)):
        parent_pos, parent_quat = world[parent_ids[body]]
        back = (parent_quat[0], -parent_quat[1], -parent_quat[2], -parent_quat[3])
        x, y, z = positions[body]
        pos = _rotate(back, (x - parent_pos[0], y - parent_pos[1], z - parent_pos[2]))
        quat = _multiply(back, quats[body])
        local_pos.append(pos)
        local_quat.append(quat)
        pos32, quat32 = array("f", pos).tolist(), array("f", quat).tolist()
        norm = math.sqrt(sum(v * v for v in quat32))
        quat32 = [v / norm for v in quat32]
        turned = _rotate(parent_quat, pos32)
        world.append(((parent_pos[0] + turned[0], parent_pos[1] + turned[1], parent_pos[2] + turned[2]),
                      _multiply(parent_quat, quat32)))
    return np.array(local_pos), np.array(local_quat)


def _multiply(a, b) -> tuple:
    """Hamilton product of two quaternions (w, x, y, z) given as sequences."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw)


def _rotate(q, v) -> tuple:
    """v rotated by unit quaternion q: v + 2w (u x v) + 2 u x (u x v)."""
    w, ux, uy, uz = q
    vx, vy, vz = v
    tx, ty, tz = 2 * (uy * vz - uz * vy), 2 * (uz * vx - ux * vz), 2 * (ux * vy - uy * vx)
    return (vx + w * tx + uy * tz - uz * ty, vy + w * ty + uz * tx - ux * tz,
            vz + w * tz + ux * ty - uy * tx)


def quat_matrices(quat) -> np.ndarray:
    """3x3 rotation matrices from (w, x, y, z) quaternions (any leading shape), normalised."""
    q = np.asarray(quat, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)

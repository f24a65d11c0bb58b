"""Mouse-spring perturbation, through MuJoCo's own `mjvPerturb` (bpy-free).

A `Grab` holds one `mujoco.MjvPerturb`: the selected body, the grab point in the
body's frame (`localpos`) and the reference the spring pulls toward
(`refselpos` for the grab point, `refpos` / `refquat` for the body). MuJoCo's
`mjv_applyPerturbForce` turns it into a force and torque on the body, scaled by
the body's mass the way MuJoCo's viewer does (`vis.map.stiffness` x the
subtree's inertia); `mjv_applyPerturbPose` moves the body instead while the
simulation is paused.

Also here: the mouse ray of a 3D view and its crossing with a plane, from the
view and projection matrices alone (so it is testable without a window).
"""

from __future__ import annotations

import mujoco
import numpy as np

TRANSLATE = int(mujoco.mjtPertBit.mjPERT_TRANSLATE)
ROTATE = int(mujoco.mjtPertBit.mjPERT_ROTATE)


class Grab:
    """A spring from a point of one body to a target that follows the mouse."""

    def __init__(self, model, data, body: int, point, rotate: bool = False,
                 view_distance: float = 2.0, stiffness_scale: float = 1.0):
        if not 0 < body < model.nbody:
            raise ValueError(f"body {body} cannot be grabbed (the world, or no such body)")
        self.body = body
        self.stiffness = (model.vis.map.stiffness * stiffness_scale,
                          model.vis.map.stiffnessrot * stiffness_scale)
        pert = self.pert = mujoco.MjvPerturb()
        pert.select = body
        point = np.asarray(point, dtype=float)
        pert.localpos = data.xmat[body].reshape(3, 3).T @ (point - data.xpos[body])
        # mjv_initPerturb reads the camera distance from a scene (for its mouse scale)
        scene, camera = mujoco.MjvScene(model, maxgeom=0), mujoco.MjvCamera()
        camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        camera.lookat, camera.distance = point, max(view_distance, 1e-3)
        mujoco.mjv_updateScene(model, data, mujoco.MjvOption(), None, camera, 0, scene)
        mujoco.mjv_initPerturb(model, data, scene, pert)
        pert.active = ROTATE if rotate else TRANSLATE
        self.rotate = rotate

    @property
    def target(self) -> np.ndarray:
        """Where the grab point is pulled to (MuJoCo world)."""
        return np.array(self.pert.refselpos)

    def grab_point(self, data) -> np.ndarray:
        """Where the grab point is now (MuJoCo world)."""
        body = self.body
        return data.xpos[body] + data.xmat[body].reshape(3, 3) @ self.pert.localpos

    def move_to(self, target) -> None:
        """Pull the grab point toward `target`; the body reference moves along
        (as `mjv_movePerturb` does), so a paused drag moves the body by as much."""
        target = np.asarray(target, dtype=float)
        shift = target - self.pert.refselpos
        self.pert.refselpos = target
        self.pert.refpos = self.pert.refpos + shift

    def turn(self, axis, angle: float) -> None:
        """Turn the reference orientation by `angle` radians about world `axis`."""
        quat, turned = np.zeros(4), np.zeros(4)
        mujoco.mju_axisAngle2Quat(quat, np.asarray(axis, dtype=float), angle)
        mujoco.mju_mulQuat(turned, quat, np.asarray(self.pert.refquat))
        mujoco.mju_normalize4(turned)
        self.pert.refquat = turned

    def apply(self, model, data) -> None:
        """The spring force and torque of this step, in `data.xfrc_applied`
        (MuJoCo's `mjv_applyPerturbForce`)."""
        model.vis.map.stiffness, model.vis.map.stiffnessrot = self.stiffness
        data.xfrc_applied[self.body] = 0
        mujoco.mjv_applyPerturbForce(model, data, self.pert)

    def apply_pose(self, model, data) -> None:
        """Paused: move the body to the reference (`mjv_applyPerturbPose`; a body
        below a free joint moves its whole tree), then recompute positions."""
        mujoco.mjv_applyPerturbPose(model, data, self.pert, 1)
        mujoco.mj_forward(model, data)

    def release(self, data) -> None:
        data.xfrc_applied[self.body] = 0
        self.pert.active = 0


# ---------------------------------------------------------------- mouse ray


def mouse_ray(coord, size, view_matrix, projection_matrix) -> tuple[np.ndarray, np.ndarray]:
    """(origin, unit direction) in world space of the ray through pixel `coord`
    (x, y from the region's bottom left) of a region of `size` (width, height),
    for a world-to-view and a view-to-clip matrix: perspective or orthographic."""
    x = 2.0 * coord[0] / size[0] - 1.0
    y = 2.0 * coord[1] / size[1] - 1.0
    inverse = np.linalg.inv(np.asarray(projection_matrix, dtype=float) @ np.asarray(view_matrix, dtype=float))
    near = inverse @ np.array([x, y, -1.0, 1.0])
    far = inverse @ np.array([x, y, 1.0, 1.0])
    near, far = near[:3] / near[3], far[:3] / far[3]
    direction = far - near
    return near, direction / np.linalg.norm(direction)


def view_forward(view_matrix) -> np.ndarray:
    """The direction the view looks along, in world space (its -Z)."""
    rotation = np.asarray(view_matrix, dtype=float)[:3, :3]
    return -rotation[2] / np.linalg.norm(rotation[2])


def plane_hit(origin, direction, point, normal) -> np.ndarray | None:
    """Where the ray crosses the plane through `point` with `normal` (None if parallel)."""
    normal = np.asarray(normal, dtype=float)
    along = float(np.dot(direction, normal))
    if abs(along) < 1e-9:
        return None
    t = float(np.dot(np.asarray(point, dtype=float) - origin, normal)) / along
    return np.asarray(origin, dtype=float) + t * np.asarray(direction, dtype=float)


def drag_target(coord, size, view_matrix, projection_matrix, point, horizontal: bool = False):
    """The mouse at `coord`, on the plane through `point` facing the view (or the
    horizontal plane through it): where a grabbed point is pulled."""
    origin, direction = mouse_ray(coord, size, view_matrix, projection_matrix)
    normal = np.array([0.0, 0.0, 1.0]) if horizontal else view_forward(view_matrix)
    return plane_hit(origin, direction, point, normal)

"""The 3D view following the simulation as MuJoCo's viewer cameras do (simulate's
Rendering > Camera: Free, Tracking, a model camera), and simulate's Copy Camera.

- TRACK (mjCAMERA_TRACKING): mjv_updateCamera sets the camera's lookat to the
  body's `subtree_com` and keeps azimuth, elevation and distance: the view's
  centre (`view_location`) is put on the tracked point, its rotation and
  distance left alone (so the user still orbits and zooms around it). For a
  single free body whose centre of mass is its frame's origin this is its xpos.
- CAMERA (mjCAMERA_FIXED): the eye at `cam_xpos`, turned by `cam_xmat` (looking
  along its -z, y up: a Blender view's own axes), the vertical field of view
  `cam_fovy` through the region's aspect, in perspective.
- FREE: following ends and the view goes back to the pose it had when following
  began (simulate's Free leaves the view where it is; Blender's user gets their
  own view back, as leaving a camera view does).

A `Follow` belongs to the scene's SceneSession (`owner.follow`); it moves the view
from `LiveSimulation.show` (the frame the objects show, so the view never lags
them, in every display mode: the snapshot is read, not the objects). Main
thread only. The pure functions below work in MuJoCo's world in doubles and
are checked against mjv_updateCamera / mjv_cameraFrame (tests/blender/
test_view_follow.py); Blender keeps its view in single precision.
"""

from __future__ import annotations

import math

import bpy
import numpy as np
from mathutils import Matrix, Vector

from ..scan import scene_scan
from . import viewport

FREE, TRACK, CAMERA = "FREE", "TRACK", "CAMERA"
# metres in front of a model camera's eye that the view turns about: short, so the eye
# Blender draws from (its centre plus the distance, in single precision) stays within
# 1e-6 of cam_xpos (the user's own distance would put it ~1e-6 off at ~15 m)
CAMERA_PIVOT = 0.1


# ------------------------------------------------------- MuJoCo's cameras


def tracked_point(shot, world: np.ndarray, body: int) -> np.ndarray:
    """mjCAMERA_TRACKING's lookat (the body's subtree centre of mass) in Blender's world
    (`world`: MuJoCo's world in Blender's, 4x4)."""
    return world[:3, :3] @ shot.subtree_com[body] + world[:3, 3]


def orbit_rotation(azimuth: float, elevation: float) -> np.ndarray:
    """The view rotation (columns right, up, back) of a free or tracking MjvCamera at
    `azimuth` / `elevation` degrees (mjv_cameraFrame's formulas)."""
    ca, sa = math.cos(azimuth / 180.0 * math.pi), math.sin(azimuth / 180.0 * math.pi)
    ce, se = math.cos(elevation / 180.0 * math.pi), math.sin(elevation / 180.0 * math.pi)
    forward = np.array([ce * ca, ce * sa, se])
    return np.stack([np.array([sa, -ca, 0.0]), np.array([-se * ca, -se * sa, ce]), -forward], axis=1)


def view_frame(location, rotation, distance: float) -> tuple:
    """(headpos, forward, up, right) of a view looking at `location` from `distance`
    turned by `rotation` (3x3, columns right, up, back), as mjv_cameraFrame gives them."""
    rotation = np.asarray(rotation, float)
    back = rotation[:, 2]
    return np.asarray(location, float) + back * distance, -back, rotation[:, 1].copy(), rotation[:, 0].copy()


def fixed_frame(shot, camera: int) -> tuple:
    """(headpos, forward, up, right) of mjCAMERA_FIXED `camera` (mjv_cameraFrame's)."""
    mat = shot.cam_xmat[camera]
    return (shot.cam_xpos[camera].copy(), np.array([-mat[2], -mat[5], -mat[8]]),
            np.array([mat[1], mat[4], mat[7]]), np.array([mat[0], mat[3], mat[6]]))


def camera_view(shot, world: np.ndarray, camera: int) -> tuple:
    """(eye, view rotation) in Blender's world of model camera `camera`: cam_xmat's
    columns are a view's (right, up, back)."""
    mat = shot.cam_xmat[camera].reshape(3, 3)
    return world[:3, :3] @ shot.cam_xpos[camera] + world[:3, 3], world[:3, :3] @ mat


def camera_lens(fovy: float, width: int, height: int) -> float:
    """The 3D view's lens (mm) that shows `fovy` degrees vertically in a region of
    `width` x `height` (Blender's view fits its 72 mm sensor across the wider side)."""
    across = min(1.0, height / width) if width > 0 else 1.0
    return viewport.HALF_SENSOR * across / math.tan(math.radians(fovy) / 2.0)


def camera_text(headpos, forward, up) -> str:
    """simulate's Copy Camera: the eye as an MJCF `<camera>` (right = forward x up), each
    number "%.3f" (a zero without the sign a rounding error gave it)."""
    pos, axes = (" ".join(f"{v:.3f}".replace("-0.000", "0.000") for v in values)
                 for values in (headpos, (*np.cross(forward, up), *up)))
    return f'<camera pos="{pos}" xyaxes="{axes}"/>\n'


def eye_matrix(area, scene) -> np.ndarray:
    """The 3D view's eye in Blender's world (4x4, columns right, up, back, position):
    the scene camera's when the view looks through it."""
    view = area.spaces.active.region_3d
    if view.view_perspective == "CAMERA" and scene.camera is not None:
        return np.array(scene.camera.matrix_world.normalized())
    turn = np.array(view.view_rotation.normalized().to_matrix())
    eye = np.eye(4)
    eye[:3, :3] = turn
    eye[:3, 3] = view_frame(view.view_location, turn, view.view_distance)[0]
    return eye


def camera_text_of(area, scene, world: np.ndarray) -> str:
    """Copy Camera of a 3D view, in MuJoCo's world (`world`: MuJoCo's world in Blender's)."""
    eye = np.linalg.inv(world) @ eye_matrix(area, scene)
    return camera_text(eye[:3, 3], -eye[:3, 2], eye[:3, 1])


# ------------------------------------------------------- the following view


class Follow:
    """The 3D view `area` following body or camera `target` (`mode` TRACK or CAMERA);
    `saved` is the view's pose before it followed (FREE puts it back). A view
    looking through a Blender camera (`camera`: the scene's, not one of a model)
    tracks by moving that camera: it goes along with the tracked point from where
    it was, never turning."""

    def __init__(self, area, mode: str, target: int, name: str = "", camera=None):
        self.area = area.as_pointer()  # (an area is found again by it: a closed one is never touched)
        self.mode, self.target, self.name = mode, target, name
        self.saved = _pose_of(area)
        self.camera = camera
        self.camera_saved = camera.matrix_world.copy() if camera is not None else None
        self.start_point = None  # (the tracked point when the camera started following it)

    def find_area(self):
        for window in bpy.context.window_manager.windows:
            for area in window.screen.areas:
                if area.as_pointer() == self.area and area.type == "VIEW_3D":
                    return area
        return None

    def show(self, shot, world: Matrix) -> bool:
        """Move the view to snapshot `shot`; False if there is nothing to follow any more
        (the area closed, the target not in the model)."""
        area = self.find_area()
        if area is None:
            return False
        world = np.array(world)
        view = area.spaces.active.region_3d
        if self.mode == TRACK:
            if self.target >= shot.model.nbody:
                return False
            point = tracked_point(shot, world, self.target)
            if self.camera is not None:
                self._move_camera(point)
            else:
                view.view_location = Vector(tuple(point))
        else:
            if self.target >= shot.model.ncam:
                return False
            width, height = viewport.window_size(area)
            eye, rotation = camera_view(shot, world, self.target)
            if view.view_perspective != "PERSP":
                view.view_perspective = "PERSP"
            area.spaces.active.lens = camera_lens(float(shot.model.cam_fovy[self.target]), width, height)
            turn = Matrix(rotation.tolist()).to_quaternion()
            view.view_rotation, view.view_distance = turn, CAMERA_PIVOT
            view.view_location = Vector(tuple(eye)) - turn @ Vector((0.0, 0.0, CAMERA_PIVOT))
        area.tag_redraw()
        return True

    def _move_camera(self, point: np.ndarray) -> None:
        if self.start_point is None:
            self.start_point = point
        moved = self.camera_saved.copy()
        moved.translation = self.camera_saved.translation + Vector(tuple(point - self.start_point))
        self.camera.matrix_world = moved

    def restore(self) -> None:
        """The view (and a camera it moved) back as it was before following."""
        if self.camera is not None:
            try:
                self.camera.matrix_world = self.camera_saved
            except ReferenceError:  # (the camera was deleted)
                pass
        area = self.find_area()
        if area is not None:
            _set_pose(area, self.saved)
            area.tag_redraw()


def _pose_of(area) -> tuple:
    view = area.spaces.active.region_3d
    return (view.view_location.copy(), view.view_rotation.copy(), view.view_distance, view.view_perspective,
            area.spaces.active.lens)


def _set_pose(area, pose) -> None:
    view = area.spaces.active.region_3d
    location, rotation, distance, perspective, lens = pose
    view.view_perspective = perspective
    view.view_rotation, view.view_location, view.view_distance = rotation, location, distance
    area.spaces.active.lens = lens


# ------------------------------------------------ the scene session's part


def start(owner, area, mode: str, target: int, name: str = "") -> Follow:
    """The view `area` follows `target` from now on (the scene's simulation's latest
    snapshot shown at once); a view already following keeps its saved pose. Tracking
    in a view through the scene's camera moves that camera, unless it belongs to a
    model (the simulation would take the move as an edit): then the view leaves it."""
    before = owner.follow
    if before is not None:
        before.restore()
    through = area.spaces.active.region_3d.view_perspective == "CAMERA"
    camera = owner.scene.camera if mode == TRACK and through else None
    if camera is not None and scene_scan.model_of(camera) is not None:
        camera = None
    follow = Follow(area, mode, target, name, camera)  # (the view's own pose: `before` put it back)
    if through and camera is None:  # (the view through a camera moves only with it)
        area.spaces.active.region_3d.view_perspective = "PERSP"
    owner.follow = follow
    live = owner.simulation
    if live is not None:
        shown(owner, live.runner.latest, live.binding.world, live.model)
    return follow


def shown(owner, shot, world: Matrix, model) -> None:
    """(LiveSimulation.show) The following view moved to the snapshot just shown;
    following ends when there is nothing to follow."""
    follow = owner.follow
    if follow is None or shot.model is not model:
        return
    if not follow.show(shot, world):
        owner.follow = None


def free(owner) -> bool:
    """The view stops following and gets its own pose back; False if none followed."""
    follow, owner.follow = owner.follow, None
    if follow is None:
        return False
    follow.restore()
    return True

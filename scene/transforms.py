"""An object's own transform as plain values that compare exactly.

Two views of it:
- `Transform`: every part (all three rotations, whatever the mode): what a
  simulation holds as an object's authored pose and puts back on stop;
- `Placement`: what places the object (the rotation of its mode only): the
  what the scan keeps, compared on every rescan to tell an edit from nothing.
"""

from __future__ import annotations

from itertools import chain
from typing import NamedTuple

from mathutils import Euler, Matrix, Quaternion, Vector

from ..components.stored_keys import BAKE


class Placement(NamedTuple):
    location: tuple
    rotation: tuple  # of `rotation_mode`: quaternion, axis-angle or euler
    rotation_mode: str
    scale: tuple
    parent_inverse: object  # `exact_matrix` of matrix_parent_inverse


class Transform(NamedTuple):
    location: tuple
    rotation_quaternion: tuple
    rotation_euler: tuple
    rotation_mode: str
    scale: tuple
    parent_inverse: object  # `exact_matrix` of matrix_parent_inverse
    rotation_axis_angle: tuple

    def placement(self) -> Placement:
        mode = self.rotation_mode
        rotation = self.rotation_quaternion if mode == "QUATERNION" else \
            self.rotation_axis_angle if mode == "AXIS_ANGLE" else self.rotation_euler
        return Placement(self.location, rotation, mode, self.scale, self.parent_inverse)

    def basis(self) -> Matrix:
        """The local matrix (Object.matrix_basis) this transform gives."""
        if self.rotation_mode == "QUATERNION":
            rotation = Quaternion(self.rotation_quaternion).to_matrix()
        elif self.rotation_mode == "AXIS_ANGLE":
            angle, *axis = self.rotation_axis_angle
            rotation = Quaternion(axis, angle).to_matrix()
        else:
            rotation = Euler(self.rotation_euler, self.rotation_mode).to_matrix()
        return Matrix.LocRotScale(Vector(self.location), rotation, Vector(self.scale))


class HeldPose(NamedTuple):
    """An object a running simulation moves, and its authored transform (put back on stop)."""
    obj: object
    transform: Transform


def transform(obj) -> Transform:
    """An object's own transform, every part of it (slices read each vector once)."""
    return Transform(obj.location[:], obj.rotation_quaternion[:], obj.rotation_euler[:], obj.rotation_mode,
                     obj.scale[:], exact_matrix(obj.matrix_parent_inverse), obj.rotation_axis_angle[:])


def placement(obj) -> Placement:
    """What places an object, read from it."""
    mode = obj.rotation_mode
    rotation = obj.rotation_quaternion[:] if mode == "QUATERNION" else \
        obj.rotation_axis_angle[:] if mode == "AXIS_ANGLE" else obj.rotation_euler[:]
    return Placement(obj.location[:], rotation, mode, obj.scale[:], exact_matrix(obj.matrix_parent_inverse))


def baked(obj) -> Transform | None:
    """The authored transform a timeline bake keeps for an object it animates (whose
    location and rotation are then the frame's), else None."""
    animation = obj.animation_data
    action = animation.action if animation is not None else None
    record = action.get(BAKE) if action is not None else None
    if record is None or "authored" not in record:
        return None
    return from_record(obj, record["authored"])


KEPT = ("location", "rotation_quaternion", "rotation_euler", "rotation_mode", "rotation_axis_angle")


def to_record(kept: Transform) -> dict:
    """The parts of a transform a bake animates or changes, as ID property values."""
    return {name: getattr(kept, name) for name in KEPT}


def from_record(obj, record) -> Transform:
    """`obj`'s transform with the parts `to_record` kept (scale and parent inverse: its own)."""
    return transform(obj)._replace(**{name: record[name] if name == "rotation_mode" else tuple(record[name])
                                      for name in KEPT})


def authored(obj, held: dict) -> Transform | None:
    """An object's authored transform where its own is not it: held by a running
    simulation (`held`: as_pointer() -> HeldPose) or kept by a bake; None otherwise."""
    pose = held.get(obj.as_pointer())
    return pose.transform if pose is not None else baked(obj)


def authored_placement(obj, held: dict) -> Placement:
    """What places an object as authored (see `authored`)."""
    pose = authored(obj, held)
    return placement(obj) if pose is None else pose.placement()


def exact_matrix(matrix):
    """A matrix as a value that compares exactly (mathutils' own == lets values 1 ulp
    apart be equal): its bytes, 4x faster than its 16 floats, where mathutils has the
    buffer protocol (5.0's has; 4.2's and 4.5's have not)."""
    return memoryview(matrix).tobytes() if _MATRIX_BUFFER else tuple(chain.from_iterable(matrix))


try:
    memoryview(Matrix.Identity(4))
    _MATRIX_BUFFER = True
except TypeError:
    _MATRIX_BUFFER = False
IDENTITY = exact_matrix(Matrix.Identity(4))  # the parent inverse of plain parenting

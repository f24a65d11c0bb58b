"""Body poses -> Blender objects, and authored transforms put back."""

from __future__ import annotations

from mathutils import Matrix, Quaternion, Vector

from ..scene.transforms import Transform


def write_body_poses(plain_objects, fixed, pos, quat, plain_rows) -> None:
    """Write float32 local poses (rows of `pos`, `quat`) to the objects they drive.
    `plain_objects` (rows `plain_rows`) take location and quaternion as they are;
    `fixed` [(object, row, fix matrix)] are parented through frames or plain objects,
    so their basis is fix @ pose, keeping the object's scale."""
    for obj, p, q in zip(plain_objects, pos[plain_rows].tolist(), quat[plain_rows].tolist(), strict=True):
        obj.location = p
        obj.rotation_quaternion = q
    for obj, row, fix in fixed:
        scale = Matrix.Diagonal(obj.scale.to_4d())
        obj.matrix_basis = fix @ Matrix.LocRotScale(Vector(pos[row]), Quaternion(quat[row]), None) @ scale


def put_transform(obj, transform: Transform) -> None:
    """An object's whole own transform back, exactly (a held authored pose)."""
    obj.rotation_mode = transform.rotation_mode
    obj.location = transform.location
    obj.rotation_quaternion = transform.rotation_quaternion
    obj.rotation_euler = transform.rotation_euler
    obj.rotation_axis_angle = transform.rotation_axis_angle
    obj.scale = transform.scale

"""Turning what is in the scene into MuJoCo elements: wrap objects into a body,
make a world geom free, make a Blender mesh a geom (as a mesh, its convex hull or
the primitive MuJoCo fits), fold an object scale into a geom's size."""

from __future__ import annotations

import bmesh
import bpy
import mujoco
import numpy as np
from mathutils import Matrix, Quaternion, Vector

from ..components import changes, spec_io
from ..engine import primitive_fit
from ..geometry import mujoco_meshes
from . import authoring, display
from ..scan import scene_scan



def _update(context):
    context.view_layer.update()  # world matrices of what was just made or moved


# ------------------------------------------------------------------ bodies


def make_body(context, objects):
    """A new body at the centre of `objects` (one model's elements or plain
    objects), holding them; it goes where the first one was."""
    members = [o for o in objects if scene_scan.model_of(o) is not None and o.mujoco.kind != "MODEL"]
    if not members:
        raise authoring.AuthoringError("Select objects of a MuJoCo model to wrap into a body")
    root = scene_scan.model_of(members[0])
    if any(scene_scan.model_of(o) is not root for o in members):
        raise authoring.AuthoringError("The selected objects belong to different models")
    if any(o.mujoco.kind == "JOINT" for o in members) and len(members) == 1:
        raise authoring.AuthoringError("A joint alone cannot make a body: select its geoms too")
    chosen = set(members)
    members = [o for o in members if not any(a in chosen for a in _ancestors(o))]  # tops only
    centre = sum((o.matrix_world.translation for o in members), Vector()) / len(members)
    parent = authoring.body_of(members[0].parent) or root
    body = authoring.new_spatial(root, parent, "body", world=Matrix.Translation(centre))
    _update(context)
    for obj in members:
        authoring.place(obj, body, obj.matrix_world.copy())
    _update(context)
    authoring.select_only(context, body)
    return body


def _ancestors(obj):
    obj = obj.parent
    while obj is not None:
        yield obj
        obj = obj.parent


def is_world_geom(obj) -> bool:
    """A geom of the world body (its nearest body above is the model root)."""
    if obj.mujoco.kind != "GEOM":
        return False
    body = authoring.body_of(obj.parent)
    return body is not None and body.mujoco.kind == "MODEL"


def make_free(context, geom):
    """A world geom becomes a free body: a body where the geom is, holding the geom
    and a free joint (as the MuJoCo Unity plug-in's "convert to free object")."""
    root = scene_scan.model_of(geom)
    world = geom.matrix_world.copy()
    loc, rot, _scale = world.decompose()
    body = authoring.new_spatial(root, root, "body", world=Matrix.LocRotScale(loc, rot, None),
                                 name=authoring.unique_name(root, "body", (geom.mujoco.name or "free") + "_"))
    _update(context)
    authoring.place(geom, body, world)
    authoring.new_spatial(root, body, "joint", "FREE", world=body.matrix_world.copy())
    _update(context)
    return body


# ------------------------------------------------------------ geom from mesh


def is_plain_mesh(obj) -> bool:
    return obj.type == "MESH" and obj.mujoco.kind == "NONE"


def _scaled_vertices(obj) -> tuple[np.ndarray, np.ndarray]:
    """The mesh's vertices with the object's scale applied, and its triangles."""
    verts, tris = mujoco_meshes.triangles(obj.data)
    return verts * np.array(obj.scale), tris


def geom_from_mesh(context, obj, shape: str = "BEST", aabb: bool = True):
    """Make Blender mesh object `obj` a geom of its model (or of the scene's model,
    under the world): as its mesh, its convex hull, or a primitive fitted by MuJoCo."""
    root = scene_scan.model_of(obj) or authoring.model_root(context)
    verts, tris = _scaled_vertices(obj)
    if len(tris) < 4:
        raise authoring.AuthoringError(f"{obj.name}: a geom needs a closed mesh (it has "
                                       f"{len(tris)} triangles)")
    loc, rot, _scale = obj.matrix_world.decompose()
    frame = Matrix.LocRotScale(loc, rot, None)  # the object's frame without its scale
    parent = authoring.body_of(obj.parent) if scene_scan.model_of(obj) is not None else root
    element = mujoco.MjSpec().worldbody.add_geom()
    name = authoring.unique_name(root, "geom", obj.name.replace(" ", "_") + "_")
    world = frame
    if shape in ("MESH", "HULL"):
        mesh = _mesh_asset(root, obj, verts, hull=(shape == "HULL"))
        element.type = mujoco.mjtGeom.mjGEOM_MESH
        data = mesh
    else:
        try:
            if shape == "BEST":
                shape, size, pos, quat = primitive_fit.best_primitive(verts, tris, aabb)
            else:
                size, pos, quat, _volume = primitive_fit.fit_primitive(verts, tris, shape, aabb)
        except ValueError as error:
            raise authoring.AuthoringError(f"MuJoCo cannot use this mesh: {error}") from None
        element.type = getattr(mujoco.mjtGeom, "mjGEOM_" + shape)
        element.size = size
        world = frame @ Matrix.LocRotScale(Vector(pos), Quaternion(quat), None)
        data = display.shape_mesh("geom", int(element.type), size)
    obj.mujoco.kind, obj.mujoco.name = "GEOM", name
    authoring.fill(obj.mujoco.geom, element, "geom")
    if shape in ("MESH", "HULL"):
        obj.mujoco.geom.meshname = data
    obj.data = data
    obj.scale = (1, 1, 1)
    authoring.place(obj, parent, world)
    _update(context)
    return obj


def _mesh_asset(root, obj, verts, hull: bool):
    """A MuJoCo mesh asset for `obj`'s shape (scale applied), listed in the model's assets."""
    mesh = bpy.data.meshes.new(obj.data.name + (" hull" if hull else ""))
    if hull:
        work = bmesh.new()
        for v in verts:
            work.verts.new(v)
        bmesh.ops.convex_hull(work, input=work.verts)
        work.to_mesh(mesh)
        work.free()
    else:
        mesh = obj.data.copy()
        mesh.transform(Matrix.Diagonal(Vector(obj.scale).to_4d()))
    mesh.mujoco.kind = "MESH"
    authoring.fill(mesh.mujoco.mesh, mujoco.MjSpec().add_mesh(), "mesh")
    mesh_name = authoring.unique_name(root, "mesh", mesh.name.replace(" ", "_") + "_")
    mesh.mujoco.name = mesh_name
    root.mujoco.model.assets.add().block = mesh
    return mesh


# ------------------------------------------------------------- apply scale


def has_scale(obj) -> bool:
    return obj.mujoco.kind in ("GEOM", "SITE") and any(abs(s - 1.0) > 1e-6 for s in obj.scale)


def apply_scale(obj) -> None:
    """Fold `obj`'s scale into its size: each size along the axis it measures
    (a capsule's or cylinder's radius across X/Y, its half-length along Z; a
    sphere scaled unevenly becomes an ellipsoid); a mesh geom's asset is scaled
    (copied first when other geoms share it). Leaves unit scale."""
    kind = obj.mujoco.kind.lower()
    group = getattr(obj.mujoco, kind)
    sx, sy, sz = obj.scale
    geom_type = group.type
    size = list(spec_io.read_value(group, spec_io.KINDS[kind].attr("size")))
    if geom_type == "SPHERE":
        if max(sx, sy, sz) - min(sx, sy, sz) > 1e-6:
            group.type = "ELLIPSOID"
            size = [size[0] * sx, size[0] * sy, size[0] * sz]
        else:
            size[0] *= sx
    elif geom_type in ("CAPSULE", "CYLINDER"):
        size[0] *= max(sx, sy) if abs(sx - sy) > 1e-6 else sx
        size[1] *= sz
    elif geom_type in ("BOX", "ELLIPSOID"):
        size = [size[0] * sx, size[1] * sy, size[2] * sz]
    elif geom_type == "PLANE":
        size[0], size[1] = size[0] * sx, size[1] * sy
    elif geom_type == "MESH" and kind == "geom":
        _scale_mesh_asset(obj, group, (sx, sy, sz))
    else:
        raise authoring.AuthoringError(f"{obj.name}: a {geom_type.lower()} has no size to scale")
    spec_io.write_value(group, spec_io.KINDS[kind].attr("size"), size)
    obj.scale = (1, 1, 1)
    display.refresh(obj)
    changes.touch(obj)


def _scale_mesh_asset(obj, group, scale) -> None:
    mesh = group.meshname
    if mesh is None:
        raise authoring.AuthoringError(f"{obj.name}: a mesh geom without a mesh")
    users = [o for o in bpy.data.objects if o.mujoco.kind == "GEOM" and o.mujoco.geom.meshname == mesh]
    if len(users) > 1:  # shared: this geom gets its own copy
        copy = mesh.copy()
        root = scene_scan.model_of(obj)
        copy.mujoco.name = authoring.unique_name(root, "mesh", (mesh.mujoco.name or "mesh") + "_")
        root.mujoco.model.assets.add().block = copy
        group.meshname = copy
        if obj.data == mesh:
            obj.data = copy
        mesh = copy
    mesh.transform(Matrix.Diagonal(Vector(scale).to_4d()))
    mesh_group = mesh.mujoco.mesh
    attr = spec_io.KINDS["mesh"].attr("scale")
    spec_io.write_value(mesh_group, attr, [a * b for a, b in zip(spec_io.read_value(mesh_group, attr), scale,
                                                                   strict=True)])

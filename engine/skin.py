"""Skin posing as MuJoCo's renderer does it (mjv_updateSkin), bpy-free."""

from __future__ import annotations

import numpy as np

from .frames import quat_matrices


def skin_vertices(model, data, skin_id: int) -> np.ndarray:
    """(N, 3) skin vertices: posed by the bones at `data`'s pose, or the bind pose if data is None.

    Posed as MuJoCo's renderer does (mjv_updateSkin): each bone moves its
    vertices by body pose * inverse(bind pose), blended by the bone weights,
    then every vertex moves `skin_inflate` along its area-weighted normal.
    """
    vadr, vnum = model.skin_vertadr[skin_id], model.skin_vertnum[skin_id]
    rest = model.skin_vert[vadr:vadr + vnum].astype(np.float64)
    if data is None:
        return rest
    bones = slice(model.skin_boneadr[skin_id], model.skin_boneadr[skin_id] + model.skin_bonenum[skin_id])
    body = model.skin_bonebodyid[bones]
    bind_rot = quat_matrices(model.skin_bonebindquat[bones].astype(np.float64))
    rot = data.xmat[body].reshape(-1, 3, 3) @ np.swapaxes(bind_rot, 1, 2)
    shift = data.xpos[body] - np.einsum("bij,bj->bi", rot, model.skin_bonebindpos[bones])
    posed = np.zeros_like(rest)
    vert_ranges = zip(model.skin_bonevertadr[bones], model.skin_bonevertnum[bones], strict=True)
    for b, (adr, num) in enumerate(vert_ranges):
        vid = model.skin_bonevertid[adr:adr + num]
        weight = model.skin_bonevertweight[adr:adr + num, None].astype(np.float64)
        np.add.at(posed, vid, weight * (rest[vid] @ rot[b].T + shift[b]))
    inflate = float(model.skin_inflate[skin_id])
    if inflate:
        faces = skin_faces(model, skin_id)
        tri = posed[faces]
        face_normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])  # area weighted
        normal = np.zeros_like(posed)
        for k in range(3):
            np.add.at(normal, faces[:, k], face_normal)
        length = np.linalg.norm(normal, axis=1, keepdims=True)
        posed += inflate * np.divide(normal, length, out=np.zeros_like(normal), where=length > 0)
    return posed


def skin_faces(model, skin_id):
    adr, num = model.skin_faceadr[skin_id], model.skin_facenum[skin_id]
    return model.skin_face[adr:adr + num]

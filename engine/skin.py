"""Skin posing as MuJoCo's renderer does it (mjv_updateSkin), bpy-free.

Bit for bit: MuJoCo poses skins in its own mix of double (each bone's
transform, each posed vertex) and float (`mjvScene.skinvert` / `skinnormal`
are float arrays, summed in place), and a vertex whose face normals nearly
cancel takes its inflate direction from the rounding alone. So
`skin_vertices` repeats MuJoCo's arithmetic, operation by operation and in its
order (`mjv_updateActiveSkin`, engine_vis_visualize.c), with numpy doing the
same IEEE operations on whole arrays: no fused multiply-adds, float where
MuJoCo has float.

BUILD: the order is the one of the mujoco-core 4.0.1 Linux x86-64 wheel
(clang 20, AVX, no FMA), read from its libmujoco.so: sums left to right as the
C source reads, except that its vectorised mju_mulQuat (inlined the same into
mjv_updateActiveSkin) and mju_quat2Mat's diagonal add their four terms in two
pairs. tests/engine/test_skin.py checks every helper against mju_* and the
result against mjv_updateScene. Other builds (ARM: fused multiply-adds; MSVC)
may round differently, by a float ulp or so.

The math helpers take MuJoCo's flat layouts (quat[4], mat[9], vec[3]) along
`axis`, the last by default; the hot path puts coordinates first (axis=0), so
that every operation runs over contiguous rows.
"""

from __future__ import annotations

import numpy as np

MINVAL = 1e-15  # mjMINVAL


def _parts(array, axis):
    return np.moveaxis(np.asarray(array, dtype=np.float64), axis, 0)


def mul_quat(qa, qb, axis=-1) -> np.ndarray:
    """mju_mulQuat: qa * qb, summed in pairs as MuJoCo's build does (see BUILD)."""
    a0, a1, a2, a3 = _parts(qa, axis)
    b0, b1, b2, b3 = _parts(qb, axis)
    return np.stack([(a0 * b0 - a1 * b1) + (-(a2 * b2) - a3 * b3),
                     (a0 * b1 + a1 * b0) + (a2 * b3 - a3 * b2),
                     (a0 * b2 - a1 * b3) + (a2 * b0 + a3 * b1),
                     (a0 * b3 + a1 * b2) + (a3 * b0 - a2 * b1)], axis)


def neg_quat(quat, axis=-1) -> np.ndarray:
    """mju_negQuat: the conjugate."""
    w, x, y, z = _parts(quat, axis)
    return np.stack([w, -x, -y, -z], axis)


def quat_to_mat(quat, axis=-1) -> np.ndarray:
    """mju_quat2Mat: the row-major 3x3 matrix, 9 numbers along `axis` (not normalised, as MuJoCo's;
    the diagonal summed in pairs as MuJoCo's build does, see BUILD)."""
    w, x, y, z = _parts(quat, axis)
    q00, q01, q02, q03 = w * w, w * x, w * y, w * z
    q11, q12, q13, q22, q23, q33 = x * x, x * y, x * z, y * y, y * z, z * z
    mat = [(q00 - q22) + (q11 - q33), 2 * (q12 - q03), 2 * (q13 + q02),
           2 * (q12 + q03), (q00 + q22) - (q11 + q33), 2 * (q23 - q01),
           2 * (q13 - q02), 2 * (q23 + q01), (q00 - q22) - (q11 - q33)]
    null = (w == 1) & (x == 0) & (y == 0) & (z == 0)  # MuJoCo's own case: exactly the identity
    if np.any(null):
        mat = [np.where(null, one, entry) for one, entry in zip(np.eye(3).ravel(), mat, strict=True)]
    return np.stack(mat, axis)


def mul_mat_vec3(mat, vec, axis=-1) -> np.ndarray:
    """mju_mulMatVec3: mat[9] (row-major) times vec[3], each row summed left to right."""
    m = _parts(mat, axis)
    v0, v1, v2 = _parts(vec, axis)
    return np.stack([m[0] * v0 + m[1] * v1 + m[2] * v2,
                     m[3] * v0 + m[4] * v1 + m[5] * v2,
                     m[6] * v0 + m[7] * v1 + m[8] * v2], axis)


def cross(a, b, axis=-1) -> np.ndarray:
    """mju_cross: a x b."""
    a0, a1, a2 = _parts(a, axis)
    b0, b1, b2 = _parts(b, axis)
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis)


class _Rounds:
    """How to do C's `out[index[i]] += value[i]`, i in order, for all targets at once.

    Round r adds every target's r-th value, so each target still gets its
    values one at a time, in their order. Targets are ranked most values first
    (`target`), so round r is the first `count[r]` of them, and `take` lists
    the values round by round.
    """

    def __init__(self, index, n):
        keys = index.astype(np.uint16) if n <= 1 << 16 else index  # 16-bit keys sort by radix: fast
        grouped = np.argsort(keys, kind="stable")  # by target, each target's in order
        counts = np.bincount(index, minlength=n)
        most = counts.max(initial=0)
        self.target = np.argsort(most - counts, kind="stable")
        self.count = np.count_nonzero(counts[self.target] > np.arange(most)[:, None], axis=1)
        place = np.arange(len(index)) - np.repeat(np.cumsum(self.count) - self.count, self.count)
        first = (np.cumsum(counts) - counts)[self.target]  # each target's first value in `grouped`
        self.take = grouped[first[place] + np.repeat(np.arange(most), self.count)]
        self.index, self.n = index.copy(), n

    def sum(self, values, dtype, per):
        values = np.take(values, self.take // per if per > 1 else self.take, axis=-1)
        acc = np.zeros(values.shape[:-1] + (self.n,), dtype)
        end = 0
        for count in self.count:
            acc[..., :count] += values[..., end:end + count]  # float32 += float64: summed in double
            end += count
        out = np.empty_like(acc)
        out[..., self.target] = acc
        return out


_ROUNDS: list[_Rounds] = []  # the last few, known by their indices (they hold no model)


def ordered_sum(index, values, n, dtype=np.float32, per=1) -> np.ndarray:
    """Sums of `values` (along their last axis) into n targets by `index`, as C adds them into
    a `dtype` array: one by one in order, each addition done in the wider type of the two
    (float + double: in double) and rounded to `dtype` at once.

    `values[..., i]` goes to each of the `per` targets `index[per * i:per * (i + 1)]`.
    """
    index = np.asarray(index)
    for rounds in _ROUNDS:
        if rounds.n == n and np.array_equal(rounds.index, index):
            break
    else:
        rounds = _Rounds(index, n)
        _ROUNDS.insert(0, rounds)
        del _ROUNDS[4:]
    return rounds.sum(values, dtype, per)


def skin_vertices(model, data, skin_id: int) -> np.ndarray:
    """(N, 3) skin vertices: posed by the bones at `data`'s pose, or the bind pose if data is None.

    Posed as MuJoCo's renderer does (mjv_updateSkin): each bone moves its
    vertices by body pose * inverse(bind pose), blended by the bone weights,
    then every vertex moves `skin_inflate` along its area-weighted normal.
    The values are MuJoCo's `mjvScene.skinvert` floats, bit for bit (as float64).
    """
    vadr, vnum = model.skin_vertadr[skin_id], model.skin_vertnum[skin_id]
    rest = model.skin_vert[vadr:vadr + vnum]
    if data is None:
        return rest.astype(np.float64)
    bones = slice(model.skin_boneadr[skin_id], model.skin_boneadr[skin_id] + model.skin_bonenum[skin_id])
    body = model.skin_bonebodyid[bones]
    # per bone, in double from the float model values
    rotate = quat_to_mat(mul_quat(data.xquat[body], neg_quat(model.skin_bonebindquat[bones])))
    translate = data.xpos[body] - mul_mat_vec3(rotate, model.skin_bonebindpos[bones])
    # every (bone, vertex, weight) in MuJoCo's order: bone by bone, each bone's vertices in order;
    # coordinates first from here on
    adr, num = model.skin_bonevertadr[bones], model.skin_bonevertnum[bones]
    entry = np.repeat(adr - (np.cumsum(num) - num), num) + np.arange(num.sum())
    vid = model.skin_bonevertid[entry]
    pos = np.take(rest.T.astype(np.float64), vid, axis=1)
    pos1 = mul_mat_vec3(np.repeat(rotate.T, num, axis=1), pos, axis=0) + np.repeat(translate.T, num, axis=1)
    weighted = model.skin_bonevertweight[entry] * pos1.astype(np.float32)  # float * float
    verts = np.zeros((3, vnum), np.float32)
    for coord in range(3):
        np.add.at(verts[coord], vid, weighted[coord])  # float += float, one by one in order
    inflate = model.skin_inflate[skin_id]  # a float32
    if inflate:
        faces = skin_faces(model, skin_id)
        # face normals: float edge differences, crossed in double, added to each corner's
        # float sum face by face, corners 0, 1, 2
        v0, v1, v2 = (np.take(verts, corner, axis=1) for corner in faces.T)
        normal = cross((v1 - v0).astype(np.float64), (v2 - v0).astype(np.float64), axis=0)
        sums = ordered_sum(faces.ravel(), normal, vnum, np.float32, per=3)
        length = np.sqrt(sums[0] * sums[0] + sums[1] * sums[1] + sums[2] * sums[2])  # float, sqrtf
        scale = (1 / np.maximum(MINVAL, length.astype(np.float64))).astype(np.float32)
        verts += inflate * (sums * scale)  # float
    return np.ascontiguousarray(verts.T, dtype=np.float64)


def skin_faces(model, skin_id):
    adr, num = model.skin_faceadr[skin_id], model.skin_facenum[skin_id]
    return model.skin_face[adr:adr + num]

"""What the viewport's MuJoCo overlays draw, computed from a snapshot: bpy-free.

Each overlay is a `Layer`: line segments (pairs of end points) and dots in
MuJoCo's world frame, with MuJoCo's own colour for it (`model.vis.rgba`) and
MuJoCo's own sizes (`model.vis.scale` times `stat.meansize`, as its renderer
`mjv_updateScene` sizes its decorations). The draw callback (ui/overlays/draw.py)
only moves them into Blender's world and hands them to the GPU, so what is
drawn can be checked against MuJoCo without one.

`shot` is an `engine.snapshot.Snapshot`: poses of the state it shows, contacts
and forces of the step that led to it (MuJoCo's convention, see snapshot.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from . import inertia

MINVAL = 1e-15  # MuJoCo's mjMINVAL
RANGE_SEGMENTS = 24  # an arc of a hinge's range is drawn in this many segments
EMPTY = np.zeros((0, 3))
ALL_GROUPS = (True,) * 6
# MuJoCo's enums as plain ints (numpy compares an array with a pybind11 enum element by element in Python)
HINGE, SLIDE = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
BALL, FREE = int(mujoco.mjtJoint.mjJNT_BALL), int(mujoco.mjtJoint.mjJNT_FREE)
TRN_JOINT, TRN_JOINTINPARENT = int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT)
TRN_SITE, TRN_TENDON = int(mujoco.mjtTrn.mjTRN_SITE), int(mujoco.mjtTrn.mjTRN_TENDON)
EQ_CONNECT, EQ_WELD, EQ_JOINT = (int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD),
                                 int(mujoco.mjtEq.mjEQ_JOINT))
OBJ_SITE = int(mujoco.mjtObj.mjOBJ_SITE)


@dataclass
class Layer:
    name: str
    color: tuple  # RGBA
    lines: np.ndarray = field(default_factory=lambda: EMPTY)  # (2k, 3): k segments
    points: np.ndarray = field(default_factory=lambda: EMPTY)  # (m, 3)
    line_width: float = 1.0
    point_size: float = 6.0

    def __bool__(self) -> bool:
        return bool(len(self.lines) or len(self.points))


@dataclass(frozen=True)
class Options:
    """Which overlays to compute, and the groups shown (MuJoCo's mjvOption)."""

    contact_points: bool = False
    contact_forces: bool = False
    contact_frames: bool = False
    joints: bool = False
    body_frames: bool = False
    com: bool = False
    tendons: bool = False
    actuators: bool = False
    equality: bool = False
    joint_groups: tuple = ALL_GROUPS
    tendon_groups: tuple = ALL_GROUPS
    actuator_groups: tuple = ALL_GROUPS
    frame: str = "NONE"  # MuJoCo's frame kind (an mjtFrame name, FRAME_KINDS) drawn besides these
    geom_groups: tuple = ALL_GROUPS  # (geom and site frames: only those of groups shown)
    site_groups: tuple = ALL_GROUPS


def _rgba(color) -> tuple:
    return tuple(float(c) for c in color)


def _shown(groups: tuple, group_ids) -> np.ndarray:
    """Mask of the elements whose group (clamped to 0-5, as MuJoCo does) is shown."""
    return np.asarray(groups, bool)[np.clip(np.asarray(group_ids), 0, 5)]


def _segments(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """(2k, 3) line end points: start, end, start, end..."""
    out = np.empty((2 * len(starts), 3))
    out[0::2] = starts
    out[1::2] = ends
    return out


# ------------------------------------------------------------------ contacts

def contact_points(shot) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the contacts the solver includes, of those it leaves out)."""
    contacts = shot.contacts
    return contacts.pos[contacts.included], contacts.pos[~contacts.included]


def contact_forces_world(model, shot) -> tuple[np.ndarray, np.ndarray]:
    """(contact ids, (k, 3) forces in the world frame): mj_contactForce's force
    rotated out of the contact frame, pointing into the body of higher id as
    MuJoCo draws it, for included contacts with a force."""
    contacts = shot.contacts
    frames = contacts.frame.reshape(-1, 3, 3)  # rows: normal, tangents
    world = np.einsum("nij,ni->nj", frames, contacts.force[:, :3])
    bodies = model.geom_bodyid[contacts.geom] if len(contacts) else np.zeros((0, 2), int)
    flip = bodies[:, 0] > bodies[:, 1]
    world[flip] *= -1
    keep = contacts.included & (np.linalg.norm(contacts.force[:, :3], axis=1) >= MINVAL)
    return np.flatnonzero(keep), world[keep]


def contact_force_arrows(model, shot) -> tuple[np.ndarray, np.ndarray]:
    """(from, to) of each contact force arrow, scaled like MuJoCo's: force times
    visual/map force / stat.meanmass."""
    ids, forces = contact_forces_world(model, shot)
    start = shot.contacts.pos[ids]
    return start, start + forces * (model.vis.map.force / model.stat.meanmass)


def contact_frame_axes(model, shot) -> list[np.ndarray]:
    """Per axis (normal, first and second tangent): (2n, 3) segments of half
    MuJoCo's frame length, as it draws contact frames."""
    return frame_axes(model, shot, "CONTACT")


# ------------------------------------------------------------------ joints

def joint_axes(model, shot, groups=ALL_GROUPS) -> tuple[np.ndarray, np.ndarray]:
    """(hinge and slide joint ids shown, (2k, 3) axis segments): from the anchor
    along `xaxis`, MuJoCo's joint length long."""
    types = model.jnt_type
    axial = (types == HINGE) | (types == SLIDE)
    ids = np.flatnonzero(axial & _shown(groups, model.jnt_group))
    length = model.vis.scale.jointlength * model.stat.meansize
    anchors = shot.xanchor[ids]
    return ids, _segments(anchors, anchors + shot.xaxis[ids] * length)


def joint_marks(model, shot, groups=ALL_GROUPS) -> np.ndarray:
    """Anchors of the ball and free joints shown."""
    types = model.jnt_type
    round_ = (types == BALL) | (types == FREE)
    return shot.xanchor[round_ & _shown(groups, model.jnt_group)]


def _perpendiculars(axes: np.ndarray) -> np.ndarray:
    """(n, 3) unit vectors perpendicular to the unit `axes`: for each, the coordinate
    axis least along it, made square to it."""
    other = np.eye(3)[np.argmin(np.abs(axes), axis=1)]
    out = other - axes * np.einsum("ij,ij->i", other, axes)[:, None]
    return out / np.linalg.norm(out, axis=1)[:, None]


def _rotated(vectors: np.ndarray, axes: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """(n, ..., 3): each of `vectors` (n, 3), perpendicular to its unit axis, turned about
    it by each of its `angles` (n, ...) (Rodrigues)."""
    shape = (len(vectors),) + (1,) * (np.ndim(angles) - 1) + (3,)
    cos, sin = np.cos(angles)[..., None], np.sin(angles)[..., None]
    return vectors.reshape(shape) * cos + np.cross(axes, vectors).reshape(shape) * sin


def joint_ranges(model, shot, groups=ALL_GROUPS) -> np.ndarray:
    """(2k, 3) segments showing each limited hinge's and slide's range where the
    joint is now: a hinge's as an arc about its axis (from the direction its body
    has at angle 0, turned through the range) plus a spoke at the current angle; a
    slide's as the segment its anchor can travel, with the anchor now on it."""
    radius = 0.5 * model.vis.scale.jointlength * model.stat.meansize
    limited = model.jnt_limited.astype(bool) & _shown(groups, model.jnt_group)
    q = shot.qpos[model.jnt_qposadr]
    low, high = model.jnt_range[:, 0], model.jnt_range[:, 1]
    out = []
    s = np.flatnonzero(limited & (model.jnt_type == SLIDE))
    if len(s):
        anchor, axis = shot.xanchor[s], shot.xaxis[s]
        out.append(_segments(anchor + axis * (low[s] - q[s])[:, None],
                             anchor + axis * (high[s] - q[s])[:, None]))
    h = np.flatnonzero(limited & (model.jnt_type == HINGE))
    if len(h):
        anchor, axis = shot.xanchor[h], shot.xaxis[h]
        # a direction fixed in the body, perpendicular to the axis: where angle q has it now
        local = model.jnt_axis[h] / np.linalg.norm(model.jnt_axis[h], axis=1)[:, None]
        bodies = shot.xmat[model.jnt_bodyid[h]].reshape(-1, 3, 3)
        now = np.einsum("nij,nj->ni", bodies, _perpendiculars(local))
        zero = _rotated(now, axis, -q[h])
        angles = low[h, None] + (high[h] - low[h])[:, None] * np.linspace(0.0, 1.0, RANGE_SEGMENTS + 1)
        arcs = anchor[:, None] + radius * _rotated(zero, axis, angles)  # (n, segments + 1, 3)
        out.append(_segments(arcs[:, :-1].reshape(-1, 3), arcs[:, 1:].reshape(-1, 3)))
        out.append(_segments(anchor, anchor + radius * now))
    return np.concatenate(out) if out else EMPTY


# ------------------------------------------------------------------ bodies

def body_frame_axes(model, shot) -> list[np.ndarray]:
    """Per axis (x, y, z): (2n, 3) segments of every body's frame at MuJoCo's frame
    length (the world's twice as long, as MuJoCo draws it)."""
    length = np.full(model.nbody, _frame_length(model), float)
    length[0] *= 2
    return _frames(shot.xpos, shot.xmat, length)


def centres_of_mass(model, shot) -> tuple[np.ndarray, np.ndarray]:
    """(each body's centre of mass `xipos`, of the bodies with mass; each kinematic
    tree's `subtree_com`, of the world's children)."""
    bodies = np.flatnonzero(model.body_mass > MINVAL)
    bodies = bodies[bodies > 0]
    roots = np.flatnonzero(model.body_parentid == 0)
    roots = roots[roots > 0]
    return shot.xipos[bodies], shot.subtree_com[roots]


CORNERS = np.array([(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
BOX_EDGES = np.array([(a, b) for a in range(8) for b in range(a + 1, 8)
                      if np.count_nonzero(CORNERS[a] != CORNERS[b]) == 1])


def inertia_boxes(model, shot) -> tuple[np.ndarray, np.ndarray]:
    """((24n, 3) edges of each body's equivalent inertia box, (n, 3) its centre of
    mass), of the bodies with mass: the box MuJoCo's viewer draws (same mass and
    principal inertia), in the body's inertial frame."""
    bodies = np.flatnonzero(model.body_mass > 0)
    bodies = bodies[bodies > 0]
    half = inertia.equivalent_boxes(model)[bodies]
    corners = np.einsum("nij,nkj->nki", shot.ximat[bodies].reshape(-1, 3, 3), CORNERS[None] * half[:, None])
    corners += shot.xipos[bodies][:, None]
    return corners[:, BOX_EDGES.reshape(-1)].reshape(-1, 3), shot.xipos[bodies]


# ------------------------------------------------------------------ tendons

def tendon_segments(model, shot, tendons) -> np.ndarray:
    """(2k, 3) segments of the spatial tendons `tendons` through their path points
    (`wrap_xpos`), none across a pulley (wrap_obj -2), as MuJoCo draws them."""
    starts = []
    for t in tendons:
        first, count = shot.ten_wrapadr[t], shot.ten_wrapnum[t]
        if count < 2:
            continue
        j = np.arange(first, first + count - 1)
        starts.append(j[(shot.wrap_obj[j] != -2) & (shot.wrap_obj[j + 1] != -2)])
    if not starts:
        return EMPTY
    j = np.concatenate(starts)
    return _segments(shot.wrap_xpos[j], shot.wrap_xpos[j + 1])


def tendon_paths(model, shot, groups=ALL_GROUPS) -> np.ndarray:
    return tendon_segments(model, shot, np.flatnonzero(_shown(groups, model.tendon_group)))


# ----------------------------------------------------------------- actuators

def actuator_arrows(model, shot, groups=ALL_GROUPS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(actuator ids, (2k, 3) arrows, (k,) sign of each force) for the actuators
    shown that act on a hinge, slide or site: from the joint's anchor (the site)
    along its axis (the site's gear direction), as long as MuJoCo's actuator length
    times the force over its force range (or over the largest force drawn now,
    when unlimited), turned by the force's sign."""
    shown = _shown(groups, model.actuator_group)
    target = model.actuator_trnid[:, 0]
    kind = model.actuator_trntype
    on_joint = shown & ((kind == TRN_JOINT) | (kind == TRN_JOINTINPARENT))
    axial = (HINGE, SLIDE)
    on_joint[on_joint] = np.isin(model.jnt_type[target[on_joint]], axial)
    joints = np.flatnonzero(on_joint)
    sites = np.flatnonzero(shown & (kind == TRN_SITE))
    gear = model.actuator_gear[sites]
    moves = np.linalg.norm(gear[:, :3], axis=1) > MINVAL  # a force along gear[:3], else a torque
    local = np.where(moves[:, None], gear[:, :3], gear[:, 3:6])
    norm = np.linalg.norm(local, axis=1)
    sites, local, norm = sites[norm > MINVAL], local[norm > MINVAL], norm[norm > MINVAL]
    ids = np.concatenate([joints, sites])
    if not len(ids):
        return np.zeros(0, int), EMPTY, np.zeros(0)
    site_frames = shot.site_xmat[target[sites]].reshape(-1, 3, 3)
    site_dirs = np.einsum("nij,nj->ni", site_frames, local / norm[:, None])
    starts = np.concatenate([shot.xanchor[target[joints]], shot.site_xpos[target[sites]]])
    dirs = np.concatenate([shot.xaxis[target[joints]], site_dirs])
    force = shot.actuator_force[ids]
    scale = np.where(model.actuator_forcelimited[ids].astype(bool),
                     np.abs(model.actuator_forcerange[ids]).max(axis=1), 0.0)
    scale[scale <= MINVAL] = max(np.abs(force).max(), MINVAL)
    length = model.vis.scale.actuatorlength * model.stat.meansize * np.clip(force / scale, -1.0, 1.0)
    return ids, _segments(starts, starts + dirs * length[:, None]), np.sign(force)


def actuated_tendons(model, groups=ALL_GROUPS) -> tuple[np.ndarray, np.ndarray]:
    """(actuator ids, their tendon ids) of the tendon actuators shown."""
    ids = np.flatnonzero(_shown(groups, model.actuator_group)
                         & (model.actuator_trntype == TRN_TENDON))
    return ids, model.actuator_trnid[ids, 0]


# ------------------------------------------------------------------ equality

def _points_of(shot, objtype: np.ndarray, obj: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Points given in bodies' frames (or sites' positions, for site-based constraints), in the world."""
    in_body = shot.xpos[obj] + np.einsum("nij,nj->ni", shot.xmat[obj].reshape(-1, 3, 3), local)
    on_site = objtype == OBJ_SITE
    in_body[on_site] = shot.site_xpos[obj[on_site]]
    return in_body


def equality_segments(model, shot) -> np.ndarray:
    """(2k, 3) segments of the active equality constraints: a connect's two anchor
    points (on object 1 and object 2: what `efc_pos` keeps together), a weld's
    anchor and relative position (the same pair MuJoCo's weld compares), two
    coupled joints' anchors."""
    active = shot.eq_active.astype(bool)
    one, two, data = model.eq_obj1id, model.eq_obj2id, model.eq_data
    starts, ends = [], []
    for kind, first, second in ((EQ_CONNECT, slice(0, 3), slice(3, 6)), (EQ_WELD, slice(3, 6), slice(0, 3))):
        e = np.flatnonzero(active & (model.eq_type == kind))
        starts.append(_points_of(shot, model.eq_objtype[e], one[e], data[e, first]))
        ends.append(_points_of(shot, model.eq_objtype[e], two[e], data[e, second]))
    e = np.flatnonzero(active & (model.eq_type == EQ_JOINT) & (two >= 0))
    starts.append(shot.xanchor[one[e]])
    ends.append(shot.xanchor[two[e]])
    return _segments(np.concatenate(starts), np.concatenate(ends))


# -------------------------------------------------------------------- labels

# MuJoCo's label kinds (mjtLabel) and frame kinds (mjtFrame), by the names the
# switches use (components/overlay_settings.py keeps them in this order)
LABEL_KINDS = tuple(name.removeprefix("mjLABEL_") for name in mujoco.mjtLabel.__members__
                    if name != "mjNLABEL")
FRAME_KINDS = tuple(name.removeprefix("mjFRAME_") for name in mujoco.mjtFrame.__members__
                    if name != "mjNFRAME")
_OBJECT_OF = {"BODY": mujoco.mjtObj.mjOBJ_BODY, "SELECTION": mujoco.mjtObj.mjOBJ_BODY,
              "JOINT": mujoco.mjtObj.mjOBJ_JOINT, "GEOM": mujoco.mjtObj.mjOBJ_GEOM, "SITE": OBJ_SITE,
              "CAMERA": mujoco.mjtObj.mjOBJ_CAMERA, "LIGHT": mujoco.mjtObj.mjOBJ_LIGHT,
              "TENDON": mujoco.mjtObj.mjOBJ_TENDON, "ACTUATOR": mujoco.mjtObj.mjOBJ_ACTUATOR,
              "CONSTRAINT": mujoco.mjtObj.mjOBJ_EQUALITY, "FLEX": mujoco.mjtObj.mjOBJ_FLEX,
              "SKIN": mujoco.mjtObj.mjOBJ_SKIN}
TRN_SLIDERCRANK = int(mujoco.mjtTrn.mjTRN_SLIDERCRANK)
DEFAULT_RGBA = np.array([0.5, 0.5, 0.5, 1.0], np.float32)


def name_of(model, objtype, i: int) -> str:
    """MuJoCo's label of an element (makeLabel): its name, else "<type> <id>"."""
    return mujoco.mj_id2name(model, objtype, i) or f"{mujoco.mju_type2Str(objtype)} {i}"


def _alpha(model, matid: np.ndarray, rgba: np.ndarray) -> np.ndarray:
    """Each element's alpha as MuJoCo draws it (setMaterial): its own rgba when it differs
    from the default grey or it has no material, else its material's."""
    own = (rgba != DEFAULT_RGBA).any(axis=1) | (matid < 0)
    material = model.mat_rgba[np.maximum(matid, 0), 3] if model.nmat else np.zeros(len(matid))
    return np.where(own, rgba[:, 3], material)


def _first_segment_middle(shot, tendon: int):
    """The middle of a spatial tendon's first segment (what MuJoCo labels), or None
    when it has none (a fixed tendon, a pulley first)."""
    first, count = shot.ten_wrapadr[tendon], shot.ten_wrapnum[tendon]
    if count < 2 or shot.wrap_obj[first] == -2 or shot.wrap_obj[first + 1] == -2:
        return None
    return 0.5 * (shot.wrap_xpos[first] + shot.wrap_xpos[first + 1])


def _slider_crank_middle(model, shot, actuator: int) -> np.ndarray:
    """The middle of a slider-crank's slider, as mjv_updateScene computes its end."""
    crank, slider = model.actuator_trnid[actuator]
    rod = model.actuator_cranklength[actuator]
    axis = shot.site_xmat[slider].reshape(3, 3)[:, 2]
    vec = shot.site_xpos[crank] - shot.site_xpos[slider]
    length = vec @ axis
    det = max(length * length + rod * rod - vec @ vec, 0.0)
    end = axis * (length - np.sqrt(det)) + shot.site_xpos[slider]
    return 0.5 * (shot.site_xpos[slider] + end)


def _contact_side(model, shot, i: int, k: int) -> str:
    geom = shot.contacts.geom[i, k]
    if geom >= 0:
        return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, geom) or f"g{geom}"
    flex, elem, vert = shot.contacts.flex[i, k], shot.contacts.elem[i, k], shot.contacts.vert[i, k]
    name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_FLEX, flex) or f"f{flex}"
    return f"{name}.e{elem}" if elem >= 0 else f"{name}.v{vert}"


def selection_point(shot, selection) -> np.ndarray:
    """The world point of a selection (body id, point in the body's frame)."""
    body, local = selection
    return shot.xmat[body].reshape(3, 3) @ np.asarray(local, float) + shot.xpos[body]


def labels(model, shot, kind: str, shown=None, selection=None) -> list[tuple[str, np.ndarray]]:
    """[(text, world position)] of MuJoCo's labels of `kind` (an mjtLabel name), the text
    and place mjv_updateScene gives them: an element's name (or "<type> <id>") where
    MuJoCo draws it. `shown`: a mask of the element ids whose group is shown (geoms,
    sites, joints, tendons, actuators, flexes, skins); `selection`: (body id, point in
    its frame) for SELECTION and SELPNT. MuJoCo only labels what it draws; kinds it
    draws only with a flag (joints, cameras, lights, actuators, constraints, contacts)
    are labelled here whether or not that overlay is on."""
    if kind == "NONE":
        return []
    mask = (lambda n: np.ones(n, bool)) if shown is None else (lambda n: np.asarray(shown, bool)[:n])
    objtype = _OBJECT_OF.get(kind)
    named = []  # (id, position)
    if kind == "BODY":
        named = [(i, shot.xpos[i]) for i in range(1, model.nbody)]
    elif kind == "SELECTION":
        if selection is not None and selection[0] > 0:
            named = [(selection[0], shot.xpos[selection[0]])]
    elif kind == "JOINT":
        named = [(i, shot.xanchor[i]) for i in np.flatnonzero(mask(model.njnt))]
    elif kind == "GEOM":
        visible = mask(model.ngeom) & (_alpha(model, model.geom_matid, model.geom_rgba) != 0)
        named = [(i, shot.geom_xpos[i]) for i in np.flatnonzero(visible)]
    elif kind == "SITE":
        visible = mask(model.nsite) & (_alpha(model, model.site_matid, model.site_rgba) != 0)
        named = [(i, shot.site_xpos[i]) for i in np.flatnonzero(visible)]
    elif kind == "CAMERA":
        named = [(i, shot.cam_xpos[i]) for i in range(model.ncam)]
    elif kind == "LIGHT":
        # MuJoCo draws a light set back along its direction (not to shadow the scene)
        back = float(-np.float32(model.stat.meansize) * np.float32(model.vis.scale.light)) - 0.0001
        named = [(i, shot.light_xpos[i] + shot.light_xdir[i] * back) for i in range(model.nlight)]
    elif kind == "TENDON":
        for i in np.flatnonzero(mask(model.ntendon)):
            middle = _first_segment_middle(shot, i)
            if middle is not None:
                named.append((i, middle))
    elif kind == "ACTUATOR":
        disabled = model.opt.disableactuator
        for i in np.flatnonzero(mask(model.nu)):
            group = model.actuator_group[i]
            if 0 <= group < 31 and disabled & (1 << int(group)):
                continue  # (mj_actuatorDisabled: MuJoCo draws nothing for it)
            kind_, target = model.actuator_trntype[i], model.actuator_trnid[i, 0]
            if kind_ in (TRN_JOINT, TRN_JOINTINPARENT):
                named.append((i, shot.xanchor[target]))
            elif kind_ == TRN_SITE:
                named.append((i, shot.site_xpos[target]))
            elif kind_ == TRN_TENDON and shot.ten_wrapnum[target]:
                middle = _first_segment_middle(shot, target)
                if middle is not None:
                    named.append((i, middle))
            elif kind_ == TRN_SLIDERCRANK:
                named.append((i, _slider_crank_middle(model, shot, i)))
    elif kind == "CONSTRAINT":
        for i in np.flatnonzero(shot.eq_active.astype(bool) & np.isin(model.eq_type, (EQ_CONNECT, EQ_WELD))):
            weld = int(model.eq_type[i] == EQ_WELD)
            one, two = model.eq_obj1id[i], model.eq_obj2id[i]
            if model.eq_objtype[i] == OBJ_SITE:
                ends = (shot.site_xpos[one], shot.site_xpos[two])
            else:
                data = model.eq_data[i]
                ends = (_body_point(shot, one, data[3 * weld:3 * weld + 3]),
                        _body_point(shot, two, data[3 * (1 - weld):3 * (1 - weld) + 3]))
            named += [(i, ends[0]), (i, ends[1])]
    elif kind == "FLEX":
        visible = mask(model.nflex) & (_alpha(model, model.flex_matid[:model.nflex], model.flex_rgba) != 0)
        named = [(i, shot.flexvert_xpos[model.flex_vertadr[i]]) for i in np.flatnonzero(visible)]
    elif kind == "SKIN":
        visible = mask(model.nskin) & (_alpha(model, model.skin_matid[:model.nskin], model.skin_rgba) != 0)
        bones = model.skin_bonebodyid[model.skin_boneadr[:model.nskin]] if model.nskin else []
        named = [(i, shot.xpos[bones[i]]) for i in np.flatnonzero(visible)]
    elif kind == "SELPNT":
        if selection is None or selection[0] <= 0:
            return []
        point, local = selection_point(shot, selection), selection[1]
        return [("%.3f %.3f %.3f (local %.3f %.3f %.3f)" % (*point, *local), point)]
    elif kind == "CONTACTPOINT":
        return [(f"{_contact_side(model, shot, i, 0)} | {_contact_side(model, shot, i, 1)}",
                 shot.contacts.pos[i]) for i in range(len(shot.contacts))]
    elif kind == "CONTACTFORCE":
        contacts = shot.contacts
        size = np.linalg.norm(contacts.force[:, :3], axis=1)
        return [("%-.3g" % size[i], contacts.pos[i])
                for i in np.flatnonzero(contacts.included & (size >= MINVAL))]
    elif kind == "ISLAND":
        if not shot.nisland:
            return []
        out = []
        for i in range(1, model.nbody):
            weld = model.body_weldid[i]
            if model.body_dofnum[weld] and shot.dof_island[model.body_dofadr[weld]] >= 0:
                out.append((f"{shot.dof_island[model.body_dofadr[weld]]}", shot.xipos[i]))
        return out
    else:
        raise ValueError(f"no MuJoCo label kind {kind!r}: one of {', '.join(LABEL_KINDS)}")
    return [(name_of(model, objtype, int(i)), np.asarray(pos)) for i, pos in named]


def _body_point(shot, body: int, local: np.ndarray) -> np.ndarray:
    """A point given in a body's frame, in the world, summed as mju_mulMatVec3 does."""
    mat = shot.xmat[body]
    return np.array([mat[3 * r] * local[0] + mat[3 * r + 1] * local[1] + mat[3 * r + 2] * local[2]
                     for r in range(3)]) + shot.xpos[body]


# -------------------------------------------------------------------- frames

def _frames(positions: np.ndarray, mats: np.ndarray, length) -> list[np.ndarray]:
    """Per axis (x, y, z): (2n, 3) segments from each position along its frame's axis."""
    mats = np.asarray(mats).reshape(-1, 3, 3)
    length = np.broadcast_to(np.asarray(length, float), (len(positions),))
    return [_segments(positions, positions + mats[:, :, k] * length[:, None]) for k in range(3)]


def _frame_length(model) -> np.float32:
    """MuJoCo's frame length (visual/scale framelength times stat.meansize, in float)."""
    return np.float32(model.vis.scale.framelength) * np.float32(model.stat.meansize)


def frame_axes(model, shot, kind: str, shown=None) -> list[np.ndarray]:
    """Per axis (x, y, z): (2n, 3) segments of MuJoCo's frames of `kind` (an mjtFrame
    name), as mjv_updateScene draws them: bodies (but the world), geoms and sites of
    the groups shown (`shown`: a mask by id) and not invisible, cameras, lights (the
    frame MuJoCo builds from the light's direction), contacts (half length), the world
    (twice as long)."""
    length = _frame_length(model)
    if kind == "NONE":
        return [EMPTY] * 3
    if kind == "BODY":
        return _frames(shot.xpos[1:], shot.xmat[1:], length)
    if kind == "WORLD":
        return _frames(shot.xpos[:1], shot.xmat[:1], length * np.float32(2))
    if kind == "GEOM":
        matid = model.geom_matid
        alpha = np.where(matid >= 0, model.mat_rgba[np.maximum(matid, 0), 3] if model.nmat else 0,
                         model.geom_rgba[:, 3])
        ids = np.flatnonzero((alpha != 0) & (np.ones(model.ngeom, bool) if shown is None else shown))
        return _frames(shot.geom_xpos[ids], shot.geom_xmat[ids], length)
    if kind == "SITE":
        matid = model.site_matid
        alpha = np.where(matid >= 0, model.mat_rgba[np.maximum(matid, 0), 3] if model.nmat else 0,
                         model.site_rgba[:, 3])
        ids = np.flatnonzero((alpha != 0) & (np.ones(model.nsite, bool) if shown is None else shown))
        return _frames(shot.site_xpos[ids], shot.site_xmat[ids], length)
    if kind == "CAMERA":
        return _frames(shot.cam_xpos, shot.cam_xmat, length)
    if kind == "LIGHT":
        return _frames(shot.light_xpos, light_frames(shot), length)
    if kind == "CONTACT":
        half = np.float32(model.vis.scale.framelength * model.stat.meansize / 2)
        # the contact frame's rows are its axes (normal, tangents): MuJoCo's mat is their transpose
        return _frames(shot.contacts.pos, shot.contacts.frame.reshape(-1, 3, 3).transpose(0, 2, 1), half)
    raise ValueError(f"no MuJoCo frame kind {kind!r}: one of {', '.join(FRAME_KINDS)}")


def light_frames(shot) -> np.ndarray:
    """(nlight, 9): the frame MuJoCo draws a light in: z along its direction (mju_quatZ2Vec)."""
    out = np.zeros((len(shot.light_xdir), 9))
    quat = np.zeros(4)
    for i, direction in enumerate(shot.light_xdir):
        mujoco.mju_quatZ2Vec(quat, np.asarray(direction, float))
        mujoco.mju_quat2Mat(out[i], quat)
    return out


# --------------------------------------------------------------------- all

AXIS_COLORS = ((0.9, 0.0, 0.0, 1.0), (0.0, 0.9, 0.0, 1.0), (0.0, 0.0, 0.9, 1.0))  # MuJoCo's addFrame


def layers(model, shot, options: Options) -> list[Layer]:
    """Every overlay `options` asks for, as layers to draw."""
    rgba = model.vis.rgba
    out: list[Layer] = []
    if options.contact_points:
        included, excluded = contact_points(shot)
        out.append(Layer("contact points", _rgba(rgba.contactpoint), points=included, point_size=8.0))
        out.append(Layer("contact gaps", _rgba(rgba.contactgap), points=excluded, point_size=6.0))
    if options.contact_forces:
        start, end = contact_force_arrows(model, shot)
        out.append(Layer("contact forces", _rgba(rgba.contactforce), lines=_segments(start, end),
                         points=end, line_width=3.0, point_size=5.0))
    if options.contact_frames:
        for k, axis in enumerate(contact_frame_axes(model, shot)):
            out.append(Layer(f"contact frame {'xyz'[k]}", AXIS_COLORS[k], lines=axis, line_width=2.0))
    if options.joints:
        _ids, axes = joint_axes(model, shot, options.joint_groups)
        out.append(Layer("joint axes", _rgba(rgba.joint), lines=axes, points=axes[0::2], line_width=3.0))
        ranges = joint_ranges(model, shot, options.joint_groups)
        out.append(Layer("joint ranges", _rgba(rgba.constraint), lines=ranges, line_width=2.0))
        out.append(Layer("ball and free joints", _rgba(rgba.joint),
                         points=joint_marks(model, shot, options.joint_groups), point_size=9.0))
    if options.body_frames:
        for k, axis in enumerate(body_frame_axes(model, shot)):
            out.append(Layer(f"body frame {'xyz'[k]}", AXIS_COLORS[k], lines=axis, line_width=2.0))
    if options.frame != "NONE":
        shown = {"GEOM": _shown(options.geom_groups, model.geom_group) if model.ngeom else None,
                 "SITE": _shown(options.site_groups, model.site_group) if model.nsite else None}
        for k, axis in enumerate(frame_axes(model, shot, options.frame, shown.get(options.frame))):
            out.append(Layer(f"{options.frame.lower()} frame {'xyz'[k]}", AXIS_COLORS[k], lines=axis,
                             line_width=2.0))
    if options.com:
        bodies, trees = centres_of_mass(model, shot)
        out.append(Layer("body centres of mass", _rgba(rgba.com), points=bodies, point_size=7.0))
        out.append(Layer("subtree centres of mass", _rgba(rgba.com), points=trees, point_size=13.0))
    if options.tendons:
        paths = tendon_paths(model, shot, options.tendon_groups)
        out.append(Layer("tendons", _rgba(rgba.constraint), lines=paths, line_width=2.0))
    if options.actuators:
        _ids, arrows, sign = actuator_arrows(model, shot, options.actuator_groups)
        for name, color, keep in (("positive", rgba.actuatorpositive, sign >= 0),
                                  ("negative", rgba.actuatornegative, sign < 0)):
            pairs = arrows.reshape(-1, 2, 3)[keep]
            out.append(Layer(f"actuator forces {name}", _rgba(color), lines=pairs.reshape(-1, 3),
                             points=pairs[:, 1], line_width=4.0, point_size=6.0))
        ids, tendons = actuated_tendons(model, options.actuator_groups)
        force = shot.actuator_force[ids]
        for name, color, keep in (("positive", rgba.actuatorpositive, force >= 0),
                                  ("negative", rgba.actuatornegative, force < 0)):
            out.append(Layer(f"actuated tendons {name}", _rgba(color),
                             lines=tendon_segments(model, shot, tendons[keep]), line_width=4.0))
    if options.equality:
        segments = equality_segments(model, shot)
        out.append(Layer("equality constraints", _rgba(rgba.connect), lines=segments, points=segments,
                         line_width=2.0, point_size=7.0))
    return [layer for layer in out if layer]

"""What a running simulation looks like at one moment: an immutable copy of the
state every view reads (viewport, sidebar, recorder, bridge), never MjData itself.

The runner takes one after each batch of steps (`take`), on the thread that owns
the data, then publishes it; readers on any thread keep a reference as long as
they like. Its arrays are copies, marked read-only.

Times: `time` is the state's time. Poses (bodies, inertial frames, joint axes,
geoms, sites, cameras, subtree centres of mass, tendon paths, flex and skin vertices)
are the kinematics of that state (`EngineSession.kinematics`); `qpos`, `qvel`, `act`,
`ctrl`, `mocap_*` are the state itself; `sensordata`, `actuator_force` and
`contacts` (with their forces) are what the last `mj_step` computed, of the
state one step earlier (MuJoCo's own convention: recomputing them would cost a
whole `mj_forward`).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from . import skin


@dataclass(frozen=True, eq=False)
class Contacts:
    """The active contacts: world position (n, 3), frame (n, 9; rows: normal,
    tangents), distance (n,), geom ids (n, 2); `force` (n, 6): force and torque
    in the contact frame (`mj_contactForce`; zeros for a contact outside the
    constraint solver, `included` False)."""

    pos: np.ndarray
    frame: np.ndarray
    dist: np.ndarray
    geom: np.ndarray
    force: np.ndarray
    included: np.ndarray
    flex: np.ndarray = None  # (n, 2): flex ids of a flex contact's sides (-1: a geom), or None
    elem: np.ndarray = None  # (n, 2): flex element ids (-1: none)
    vert: np.ndarray = None  # (n, 2): flex vertex ids (-1: none)

    def __len__(self) -> int:
        return len(self.dist)


@dataclass(frozen=True, eq=False)
class GrabView:
    """A mouse spring, for drawing: the body, the point it holds, where it pulls to."""

    body: int
    point: np.ndarray
    target: np.ndarray
    rotate: bool


@dataclass(frozen=True, eq=False)
class Snapshot:
    frame: int  # one more for every snapshot the runner publishes
    model: mujoco.MjModel  # the model the arrays belong to (readers never write it)
    applied: int  # sequence number of the last command applied
    time: float
    steps: int  # steps since the simulation started
    playing: bool
    fast_forward: bool
    speed: float  # wanted simulated seconds per wall second
    achieved: float  # measured
    behind: bool  # stepping cannot keep up with `speed`
    xpos: np.ndarray  # (nbody, 3)
    xquat: np.ndarray  # (nbody, 4), w x y z
    xmat: np.ndarray  # (nbody, 9)
    xipos: np.ndarray  # (nbody, 3): each body's centre of mass
    ximat: np.ndarray  # (nbody, 9): its inertial frame
    subtree_com: np.ndarray  # (nbody, 3)
    xanchor: np.ndarray  # (njnt, 3)
    xaxis: np.ndarray  # (njnt, 3)
    site_xpos: np.ndarray  # (nsite, 3)
    site_xmat: np.ndarray  # (nsite, 9)
    cam_xpos: np.ndarray  # (ncam, 3): each MJCF camera's position (engine.cameras: its extrinsics)
    cam_xmat: np.ndarray  # (ncam, 9): its frame, world from camera (looks along -z, y up)
    light_xpos: np.ndarray  # (nlight, 3): each light's position
    light_xdir: np.ndarray  # (nlight, 3): its direction
    dof_island: np.ndarray  # (nv,): each dof's constraint island of the last step (-1: none)
    nisland: int  # islands of the last step
    ten_wrapadr: np.ndarray  # (ntendon,): a tendon's first point in wrap_*
    ten_wrapnum: np.ndarray  # (ntendon,)
    wrap_obj: np.ndarray  # (nwrap * 2,): -2 a pulley (no segment across it), -1 a site, >= 0 a geom
    wrap_xpos: np.ndarray  # (nwrap * 2, 3): the tendons' path points
    eq_active: np.ndarray  # (neq,)
    geom_xpos: np.ndarray  # (ngeom, 3)
    geom_xmat: np.ndarray  # (ngeom, 9)
    flexvert_xpos: np.ndarray  # (nflexvert, 3)
    skin_vertices: tuple  # one (nvert, 3) array per skin
    qpos: np.ndarray
    qvel: np.ndarray
    act: np.ndarray
    ctrl: np.ndarray
    actuator_force: np.ndarray  # (nu,) of the last step, like sensordata
    mocap_pos: np.ndarray
    mocap_quat: np.ndarray
    sensordata: np.ndarray
    contacts: Contacts
    warnings: tuple  # MuJoCo's warnings since the last reset, as text
    message: str  # why the simulation paused itself (the latest such message)
    message_id: int  # one more for each new message (a view reports each once)
    grab: GrabView | None
    history: tuple  # (states kept, index of the shown one): the scrub slider's range
    progress: tuple  # (steps done, steps asked) of the Step command running, or of the last one
    step_seconds: float = 0.0  # wall seconds of stepping since the snapshot before (the profiler's)
    plots: object = None  # engine.plots.Plots of the channels the views asked for (Runner.plot), or None
    # (issue 34, readouts) simulate's Info, Watch and profiler figures:
    info: object = None  # engine.info.Info of this state (always)
    watch: tuple = ()  # engine.watch.read of the watched rows (Runner.watch): a float or error text each
    figures: object = None  # engine.info.Figures while the views show them (Runner.profile), or None


def _frozen(array) -> np.ndarray:
    out = np.array(array, copy=True)
    out.flags.writeable = False
    return out


ELLIPTIC = int(mujoco.mjtCone.mjCONE_ELLIPTIC)


def contact_forces(model, data) -> np.ndarray:
    """(ncon, 6): each contact's force and torque in its frame, zeros for a contact
    the constraint solver left out: `mj_contactForce` for all contacts at once (one
    call per contact cost as much as a step on 160 contacts), the same arithmetic in
    the same order, so the same bits. An elliptic cone's rows are the force itself;
    a pyramid's 2 (dim - 1) edge forces decode as `mju_decodePyramid` does: normal =
    their sum, tangent i = (edge 2i - edge 2i+1) * friction i."""
    ncon, contact = data.ncon, data.contact
    out = np.zeros((ncon, 6))
    address, dim = contact.efc_address[:ncon], contact.dim[:ncon]
    included = address >= 0
    for d in np.unique(dim[included]):
        rows = np.flatnonzero(included & (dim == d))
        first = address[rows]
        if model.opt.cone == ELLIPTIC or d == 1:
            out[rows, :d] = data.efc_force[first[:, None] + np.arange(d)]
            continue
        edges = data.efc_force[first[:, None] + np.arange(2 * (d - 1))]
        normal = edges[:, 0].copy()
        for k in range(1, 2 * (d - 1)):  # (summed left to right, as MuJoCo does)
            normal += edges[:, k]
        out[rows, 0] = normal
        out[rows, 1:d] = (edges[:, 0::2] - edges[:, 1::2]) * contact.friction[rows, :d - 1]
    return out


def take(session, frame: int, applied: int, message: tuple = (0, ""), history: tuple = (0, -1),
         progress: tuple = (0, 0), step_seconds: float = 0.0, plots=None, info=None, watch: tuple = (),
         figures=None) -> Snapshot:
    """A snapshot of `session` now (on the thread that owns its data); `message`:
    (id, text) of the runner's latest message."""
    model, data = session.model, session.data
    ncon = data.ncon
    contact = data.contact
    force = contact_forces(model, data)
    force.flags.writeable = False
    contacts = Contacts(pos=_frozen(contact.pos[:ncon]), frame=_frozen(contact.frame[:ncon]),
                        dist=_frozen(contact.dist[:ncon]), geom=_frozen(contact.geom[:ncon]),
                        force=force, included=_frozen(contact.efc_address[:ncon] >= 0),
                        flex=_frozen(contact.flex[:ncon]), elem=_frozen(contact.elem[:ncon]),
                        vert=_frozen(contact.vert[:ncon]))
    grab = None
    if session.grab is not None:
        g = session.grab
        grab = GrabView(g.body, _frozen(g.grab_point(data)), _frozen(g.target), g.rotate)
    skins = tuple(_frozen(skin.skin_vertices(model, data, i)) for i in range(model.nskin))
    return Snapshot(
        frame=frame, model=model, applied=applied, time=float(data.time), steps=session.steps_taken,
        playing=session.playing, fast_forward=session.fast_forward, speed=session.realtime,
        achieved=session.achieved, behind=session.behind,
        xpos=_frozen(data.xpos), xquat=_frozen(data.xquat), xmat=_frozen(data.xmat),
        xipos=_frozen(data.xipos), ximat=_frozen(data.ximat), subtree_com=_frozen(data.subtree_com),
        xanchor=_frozen(data.xanchor), xaxis=_frozen(data.xaxis),
        site_xpos=_frozen(data.site_xpos), site_xmat=_frozen(data.site_xmat),
        cam_xpos=_frozen(data.cam_xpos), cam_xmat=_frozen(data.cam_xmat),
        light_xpos=_frozen(data.light_xpos), light_xdir=_frozen(data.light_xdir),
        dof_island=_frozen(data.dof_island), nisland=int(data.nisland),
        ten_wrapadr=_frozen(data.ten_wrapadr), ten_wrapnum=_frozen(data.ten_wrapnum),
        wrap_obj=_frozen(data.wrap_obj.reshape(-1)), wrap_xpos=_frozen(data.wrap_xpos.reshape(-1, 3)),
        eq_active=_frozen(data.eq_active),
        geom_xpos=_frozen(data.geom_xpos), geom_xmat=_frozen(data.geom_xmat),
        flexvert_xpos=_frozen(data.flexvert_xpos), skin_vertices=skins,
        qpos=_frozen(data.qpos), qvel=_frozen(data.qvel), act=_frozen(data.act), ctrl=_frozen(data.ctrl),
        actuator_force=_frozen(data.actuator_force),
        mocap_pos=_frozen(data.mocap_pos), mocap_quat=_frozen(data.mocap_quat),
        sensordata=_frozen(data.sensordata), contacts=contacts,
        warnings=tuple(session.warnings()), message=message[1], message_id=message[0],
        grab=grab, history=history, progress=progress, step_seconds=step_seconds, plots=plots,
        info=info, watch=watch, figures=figures)

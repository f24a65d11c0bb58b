"""What a running simulation looks like at one moment: an immutable copy of the
state every view reads (viewport, sidebar, recorder, bridge), never MjData itself.

The runner takes one after each batch of steps (`take`), on the thread that owns
the data, then publishes it; readers on any thread keep a reference as long as
they like. Its arrays are copies, marked read-only.

Times: `time` is the state's time. Poses (`xpos`, `xquat`, geom poses, flex and
skin vertices) are the kinematics of that state (`Session.kinematics`); `qpos`,
`qvel`, `act`, `ctrl`, `mocap_*` are the state itself; `sensordata`,
`actuator_force` and `contacts` are what the last `mj_step` computed, of the state one step earlier
(MuJoCo's own convention: recomputing them would cost a whole `mj_forward`).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from . import skin


@dataclass(frozen=True, eq=False)
class Contacts:
    """The active contacts: world position (n, 3), frame (n, 9; rows: normal,
    tangents), distance (n,), geom ids (n, 2)."""

    pos: np.ndarray
    frame: np.ndarray
    dist: np.ndarray
    geom: np.ndarray

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


def _frozen(array) -> np.ndarray:
    out = np.array(array, copy=True)
    out.flags.writeable = False
    return out


def take(session, frame: int, applied: int, message: tuple = (0, ""), history: tuple = (0, -1),
         progress: tuple = (0, 0)) -> Snapshot:
    """A snapshot of `session` now (on the thread that owns its data); `message`:
    (id, text) of the runner's latest message."""
    model, data = session.model, session.data
    ncon = data.ncon
    contact = data.contact
    contacts = Contacts(pos=_frozen(contact.pos[:ncon]), frame=_frozen(contact.frame[:ncon]),
                        dist=_frozen(contact.dist[:ncon]), geom=_frozen(contact.geom[:ncon]))
    grab = None
    if session.grab is not None:
        g = session.grab
        grab = GrabView(g.body, _frozen(g.grab_point(data)), _frozen(g.target), g.rotate)
    skins = tuple(_frozen(skin.skin_vertices(model, data, i)) for i in range(model.nskin))
    return Snapshot(
        frame=frame, model=model, applied=applied, time=float(data.time), steps=session.steps_taken,
        playing=session.playing, fast_forward=session.fast_forward, speed=session.realtime,
        achieved=session.achieved, behind=session.behind,
        xpos=_frozen(data.xpos), xquat=_frozen(data.xquat),
        geom_xpos=_frozen(data.geom_xpos), geom_xmat=_frozen(data.geom_xmat),
        flexvert_xpos=_frozen(data.flexvert_xpos), skin_vertices=skins,
        qpos=_frozen(data.qpos), qvel=_frozen(data.qvel), act=_frozen(data.act), ctrl=_frozen(data.ctrl),
        actuator_force=_frozen(data.actuator_force),
        mocap_pos=_frozen(data.mocap_pos), mocap_quat=_frozen(data.mocap_quat),
        sensordata=_frozen(data.sensordata), contacts=contacts,
        warnings=tuple(session.warnings()), message=message[1], message_id=message[0],
        grab=grab, history=history, progress=progress)

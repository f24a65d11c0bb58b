"""One live simulation: model, data, pacing by wall-clock time, state carried over
across recompiles. No bpy: the Blender side (live/simulation.py) owns an EngineSession and
tells it the time; tests drive it directly.

    session = EngineSession(model, ids)        # ids: key -> (kind, MuJoCo id), kind in
                                         # "body", "joint", "actuator", ...
    session.play(now)                    # now: a wall-clock reading in seconds
    session.advance(now)                 # steps until simulated time catches up
    session.replace(new_model, new_ids)  # after a recompile: same state, new model

Keys are whatever the caller binds elements by (the Blender side uses each
object's `as_pointer()`), so state moves to the new model by element, not by
name or by position.
"""

from __future__ import annotations

import math
import time as _time

import mujoco
import numpy as np

from .controllers import Noise
from .errors import MJBlendError

Ids = dict  # key -> (kind, id)

# qpos / qvel widths by joint type (free, ball, slide, hinge)
QPOS_WIDTH = {0: 7, 1: 4, 2: 1, 3: 1}
DOF_WIDTH = {0: 6, 1: 3, 2: 1, 3: 1}

W = mujoco.mjtWarning
WARNING_TEXT = {
    W.mjWARN_INERTIA: "inertia too small",
    W.mjWARN_CONTACTFULL: "contact buffer full (raise <size memory>)",
    W.mjWARN_CNSTRFULL: "constraint buffer full (raise <size memory>)",
    W.mjWARN_BADQPOS: "bad qpos (NaN or huge): MuJoCo reset the state",
    W.mjWARN_BADQVEL: "bad qvel (NaN or huge): MuJoCo reset the state",
    W.mjWARN_BADQACC: "bad qacc (unstable simulation): MuJoCo reset the state",
    W.mjWARN_BADCTRL: "bad ctrl (NaN or huge)",
}
_WARNINGS = tuple((int(code), code, text) for code, text in WARNING_TEXT.items())
DIVERGED = (W.mjWARN_BADQPOS, W.mjWARN_BADQVEL, W.mjWARN_BADQACC)
STATE = mujoco.mjtState.mjSTATE_INTEGRATION  # everything the next step reads
CHUNK_SECONDS = 0.002  # stepping between two looks at the command queue
MAX_CHUNK = 1024
_DIVERGED_CODES = tuple(int(code) for code in DIVERGED)


class EngineSession:
    """Model, data and the clock of one scene's simulation."""

    def __init__(self, model: mujoco.MjModel, ids: Ids | None = None, keyframe: int = -1,
                 data: mujoco.MjData | None = None):
        """`data`: an MjData of `model` no one else holds (the compile's check made one; it is
        reset here), else a new one."""
        self.model = model
        self.data = data if data is not None else mujoco.MjData(model)
        self.ids: Ids = dict(ids or {})
        self.realtime = 1.0  # wanted simulated seconds per wall second
        self.achieved = 0.0  # measured, smoothed
        self.playing = False
        self.behind = False  # True while stepping cannot keep up with `realtime`
        self.message = ""  # why the session paused itself, if it did
        self.keyframe = keyframe
        self.fast_forward = False  # step as fast as the machine can, not at `realtime`
        self.grab = None  # an engine.perturb.Grab while the mouse pulls a body
        self.steps_taken = 0
        self._step_seconds = 0.0  # measured cost of one step (smoothed)
        self._anchor: tuple[float, float] | None = None  # (wall, sim) pacing reference
        self._last: tuple[float, float] | None = None  # (wall, sim) of the last advance
        self.diverged_at: float | None = None  # the time of the state the last step diverged from
        self._state: np.ndarray | None = None  # a chunk's starting state (see _run)
        self.recorder = None  # an engine.recording.Recorder capturing frames, or None
        # control laws run before every step (engine/controllers.py), by a key of the caller's
        self.laws: dict = {}
        self._laws: tuple = ()
        # simulate's control noise (engine/controllers.Noise): (scale, rate, seed) as set,
        # and the noise they make for the model now (None at scale 0: nothing applied)
        self.noise_settings = (0.0, 0.0, 0)
        self._noise: Noise | None = None
        self.reset(keyframe)

    # ------------------------------------------------------------ control

    def reset(self, keyframe: int | None = None) -> None:
        """Back to qpos0 (keyframe -1) or to keyframe `keyframe` (default: the current one)."""
        if keyframe is not None:
            check_keyframe(self.model, keyframe)
            self.keyframe = keyframe
        self.release()
        if self.keyframe >= 0:
            mujoco.mj_resetDataKeyframe(self.model, self.data, self.keyframe)
        else:
            mujoco.mj_resetData(self.model, self.data)
        mujoco.mj_forward(self.model, self.data)
        self.message = ""
        self._anchor = self._last = None
        # (a reset noise starts its seeded sequence again: a run from a reset repeats)
        self._noise = Noise.of(self.model, *self.noise_settings, self.keyframe)

    def load_state(self, state) -> None:
        """Continue from a full state (an mj_getState(mjSTATE_INTEGRATION) row of this
        model), every derived quantity recomputed; a ValueError if it is another model's."""
        state = np.asarray(state, dtype=float)
        size = mujoco.mj_stateSize(self.model, STATE)
        if state.shape != (size,):
            raise ValueError(f"a state of {state.size} values does not fit this model (it takes {size})")
        self.release()
        mujoco.mj_setState(self.model, self.data, state, STATE)
        mujoco.mj_forward(self.model, self.data)
        self.message = ""
        self._anchor = self._last = None

    def play(self, now: float | None = None) -> None:
        self.playing = True
        self.message = ""
        self._anchor = self._last = None
        if now is not None:
            self._anchor = self._last = (now, self.data.time)

    def pause(self) -> None:
        self.playing = False
        self.behind = False
        self._anchor = self._last = None

    def step(self, n: int = 1, stop=None) -> int:
        """Exactly `n` steps, run in chunks (fewer if the simulation diverges: it
        then pauses; or once `stop()`, asked between chunks, says so). Returns the
        steps taken. Raises ValueError (in a user's words) for a timestep MuJoCo
        cannot step with."""
        check_timestep(self.model)
        self.message = ""  # (a message is about the run that made it)
        done = 0
        if n <= 0:
            self._check_diverged()
            return 0
        while True:
            count = min(n - done, self._chunk(), self._steps_to_frame())
            ran = self._run(count)
            done += ran
            # (after every chunk the warnings alone; after the last, qpos too)
            if self._check_diverged(warnings_only=done < n):
                return done
            self._recorded(ran)
            if done >= n or (stop is not None and stop()):
                return done

    def simulate(self, duration: float, limit: int | None = None) -> int:
        """round(duration / timestep) steps, as fast as possible (TooManySteps,
        and nothing run, beyond `limit`)."""
        return self.step(steps_for(self.model, duration, limit))

    def advance(self, now: float, budget: float = 1 / 30) -> int:
        """Step until simulated time catches up with wall time `now` (scaled by
        `realtime`; with `fast_forward`, as far as `budget` allows), spending at
        most about `budget` seconds; falling behind re-anchors the clock (the
        simulation slows down instead of freezing Blender)."""
        if not self.playing:
            return 0
        try:
            check_timestep(self.model)
        except ValueError as error:
            self.pause()
            self.message = str(error)
            return 0
        if self._anchor is None:
            self._anchor = self._last = (now, self.data.time)
            return 0
        wall0, sim0 = self._anchor
        target = math.inf if self.fast_forward else sim0 + (now - wall0) * self.realtime
        timestep = self.model.opt.timestep
        start = _time.perf_counter()
        steps = 0
        while self.data.time + 0.5 * timestep < target:
            owed = min((target - self.data.time) / timestep + 0.5, MAX_CHUNK)  # (inf in fast-forward)
            ran = self._run(max(1, min(self._chunk(), int(owed), self._steps_to_frame())))
            steps += ran
            if self._check_diverged(warnings_only=True):
                return steps
            self._recorded(ran)
            if _time.perf_counter() - start > budget:
                break
        if self._check_diverged():
            return steps
        self.behind = self.playing and not self.fast_forward and self.data.time + timestep < target
        if self.behind or self.fast_forward:
            self._anchor = (now, self.data.time)
        last_wall, last_sim = self._last
        if now > last_wall:
            rate = (self.data.time - last_sim) / (now - last_wall)
            self.achieved = rate if self.achieved == 0 else 0.8 * self.achieved + 0.2 * rate
        self._last = (now, self.data.time)
        return steps

    def seconds_until_due(self, now: float) -> float:
        """Wall seconds until the next step is owed (0 when one is owed now)."""
        if not self.playing or self.fast_forward or self._anchor is None:
            return 0.0
        wall0, sim0 = self._anchor
        due = wall0 + (self.data.time + 0.5 * self.model.opt.timestep - sim0) / self.realtime
        return max(0.0, due - now)

    def record(self, recorder) -> None:
        """Capture frames into `recorder` (an engine.recording.Recorder) from now on,
        this state its first; None stops."""
        self.recorder = recorder
        if recorder is not None:
            recorder.capture(self.model, self.data)

    def _steps_to_frame(self) -> int:
        """Steps until the recorder's next frame (a chunk ends there)."""
        return MAX_CHUNK if self.recorder is None else self.recorder.steps_to_next()

    def _recorded(self, count: int) -> None:
        if self.recorder is not None:
            self.recorder.stepped(count, self.model, self.data)

    def _chunk(self) -> int:
        """Steps per batch between looks at the commands: about CHUNK_SECONDS of stepping."""
        if self._step_seconds == 0:
            return 1  # (the first step measures what one costs)
        return max(1, min(MAX_CHUNK, int(CHUNK_SECONDS / max(self._step_seconds, 1e-7))))

    def _run(self, count: int) -> int:
        """`count` steps (mj_step releases the GIL while it runs); fewer if one
        diverges: the state is then the one MuJoCo reset to in that step, and
        `diverged_at` the time of the state it diverged from (MuJoCo's reset sets
        the time back to 0)."""
        model, data = self.model, self.data
        start = _time.perf_counter()
        counts = data.warning.number.copy()
        if self.grab is None and not self._laws and self._noise is None and count > 1:
            state = self._state_buffer()
            mujoco.mj_getState(model, data, state, STATE)  # (microseconds, against a chunk's ~2 ms)
            mujoco.mj_step(model, data, nstep=count)
            done = count
            if _diverged_since(data, counts):
                # MuJoCo went on from its reset: the chunk again from the same state
                # (bit for bit the same steps), one step at a time up to the one that diverged
                mujoco.mj_setState(model, data, state, STATE)
                data.warning.number[:] = counts
                done = self._steps_until_diverged(count, counts)
        else:
            done = self._steps_until_diverged(count, counts)
        seconds = (_time.perf_counter() - start) / done
        self._step_seconds = seconds if self._step_seconds == 0 else 0.7 * self._step_seconds + 0.3 * seconds
        self.steps_taken += done
        return done

    def _steps_until_diverged(self, count: int, counts) -> int:
        """Up to `count` single steps (the control noise, the mouse spring and the control laws applied
        before each), ending after one that diverged (`counts`: the warnings before the first)."""
        model, data = self.model, self.data
        done = 0
        while done < count:
            before = data.time
            if self._noise is not None:  # (first, as simulate: a law then overrides its actuators)
                self._noise.apply(data)
            if self.grab is not None:
                self.grab.apply(model, data)  # the spring acts on every step
            for law in self._laws:  # (a controller computes its commands from this step's state)
                law.apply(data)
            mujoco.mj_step(model, data)
            done += 1
            if _diverged_since(data, counts):
                self.diverged_at = before
                break
        return done

    def _state_buffer(self) -> np.ndarray:
        size = mujoco.mj_stateSize(self.model, STATE)
        if self._state is None or len(self._state) != size:
            self._state = np.empty(size)
        return self._state

    def kinematics(self) -> None:
        """Positions of the current state: `mj_step` leaves xpos, xquat, geom and flex
        poses, subtree centres of mass, camera and light poses and tendon paths of the
        state one step earlier (it integrates after computing them); this recomputes
        them without touching anything the next step reads (each step recomputes them
        all from qpos)."""
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        if self.model.ncam or self.model.nlight:  # (after mj_comPos: a camera may target a subtree's com)
            mujoco.mj_camlight(self.model, self.data)
        if self.model.ntendon:
            mujoco.mj_tendon(self.model, self.data)
        if self.model.nflex:
            mujoco.mj_flex(self.model, self.data)

    # ------------------------------------------------- what the user does
    # Everything outside engine/ changes a session through these methods (never
    # its fields), so a physics thread can later queue them between steps.

    def set_speed(self, realtime: float, now: float | None = None) -> None:
        """Simulated seconds per wall second; a playing session paces from `now` on."""
        self.realtime = realtime
        if self.playing:
            self.play(now)

    def set_control(self, actuator: int, value: float) -> float:
        """An actuator's control, clamped to its ctrlrange when it is ctrllimited; returns what was set."""
        value = clamped_control(self.model, actuator, value)
        self.data.ctrl[actuator] = value
        return value

    def zero_controls(self) -> None:
        self.data.ctrl[:] = 0

    def set_fast_forward(self, on: bool, now: float | None = None) -> None:
        """Step as fast as the machine can (on) or at `realtime` again (off)."""
        self.fast_forward = on
        if self.playing:
            self.play(now)

    def set_joint_qpos(self, joint: int, values) -> None:
        """Put one joint at `values` (its qpos width: 7 free, 4 ball, 1 slide or
        hinge), at rest; positions are recomputed."""
        kind = int(self.model.jnt_type[joint])
        values = np.asarray(values, dtype=float).ravel()
        if len(values) != QPOS_WIDTH[kind]:
            raise ValueError(f"joint {joint} takes {QPOS_WIDTH[kind]} qpos values, not {len(values)}")
        if not np.isfinite(values).all():
            raise ValueError(f"joint {joint}: qpos values must be finite")
        adr, dof = self.model.jnt_qposadr[joint], self.model.jnt_dofadr[joint]
        if kind in (0, 1):  # a quaternion part: unit length
            quat = values[3:] if kind == 0 else values  # (a view: normalised in place)
            norm = np.linalg.norm(quat)
            quat[:] = quat / norm if norm else (1.0, 0.0, 0.0, 0.0)
        self.data.qpos[adr:adr + len(values)] = values
        self.data.qvel[dof:dof + DOF_WIDTH[kind]] = 0
        mujoco.mj_forward(self.model, self.data)

    def set_mocap(self, index: int, pos, quat) -> None:
        """Where mocap body `index` (a mocap id) is: the user moved its object."""
        self.data.mocap_pos[index] = pos
        self.data.mocap_quat[index] = quat

    # ------------------------------------------ what a network client does
    # (bridge/: a client drives the simulation; these write MjData exactly as
    # asked, with no clamping, so the client's own mj_step would match)

    def set_controls(self, ctrl, index=None) -> None:
        """data.ctrl[index] = ctrl (index None: the whole vector), as given: MuJoCo
        clamps to ctrlrange itself when it steps (unless the model disables it)."""
        if index is None:
            self.data.ctrl[:] = ctrl
        else:
            self.data.ctrl[index] = ctrl

    def set_laws(self, changes: dict) -> None:
        """Control laws by key (engine/controllers.py), applied before every step
        from now on; a key given None loses its law."""
        for key, law in changes.items():
            if law is None:
                self.laws.pop(key, None)
            else:
                self.laws[key] = law
        self._laws = tuple(self.laws.values())

    def set_noise(self, scale: float, rate: float, seed: int) -> None:
        """simulate's control noise (engine/controllers.Noise) before every step from now
        on: `scale` (simulate's "Noise scale", the standard deviation in halfranges),
        `rate` (its "Noise rate", seconds), `seed` of the normal draws; scale 0 is none.
        A ValueError (nothing changed) for values simulate's sliders do not allow."""
        scale, rate = float(scale), float(rate)
        if not (math.isfinite(scale) and scale >= 0):
            raise ValueError(f"a noise scale must be 0 or more, not {scale}")
        if not (math.isfinite(rate) and rate >= 0):
            raise ValueError(f"a noise rate must be 0 or more seconds, not {rate}")
        self.noise_settings = (scale, rate, int(seed))
        self._noise = Noise.of(self.model, *self.noise_settings, self.keyframe)

    def apply_wrenches(self, bodies, wrenches) -> None:
        """xfrc_applied of `bodies` (ids) = `wrenches` (n, 6: force, torque in world)."""
        self.data.xfrc_applied[bodies] = wrenches

    def clear_wrenches(self, bodies) -> None:
        self.data.xfrc_applied[bodies] = 0

    def push_state(self, qpos=None, qvel=None, ctrl=None, time=None) -> None:
        """A state computed elsewhere (a client's own simulation): written as given,
        then mj_forward (no integration) so poses and sensors are of it."""
        data = self.data
        if qpos is not None:
            data.qpos[:] = qpos
        if qvel is not None:
            data.qvel[:] = qvel
        if ctrl is not None:
            data.ctrl[:] = ctrl
        if time is not None:
            data.time = time
        mujoco.mj_forward(self.model, data)

    def set_qpos(self, index, values) -> None:
        """qpos[index] = values (a client's joint positions), velocities kept, then
        mj_forward."""
        self.data.qpos[index] = values
        self.forward()

    def forward(self) -> None:
        """mj_forward: everything derived (poses, sensors, contacts) of the state now,
        nothing integrated."""
        mujoco.mj_forward(self.model, self.data)

    def perturbation(self):
        """(body id, 6-vector force + torque in world) the mouse spring would apply to
        the state now, or None without one; MjData is left as it was."""
        if self.grab is None:
            return None
        body = self.grab.body
        kept = self.data.xfrc_applied[body].copy()
        self.grab.apply(self.model, self.data)
        wrench = self.data.xfrc_applied[body].copy()
        self.data.xfrc_applied[body] = kept
        return body, wrench

    def drag(self, target=None, axis=None, angle: float = 0.0) -> None:
        """Move the grabbed body's spring target (and / or turn it); paused, the
        body itself moves there (mjv_applyPerturbPose)."""
        if self.grab is None:
            return
        if target is not None:
            self.grab.move_to(target)
        if axis is not None and angle:
            self.grab.turn(axis, angle)
        if not self.playing:
            self.grab.apply_pose(self.model, self.data)

    def grab_body(self, grab) -> None:
        """Hold a body with a mouse spring (an engine.perturb.Grab), letting go of any other."""
        self.release()
        self.grab = grab

    def take_message(self) -> str:
        """Why the session paused itself (once: the message is cleared)."""
        message, self.message = self.message, ""
        return message

    def release(self) -> None:
        """Let go of a grabbed body (its spring force is cleared)."""
        if self.grab is not None:
            self.grab.release(self.data)
            self.grab = None

    # ----------------------------------------------------------- warnings

    def warnings(self) -> list[str]:
        """MuJoCo's warnings since the last reset, as text with their counts."""
        counts = self.data.warning.number  # (one read: each warning[i] is a binding call)
        return [f"{text} (x{counts[index]}, {code.name})" for index, code, text in _WARNINGS if counts[index]]

    def _check_diverged(self, warnings_only: bool = False) -> bool:
        """Pause with a message if MuJoCo flagged bad qpos / qvel / qacc (its checks
        catch NaNs: it warns and resets the state) or qpos is not finite. After every
        step the warnings alone (cheap); qpos once per batch."""
        numbers, (a, b, c) = self.data.warning.number, _DIVERGED_CODES
        # (qpos' sum is finite exactly when every value is: MuJoCo resets a qpos beyond
        # 1e10 itself, so finite values cannot add up to an overflow)
        if not (numbers[a] or numbers[b] or numbers[c]) and \
                (warnings_only or math.isfinite(self.data.qpos.sum())):
            return False
        bad = [code for code in DIVERGED if self.data.warning[int(code)].number]
        self.playing = False
        self.behind = False
        self._anchor = self._last = None
        names = ", ".join(code.name for code in bad) or "qpos is not finite"
        at = self.data.time if self.diverged_at is None or not bad else self.diverged_at
        self.diverged_at = None
        when = f"{at:.4f}" if abs(at) < 1e9 else f"{at:.6g}"  # (a huge timestep's time)
        self.message = (f"The simulation diverged at t = {when} s ({names}) and was paused"
                        f"{' (MuJoCo reset the state)' if bad else ''}: try a smaller timestep, "
                        "or check masses and gains")
        for code in bad:  # reported once
            self.data.warning[int(code)].number = 0
        return True

    # ---------------------------------------------------------- recompile

    def replace(self, model: mujoco.MjModel, ids: Ids, data: mujoco.MjData | None = None) -> None:
        """Continue with `model` (a recompile): time, joint state (qpos, qvel,
        warm start, applied forces), controls, actuator activations and mocap
        poses carry over for every element bound in both `self.ids` and `ids`.
        `data`: an MjData of `model` no one else holds (reset here), else a new one."""
        self.release()  # body ids may have changed
        self.set_laws(dict.fromkeys(self.laws))  # (they index the old model's actuators and joints)
        old_model, old_data, old_ids = self.model, self.data, self.ids
        if data is None:
            data = mujoco.MjData(model)
        else:  # (allocating one costs ~10x the reset: the compile's check already did)
            mujoco.mj_resetData(model, data)
        if self.keyframe >= model.nkey:
            self.keyframe = -1
        data.time = old_data.time
        for key, (kind, new) in ids.items():
            old_kind, old = old_ids.get(key, (None, -1))
            if old_kind != kind or old < 0 or new < 0:
                continue
            if kind == "joint":
                _copy_joint(old_model, old_data, old, model, data, new)
            elif kind == "actuator":
                data.ctrl[new] = old_data.ctrl[old]
                n = model.actuator_actnum[new]
                if n and n == old_model.actuator_actnum[old]:
                    a, b = model.actuator_actadr[new], old_model.actuator_actadr[old]
                    data.act[a:a + n] = old_data.act[b:b + n]
            elif kind == "body":
                m_new, m_old = model.body_mocapid[new], old_model.body_mocapid[old]
                if m_new >= 0 and m_old >= 0:
                    data.mocap_pos[m_new] = old_data.mocap_pos[m_old]
                    data.mocap_quat[m_new] = old_data.mocap_quat[m_old]
        self.model, self.data, self.ids = model, data, dict(ids)
        if self._noise is not None and model.nu:  # (the new model's ranges and timestep; the draws go on)
            self._noise.bind(model, self.keyframe)
        else:  # (a model without actuators has no noise: its steps keep the nstep fast path)
            self._noise = Noise.of(model, *self.noise_settings, self.keyframe)
        mujoco.mj_forward(model, data)


def _diverged_since(data, counts) -> bool:
    """Did MuJoCo flag bad qpos / qvel / qacc since its warning counts were `counts`?
    (Counts only grow: comparing sums says whether any grew, without numpy's
    per-call cost on three numbers, which is a fifth of a humanoid step.)"""
    now, a, b, c = data.warning.number, *_DIVERGED_CODES
    return int(now[a]) + int(now[b]) + int(now[c]) > int(counts[a]) + int(counts[b]) + int(counts[c])


class TooManySteps(MJBlendError, ValueError):
    """A run longer than the step limit the caller set."""


def check_timestep(model) -> None:
    """A ValueError in a user's words unless the model's timestep is positive and
    finite (MuJoCo compiles any: NaN and inf make NaN states, 0 never advances, a
    negative one runs time backwards)."""
    timestep = model.opt.timestep
    if math.isnan(timestep):
        raise ValueError("The model's timestep is not a number (NaN): MuJoCo needs a positive "
                         "timestep (<option timestep>, or the scene's option override)")
    if not 0 < timestep < math.inf:
        raise ValueError(f"The model's timestep is {timestep:g} s: MuJoCo needs a positive, finite "
                         "timestep (<option timestep>, or the scene's option override)")


def check_step_count(count: int, limit: int | None, what: str = "") -> None:
    """TooManySteps if `count` steps exceed `limit` (None: no limit); `what` says
    where the count comes from."""
    if limit is not None and count > limit:
        raise TooManySteps(f"{what}{count:,} steps is more than the step limit of {limit:,}")


def steps_for(model, duration: float, limit: int | None = None) -> int:
    """round(duration / timestep): the steps a duration takes. A ValueError in a
    user's words for a duration or timestep that cannot be stepped, TooManySteps
    beyond `limit`."""
    if math.isnan(duration):
        raise ValueError("The duration to simulate is not a number (NaN)")
    if duration < 0:
        raise ValueError(f"The duration to simulate is negative ({duration:g} s)")
    if math.isinf(duration):
        raise ValueError("The duration to simulate is infinite: play the simulation instead")
    check_timestep(model)
    timestep = model.opt.timestep
    steps = duration / timestep  # (a float: 1 s at 1e-300 s is 1e300 steps)
    if limit is not None and steps > limit + 0.5:
        raise TooManySteps(f"Simulating {duration:g} s with a timestep of {timestep:g} s takes "
                           f"{_count(steps)} steps, more than the step limit of {limit:,}")
    return int(round(steps))


def _count(steps: float) -> str:
    return f"{round(steps):,}" if steps < 1e15 else f"{steps:.3g}"


def check_keyframe(model, keyframe: int) -> None:
    """-1 (qpos0) or one of the model's keyframes, else a ValueError saying so."""
    if not -1 <= keyframe < model.nkey:
        raise ValueError(f"keyframe {keyframe} does not exist: the model has {model.nkey} keyframe(s)")


def clamped_control(model, actuator: int, value: float) -> float:
    """`value` inside the actuator's ctrlrange when it is ctrllimited."""
    if model.actuator_ctrllimited[actuator]:
        low, high = model.actuator_ctrlrange[actuator]
        value = min(max(value, low), high)
    return value


def _copy_joint(old_model, old_data, old, model, data, new) -> None:
    kind = int(model.jnt_type[new])
    if kind != int(old_model.jnt_type[old]):
        return  # a changed joint type starts from its qpos0
    q, qo = model.jnt_qposadr[new], old_model.jnt_qposadr[old]
    v, vo = model.jnt_dofadr[new], old_model.jnt_dofadr[old]
    nq, nv = QPOS_WIDTH[kind], DOF_WIDTH[kind]
    data.qpos[q:q + nq] = old_data.qpos[qo:qo + nq]
    data.qvel[v:v + nv] = old_data.qvel[vo:vo + nv]
    data.qacc_warmstart[v:v + nv] = old_data.qacc_warmstart[vo:vo + nv]
    data.qfrc_applied[v:v + nv] = old_data.qfrc_applied[vo:vo + nv]

"""What the UI, operators and the bridge ask of a running simulation.

Every change to a running simulation is one of these, sent to its runner
(`Runner.send`), which applies it on the thread that owns MjData, between two
steps, in the order sent. Each command is a small immutable value with one
method, `apply(runner)`; reading a command tells what it does to the session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .perturb import Grab
from .recording import steps_for_frames


@dataclass(frozen=True)
class Play:
    def apply(self, runner) -> None:
        runner.clear_message()
        runner.session.play(runner.clock())
        runner.showing_history = None


@dataclass(frozen=True)
class Pause:
    def apply(self, runner) -> None:
        runner.session.pause()


@dataclass(frozen=True)
class Step:
    """Pause, then exactly `count` steps (a recorded batch; Runner.cancel stops it
    at a step boundary)."""

    count: int

    def apply(self, runner) -> None:
        runner.clear_message()
        runner.session.pause()
        runner.run_steps(self.count)


@dataclass(frozen=True)
class Record:
    """Pause, then step while `recorder` (an engine.recording.Recorder of a fixed
    number of frames) captures them: frame 0 is the state now (a recorded batch;
    Runner.cancel stops it at a step boundary, keeping the frames captured)."""

    recorder: Any = field(repr=False)

    def apply(self, runner) -> None:
        runner.clear_message()
        session, recorder = runner.session, self.recorder
        session.pause()
        session.record(recorder)
        try:
            runner.run_steps(steps_for_frames(recorder.frames, recorder.fps, recorder.timestep))
        finally:
            session.record(None)


@dataclass(frozen=True)
class StartRecording:
    """Capture frames into `recorder` (open-ended) from the state now on, whatever
    runs the simulation (playing, stepping, the mouse spring), until StopRecording."""

    recorder: Any = field(repr=False)

    def apply(self, runner) -> None:
        runner.session.record(self.recorder)


@dataclass(frozen=True)
class StopRecording:
    def apply(self, runner) -> None:
        runner.session.record(None)


@dataclass(frozen=True)
class Reset:
    """Back to qpos0 (keyframe -1), a keyframe, or (None) the current keyframe."""

    keyframe: int | None = None

    def apply(self, runner) -> None:
        runner.clear_message()
        session = runner.session
        session.reset(self.keyframe)
        runner.restart_timers()  # (mj_resetData zeroes MuJoCo's timers)
        if session.playing:
            session.play(runner.clock())
        runner.record()


@dataclass(frozen=True)
class SetSpeed:
    realtime: float

    def apply(self, runner) -> None:
        if not self.realtime > 0:
            raise ValueError(f"speed must be positive, not {self.realtime}")
        runner.session.set_speed(self.realtime, runner.clock())


@dataclass(frozen=True)
class SetPublishRate:
    """Snapshots per wall second while playing in real time (the runner's default is
    twice the display's; a network client's state stream may want more)."""

    rate: float

    def apply(self, runner) -> None:
        if not 0 < self.rate <= 100_000:
            raise ValueError(f"a publish rate must be between 0 and 100000 per second, not {self.rate}")
        runner.interval = 1.0 / self.rate


@dataclass(frozen=True)
class FastForward:
    on: bool

    def apply(self, runner) -> None:
        runner.session.set_fast_forward(self.on, runner.clock())


@dataclass(frozen=True)
class SetControl:
    actuator: int
    value: float

    def apply(self, runner) -> None:
        runner.session.set_control(self.actuator, self.value)


@dataclass(frozen=True)
class ZeroControls:
    def apply(self, runner) -> None:
        runner.session.zero_controls()


@dataclass(frozen=True)
class StartGrab:
    """A mouse spring on `body` at world `point` (built here, from the runner's data)."""

    body: int
    point: tuple
    rotate: bool = False
    view_distance: float = 2.0
    stiffness_scale: float = 1.0

    def apply(self, runner) -> None:
        session = runner.session
        session.grab_body(Grab(session.model, session.data, self.body, self.point, rotate=self.rotate,
                               view_distance=self.view_distance, stiffness_scale=self.stiffness_scale))


@dataclass(frozen=True)
class Drag:
    """Move the spring's target to world `target` and / or turn it by `angle`
    radians about world `axis`; paused, the body follows."""

    target: tuple | None = None
    axis: tuple | None = None
    angle: float = 0.0

    def apply(self, runner) -> None:
        runner.session.drag(self.target, self.axis, self.angle)


@dataclass(frozen=True)
class Release:
    def apply(self, runner) -> None:
        runner.session.release()


@dataclass(frozen=True)
class SetJointQpos:
    """One joint's qpos (at rest), e.g. a free body the user put somewhere."""

    joint: int
    values: tuple

    def apply(self, runner) -> None:
        runner.session.set_joint_qpos(self.joint, self.values)


@dataclass(frozen=True)
class SetMocap:
    """Mocap bodies' poses: `index` mocap ids, `pos` (n, 3), `quat` (n, 4)."""

    index: tuple
    pos: np.ndarray = field(repr=False)
    quat: np.ndarray = field(repr=False)

    def apply(self, runner) -> None:
        for i, p, q in zip(self.index, self.pos, self.quat, strict=True):
            runner.session.set_mocap(i, p, q)


@dataclass(frozen=True)
class SetControls:
    """Controls as a client sends them: `values` into ctrl[`index`] (None: all, and None
    values: none), unclamped; `laws`: control laws changed by key (SetLaws)."""

    values: np.ndarray = field(repr=False)
    index: Any = None
    laws: dict | None = field(default=None, repr=False)

    def apply(self, runner) -> None:
        if self.laws:
            runner.session.set_laws(self.laws)
        if self.values is not None:
            runner.session.set_controls(self.values, self.index)


@dataclass(frozen=True)
class SetLaws:
    """Control laws run before every step (engine/controllers.py), by key; a key
    given None loses its law."""

    laws: dict = field(repr=False)

    def apply(self, runner) -> None:
        runner.session.set_laws(self.laws)


@dataclass(frozen=True)
class DirectStep:
    """A client's step: pause, set the controls (SetControls' `values` / `index`), the
    control laws changed (`laws`, as SetLaws) and one-shot wrenches on `bodies` (ids;
    (n, 6) `wrenches`), run exactly `count` steps (recorded, like Step), then clear
    those wrenches again."""

    count: int
    values: Any = field(default=None, repr=False)
    index: Any = None
    bodies: tuple = ()
    wrenches: Any = field(default=None, repr=False)
    laws: dict | None = field(default=None, repr=False)

    def apply(self, runner) -> None:
        runner.clear_message()
        session = runner.session
        session.pause()
        if self.laws:
            session.set_laws(self.laws)
        if self.values is not None:
            session.set_controls(self.values, self.index)
        bodies = list(self.bodies)
        if bodies:
            session.apply_wrenches(bodies, self.wrenches)
        try:
            runner.run_steps(self.count)
        finally:
            if bodies:
                session.clear_wrenches(bodies)


@dataclass(frozen=True)
class PushState:
    """A state from a client's own simulation (puppet): written, mj_forward, nothing
    integrated; `result["perturbation"]` is then what the mouse spring pulls with
    ((body, wrench) or None) for the client to apply."""

    qpos: Any = field(default=None, repr=False)
    qvel: Any = field(default=None, repr=False)
    ctrl: Any = field(default=None, repr=False)
    time: float | None = None
    result: dict = field(default_factory=dict, repr=False, compare=False)

    def apply(self, runner) -> None:
        session = runner.session
        session.pause()
        session.push_state(self.qpos, self.qvel, self.ctrl, self.time)
        self.result["perturbation"] = session.perturbation()
        runner.record()


@dataclass(frozen=True)
class SetQpos:
    """qpos[`index`] = `values` (a client's joint positions), then mj_forward."""

    index: Any
    values: Any = field(repr=False)

    def apply(self, runner) -> None:
        runner.session.set_qpos(self.index, self.values)
        runner.record()


@dataclass(frozen=True)
class Forward:
    """mj_forward on the state now (a client reads derived values without stepping)."""

    def apply(self, runner) -> None:
        runner.session.forward()


@dataclass(frozen=True)
class Replace:
    """Continue on a recompiled model, state carried over by element (EngineSession.replace)."""

    model: Any = field(repr=False)
    ids: dict = field(repr=False)
    data: Any = field(default=None, repr=False)  # an MjData of `model` made for it (or None)

    def apply(self, runner) -> None:
        runner.session.replace(self.model, self.ids, self.data)
        runner.new_history()


@dataclass(frozen=True)
class ShowHistory:
    """Pause and show kept state `index` (0 the oldest, -1 the newest); playing
    or stepping continues from it, and the states after it are dropped."""

    index: int

    def apply(self, runner) -> None:
        runner.session.pause()
        runner.session.release()
        runner.history.load(self.index, runner.session.model, runner.session.data)
        runner.showing_history = self.index % len(runner.history)


@dataclass(frozen=True)
class Call:
    """Anything else, as a function of the session (e.g. option overrides on its model)."""

    function: Callable = field(repr=False)
    what: str = "call"
    changes: bool = True  # False: it leaves the state as it was (no snapshot is due after it)

    def apply(self, runner) -> None:
        self.function(runner.session)


@dataclass(frozen=True)
class Plot:
    """Publish the plots of `request` (an engine.plots.Request: channels by name, seconds)
    with every snapshot from now on; an empty request stops plotting. Names the model
    does not have give a plot with an error (a recompile finds them again by name)."""

    request: Any

    def apply(self, runner) -> None:
        runner.plot(self.request)


@dataclass(frozen=True)
class SetNoise:
    """simulate's control noise on every step from now on (EngineSession.set_noise):
    `scale` 0 is none."""

    scale: float
    rate: float
    seed: int = 0

    def apply(self, runner) -> None:
        runner.session.set_noise(self.scale, self.rate, self.seed)


@dataclass(frozen=True)
class Watch:
    """Publish the values of `request` (an engine.watch.Request: MjData fields by name and
    flat index) with every snapshot from now on; simulate's Watch."""

    request: Any

    def apply(self, runner) -> None:
        runner.watch(self.request)


@dataclass(frozen=True)
class Profile:
    """Publish simulate's profiler figures (engine.info.Figures) with every snapshot while
    `request.on` (an engine.info.Request); off drops their rings."""

    request: Any

    def apply(self, runner) -> None:
        runner.profile(self.request)

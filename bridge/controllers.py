"""URLab's controller ops: the per-articulation PD controller (`configure_controller`,
`control_mode` "ue_controller" in `step`), the twist a policy reads (`set_twist`)
and where the controls come from (`set_control_source`).

Every articulation with an actuator on a hinge or slide joint has URLab's PD
controller (UMjPDController: kp, kv, torque_limit per actuator, by its short
name, and default_kp / default_kv / default_torque_limit for those not set),
resting until a `configure_controller` that sets something enables it. Enabled,
the ctrl a step sends for those actuators (control_mode "ue_controller", the
default then; "raw" writes them as commands for that step) are position targets,
held until the next ones; the runner computes the commands from them before
every physics step (engine/controllers.py, PDLaw), whatever steps the
simulation: a client's steps, live play, Blender's Step.

Control source (URLab's words): "zmq", the bridge's ctrl apply (the default);
"ui", Blender's controls panel drives the actuators: a step's ctrl is kept as
the articulation's targets but not applied, and the PD controller rests.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import commands
from ..engine.controllers import PDLaw, bindable
from . import fields
from .op import Op
from .wire import ProtocolError

SOURCES = ("zmq", "ui")
CONTROL_MODES = ("ue_controller", "raw")
PER_JOINT = ("kp", "kv", "torque_limit")
DEFAULTS = {"default_kp": 100.0, "default_kv": 5.0, "default_torque_limit": 200.0}  # (URLab's)
SCHEMA = {**{key: {"type": "per_joint", "dtype": "float32", "min": 0.0} for key in PER_JOINT},
          **{key: {"type": "scalar", "dtype": "float32", "min": 0.0} for key in DEFAULTS}}


def f32(value: float) -> float:
    """`value` as URLab keeps it (a float), read back as a double."""
    return float(np.float32(value))


class Articulation:
    """One articulation's controller, control source, targets and twist."""

    def __init__(self, model, entity, source: str):
        self.entity = entity
        self.actuators, self.joints = bindable(model, entity.actuators)
        self.where = {int(a): i for i, a in enumerate(entity.actuators)}  # actuator id -> position
        self.positions = np.asarray([self.where[int(a)] for a in self.actuators], dtype=np.int64)
        self.names = tuple(entity.actuator_names[i] for i in self.positions)
        # per actuator: the value set, NaN where the default applies
        self.gains = {key: np.full(len(self.actuators), np.nan, dtype=np.float32) for key in PER_JOINT}
        self.defaults = {key: f32(value) for key, value in DEFAULTS.items()}
        self.enabled = False
        self.source = source
        self.staged: np.ndarray | None = None  # the last ctrl the bridge sent, per actuator
        self.twist = (0.0, 0.0, 0.0)  # (vx, vy, yaw rate), as URLab's UMjTwistController keeps it
        self.law: PDLaw | None = None  # the law the runner applies now
        self._gains_law: PDLaw | None = None  # the bindings and gains now (targets given per step)

    @property
    def has_controller(self) -> bool:
        return len(self.actuators) > 0

    @property
    def default_mode(self) -> str:
        return "ue_controller" if self.enabled else "raw"

    def effective(self, key: str) -> np.ndarray:
        values = self.gains[key]
        return np.where(np.isnan(values), np.float32(self.defaults["default_" + key]), values)

    def params(self) -> dict:
        out = {key: dict(zip(self.names, map(float, self.effective(key)), strict=True)) for key in PER_JOINT}
        out.update(self.defaults)
        return out

    def handshake(self) -> dict:
        if not self.has_controller:
            return {"default_control_mode": "raw"}
        return {"default_control_mode": self.default_mode,
                "controller": {"kind": "pd", "params": self.params(), "schema": SCHEMA,
                               "enabled": self.enabled}}

    def runs(self, mode: str | None = None) -> bool:
        """Whether the PD controller drives the actuators now: enabled, the bridge's
        controls, "ue_controller" (`mode`, else the default) and targets sent."""
        return (self.enabled and self.source == "zmq" and (mode or self.default_mode) == "ue_controller"
                and self.staged is not None)

    def wanted_law(self, model, mode: str | None = None) -> PDLaw | None:
        """The law that should run now (None: none)."""
        if not self.runs(mode):
            return None
        if self._gains_law is None:
            self._gains_law = PDLaw.of(model, self.actuators, self.joints, self.effective("kp"),
                                       self.effective("kv"), self.effective("torque_limit"),
                                       np.zeros(len(self.actuators)))
        return self._gains_law.with_targets(self.staged[self.positions])

    def gains_changed(self) -> None:
        self._gains_law = None

    def observed(self) -> dict:
        vx, vy, yaw = self.twist
        return {"twist": {"linear": [vx, vy, 0.0], "angular": [0.0, 0.0, yaw]}, "actions": 0}


class Controllers:
    """The controller state of the model served now (made again for a new model)."""

    def __init__(self, dispatcher):
        self.d = dispatcher
        self.source = "zmq"  # the global control source
        self._model = None
        self._arts: dict[str, Articulation] = {}
        self.extra: dict = {}  # per articulation, what its observation block adds (read by any thread)

    def ops(self) -> dict[str, Op]:
        return {
            "configure_controller": Op(self.op_configure_controller, namespace="runtime",
                                       required=("articulation", "params"),
                                       reply=("articulation:string", "params:object")),
            "set_twist": Op(self.op_set_twist, namespace="runtime", required=("articulation",),
                            reply=("articulation:string", "linear:array", "angular:array")),
            "set_control_source": Op(self.op_set_control_source, namespace="runtime", required=("source",),
                                     reply=("source:string", "scope:string")),
        }

    # ------------------------------------------------------------- state

    def articulations(self) -> dict[str, Articulation]:
        model = self.d.model
        if model is not self._model:
            self._model = model
            self._arts = {e.prefix: Articulation(model, e, self.source)
                          for e in self.d.entities if e.kind == "articulation"}
            self._observe()
        return self._arts

    def _observe(self) -> None:
        self.extra = {prefix: art.observed() for prefix, art in self._arts.items()}  # (swapped whole)

    def articulation(self, request) -> Articulation:
        name = fields.string(request, "articulation")
        art = self.articulations().get(name)
        if art is None:
            raise ProtocolError("unknown_articulation", f"no articulation {name[:60]!r} (known: "
                                f"{', '.join(self._arts) or 'none'})")
        return art

    def handshake(self, entity) -> dict:
        art = self.articulations().get(entity.prefix)
        return art.handshake() if art is not None and entity.kind == "articulation" else {}

    def observed(self) -> dict:
        self.articulations()
        return self.extra

    def _apply_laws(self, arts) -> None:
        """Send the laws `arts` should run now where they differ from what runs."""
        model = self.d.model
        changes = {}
        for art in arts:
            law = art.wanted_law(model)
            if law is not None or art.law is not None:
                changes[art.entity.prefix] = law
                art.law = law
        if changes:
            self.d._send(self.d._runner(), commands.SetLaws(changes), "the controller")

    # ------------------------------------------------------------------ step

    def route(self, entity, block: dict, index: np.ndarray | None, values: np.ndarray | None):
        """A step's controls for `entity` (actuator ids `index`, `values`; None: none
        sent) -> (what is written to ctrl as sent, a plan for `commit`). Nothing
        changes here: the whole request is checked first."""
        mode = block.get("control_mode")
        if mode is not None:
            if not isinstance(mode, str) or mode.lower() not in CONTROL_MODES:
                raise ProtocolError("bad_value", f"{entity.prefix}.control_mode is 'ue_controller' or 'raw', "
                                    f"not {str(mode)[:40]!r}")
            mode = mode.lower()
        art = self.articulations().get(entity.prefix) if entity.kind == "articulation" else None
        if art is None:
            return index, values, None
        staged = art.staged
        if values is not None:
            if index is entity.actuators:  # (the whole ctrl vector: the common case)
                staged = values
            else:
                staged = np.zeros(len(entity.actuators)) if staged is None else staged.copy()
                staged[[art.where[int(a)] for a in index]] = values
        plan = (art, staged, mode)
        if art.source == "ui":
            return None, None, plan  # (Blender's controls drive the actuators)
        if art.enabled and (mode or art.default_mode) == "ue_controller" and values is not None:
            raw = ~np.isin(index, art.actuators)  # (an actuator the PD cannot drive takes the value as sent)
            return (index[raw], values[raw], plan) if raw.any() else (None, None, plan)
        return index, values, plan

    def commit(self, plans) -> dict | None:
        """Apply the plans of a checked step: the laws changed, for the step's command."""
        model = self.d.model
        running = self.d._runner().session.laws  # (a new simulation of the same model has none)
        changes = {}
        for art, staged, mode in plans:
            if staged is art.staged and art.runs(mode) == (art.law is not None) \
                    and running.get(art.entity.prefix) is art.law:
                continue  # (no new targets, and it runs or rests as it did: the law stays)
            art.staged = staged
            law = art.wanted_law(model, mode)
            if law is not None or art.law is not None:
                changes[art.entity.prefix] = law
                art.law = law
        return changes or None

    # ------------------------------------------------------------------- ops

    def op_configure_controller(self, request, session) -> dict:
        art = self.articulation(request)
        self.d.leases.check_control(request, session, [art.entity.prefix])  # (another owner's claim)
        if not art.has_controller:
            raise ProtocolError("no_controller", f"articulation {art.entity.prefix!r} has no actuator on a "
                                "hinge or slide joint: no PD controller")
        params = request.get("params")
        if not isinstance(params, dict):
            raise ProtocolError("controller_schema_violation", "'params' must be a map of "
                                f"{', '.join(SCHEMA)}")
        gains, defaults = self._checked(art, params)
        for key, changes in gains.items():
            for i, value in changes:
                art.gains[key][i] = value
        for key, value in defaults.items():
            art.defaults[key] = f32(value)
        art.gains_changed()
        if params:
            art.enabled = True  # (as URLab's ApplyConfig)
        self._apply_laws([art])
        return {"op": "configure_controller_ok", "articulation": art.entity.prefix, "kind": "pd",
                "enabled": art.enabled, "default_control_mode": art.default_mode, "params": art.params()}

    def _checked(self, art, params: dict) -> tuple[dict, dict]:
        """params -> ({key: [(binding, value)]}, {default key: value}), or
        controller_schema_violation naming what is wrong (nothing applied)."""
        def number(value, where: str) -> float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise ProtocolError("controller_schema_violation",
                                    f"{where} must be a finite number >= 0, not {value!r:.40}")
            return float(value)
        gains, defaults = {}, {}
        for key, value in params.items():
            if key not in SCHEMA:
                raise ProtocolError("controller_schema_violation", f"no controller param {str(key)[:40]!r} "
                                    f"(the PD controller's: {', '.join(SCHEMA)})")
            if key in DEFAULTS:
                defaults[key] = number(value, key)
                continue
            if not isinstance(value, dict):
                raise ProtocolError("controller_schema_violation",
                                    f"{key} is a map of actuator name: value, not {type(value).__name__}")
            changes = []
            for name, gain in value.items():
                if name not in art.names:
                    raise ProtocolError("controller_schema_violation", f"{key}: {art.entity.prefix} has no "
                                        f"PD actuator {str(name)[:60]!r} (its: {', '.join(art.names)})")
                changes.append((art.names.index(name), number(gain, f"{key}[{name!r}]")))
            gains[key] = changes
        return gains, defaults

    def op_set_twist(self, request, session) -> dict:
        art = self.articulation(request)
        self.d.leases.check_control(request, session, [art.entity.prefix])
        linear = self._axes(request, "linear")
        angular = self._axes(request, "angular")
        # (URLab's: linear x, y in m/s and angular z in rad/s; the other slots are ignored)
        art.twist = (f32(linear[0]) if len(linear) > 0 else 0.0, f32(linear[1]) if len(linear) > 1 else 0.0,
                     f32(angular[2]) if len(angular) > 2 else 0.0)
        self._observe()
        block = art.observed()["twist"]
        return {"op": "set_twist_ok", "articulation": art.entity.prefix, **block}

    @staticmethod
    def _axes(request: dict, key: str) -> list:
        value = request.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or len(value) > 3:
            raise ProtocolError("bad_value", f"'{key}' is a list of at most 3 numbers")
        return fields.as_vector(value, f"'{key}'").tolist()

    def op_set_control_source(self, request, session) -> dict:
        source = fields.string(request, "source").lower()
        if source not in SOURCES:
            raise ProtocolError("bad_value", f"unknown source {source[:40]!r}: 'zmq' (the bridge's controls) "
                                "or 'ui' (Blender's controls panel)")
        arts = self.articulations()
        reply = {"op": "set_control_source_ok", "source": source}
        if request.get("articulation") is None:
            changed = list(arts.values())
            self.d.leases.check_control(request, session, list(arts))  # (every articulation's, or none)
            self.source = source
            reply["scope"] = "global"
        else:
            art = self.articulation(request)
            changed = [art]
            self.d.leases.check_control(request, session, [art.entity.prefix])
            reply.update(scope="articulation", articulation=art.entity.prefix)
        for art in changed:
            art.source = source
        self._apply_laws(changed)
        return reply

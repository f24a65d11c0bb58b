"""Domain randomization: which model values vary from one environment to the
next, how they are drawn, and how one draw is written into an MjModel.

A `Randomization` is a list of `Entry`s (element, name, attribute, range,
distribution, mode). It is authored in Blender on each element's object and
saved next to the exported MJCF as `<model>.randomization.json`:

    {"format": "mjblend-randomization", "version": 1, "seed": 0,
     "entries": [{"element": "body", "name": "torso", "attribute": "mass",
                  "low": 0.8, "high": 1.2, "distribution": "uniform", "mode": "scale"}, ...]}

Values are drawn with numpy's Generator, entry by entry, one row per
environment, so the same seed and the same resets give the same environments
wherever they run (Blender, plain Python, Ray workers: only the process that
owns the Generator draws). Scale and offset modes work on the compiled model's
own value (the nominal), never on an earlier draw. After writing, the derived
constants MuJoCo's compiler would have computed from them (`mj_setConst`:
subtree masses, inverse weights, actuator acc0, ...) are computed again, so a
randomized model is the model MuJoCo would compile with those values.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field

import mujoco
import numpy as np

from ..engine.errors import MJBlendError

FORMAT = "mjblend-randomization"
VERSION = 1
FILE_SUFFIX = ".randomization.json"

DISTRIBUTIONS = ("uniform", "loguniform", "normal")
MODES = ("scale", "offset", "absolute")


class RandomizationError(MJBlendError, ValueError):
    """A randomization that cannot apply to this model, or a malformed file; the
    message names the entry."""


@dataclass(frozen=True)
class Attribute:
    """What one randomizable attribute writes: `width` components of the model
    field named by `field` at the element's row (see _element_writes for the
    attributes that write more than one field)."""
    element: str
    name: str
    label: str
    width: int
    modes: tuple[str, ...]
    description: str


ATTRIBUTES: dict[tuple[str, str], Attribute] = {(a.element, a.name): a for a in (
    Attribute("body", "mass", "Mass", 1, ("scale", "offset", "absolute"), "body_mass (kg)"),
    Attribute("body", "inertia", "Inertia scale", 1, ("scale",),
              "body_inertia, all three principal moments by one factor"),
    Attribute("body", "pos", "Position offset", 3, ("offset",),
              "body_pos relative to the parent (m); not for mocap bodies"),
    Attribute("geom", "friction", "Friction", 3, MODES, "geom_friction: sliding, torsional, rolling"),
    Attribute("geom", "size", "Size", 3, ("scale", "offset", "absolute"),
              "geom_size of sphere, capsule, cylinder, ellipsoid and box geoms (contact shape only: "
              "mass and inertia stay as compiled)"),
    Attribute("joint", "damping", "Damping", 1, MODES, "dof_damping of each of the joint's DoFs"),
    Attribute("joint", "armature", "Armature", 1, MODES, "dof_armature of each of the joint's DoFs"),
    Attribute("joint", "frictionloss", "Friction loss", 1, MODES, "dof_frictionloss of each DoF"),
    Attribute("joint", "stiffness", "Stiffness", 1, MODES, "jnt_stiffness"),
    Attribute("actuator", "kp", "Position gain kp", 1, MODES,
              "gainprm[0] and biasprm[1] = -kp of a position-type actuator"),
    Attribute("actuator", "kv", "Velocity gain kv", 1, MODES,
              "biasprm[2] = -kv (and gainprm[0] of a velocity actuator)"),
    Attribute("actuator", "gear", "Gear", 1, MODES, "gear[0] (the transmission's scale)"),
    Attribute("option", "gravity", "Gravity", 3, MODES, "opt.gravity (m/s^2)"),
)}
_OBJ = {"body": mujoco.mjtObj.mjOBJ_BODY, "geom": mujoco.mjtObj.mjOBJ_GEOM,
        "joint": mujoco.mjtObj.mjOBJ_JOINT, "actuator": mujoco.mjtObj.mjOBJ_ACTUATOR}
_SIZED_GEOMS = {int(mujoco.mjtGeom.mjGEOM_SPHERE), int(mujoco.mjtGeom.mjGEOM_CAPSULE),
                int(mujoco.mjtGeom.mjGEOM_CYLINDER), int(mujoco.mjtGeom.mjGEOM_ELLIPSOID),
                int(mujoco.mjtGeom.mjGEOM_BOX)}


def attributes_of(element: str) -> list[Attribute]:
    return [a for (kind, _), a in ATTRIBUTES.items() if kind == element]


@dataclass(frozen=True)
class Entry:
    """One randomized attribute of one element.

    low, high: the range every drawn value stays in (the factor in scale mode,
    the added amount in offset mode, the value itself in absolute mode).
    distribution: uniform; loguniform (low > 0); normal (mean the middle of
    the range, `std` or a quarter of the range, clipped to it).
    index: one component of a vector attribute (friction, size, pos,
    gravity), or None for all; `independent` draws each component its own
    value (otherwise one value serves all, e.g. one scale for a whole size).
    """
    element: str
    attribute: str
    low: float
    high: float
    name: str = ""
    distribution: str = "uniform"
    mode: str = "scale"
    index: int | None = None
    independent: bool = False
    std: float | None = None

    @property
    def label(self) -> str:
        where = "option" if self.element == "option" else f"{self.element} '{self.name}'"
        part = "" if self.index is None else f"[{self.index}]"
        return f"{where} {self.attribute}{part}"

    def check(self) -> None:
        """The entry on its own (the model is checked by `bind`)."""
        attribute = ATTRIBUTES.get((self.element, self.attribute))
        if attribute is None:
            known = ", ".join(a.name for a in attributes_of(self.element)) or "none"
            raise RandomizationError(f"{self.label}: {self.element} has no randomizable attribute "
                                     f"'{self.attribute}' (known: {known})")
        if self.element != "option" and not self.name:
            raise RandomizationError(f"{self.label}: the element has no MJCF name (name it to randomize it)")
        if self.distribution not in DISTRIBUTIONS:
            raise RandomizationError(f"{self.label}: unknown distribution '{self.distribution}' "
                                     f"(one of {', '.join(DISTRIBUTIONS)})")
        if self.mode not in attribute.modes:
            raise RandomizationError(f"{self.label}: mode '{self.mode}' is not offered for {self.attribute} "
                                     f"(one of {', '.join(attribute.modes)})")
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low > self.high:
            raise RandomizationError(f"{self.label}: the range [{self.low}, {self.high}] must be finite "
                                     "with low <= high")
        if self.distribution == "loguniform" and self.low <= 0:
            raise RandomizationError(f"{self.label}: a loguniform range must be positive")
        if self.std is not None and not (math.isfinite(self.std) and self.std > 0):
            raise RandomizationError(f"{self.label}: std must be a positive number")
        if self.index is not None and not 0 <= self.index < attribute.width:
            raise RandomizationError(f"{self.label}: index {self.index} is out of 0..{attribute.width - 1}")
        if self.mode == "scale" and self.low < 0:
            raise RandomizationError(f"{self.label}: a scale factor cannot be negative")

    def draw(self, rng: np.random.Generator, count: int, columns: int) -> np.ndarray:
        """(count, columns) values in [low, high]."""
        shape = (count, columns)
        if self.low == self.high:
            return np.full(shape, self.low)
        if self.distribution == "uniform":
            return rng.uniform(self.low, self.high, shape)
        if self.distribution == "loguniform":
            return np.exp(rng.uniform(math.log(self.low), math.log(self.high), shape))
        std = self.std if self.std is not None else (self.high - self.low) / 4
        return np.clip(rng.normal((self.low + self.high) / 2, std, shape), self.low, self.high)


@dataclass
class Randomization:
    entries: list[Entry] = field(default_factory=list)
    seed: int | None = None

    def __bool__(self) -> bool:
        return bool(self.entries)

    def to_dict(self) -> dict:
        rows = []
        for entry in self.entries:
            row = {k: v for k, v in asdict(entry).items() if v is not None}
            if not row.get("independent"):
                row.pop("independent", None)
            if entry.element == "option":
                row.pop("name", None)
            rows.append(row)
        out = {"format": FORMAT, "version": VERSION}
        if self.seed is not None:
            out["seed"] = self.seed
        out["entries"] = rows
        return out

    @classmethod
    def from_dict(cls, data: dict, where: str = "randomization") -> Randomization:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RandomizationError(f"{where}: not an MJBlend randomization (no \"format\": \"{FORMAT}\")")
        if data.get("version") != VERSION:
            raise RandomizationError(f"{where}: version {data.get('version')!r} is not {VERSION}; "
                                     "a newer MJBlend wrote it")
        seed = data.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
            raise RandomizationError(f"{where}: seed must be a non-negative integer")
        rows = data.get("entries")
        if not isinstance(rows, list):
            raise RandomizationError(f"{where}: \"entries\" must be a list")
        names = set(Entry.__dataclass_fields__)
        entries = []
        for number, row in enumerate(rows):
            if not isinstance(row, dict) or not {"element", "attribute", "low", "high"} <= row.keys():
                raise RandomizationError(f"{where}: entry {number} needs element, attribute, low and high")
            unknown = set(row) - names
            if unknown:
                raise RandomizationError(f"{where}: entry {number} has unknown keys {sorted(unknown)}")
            try:
                entry = Entry(**{**row, "low": float(row["low"]), "high": float(row["high"])})
                entry.check()
            except (TypeError, ValueError) as error:  # (RandomizationError is a ValueError)
                raise RandomizationError(f"{where}: entry {number}: {error}") from None
            entries.append(entry)
        return cls(entries, seed)

    def save(self, path: str) -> None:
        for entry in self.entries:
            entry.check()
        with open(path, "w", encoding="utf-8") as out:
            json.dump(self.to_dict(), out, indent=1)
            out.write("\n")

    @classmethod
    def load(cls, path: str) -> Randomization:
        try:
            with open(path, encoding="utf-8") as file:
                data = json.load(file)
        except json.JSONDecodeError as error:
            raise RandomizationError(f"{path}: not JSON ({error})") from None
        return cls.from_dict(data, path)

    def bind(self, model: mujoco.MjModel) -> Bound:
        return Bound(self, model)


def randomization_path(model_path: str) -> str:
    """Where the randomization of `robot.xml` (or .urdf, .mjb) lives: `robot.randomization.json`."""
    return os.path.splitext(model_path)[0] + FILE_SUFFIX


@dataclass
class _Write:
    """Where one entry's values go in one model field (flattened): the value at
    `flat[j]` comes from draw column `column[j]` and the compiled model's own value
    there (`nominal[j]`, sign-corrected: kp and kv are stored negated in biasprm)."""
    field: str             # MjModel attribute; "opt.gravity" for the option
    flat: np.ndarray
    column: np.ndarray
    sign: float = 1.0
    nominal: np.ndarray | None = None

    def values(self, mode: str, draws: np.ndarray) -> np.ndarray:
        """(n, len(flat)) values to store, from (n, columns) draws of the entry."""
        drawn = draws[:, self.column]
        if mode == "scale":
            return self.nominal * drawn * self.sign
        if mode == "offset":
            return (self.nominal + drawn) * self.sign
        return drawn * self.sign


class Bound:
    """A randomization resolved against one compiled model: element ids, the
    nominal values, the fields each entry writes. `draw(rng, n)` gives n
    environments' draws (n, ncolumns); `apply(model, row, data)` writes one
    environment's row into a copy of the model."""

    def __init__(self, randomization: Randomization, model: mujoco.MjModel):
        self.entries = list(randomization.entries)
        self.slices: list[slice] = []   # each entry's columns in a row of draws
        self.writes: list[list[_Write]] = []
        self.sized_geoms: list[int] = []  # geoms whose size varies: their rbound / aabb follow
        start = 0
        for entry in self.entries:
            entry.check()
            index = -1 if entry.element == "option" else self._id(entry, model)
            writes, ncomponents = _element_writes(entry, model, index)
            for write in writes:
                write.nominal = model_field(model, write.field)[write.flat] * write.sign
            if entry.element == "geom" and entry.attribute == "size":
                self.sized_geoms.append(index)
            columns = ncomponents if entry.independent else 1
            if not entry.independent:
                for write in writes:
                    write.column = np.zeros_like(write.column)
            self.writes.append(writes)
            self.slices.append(slice(start, start + columns))
            start += columns
        self.ncolumns = start

    def _id(self, entry, model) -> int:
        index = mujoco.mj_name2id(model, _OBJ[entry.element], entry.name)
        if index < 0:
            raise RandomizationError(f"{entry.label}: the model has no {entry.element} named '{entry.name}'")
        return index

    def draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """(count, ncolumns) draws, entry after entry in the order the file lists them."""
        out = np.empty((count, self.ncolumns))
        for entry, where in zip(self.entries, self.slices, strict=True):
            out[:, where] = entry.draw(rng, count, where.stop - where.start)
        return out

    def apply(self, model: mujoco.MjModel, draws_row: np.ndarray, data: mujoco.MjData) -> None:
        """Writes one environment's draws into `model` (a copy of the bound model), then
        the constants MuJoCo derives from them (`data`: scratch MjData of the model).
        The reference a swapped-in model (parameters.Parameters) is checked against."""
        row = np.asarray(draws_row, dtype=float)[None, :]
        for entry, where, writes in zip(self.entries, self.slices, self.writes, strict=True):
            for write in writes:
                model_field(model, write.field)[write.flat] = write.values(entry.mode, row[:, where])[0]
        self.derive(model, data)

    def derive(self, model, data) -> None:
        """The constants MuJoCo's compiler derives from the randomized values: geom
        bounds, mj_setConst's qpos0 constants, and the model's statistics."""
        for geom in self.sized_geoms:
            fit_bounds(model, geom)
        mujoco.mj_setConst(model, data)
        compiled_statistics(model)


def compiled_statistics(model) -> None:
    """stat.meaninertia and stat.meanmass as MuJoCo's compiler computes them for
    `model`'s values (mj_setConst leaves them as they were): its sums, in its order,
    of the diagonal of M at qpos0 (mj_setConst's dof_M0; equal to the compiled
    value on every corpus model) and of the bodies' masses. They do not enter
    mj_step in MuJoCo 4 (a test pins that), so a pool's batch runs with the
    nominal ones; they matter to whoever takes an environment's model (the mouse
    spring, a saved .mjb)."""
    if model.nv:
        model.stat.meaninertia = _sum_in_order(model.dof_M0) / model.nv
    if model.nbody > 1:
        model.stat.meanmass = _sum_in_order(model.body_mass[1:]) / (model.nbody - 1)


def _sum_in_order(values) -> float:
    total = 0.0
    for value in values.tolist():
        total += value
    return total


def model_field(model, name: str) -> np.ndarray:
    """The flat view of one field a randomization writes ("opt.gravity" for the option)."""
    if name == "opt.gravity":
        return model.opt.gravity
    return getattr(model, name).reshape(-1)


def _element_writes(entry: Entry, model, index: int) -> tuple[list[_Write], int]:
    """The field writes of one entry and how many components it has (the draw
    columns of an `independent` entry)."""
    attribute = ATTRIBUTES[(entry.element, entry.attribute)]
    comps = np.arange(attribute.width) if entry.index is None else np.array([entry.index])
    kind, attr = entry.element, entry.attribute

    def one(name, flat, column=None):
        flat = np.atleast_1d(flat)
        return _Write(name, flat, np.zeros(len(flat), int) if column is None else column)

    if kind == "option":
        return [_Write("opt.gravity", comps, np.arange(len(comps)))], len(comps)
    if kind == "body":
        if attr == "mass":
            return [one("body_mass", index)], 1
        if attr == "inertia":
            return [one("body_inertia", index * 3 + np.arange(3))], 1
        if model.body_mocapid[index] >= 0:
            raise RandomizationError(f"{entry.label}: a mocap body's position is data (mocap_pos), "
                                     "not the model's")
        return [_Write("body_pos", index * 3 + comps, np.arange(len(comps)))], len(comps)
    if kind == "geom":
        if attr == "friction":
            return [_Write("geom_friction", index * 3 + comps, np.arange(len(comps)))], len(comps)
        geom_type = int(model.geom_type[index])
        if geom_type not in _SIZED_GEOMS:
            raise RandomizationError(f"{entry.label}: only sphere, capsule, cylinder, ellipsoid and box "
                                     "sizes can vary (a plane, mesh, hfield or sdf keeps its shape)")
        used = _size_components(geom_type)
        if entry.index is not None and entry.index >= used:
            raise RandomizationError(f"{entry.label}: this geom type uses {used} size component(s)")
        comps = comps[comps < used]
        return [_Write("geom_size", index * 3 + comps, np.arange(len(comps)))], len(comps)
    if kind == "joint":
        if attr == "stiffness":
            return [one("jnt_stiffness", index)], 1
        start = model.jnt_dofadr[index]
        return [one(f"dof_{attr}", start + np.arange(_joint_dofs(model, index)))], 1
    # actuator
    nprm = model.actuator_gainprm.shape[1]
    affine = int(model.actuator_biastype[index]) == int(mujoco.mjtBias.mjBIAS_AFFINE)
    gain, bias = model.actuator_gainprm[index], model.actuator_biasprm[index]
    if attr == "gear":
        return [one("actuator_gear", index * 6)], 1
    if attr == "kp":
        if not (affine and gain[0] == -bias[1] and gain[0] != 0):
            raise RandomizationError(f"{entry.label}: kp needs a position-type actuator "
                                     "(affine bias with biasprm[1] = -gainprm[0])")
        minus = one("actuator_biasprm", index * nprm + 1)
        minus.sign = -1.0
        return [one("actuator_gainprm", index * nprm), minus], 1
    if not (affine and bias[2] != 0):
        raise RandomizationError(f"{entry.label}: kv needs an actuator with velocity feedback "
                                 "(affine bias with biasprm[2] = -kv)")
    minus = one("actuator_biasprm", index * nprm + 2)
    minus.sign = -1.0
    writes = [minus]
    if bias[1] == 0 and gain[0] == -bias[2]:  # a velocity actuator: its gain is kv too
        writes.append(one("actuator_gainprm", index * nprm))
    return writes, 1


def _joint_dofs(model, joint: int) -> int:
    kind = int(model.jnt_type[joint])
    return {int(mujoco.mjtJoint.mjJNT_FREE): 6, int(mujoco.mjtJoint.mjJNT_BALL): 3}.get(kind, 1)


def _size_components(geom_type: int) -> int:
    if geom_type == int(mujoco.mjtGeom.mjGEOM_SPHERE):
        return 1
    if geom_type in (int(mujoco.mjtGeom.mjGEOM_CAPSULE), int(mujoco.mjtGeom.mjGEOM_CYLINDER)):
        return 2
    return 3


def fit_bounds(model, geom: int) -> None:
    """The bounding sphere and box MuJoCo's compiler gives a primitive of this size
    (the broad and mid phases cull with them: a grown geom must not be culled)."""
    kind = int(model.geom_type[geom])
    s = model.geom_size[geom]
    if kind == int(mujoco.mjtGeom.mjGEOM_SPHERE):
        half, rbound = (s[0], s[0], s[0]), s[0]
    elif kind == int(mujoco.mjtGeom.mjGEOM_CAPSULE):
        half, rbound = (s[0], s[0], s[0] + s[1]), s[0] + s[1]
    elif kind == int(mujoco.mjtGeom.mjGEOM_CYLINDER):
        half, rbound = (s[0], s[0], s[1]), math.hypot(s[0], s[1])
    elif kind == int(mujoco.mjtGeom.mjGEOM_ELLIPSOID):
        half, rbound = tuple(s), max(s)
    else:  # box
        half, rbound = tuple(s), math.sqrt(s[0] ** 2 + s[1] ** 2 + s[2] ** 2)
    model.geom_rbound[geom] = rbound
    model.geom_aabb[geom] = (0.0, 0.0, 0.0, *half)

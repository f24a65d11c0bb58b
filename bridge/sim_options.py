"""URLab's `set_sim_options`: which mjOption fields a client may set, checked
whole before any is applied, and the options echoed back."""

from __future__ import annotations

import mujoco
import numpy as np

from . import fields
from .wire import ProtocolError

SIM_OPTIONS = {  # set_sim_options field -> (mjOption attribute, width)
    "timestep": ("timestep", 1), "gravity": ("gravity", 3), "wind": ("wind", 3), "magnetic": ("magnetic", 3),
    "density": ("density", 1), "viscosity": ("viscosity", 1), "impratio": ("impratio", 1),
    "tolerance": ("tolerance", 1), "ls_tolerance": ("ls_tolerance", 1),
    "noslip_tolerance": ("noslip_tolerance", 1), "ccd_tolerance": ("ccd_tolerance", 1),
    "sleep_tolerance": ("sleep_tolerance", 1),
}
INT_OPTIONS = {"iterations": "iterations", "ls_iterations": "ls_iterations",
               "noslip_iterations": "noslip_iterations", "ccd_iterations": "ccd_iterations",
               "disableflags": "disableflags", "enableflags": "enableflags"}
ENUM_OPTIONS = {
    "integrator": ("integrator", {"euler": 0, "rk4": 1, "implicit": 2, "implicitfast": 3}),
    "cone": ("cone", {"pyramidal": 0, "elliptic": 1}),
    "solver": ("solver", {"pgs": 0, "cg": 1, "newton": 2}),
}
FLAGS = {  # set_sim_options field -> (mjOption flags attribute, bit, whether the bit set means "on")
    "enable_multiccd": ("disableflags", int(mujoco.mjtDisableBit.mjDSBL_MULTICCD), False),
    "enable_sleep": ("enableflags", int(mujoco.mjtEnableBit.mjENBL_SLEEP), True),
}
NOT_SERVED = ("num_worker_threads",)  # (URLab's own thread pool: MJBlend steps on one thread)


def parse(options: dict) -> list[tuple]:
    """(mjOption attribute, value), or (flag field, on) for FLAGS, for each
    option of a request; a ProtocolError
    for any unknown, unserved or ill-typed one (then nothing is applied)."""
    changes = []
    for key, value in options.items():
        wrapped = {"op": "set_sim_options", key: value}
        if key in SIM_OPTIONS:
            attribute, width = SIM_OPTIONS[key]
            number = fields.vector(wrapped, key, 3) if width == 3 else fields.number(wrapped, key)
            if key == "timestep" and not number > 0:
                raise ProtocolError("bad_value", f"timestep must be positive, not {number}")
            changes.append((attribute, number))
        elif key in INT_OPTIONS:
            changes.append((INT_OPTIONS[key], fields.integer(wrapped, key, low=0)))
        elif key in ENUM_OPTIONS:
            attribute, words = ENUM_OPTIONS[key]
            word = fields.string(wrapped, key)
            if word not in words:
                raise ProtocolError("bad_value", f"{key} must be one of {', '.join(words)}, not {word!r:.40}")
            changes.append((attribute, words[word]))
        elif key in FLAGS:
            changes.append((key, fields.boolean(wrapped, key)))
        elif key in NOT_SERVED:
            raise ProtocolError("unsupported", f"option {key!r} is not served by MJBlend")
        else:
            raise ProtocolError("bad_value", f"unknown option {key!r}")
    return changes


def apply(opt, changes: list[tuple]) -> None:
    """(On the thread that owns the simulation.) The named flags after the raw
    masks, as URLab: enable_sleep / enable_multiccd win over disableflags /
    enableflags sent with them."""
    for attribute, value in changes:
        if attribute not in FLAGS:
            setattr(opt, attribute, value)
    for key, on in changes:
        if key in FLAGS:
            attribute, bit, set_means_on = FLAGS[key]
            flags = int(getattr(opt, attribute))
            setattr(opt, attribute, flags | bit if on == set_means_on else flags & ~bit)


def echo(opt) -> dict:
    """The options as URLab's reply carries them."""
    out = {key: (np.array(getattr(opt, attribute)) if width == 3 else float(getattr(opt, attribute)))
           for key, (attribute, width) in SIM_OPTIONS.items()}
    out.update({key: int(getattr(opt, attribute)) for key, attribute in INT_OPTIONS.items()})
    for key, (attribute, words) in ENUM_OPTIONS.items():
        out[key] = {v: k for k, v in words.items()}.get(int(getattr(opt, attribute)), "")
    for key, (attribute, bit, set_means_on) in FLAGS.items():
        out[key] = bool(int(getattr(opt, attribute)) & bit) == set_means_on
    # URLab's thread pool, echoed as URLab does: none here (one physics thread; a client's
    # num_worker_threads is refused), so URLab's SimOptions reads 0, not a missing value
    out["num_worker_threads"] = out["max_worker_threads"] = 0
    return out

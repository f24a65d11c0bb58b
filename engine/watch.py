"""simulate's Watch: any float field of MjData, by name and flat index, read live.

simulate (`UpdateWatch`) walks MJDATA_POINTERS for an mjtNum array of that name and
prints `d->NAME[index]` with "%g" when 0 <= index < its size, else "invalid index";
no such array: "invalid field". Here the fields are the MjData attributes that are
float64 arrays (the Python binding's view of those rows, plus `energy` and
`solver_fwdinv`); arrays of the constraints (efc_*) are sized by nefc now, as the
binding gives them. The runner reads the request with each snapshot it publishes
(`read`, on its own thread); views show the values the snapshot carries.

No bpy.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import mujoco
import numpy as np

INVALID_FIELD, INVALID_INDEX = "invalid field", "invalid index"


@functools.cache
def fields() -> frozenset:
    """The names of MjData's float arrays (found once on a throwaway MjData)."""
    data = mujoco.MjData(mujoco.MjModel.from_xml_string("<mujoco/>"))
    out = set()
    for name in dir(data):
        if name.startswith("_"):
            continue
        try:
            value = getattr(data, name)
        except Exception:  # noqa: BLE001,S112 (an attribute the binding cannot give: not a field)
            continue
        if isinstance(value, np.ndarray) and value.dtype == np.float64:
            out.add(name)
    return frozenset(out)


@dataclass(frozen=True)
class Request:
    """The watched rows: ((field, index), ...)."""

    items: tuple = ()


def read_one(data, field: str, index: int) -> float | str:
    """`data.<field>` flattened, at `index` (a Python float: the same bits), or the
    error text simulate shows."""
    if field not in fields():
        return INVALID_FIELD
    values = getattr(data, field)
    if not 0 <= index < values.size:
        return INVALID_INDEX
    return float(values.reshape(-1)[index])


def read(data, request: Request) -> tuple:
    """One value (float) or error text (str) per watched row (the runner's thread)."""
    return tuple(read_one(data, field, int(index)) for field, index in request.items)


def text(value: float | str) -> str:
    """A watched value as simulate prints it ("%g"), or the error text."""
    return value if isinstance(value, str) else "%g" % value

"""Size MuJoCo's arena (`<size memory>`) from the model when MuJoCo's own estimate is too small.

When a model does not set `<size memory>`, MuJoCo's compiler estimates the
arena (the stack and the contact / constraint buffers) from the model's sizes.
The estimate misses what the collision broad phase asks for with many bodies:
2000 static boxes compile and then fail their first `mj_forward` with
"mj_stackAlloc: out of memory ... (increase <size memory="..."/>)". MuJoCo's
own tools would stop there; MJBlend compiles again with twice what the
forward pass asked for (a step needs what the forward pass does, plus the
contacts it finds) and says so. The spec keeps the authored value: what is
exported is what the user wrote.

No bpy, and nothing of the package beyond engine/: the importer's probe
process imports the engine folder by path (see importer/mujoco_load.py).
"""

from __future__ import annotations

import re

import mujoco

from .errors import MJBlendError

MAX_GROWTHS = 8  # each at least doubles the arena: 256x MuJoCo's estimate at most
_OVERFLOW = re.compile(r"increase <size memory")
_REQUESTED = re.compile(r"requested = (\d+)")


class ArenaTooSmall(MJBlendError):
    """MuJoCo's arena cannot be made large enough (the message says how large it got)."""


def overflowed(error: BaseException) -> bool:
    """Whether `error` is MuJoCo running out of arena (and not a real failure of the model)."""
    return bool(_OVERFLOW.search(str(error)))


def compiled_with_room(spec: mujoco.MjSpec, compile=None):
    """(model, data after one forward pass at qpos0, arena bytes added or 0).

    `compile(spec)` compiles (spec.compile by default; callers map its errors);
    the spec's own `memory` is put back before returning. Raises ArenaTooSmall
    when even MAX_GROWTHS doublings are not enough, and MuJoCo's other errors as
    they are."""
    compile = compile or (lambda s: s.compile())
    authored = spec.memory
    model = compile(spec)
    first = model.narena
    try:
        for _attempt in range(MAX_GROWTHS + 1):
            try:
                data = mujoco.MjData(model)
                mujoco.mj_forward(model, data)
                return model, data, model.narena - first
            except mujoco.FatalError as error:
                if not overflowed(error):
                    raise
                requested = _REQUESTED.search(str(error))
                asked = int(requested.group(1)) if requested else 0
                spec.memory = 2 * (model.narena + asked)
                model = compile(spec)
        raise ArenaTooSmall(f"MuJoCo still runs out of memory with a {model.narena / 2**20:.0f} MB arena")
    finally:
        spec.memory = authored


def grown_message(added: int, model) -> str:
    """What the user is told when the arena was grown."""
    return (f"MuJoCo's memory estimate for this model was too small for its first step; "
            f"MJBlend runs it with a {model.narena / 2**20:.0f} MB arena ({added / 2**20:.0f} MB more). "
            f"The model's own <size memory> is kept as written")

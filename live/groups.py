"""Group switches turned while the scene's objects show through an instancer (a
simulation's Fast display, the randomization preview): the instancer hides its
sources and draws only the objects that were shown when it was made, so it is
taken away while sync/groups.py shows and hides objects, and made again for
the objects shown after. A hidden group's objects are then neither drawn,
rendered nor picked; a group switched on shows at once, moving with its body.
"""

from __future__ import annotations

import contextlib

from ..sync import groups
from . import randomization_preview, scene_session


@contextlib.contextmanager
def regrouping(scene):
    live = scene_session.simulation(scene)
    preview = randomization_preview.get(scene)
    drawn = preview is not None and preview.instancer is not None
    if live is not None:
        live.display.clear()  # (the sources shown as they were: the switches change those)
    if drawn:
        preview.suspend()
    try:
        yield
    finally:
        if live is not None and scene_session.is_current(live):
            live.regroup()
            live.show(force=True)  # (playing in Fast: a new instancer of what is shown now)
        if drawn and randomization_preview.is_current(preview):
            preview.regroup()
            preview.resume()


def apply(scene, kind: str) -> int:
    """sync.groups.apply, with the scene's instancers taken away around it."""
    return groups.apply(scene, kind, around=regrouping)

"""Which datablocks changed, for each consumer since it last looked.

Every generated MuJoCo property reports its edits here (an `update` callback),
and app/handlers.py reports transform and geometry edits from the depsgraph.
Each consumer (the scan's cache, a running simulation) holds its own `Cursor`
and reads what changed since its last read: no consumer takes edits away from
another, so the order they look in does not matter. Kept outside bpy data: it
is bookkeeping of this Blender session only.
"""

from __future__ import annotations

import contextlib
import weakref

from .schema import GROUP_PREFIX, VISUAL_SETTINGS


class Cursor:
    """One consumer's unread edits: `touched` (as_pointer() of IDs whose MuJoCo
    properties changed) and `moved` (IDs the depsgraph says moved or changed shape,
    maybe only because a parent moved: the reader checks their own transform)."""

    def __init__(self):
        key = id(self)
        _TOUCHED[key], _MOVED[key], _VISUAL[key] = set(), set(), set()
        weakref.finalize(self, _forget, key)  # a consumer that is gone stops collecting

    def read(self) -> tuple[set[int], set[int]]:
        """(touched, moved) since the last read; the cursor moves past them."""
        touched, visual, moved = self.read_visual_apart()
        return touched | visual, moved

    def read_visual_apart(self) -> tuple[set[int], set[int], set[int]]:
        """(touched, touched in their `<visual>` settings only, moved) since the last
        read: a running simulation copies visual-only edits without a recompile."""
        key = id(self)
        touched, visual = _TOUCHED[key], _VISUAL[key]
        out = (touched, visual - touched, _MOVED[key])
        _TOUCHED[key], _MOVED[key], _VISUAL[key] = set(), set(), set()
        return out


# Each live cursor's unread sets, by id(cursor). Plain dicts, not a WeakSet of cursors:
# `moved` runs for every object the depsgraph reports, every frame of a simulation
# (measured with two cursors: 1.3 us a call iterating a WeakSet, 0.25 us with these dicts).
_TOUCHED: dict[int, set[int]] = {}
_MOVED: dict[int, set[int]] = {}
_VISUAL: dict[int, set[int]] = {}  # (IDs whose edited properties were `<visual>` settings)
# the property groups of a model root's `<visual>` (MuJoCo's mjVisual: drawing only, never physics)
VISUAL_GROUPS = frozenset(GROUP_PREFIX + kind for kind in VISUAL_SETTINGS)


def _forget(key) -> None:
    _TOUCHED.pop(key, None)
    _MOVED.pop(key, None)
    _VISUAL.pop(key, None)


def touch(id_block, visual: bool = False) -> None:
    """`id_block`'s MuJoCo properties changed (`visual`: only its `<visual>` settings)."""
    if id_block is not None:
        pointer = id_block.as_pointer()
        for unread in (_VISUAL if visual else _TOUCHED).values():
            unread.add(pointer)


def moved(id_block) -> None:
    if id_block is not None:
        pointer = id_block.as_pointer()
        for unread in _MOVED.values():
            unread.add(pointer)


_after_edit = None  # (group, attribute name) -> None: authoring/edits.py, connected at registration


def connect_edits(function) -> None:
    """`function(group, attribute name)` runs after every user edit of a MuJoCo property
    from now on (None: nothing does). authoring/edits.after_edit says what follows an edit."""
    global _after_edit
    _after_edit = function


def edited(group, attr: str) -> None:
    """(components/properties.py) A user edited `attr` of `group`."""
    if _after_edit is not None:
        _after_edit(group, attr)

_quiet = 0  # > 0 while a bulk writer (the importer) fills properties


@contextlib.contextmanager
def quiet():
    """Bulk writes that are not user edits: no own-attribute or change tracking."""
    global _quiet
    _quiet += 1
    try:
        yield
    finally:
        _quiet -= 1


def is_quiet() -> bool:
    return _quiet > 0


def property_updated(self, _context) -> None:
    """`update` callback of every generated property."""
    if not _quiet:
        touch(self.id_data, visual=self.bl_rna.identifier in VISUAL_GROUPS)

"""Which datablocks changed since the last scan (so a rescan touches only those).

Every generated MuJoCo property reports its edits here (an `update` callback),
and addon/handlers.py reports transform and geometry edits from the depsgraph.
Kept outside bpy data: it is bookkeeping of this Blender session only.
"""

from __future__ import annotations

import contextlib

_touched: set[int] = set()  # as_pointer() of IDs whose MuJoCo properties changed
_moved: set[int] = set()  # IDs the depsgraph says moved or changed shape (maybe only
                          # because a parent moved: the scan checks their own transform)


def touch(id_block) -> None:
    if id_block is not None:
        _touched.add(id_block.as_pointer())


def moved(id_block) -> None:
    if id_block is not None:
        _moved.add(id_block.as_pointer())


def take() -> tuple[set[int], set[int]]:
    """(edited, moved) IDs since the last call, and forget them."""
    out = (set(_touched), set(_moved))
    _touched.clear()
    _moved.clear()
    return out


def give_back(touched: set[int], moved: set[int]) -> None:
    """Undo a `take` (a look at the changes that decided to leave them for the scan)."""
    _touched.update(touched)
    _moved.update(moved)


# Called as hook(group, attribute name) after every user edit of a MuJoCo property
# (the add-on registers what must follow an edit, e.g. rebuilding a geom's display).
EDIT_HOOKS: list = []

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
        touch(self.id_data)

"""Bring the stored data of model roots saved by an older MJBlend up to today's format."""

from __future__ import annotations

from typing import Callable

from . import format1, inherit
from .stored_keys import FORMAT, FORMAT_KEY

# format n -> the step that turns a model root stored in format n into n + 1.
MIGRATIONS: dict[int, Callable] = {
    1: format1.migrate_root,  # every group stores only its own attributes, floats as doubles
}


def format_of(root) -> int:
    return int(root.mujoco.model.get(FORMAT_KEY, 1))


def stamp(root) -> None:
    """Record that `root` is stored in today's format (done before every save)."""
    root.mujoco.model[FORMAT_KEY] = FORMAT


def migrate(roots) -> list[str]:
    """Upgrade every root to FORMAT, step by step; messages for roots that cannot be."""
    problems = []
    for root in roots:
        version = format_of(root)
        if version > FORMAT:
            problems.append(f"{root.name}: saved by a newer MJBlend (storage format {version}, this one "
                            f"reads up to {FORMAT}); update MJBlend before editing it")
            continue
        if version < FORMAT:
            if getattr(root, "library", None) is not None:
                problems.append(f"{root.name}: linked from {root.library.filepath}, saved by an older "
                                "MJBlend: open and save that file to bring it up to date")
                continue
            for step in range(version, FORMAT):
                MIGRATIONS[step](root)
            stamp(root)
    inherit.forget()
    return problems


def migrate_loose(data) -> int:
    """Format-1 groups outside every model root (an object made an element by hand, an
    asset no model lists): brought to format 2 as well (format1.migrate_data finds
    them by their format-1 keys); the number of groups rewritten."""
    count = format1.migrate_data(data)
    inherit.forget()
    return count

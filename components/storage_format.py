"""Bring the stored data of model roots saved by an older MJBlend up to today's format."""

from __future__ import annotations

from typing import Callable

from .stored_keys import FORMAT, FORMAT_KEY

# format n -> the step that turns a model root stored in format n into n + 1.
# (None yet: format 1 is the first.)
MIGRATIONS: dict[int, Callable] = {}


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
            for step in range(version, FORMAT):
                MIGRATIONS[step](root)
            stamp(root)
    return problems

"""Unique names: the one "first free name" rule every stage uses."""

from __future__ import annotations

from typing import Callable, Container


def first_free(taken: Container[str], candidate: Callable[[int], str]) -> str:
    """The first of candidate(1), candidate(2), ... that is not in `taken`."""
    n = 1
    while (name := candidate(n)) in taken:
        n += 1
    return name


def numbered(stem: str, separator: str = "") -> Callable[[int], str]:
    """`stem` itself first, then stem + separator + 2, 3, ... (as "arm", "arm_2", ...)."""
    return lambda n: stem if n == 1 else f"{stem}{separator}{n}"

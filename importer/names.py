"""Blender names for imported elements.

MJCF names are unique per kind; Blender object names are unique per file. An
element keeps its MJCF name in `mujoco.name` (empty when it had none, so
export does not invent names); the Blender name follows it, gets the kind
appended where another object already has that name ("torso (geom)"), and
unnamed elements get a readable name from their kind and parent.
"""

from __future__ import annotations


def object_name(existing, mjcf_name: str, kind: str, parent_label: str = "") -> str:
    """A name for a new object; `existing` answers `name in existing`."""
    if mjcf_name:
        if mjcf_name not in existing:
            return mjcf_name
        return f"{mjcf_name} ({kind})"  # Blender adds .001 if even this is taken
    return f"{parent_label} {kind}".strip() if parent_label else kind

"""The add-on's preferences as one settings value (ui/preferences.py draws and stores them).

Operators read them once, at their boundary (`settings(context)`), and pass the
value down, as Blender's FBX add-on passes its settings tuple through its
stages: nothing below the operators reads `bpy.context` for a preference.
Scripts and tests that pass none get `DEFAULTS`.
"""

from __future__ import annotations

import dataclasses

ADDON = __package__.rpartition(".")[0]  # the add-on's own module, however it is installed


@dataclasses.dataclass(frozen=True)
class Settings:
    spring_stiffness: float = 1.0
    history_seconds: float = 10.0
    history_megabytes: int = 256
    physics_thread: bool = True
    step_limit: int = 10_000_000
    load_memory_gigabytes: float = 0.0
    load_seconds: float = 300.0
    recording_megabytes: int = 2048
    bridge_address: str = "127.0.0.1"
    bridge_request_port: int = 5559
    bridge_state_port: int = 5555
    bridge_transport: str = "ZMQ"


DEFAULTS = Settings()


def settings(context) -> Settings:
    """The preferences now (the defaults when the add-on was loaded without them)."""
    addon = context.preferences.addons.get(ADDON)
    stored = addon.preferences if addon is not None and addon.preferences else None
    if stored is None:
        return DEFAULTS
    return Settings(**{field.name: getattr(stored, field.name) for field in dataclasses.fields(Settings)})

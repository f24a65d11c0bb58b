"""The add-on's preferences as any stage reads them (ui/preferences.py draws and stores them)."""

from __future__ import annotations

from types import SimpleNamespace

ADDON = __package__.rpartition(".")[0]  # the add-on's own module, however it is installed

DEFAULTS = SimpleNamespace(spring_stiffness=1.0, history_seconds=10.0, history_megabytes=256,
                           physics_thread=True, step_limit=10_000_000, load_memory_gigabytes=0.0,
                           load_seconds=300.0, recording_megabytes=2048,
                           bridge_address="127.0.0.1", bridge_request_port=5559, bridge_state_port=5555,
                           bridge_transport="ZMQ")


def get(context):
    """The preferences (the defaults when the add-on was loaded without them)."""
    addon = context.preferences.addons.get(ADDON)
    return addon.preferences if addon is not None and addon.preferences else DEFAULTS

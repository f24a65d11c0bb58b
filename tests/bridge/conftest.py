"""Fixtures of the bpy-free bridge tier: servers stopped after each test with
nothing left running."""

import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from bridge_fixtures import Served  # noqa: E402


@pytest.fixture
def serve():
    """serve(path) -> Served; every server is stopped afterwards, and no thread of
    it (physics, bridge, stream) may outlive it."""
    before = {t.ident for t in threading.enumerate()}
    made = []

    def start(path, **options):
        served = Served(path, **options)
        made.append(served)
        return served
    yield start
    for served in made:
        served.close()
    left = [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert not left, f"threads left running: {left}"

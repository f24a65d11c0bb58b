"""What the bpy-free bridge tests share: a model served by a real Bridge (real ZMQ
sockets, the real physics thread) on free ports, and the models they serve.
(A module of its own, not conftest: several test folders have a conftest.)"""

import os
import sys

import pytest
from helpers import free_port  # noqa: F401  (the tests import it from here)

sys.path.insert(0, os.path.dirname(__file__))
import addon_loader  # noqa: E402,F401  (makes the add-on importable as `mjblend`)

from mjblend.bridge.host import ModelHost  # noqa: E402
from mjblend.bridge.server import Bridge  # noqa: E402
from wire_client import StateSubscriber, WireClient  # noqa: E402

CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(addon_loader.ROOT, "..", "shared", "corpus"))
HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
DESK_TOYS = os.path.join(addon_loader.ROOT, "examples", "desk_toys.xml")



def humanoid_path() -> str:
    if not os.path.exists(HUMANOID):
        pytest.skip("no corpus (../shared/corpus)")
    return HUMANOID


class Served:
    """A Bridge serving one file, and clients made for it (closed at the end)."""

    def __init__(self, path, host_options=None, **bridge_options):
        self.host = ModelHost.from_file(path, **(host_options or {}))
        self.request_port, self.state_port = free_port(), free_port()
        self.bridge = Bridge(self.host, request_port=self.request_port, state_port=self.state_port,
                             **bridge_options)
        self._clients = []
        try:
            self.bridge.start()
        except BaseException:  # (the host's physics thread must not outlive a failed start)
            assert self.host.close()
            raise

    def client(self, hello=True, timeout_ms=10000, **fields) -> WireClient:
        client = WireClient(self.request_port, timeout_ms=timeout_ms)
        self._clients.append(client)
        if hello:
            reply = client.hello(**fields)
            assert reply["op"] == "hello_ok", reply
        return client

    def subscriber(self) -> StateSubscriber:
        sub = StateSubscriber(self.state_port)
        self._clients.append(sub)
        return sub

    def close(self):
        for client in self._clients:
            client.close()
        self.bridge.stop()
        assert self.host.close()

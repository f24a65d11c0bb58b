"""Cameras over the bridge from a served Blender scene (bpy module, real sockets, EGL):
the handshake lists each entity's cameras as URLab does, and a streamed frame is
mujoco.Renderer's of the served model in the stepped state, bit for bit."""

import os
import sys
import time

import mujoco
import numpy as np
import pytest
from addon_loader import ROOT
from helpers import CORPUS, free_port

sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))
from camera_client import ZmqCamera, decode  # noqa: E402
from wire_client import WireClient  # noqa: E402

from mjblend.importer import build  # noqa: E402
from mjblend.live import bridge_host, scene_session  # noqa: E402

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")

pytestmark = pytest.mark.skipif(not os.path.exists(HUMANOID), reason=f"no corpus at {CORPUS}")


@pytest.fixture
def served(clean_scene):
    build.import_file(HUMANOID, clean_scene)
    request_port = free_port()
    bridge_host.start(clean_scene, request_port=request_port, state_port=free_port(), camera_port=free_port())
    client = WireClient(request_port)
    yield client
    client.close()
    bridge_host.stop()
    scene_session.end_all()


def test_a_served_scene_lists_its_cameras_and_streams_one(served):
    hello = served.hello()
    assert hello["op"] == "hello_ok", hello
    model = mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": hello["mjb"]})
    (entity,) = [e for e in hello["entities"] if e["kind"] == "articulation"]
    prefix, topics = entity["prefix"], entity["camera_topics"]
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)]
    assert sorted(topics) == sorted(names) and len(names) == 3
    assert all(n.startswith(prefix + "_") for n in names)
    name = names[0]
    assert topics[name]["mode"] == "real" and topics[name]["resolution"] == [640, 480]
    assert topics[name]["zmq_topic"] == name

    assert served.call("set_mode", mode="direct")["op"] == "set_mode_ok"
    start = served.call("get_state")  # (the state a camera switched on streams first)
    reply = served.call("set_camera_streaming", cameras={name: {"zmq": True}})
    assert reply["op"] == "set_camera_streaming_ok", reply
    sub = ZmqCamera(reply["cameras"][name]["zmq_endpoint"], name)
    try:
        time.sleep(0.3)
        step = served.call("step", n_steps=20)
        assert step["op"] == "step_ok", step
        got = sub.until(step["frame_id"])
        assert got is not None, "no frame streamed"
        pixels, frame_id, sim_time, _ = got
        assert frame_id == step["frame_id"] and sim_time == step["time"]
        # mujoco.Renderer drawing what the bridge's renderer drew, in its order (on Mesa's
        # llvmpipe this reflective floor draws a little differently in a fresh GL context)
        data = mujoco.MjData(model)
        with mujoco.Renderer(model, 480, 640) as renderer:
            for state in (start, step):
                data.qpos[:] = state["arts"][prefix]["qpos"]
                mujoco.mj_forward(model, data)
                renderer.update_scene(data, name)
                want = renderer.render()
        rgba = decode(pixels, "real", 640, 480)
        assert np.array_equal(rgba[..., :3], want)
    finally:
        sub.close()

"""Cameras over the bridge, as URLab serves them (bridge/camera_streams.py): the
handshake's camera_topics, set_camera_streaming / set_camera_delay, include_cameras
in a step, frames over ZMQ and shared memory read as URLab's client reads them
(tests/bridge/camera_client.py), each equal bit for bit to mujoco.Renderer of the
same model and state; and the faults. Real sockets, real EGL rendering, no bpy."""

import os
import subprocess
import sys
import time

import mujoco
import numpy as np
import pytest
from bridge_fixtures import HUMANOID, free_port
from camera_client import ShmCamera, ZmqCamera, decode, parse

# a hinge arm in view of three cameras (no reflective material: llvmpipe then draws
# a state the same whatever its GL context drew before)
ARM = """
<mujoco model="arm">
  <worldbody>
    <light pos="0 0 3"/>
    <geom name="floor" type="plane" size="2 2 .1" rgba=".3 .3 .3 1"/>
    <body name="link" pos="0 0 .5">
      <joint name="hinge" axis="0 1 0" damping=".01"/>
      <geom name="rod" type="capsule" fromto="0 0 0 .4 0 0" size=".05" rgba=".8 .2 .2 1"/>
    </body>
    <camera name="eye" pos="0 -1.5 .6" xyaxes="1 0 0 0 .3 1" resolution="64 48"/>
    <camera name="range" pos="0 -1.2 .8" xyaxes="1 0 0 0 .5 1" resolution="40 30" fovy="60"/>
    <camera name="mask" pos=".2 -1 .5" xyaxes="1 0 0 0 .2 1" resolution="40 30"/>
  </worldbody>
  <actuator><motor name="motor" joint="hinge"/></actuator>
</mujoco>
"""
MODES = {"arm_range": {"mode": "depth"}, "arm_mask": {"mode": "instance"}}


@pytest.fixture
def arm(tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    return str(path)


def serve_arm(serve, arm, cameras=MODES, **options):
    options.setdefault("transports", ("zmq", "shm"))
    return serve(arm, host_options={"cameras": cameras}, camera_port=free_port(), **options)


class Reference:
    """mujoco.Renderer alone, one per image size, called as the bridge calls it:
    update_scene, then the one image of the camera's mode."""

    def __init__(self, model):
        self.model, self.data = model, mujoco.MjData(model)
        self.renderers = {}

    def load(self, qpos):
        assert len(qpos) == self.model.nq
        self.data.qpos[:] = qpos
        mujoco.mj_forward(self.model, self.data)

    def image(self, name, mode, width, height):
        cam = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_CAMERA, name)
        if (width, height) not in self.renderers:
            self.renderers[width, height] = mujoco.Renderer(self.model, height, width)
        renderer = self.renderers[width, height]
        renderer.update_scene(self.data, cam)
        if mode == "depth":
            renderer.enable_depth_rendering()
        elif mode != "real":
            renderer.enable_segmentation_rendering()
        image = renderer.render().copy()
        renderer.disable_depth_rendering()
        renderer.disable_segmentation_rendering()
        return image

    def close(self):
        for renderer in self.renderers.values():
            renderer.close()


def as_rendered(pixels: bytes, mode: str, width: int, height: int) -> np.ndarray:
    """A bridge frame back in mujoco.Renderer's form (RGB, depth, or its segmentation plane)."""
    image = decode(pixels, mode, width, height)
    if mode == "real":
        assert (image[..., 3] == 255).all()
        return image[..., :3]
    if mode == "depth":
        return image
    return np.ascontiguousarray(image).view("<i4")[..., 0] - 1  # (object id + 1, 4 bytes a pixel)


def equal_to_reference(reference, name, mode, pixels, width, height):
    got = as_rendered(pixels, mode, width, height)
    want = reference.image(name, mode, width, height)
    if mode in ("instance", "semantic"):
        want = want[..., 0 if mode == "instance" else 1]
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    assert np.array_equal(got, want), f"{name}: {np.count_nonzero(got != want)} values differ"


def qpos_of(reply, prefix="arm"):
    return reply["arts"][prefix]["qpos"]


def test_hello_lists_each_entitys_cameras_as_urlab_does(serve, arm):
    served = serve_arm(serve, arm)
    client = served.client()
    reply = client.call("hello")
    model = served.host.session.model
    (entity,) = reply["entities"]
    topics = entity["camera_topics"]
    assert list(topics) == ["arm_eye", "arm_range", "arm_mask"]  # (compiled names: URLab's canonical ones)
    port = served.bridge.cameras.base_port
    for i, (name, mode, size) in enumerate((("arm_eye", "real", [64, 48]), ("arm_range", "depth", [40, 30]),
                                            ("arm_mask", "instance", [40, 30]))):
        cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name)
        assert topics[name] == {"mode": mode, "resolution": size, "fovy": pytest.approx(model.cam_fovy[cam]),
                                "zmq_endpoint": f"tcp://127.0.0.1:{port + i}", "zmq_topic": name,
                                "renderer": "mujoco"}
    assert reply["articulations"][0]["camera_topics"] == topics
    assert reply["global_cameras"] == {}


def test_include_cameras_in_a_direct_step_equal_mujoco_renderer(serve, arm):
    served = serve_arm(serve, arm)
    client = served.client()
    assert client.call("set_mode", mode="stepped")["op"] == "set_mode_ok"
    reference = Reference(served.host.session.model)
    modes = {"arm_eye": "real", "arm_range": "depth", "arm_mask": "instance"}
    try:
        last = -1
        for i in range(4):
            reply = client.call("step", n_steps=25, per_articulation={"arm": {"ctrl": [0.3 * (i + 1)]}},
                                include_cameras={name: "sync" for name in modes})
            assert reply["op"] == "step_ok", reply
            reference.load(qpos_of(reply))
            assert set(reply["cameras"]) == set(modes)
            for name, mode in modes.items():
                frame = reply["cameras"][name]
                assert frame["frame_id"] == reply["frame_id"] > last
                assert frame["sim_time"] == reply["time"]
                assert frame["dtype"] == ("float32" if mode == "depth" else "bgra8")
                equal_to_reference(reference, name, mode, frame["data"], frame["width"], frame["height"])
            last = reply["frame_id"]
        assert qpos_of(reply)[0] != 0.0  # (the arm moved: the frames were of different states)
    finally:
        reference.close()


def test_streams_over_zmq_and_shm_in_direct_mode_equal_mujoco_renderer(serve, arm):
    served = serve_arm(serve, arm)
    client = served.client()
    hello = client.call("hello")
    assert client.call("set_mode", mode="direct")["op"] == "set_mode_ok"
    both = {"zmq": True, "shm": True}
    reply = client.call("set_camera_streaming", cameras={"arm_eye": True, "arm_range": both})
    assert reply["op"] == "set_camera_streaming_ok", reply
    eye = reply["cameras"]["arm_eye"]
    assert eye["streaming"] and eye["zmq"] and eye["shm"] and eye["zmq_topic"] == "arm_eye"
    assert eye["zmq_endpoint"] == hello["entities"][0]["camera_topics"]["arm_eye"]["zmq_endpoint"]
    subs = {name: ZmqCamera(reply["cameras"][name]["zmq_endpoint"], name)
            for name in ("arm_eye", "arm_range")}
    rings = {name: ShmCamera(hello["shm_session_dir"], "arm", name) for name in ("arm_eye", "arm_range")}
    time.sleep(0.3)  # (a SUB connects some time after it is made)
    reference = Reference(served.host.session.model)
    try:
        seen = {("zmq", name): [] for name in subs} | {("shm", name): [] for name in rings}
        for i in range(5):
            reply = client.call("step", n_steps=20, per_articulation={"arm": {"ctrl": [0.5]}})
            reference.load(qpos_of(reply))
            for (transport, name), ids in seen.items():
                reader = subs[name] if transport == "zmq" else rings[name]
                got = reader.until(reply["frame_id"])
                assert got is not None, f"no frame of step {i} from {name} over {transport}"
                pixels, frame_id, sim_time, capture = got
                assert frame_id == reply["frame_id"] and sim_time == reply["time"]
                assert abs(capture - time.time()) < 5
                mode = "real" if name == "arm_eye" else "depth"
                size = (64, 48) if name == "arm_eye" else (40, 30)
                equal_to_reference(reference, name, mode, pixels, *size)
                ids.append(frame_id)
        for ids in seen.values():
            assert ids == sorted(set(ids)) and len(ids) == 5  # (rising, one per step)
    finally:
        reference.close()
        for sub in subs.values():
            sub.close()
        for ring in rings.values():
            ring.close()


def test_streams_in_live_mode_as_the_simulation_plays(serve, arm):
    """Live: the frames of published snapshots, each equal to the renderer of the state
    the state stream sent with the same frame_id; ids rise, sim_time follows."""
    served = serve_arm(serve, arm)
    client = served.client()
    hello = client.call("hello")
    states = served.subscriber()
    reply = client.call("set_camera_streaming", cameras={"arm_eye": True})
    sub = ZmqCamera(reply["cameras"]["arm_eye"]["zmq_endpoint"], "arm_eye", hwm=1000)
    ring = ShmCamera(hello["shm_session_dir"], "arm", "arm_eye")
    time.sleep(0.3)
    assert client.call("set_mode", mode="freerun")["op"] == "set_mode_ok"
    client.call("set_paused", paused=False)
    client.call("step", mode="live", per_articulation={"arm": {"ctrl": [0.4]}})
    frames, ring_frames, sent = [], [], {}
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        got = states.receive(50)
        if got is not None:
            sent[got[1]["frame_id"]] = got[1]
        if sub.socket.poll(0):
            sub.socket.recv()
            frames.append(parse(sub.socket.recv()))
        shm = ring.poll()
        if shm is not None:
            ring_frames.append(shm)
    client.call("set_paused", paused=True)
    sub.close()
    ring.close()
    assert len(frames) >= 5 and len(ring_frames) >= 5, (len(frames), len(ring_frames))
    for stream in (frames, ring_frames):
        ids = [f[1] for f in stream]
        assert ids == sorted(set(ids))
        times = [f[2] for f in stream]
        assert times == sorted(times) and times[-1] > times[0]
    reference = Reference(served.host.session.model)
    try:
        checked = 0
        for pixels, frame_id, sim_time, _ in frames + ring_frames:
            state = sent.get(frame_id)
            if state is None:
                continue
            assert sim_time == state["time"]
            reference.load(qpos_of(state))
            equal_to_reference(reference, "arm_eye", "real", pixels, 64, 48)
            checked += 1
        assert checked >= 5
    finally:
        reference.close()


def test_streaming_is_idempotent_and_switches_off(serve, arm):
    served = serve_arm(serve, arm)
    client = served.client()
    hello = client.call("hello")
    client.call("set_mode", mode="direct")
    first = client.call("set_camera_streaming", cameras={"arm_eye": {"zmq": True}})["cameras"]["arm_eye"]
    assert first["zmq"] and not first["shm"]  # (a map naming one transport leaves the other off)
    sub = ZmqCamera(first["zmq_endpoint"], "arm_eye")
    time.sleep(0.3)
    again = client.call("set_camera_streaming", cameras={"arm_eye": {"zmq": True}})["cameras"]["arm_eye"]
    assert again == first
    reply = client.call("step", n_steps=2)
    assert sub.until(reply["frame_id"]) is not None  # (the same socket: its subscriber still reads)
    off = client.call("set_camera_streaming", cameras={"arm_eye": False})["cameras"]["arm_eye"]
    assert off == {"streaming": False, "zmq": False, "shm": False, "renderer": "mujoco"}
    reply = client.call("step", n_steps=2)
    assert sub.until(reply["frame_id"], timeout=0.5) is None
    assert not os.path.exists(os.path.join(hello["shm_session_dir"], "cam_arm_arm_eye.shm"))
    sub.close()


def test_a_camera_delay_holds_frames_back_on_the_simulations_clock(serve, arm):
    served = serve_arm(serve, arm)
    client = served.client()
    hello = client.call("hello")
    client.call("set_mode", mode="direct")
    reply = client.call("set_camera_delay", cameras={"arm_eye": {"delay_s": 0.02, "clock": "sim", "seed": 3}})
    assert reply["cameras"]["arm_eye"] == {"delay_s": 0.02, "jitter_s": 0.0, "clock": "sim", "seed": 3,
                                           "on_state_change": True, "max_fps": 0.0}
    client.call("set_camera_streaming", cameras={"arm_eye": {"shm": True}})
    ring = ShmCamera(hello["shm_session_dir"], "arm", "arm_eye")
    now = client.call("get_state")  # (the state streaming started at is rendered too)
    times = {now["frame_id"]: now["time"]}
    for _ in range(8):
        reply = client.call("step", n_steps=2)  # (4 ms a step)
        times[reply["frame_id"]] = reply["time"]
        time.sleep(0.1)
        got = ring.poll()
        if got is not None:
            # the newest frame out is of a state at least 20 ms of simulation older
            assert got[2] <= reply["time"] - 0.02 + 1e-9 and times[got[1]] == got[2]
    assert ring.last_sequence > 0
    ring.close()


def test_corpus_humanoid_cameras_equal_mujoco_renderer(serve):
    if not os.path.exists(HUMANOID):
        pytest.skip("no corpus (../shared/corpus)")
    served = serve(HUMANOID, camera_port=free_port())
    client = served.client()
    hello = client.call("hello")
    (prefix,) = [e["prefix"] for e in hello["entities"] if e["kind"] == "articulation"]
    names = list(hello["entities"][0]["camera_topics"])
    assert len(names) == 3 and all(n.startswith(prefix + "_") for n in names)
    client.call("set_mode", mode="direct")
    reference = Reference(served.host.session.model)
    try:
        for _ in range(2):
            reply = client.call("step", n_steps=30, include_cameras=names)
            reference.load(qpos_of(reply, prefix))
            for name in names:
                frame = reply["cameras"][name]
                assert (frame["width"], frame["height"]) == (640, 480)
                equal_to_reference(reference, name, "real", frame["data"], 640, 480)
    finally:
        reference.close()


# ------------------------------------------------------------------ faults


def test_an_unknown_camera_is_a_clear_error_that_changes_nothing(serve, arm):
    served = serve_arm(serve, arm)
    client = served.client()
    client.call("set_mode", mode="direct")
    before = client.call("get_state")["time"]
    for op, fields in (("set_camera_streaming", {"cameras": {"arm_eye": True, "eye": True}}),
                       ("set_camera_delay", {"cameras": {"nope": 0.1}}),
                       ("step", {"n_steps": 5, "include_cameras": ["arm_eye", "nope"]})):
        reply = client.call(op, **fields)
        assert reply["op"] == "error" and reply["code"] == "unknown_camera", reply
        assert "arm_eye, arm_range, arm_mask" in reply["message"]
    assert client.call("get_state")["time"] == before  # (the step was not taken)
    assert not served.bridge.cameras.streaming  # (arm_eye, asked beside the unknown one, did not start)


def test_a_resolution_beyond_the_cap_is_a_clear_error_that_changes_nothing(serve, arm):
    served = serve_arm(serve, arm, cameras={"arm_range": {"resolution": (2000, 1500)}})
    client = served.client()
    hello = client.call("hello")
    assert hello["entities"][0]["camera_topics"]["arm_range"]["resolution"] == [2000, 1500]
    client.call("set_mode", mode="direct")
    before = client.call("get_state")["time"]
    reply = client.call("set_camera_streaming", cameras={"arm_eye": True, "arm_range": True})
    assert reply["code"] == "bad_resolution", reply
    assert "2000 x 1500" in reply["message"] and "offwidth" in reply["message"]
    reply = client.call("step", n_steps=3, include_cameras=True)
    assert reply["code"] == "bad_resolution", reply
    assert client.call("get_state")["time"] == before
    assert not served.bridge.cameras.streaming
    assert not [f for f in os.listdir(hello["shm_session_dir"]) if f.startswith("cam_")]
    ok = client.call("step", n_steps=1, include_cameras=["arm_eye"])  # (the others still serve)
    assert ok["op"] == "step_ok" and ok["cameras"]["arm_eye"]["width"] == 64


def test_a_model_host_refuses_blenders_renderer_clearly(serve, arm):
    """No Blender behind a ModelHost: "blender" is refused, in streaming and in a step's
    include_cameras, naming what to do; nothing changes (no stream, no step)."""
    served = serve_arm(serve, arm)
    client = served.client()
    reply = client.call("set_camera_streaming", cameras={"arm_eye": {"zmq": True, "renderer": "blender"}})
    assert reply["code"] == "unsupported" and "renderer 'mujoco'" in reply["message"], reply
    assert "no Blender" in reply["message"] and "arm_eye" in reply["message"]
    assert not served.bridge.cameras.streaming
    assert client.call("set_mode", mode="direct")["op"] == "set_mode_ok"
    before = client.call("get_state")["time"]
    reply = client.call("step", n_steps=2, include_cameras={"arm_eye": {"renderer": "blender"}})
    assert reply["code"] == "unsupported" and "no Blender" in reply["message"], reply
    assert client.call("get_state")["time"] == before
    reply = client.call("set_camera_streaming", cameras={"arm_eye": {"zmq": True, "renderer": "pixar"}})
    assert reply["code"] == "bad_value" and "'pixar'" in reply["message"], reply
    ok = client.call("step", n_steps=1, include_cameras={"arm_eye": {"renderer": "mujoco"}})
    assert ok["op"] == "step_ok" and ok["cameras"]["arm_eye"]["width"] == 64


def test_a_subscriber_that_never_reads_does_not_slow_the_simulation(serve, arm):
    """A SUB that never reads: the PUB drops what its queue (10) and the SUB's (1) do
    not hold, the simulation keeps real time, requests are answered."""
    served = serve_arm(serve, arm)
    client = served.client()
    reply = client.call("set_camera_streaming", cameras={"arm_eye": {"zmq": True}})
    sub = ZmqCamera(reply["cameras"]["arm_eye"]["zmq_endpoint"], "arm_eye", hwm=1)
    time.sleep(0.3)
    start = client.call("get_state")["time"]
    client.call("set_paused", paused=False)
    began = time.monotonic()
    time.sleep(3.0)
    asked = time.monotonic()
    now = client.call("get_state")
    answered = time.monotonic() - asked
    client.call("set_paused", paused=True)
    wall = time.monotonic() - began
    camera = served.bridge.cameras.cameras["arm_eye"]
    assert now["time"] - start >= 0.9 * (wall - answered - 0.1), (now["time"] - start, wall)
    assert answered < 0.5
    # frames went on being published while no one read, more than the queues hold
    assert camera.published > 15, camera.published
    sub.close()


def test_a_renderer_that_cannot_start_is_a_clear_error_that_changes_nothing(arm):
    """MUJOCO_GL naming a backend that cannot start here (glfw, no display), in a
    process of its own: set_camera_streaming and include_cameras get
    `renderer_unavailable` naming what to set; the bridge serves on."""
    script = f"""
import sys
sys.path.insert(0, {os.path.dirname(__file__)!r})
from bridge_fixtures import Served
from helpers import free_port
served = Served({arm!r}, camera_port=free_port())
client = served.client()
client.call("set_mode", mode="direct")
reply = client.call("set_camera_streaming", cameras={{"arm_eye": True}})
print("STREAMING", reply["code"], reply["message"])
reply = client.call("step", n_steps=2, include_cameras=True)
print("INCLUDE", reply["code"], client.call("get_state")["time"])
print("STEP", client.call("step", n_steps=2)["op"], bool(served.bridge.cameras.streaming))
served.close()
"""
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, MUJOCO_GL="glfw", DISPLAY="", WAYLAND_DISPLAY="",
               PYTHONPATH=os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", "import addon_loader\n" + script], env=env,
                         capture_output=True, text=True, timeout=120)
    assert "STREAMING renderer_unavailable" in out.stdout, out.stdout + out.stderr
    assert "MUJOCO_GL=glfw" in out.stdout and "MUJOCO_GL=egl" in out.stdout
    assert "INCLUDE renderer_unavailable 0.0" in out.stdout
    assert "STEP step_ok False" in out.stdout

"""The bridge serving a Blender scene (bpy module, real sockets and threads): the handshake's
model is the scene's with its roots' prefixes, direct steps are MuJoCo's bit for bit, the
objects follow, an edit expires sessions, start / stop leave nothing behind; headless
serving (app/serve.py) in another process answers and stops cleanly."""

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import LINK_DIR, ROOT
from conftest import EXIT_CRASHES
from helpers import CORPUS, free_port, port_is_free

sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))
from wire_client import WireClient  # noqa: E402

from mjblend.app import serve  # noqa: E402
from mjblend.bridge.host import prefix_of  # noqa: E402
from mjblend.importer import build  # noqa: E402
from mjblend.live import bridge_host, scene_session  # noqa: E402
from mjblend.scan import compile_spec, scene_scan  # noqa: E402

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
OBJ = mujoco.mjtObj
PYTHON = sys.executable

pytestmark = pytest.mark.skipif(not os.path.exists(HUMANOID), reason=f"no corpus at {CORPUS}")




def bridge_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("MJBlend bridge")]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def humanoid(clean_scene):
    result = build.import_file(HUMANOID, clean_scene)
    yield result.root
    bridge_host.stop()
    scene_session.end_all()


class Served:
    def __init__(self):
        self.request_port, self.state_port = free_port(), free_port()
        assert bpy.ops.mujoco.bridge_start(request_port=self.request_port,
                                           state_port=self.state_port) == {"FINISHED"}
        self.live = scene_session.simulation(bpy.context.scene)
        self.clients = []

    def client(self) -> WireClient:
        client = WireClient(self.request_port)
        self.clients.append(client)
        hello = client.hello()
        assert hello["op"] == "hello_ok", hello
        client.model = mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": hello["mjb"]})
        client.entities = hello["entities"]
        return client

    def close(self):
        for client in self.clients:
            client.close()


@pytest.fixture
def served(humanoid):
    served = Served()
    yield served
    served.close()


def names(model, obj, count):
    return [mujoco.mj_id2name(model, obj, i) for i in range(count)]


def test_the_handshake_model_is_the_scenes_with_its_roots_prefix(served):
    client = served.client()
    model, live = client.model, served.live
    assert [e["prefix"] for e in client.entities] == ["Humanoid"]
    assert live.runner.threaded  # (restarted on a physics thread: the bpy module runs inline)
    roots = scene_scan.model_roots(bpy.context.scene)
    plain = compile_spec.check(compile_spec.build_spec(roots, []).spec)  # as export and Simulate compile it
    for size in ("nq", "nv", "nu", "nbody", "njnt", "ngeom", "nsensor", "nkey"):
        assert getattr(model, size) == getattr(plain, size) == getattr(live.model, size), size
    for obj, count in ((OBJ.mjOBJ_BODY, model.nbody), (OBJ.mjOBJ_JOINT, model.njnt),
                       (OBJ.mjOBJ_ACTUATOR, model.nu), (OBJ.mjOBJ_SENSOR, model.nsensor)):
        assert names(model, obj, count)[1 if obj == OBJ.mjOBJ_BODY else 0:] == [
            f"Humanoid_{n}" for n in names(plain, obj, count)[1 if obj == OBJ.mjOBJ_BODY else 0:]]
    assert np.array_equal(model.qpos0, plain.qpos0)
    assert np.array_equal(model.body_mass, plain.body_mass)
    assert np.array_equal(model.actuator_gear, plain.actuator_gear)
    # the binding still maps objects by id (the objects' names are the unprefixed MJCF names)
    for obj in bpy.context.scene.objects:
        if obj.mujoco.kind == "BODY" and obj.mujoco.name:
            assert live.binding.body_ids[obj.as_pointer()] == model.body("Humanoid_" + obj.mujoco.name).id


def test_direct_steps_are_mujocos_bit_for_bit(served):
    client = served.client()
    model = client.model
    assert client.call("set_mode", mode="direct")["op"] == "set_mode_ok"
    assert client.call("reset")["op"] == "reset_ok"
    data = mujoco.MjData(model)
    rng = np.random.default_rng(7)
    for k in range(150):
        ctrl = rng.uniform(-1, 1, model.nu)
        count = 1 if k < 149 else 50
        reply = client.call("step", n_steps=count, per_articulation={"Humanoid": {"ctrl": ctrl.tolist()}})
        assert reply["op"] == "step_ok", reply
        data.ctrl[:] = ctrl
        mujoco.mj_step(model, data, nstep=count)
    assert np.array_equal(np.asarray(reply["arts"]["Humanoid"]["qpos"]), data.qpos)
    assert np.array_equal(np.asarray(reply["arts"]["Humanoid"]["qvel"]), data.qvel)
    assert_shown_soon(served.live, data.qpos)
    status = bridge_host.status()
    assert status["mode"] == "direct" and status["sessions"] == 1 and status["last_op"] == "step"
    assert status["requests"] >= 152 and status["errors"] == 0


def assert_shown_soon(live, qpos, timeout=2.0):
    """The runner's latest snapshot (what the viewport shows) reaches the state a client
    left it in, though the client sends nothing more."""
    deadline = time.monotonic() + timeout
    while not np.array_equal(live.runner.latest.qpos, qpos):
        assert time.monotonic() < deadline, "the client's last state never reached the snapshots"
        time.sleep(0.02)


def assert_objects_show(live, model, data):
    """Every body object stands where MuJoCo's body is (MuJoCo's world is Blender's)."""
    bpy.context.view_layer.update()
    checked = 0
    for obj in bpy.context.scene.objects:
        if obj.mujoco.kind == "BODY" and obj.mujoco.name:
            body = model.body("Humanoid_" + obj.mujoco.name).id
            world = np.array(obj.matrix_world)
            assert np.allclose(world[:3, 3], data.xpos[body], atol=1e-5), obj.name
            assert np.allclose(world[:3, :3], data.xmat[body].reshape(3, 3), atol=1e-5), obj.name
            checked += 1
    assert checked > 10


def test_the_viewport_follows_a_client_in_both_display_modes(humanoid):
    humanoid.location = (1.0, -2.0, 0.5)  # (attached where the root stands, as several roots are)
    bpy.context.view_layer.update()
    served = Served()
    try:
        client = served.client()
        live = served.live
        client.call("set_mode", mode="direct")
        client.call("reset")
        ctrl = {"Humanoid": {"ctrl": [0.3] * client.model.nu}}
        for _ in range(20):
            reply = client.call("step", n_steps=5, per_articulation=ctrl)
        assert_shown_soon(live, np.asarray(reply["arts"]["Humanoid"]["qpos"]))
        live.show()  # (in a window, the display sync's timer does this)
        shot = live.runner.latest
        data = mujoco.MjData(client.model)
        data.qpos[:] = shot.qpos
        mujoco.mj_kinematics(client.model, data)
        assert data.xpos[client.model.body("Humanoid_torso").id][0] == pytest.approx(1.0, abs=0.2)
        assert_objects_show(live, client.model, data)
        # Fast display: while the client lets it play, the instancer shows it
        bpy.context.scene.mujoco_simulation.display = "FAST"
        client.call("set_mode", mode="live")
        assert live.runner.wait_frame(shot.frame + 3, 5.0) is not None
        live.show()
        assert live.display.fast_now and live.display.instancer is not None
        client.call("set_mode", mode="direct")  # paused: the objects show the state again
        live.show(force=True)
        assert not live.display.fast_now
    finally:
        served.close()


def test_a_recompile_expires_sessions_with_a_clear_message(served):
    client = served.client()
    live = served.live
    geom = next(o for o in bpy.context.scene.objects if o.mujoco.kind == "GEOM" and o.mujoco.name == "torso")
    geom.mujoco.geom.mass = 12.5  # an edit in the panel; the display sync's tick takes it
    assert live.check_edits()
    reply = client.call("step", n_steps=1)
    assert reply["op"] == "error" and reply["code"] == "session_expired"
    assert "recompiled" in reply["message"] and "hello" in reply["message"]
    again = served.client()
    body = again.model.body("Humanoid_torso").id
    assert again.model.body_mass[body] != client.model.body_mass[body]  # (the edited model)
    assert again.call("step", n_steps=1)["op"] == "step_ok"


def test_several_roots_each_an_entity(humanoid):
    second = build.import_file(HUMANOID, bpy.context.scene).root  # another name for a second humanoid
    served = Served()
    try:
        client = served.client()
        other = prefix_of(second.name)
        assert other != "Humanoid"
        assert [e["prefix"] for e in client.entities] == ["Humanoid", other]
        assert client.model.body(f"{other}_torso").id > client.model.body("Humanoid_torso").id
        reply = client.call("step", n_steps=1)
        assert set(reply["arts"]) == {"Humanoid", other}
    finally:
        served.close()


def test_start_and_stop_leave_no_thread_or_socket(humanoid):
    threads, fds = threading.active_count(), open_fds()
    request_port, state_port = free_port(), free_port()
    for _ in range(2):  # (the same ports again: the first bridge let go of them)
        assert bpy.ops.mujoco.bridge_start(request_port=request_port, state_port=state_port) == {"FINISHED"}
        assert len(bridge_threads()) == 2  # requests, state stream
        client = WireClient(request_port)
        assert client.hello()["op"] == "hello_ok"
        client.close()
        assert bpy.ops.mujoco.bridge_stop() == {"FINISHED"}
        assert bridge_host.status() is None and bridge_threads() == []
    assert port_is_free(request_port) and port_is_free(state_port)
    scene_session.end_all()
    assert threading.active_count() == threads
    assert open_fds() <= fds + 2  # (pyzmq may keep a context's eventfds until collected)


def test_the_bridge_stops_with_its_simulation_and_on_file_load(humanoid):
    request_port, state_port = free_port(), free_port()
    bpy.ops.mujoco.bridge_start(request_port=request_port, state_port=state_port)
    bpy.ops.mujoco.stop()  # the simulation is dropped: its bridge goes first
    assert bridge_host.status() is None and bridge_threads() == []
    bpy.ops.mujoco.bridge_start(request_port=request_port, state_port=state_port)
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bridge_host.status() is None and bridge_threads() == []
    assert port_is_free(request_port) and port_is_free(state_port)


def test_a_taken_port_is_a_clear_error(humanoid):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"cannot listen for requests on tcp://127.0.0.1:{port}"):
            bpy.ops.mujoco.bridge_start(request_port=port, state_port=free_port())
    finally:
        taken.close()
    assert bridge_host.status() is None and bridge_threads() == []
    assert scene_session.simulation(bpy.context.scene) is None  # (the simulation it started is gone too)


# ---------------------------------------------------------------- headless

# The documented bpy-module entry, with the add-on importable as `mjblend` from a folder
# holding a link to it (tests/addon_loader.py makes one for this process)
ENTRY = ("import sys, bpy, addon_utils; addon_utils.enable('mjblend', default_set=True); "
         "from mjblend.app import serve; sys.exit(serve.main(sys.argv[1:]))")


class Headless:
    def __init__(self, *extra, path=HUMANOID):
        self.request_port, self.state_port = free_port(), free_port()
        paths = [LINK_DIR, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
        self.process = subprocess.Popen(
            [PYTHON, "-c", ENTRY, str(path), "--port", str(self.request_port), "--state-port",
             str(self.state_port), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.lines: queue.Queue = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.ready = self.wait_for(serve.READY, 60)

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, words: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no {words!r} within {timeout} s:\n" + "".join(self.output)) from None
            if line is None:
                raise AssertionError(f"the server ended before {words!r}:\n" + "".join(self.output))
            self.output.append(line)
            if line.startswith(words):
                return line

    def exit_status(self, timeout: float = 30) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def test_headless_serves_and_stops_on_a_clients_shutdown():
    server = Headless("--keyframe", "squat", "--paused")
    client = WireClient(server.request_port)
    entry = server.ready.rstrip().rsplit("URLab pool entry ", 1)[1]  # (the ready line names it)
    assert json.loads(open(entry).read())["step_port"] == server.request_port
    try:
        hello = client.hello()
        assert hello["op"] == "hello_ok" and [e["prefix"] for e in hello["entities"]] == ["Humanoid"]
        model = mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": hello["mjb"]})
        assert model.nq == 28 and model.body("Humanoid_torso").id == 1
        state = client.call("get_state", observations="minimal")
        assert np.array_equal(state["arts"]["Humanoid"]["qpos"], model.key("Humanoid_squat").qpos)
        assert client.call("set_mode", mode="direct")["op"] == "set_mode_ok"
        assert client.call("step", n_steps=10)["op"] == "step_ok"
        assert client.call("shutdown") == {"op": "shutdown_ok", "stopping": True}
    finally:
        client.close()
    assert exited_cleanly(server.exit_status()), "".join(server.output)
    assert port_is_free(server.request_port) and port_is_free(server.state_port)
    assert not os.path.exists(entry)  # (removed on stop)


def exited_cleanly(status: int) -> bool:
    """0; or on the bpy 4.x modules (conftest.EXIT_CRASHES) their crash at exit, after
    serving stopped (a SpaceType destructor runs Python after it shut down; it shows
    once MUJOCO_GL=egl is in force, as conftest and the add-on set it)."""
    return status == 0 or (EXIT_CRASHES and status == -signal.SIGSEGV)


def test_headless_serves_a_blend_and_stops_on_sigterm(humanoid, tmp_path):
    blend = tmp_path / "humanoid.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    server = Headless(path=blend)  # (playing, as URLab's freerun)
    client = WireClient(server.request_port)
    try:
        hello = client.hello()
        assert hello["op"] == "hello_ok" and [e["prefix"] for e in hello["entities"]] == ["Humanoid"]
        assert client.call("step", n_steps=2)["time"] > 0  # (live: it plays)
    finally:
        client.close()
    server.process.send_signal(signal.SIGTERM)
    assert exited_cleanly(server.exit_status()), "".join(server.output)
    server.wait_for("MJBlend bridge stopped (SIGTERM)", 5)
    assert port_is_free(server.request_port) and port_is_free(server.state_port)


def test_the_command_line_entry():
    if bpy.app.version >= (4, 2, 0):  # `blender --command mjblend_serve ...`
        assert serve.command.handle is not None
    assert serve.main(["--help"]) == 0
    assert serve.main([os.path.join(ROOT, "no such model.xml")]) == 1

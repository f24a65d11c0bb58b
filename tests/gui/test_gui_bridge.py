"""The bridge in Blender's real user interface (issue 18): Start Bridge clicked with the
real mouse in the sidebar's Bridge panel, a network client in this process (the
documented protocol: tests/bridge/wire_client.py) steps the scene, the window shows
exactly MuJoCo's state for it (Objects display) and plays it through the instancer
(Fast display), and the real Stop Bridge button lets go of the ports while Blender
still runs. tests/gui/bridge_window.py is the Blender side; the two take turns
through files (see there). The conversation runs once per module; the tests read it.
"""

import json
import os
import sys
import threading
import time

import mujoco
import numpy as np
import pytest
from addon_loader import ROOT
from gui_blender import leftover_processes, read_report, run_gui_script
from helpers import CORPUS, free_port, port_is_free

sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))
from wire_client import StateSubscriber, WireClient  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(ROOT, "docs", "images")
HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
MODEL = HUMANOID if os.path.exists(HUMANOID) else os.path.join(ROOT, "examples", "desk_toys.xml")
WAIT = 90.0  # seconds for any one turn of Blender's (a slow, busy machine)
CALLS, STEPS_PER_CALL = 40, 5  # 200 direct steps




class Window:
    """Blender running bridge_window.py on its own thread (gui_blender.run_gui_script,
    which kills it on its timeout), and the files the two take turns with."""

    def __init__(self, folder, ports):
        self.folder = folder
        self.result: list = []  # Blender's CompletedProcess, or what run_gui_script raised
        env = {"MJBLEND_RESULT": str(folder / "result.json"), "MJBLEND_MODEL": MODEL,
               "MJBLEND_SCREENSHOT": str(folder / "bridge.png"),
               "MJBLEND_BRIDGE_PORTS": f"{ports[0]},{ports[1]}"}
        script = os.path.join(HERE, "bridge_window.py")

        def run():
            try:
                self.result.append(run_gui_script(script, folder, env=env, timeout=240))
            except BaseException as error:  # (a missing prerequisite: said in the test's failure)
                self.result.append(error)
        self.thread = threading.Thread(target=run)
        self.thread.start()

    def heard(self, phase: str) -> dict:
        """Wait for Blender's blender-<phase>.json; its data."""
        path, failed = self.folder / f"blender-{phase}.json", self.folder / "blender-failed.json"
        deadline = time.monotonic() + WAIT
        while not path.exists():
            if failed.exists() or not self.thread.is_alive():
                self.thread.join()
                raise AssertionError(f"Blender ended before {phase!r}: {self.output()}")
            assert time.monotonic() < deadline, f"no {phase!r} from Blender within {WAIT:g} s"
            time.sleep(0.05)
        return json.loads(path.read_text())

    def tell(self, phase: str, **data) -> None:
        path = self.folder / f"test-{phase}.json"
        part = path.with_suffix(".part")
        part.write_text(json.dumps(data))
        os.replace(part, path)

    def end(self):
        """Blender's CompletedProcess (after an abort if the conversation broke off)."""
        if self.thread.is_alive() and not (self.folder / "test-checked.json").exists():
            self.tell("abort")
        self.thread.join()
        if isinstance(self.result[0], BaseException):
            raise self.result[0]
        return self.result[0]

    def output(self) -> str:
        failed = self.folder / "blender-failed.json"
        text = failed.read_text() if failed.exists() else ""
        for proc in self.result:
            text += f"\n{proc!r}" if isinstance(proc, BaseException) else \
                f"\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return text


def entity_slots(model, prefix: str):
    """(qpos addresses, actuator ids) of the entity `prefix` as the protocol lays out its
    arrays: the joints and actuators named `prefix_...`, in id order."""
    def named(obj, count):
        return [i for i in range(count) if (mujoco.mj_id2name(model, obj, i) or "").startswith(prefix + "_")]
    width = {int(mujoco.mjtJoint.mjJNT_FREE): 7, int(mujoco.mjtJoint.mjJNT_BALL): 4}  # (else 1)
    qpos = [address for j in named(mujoco.mjtObj.mjOBJ_JOINT, model.njnt)
            for address in range(model.jnt_qposadr[j],
                                 model.jnt_qposadr[j] + width.get(int(model.jnt_type[j]), 1))]
    return qpos, named(mujoco.mjtObj.mjOBJ_ACTUATOR, model.nu)


def drive(window: Window, conversation: dict) -> None:
    """The client's side: direct steps with controls, then freerun with the Fast display."""
    serving = window.heard("serving")
    conversation["serving"] = serving
    client = WireClient(serving["request_port"], timeout_ms=30000)
    subscriber = StateSubscriber(serving["state_port"])
    try:
        hello = client.hello()
        conversation["hello_op"] = hello["op"]
        model = mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": hello["mjb"]})
        prefix = hello["entities"][0]["prefix"]
        conversation["prefix"] = prefix
        conversation["set_mode"] = client.call("set_mode", mode="direct")
        # the state stream: steps until the server has seen the subscription (a SUB
        # only gets what is published after it joined), then back to the start
        for _ in range(100):
            client.call("step", n_steps=1)
            if subscriber.receive(100) is not None:
                break
        conversation["reset"] = client.call("reset")["op"]
        data = mujoco.MjData(model)
        qpos, actuators = entity_slots(model, prefix)
        rng = np.random.default_rng(18)
        for _ in range(CALLS):
            ctrl = rng.uniform(-1, 1, len(actuators))
            articulation = {"ctrl": ctrl.tolist()} if len(actuators) else {}
            reply = client.call("step", n_steps=STEPS_PER_CALL, per_articulation={prefix: articulation})
            assert reply["op"] == "step_ok", reply
            data.ctrl[actuators] = ctrl
            mujoco.mj_step(model, data, nstep=STEPS_PER_CALL)
        streamed = []  # (every direct step is streamed: the last one has the client's time)
        while not streamed or streamed[-1] != reply["time"]:
            got = subscriber.receive(5000)
            assert got is not None, f"the state stream stopped at {streamed[-1:]} s"
            streamed.append(got[1]["time"])
        conversation["streamed"] = streamed
        # (no one listens from here on: the panel's count of streamed snapshots stays put
        # while Blender compares screenshots; a park of the physics thread publishes one)
        subscriber.close()
        conversation["entity_qpos"] = len(qpos)
        conversation["same_qpos"] = np.array_equal(reply["arts"][prefix]["qpos"], data.qpos[qpos])
        conversation["time"] = [reply["time"], data.time, model.opt.timestep]
        mujoco.mj_forward(model, data)  # (the world poses of the final state)
        conversation["expected"] = {model.body(b).name.removeprefix(prefix + "_"):  # (the MJCF names)
                                    [data.xpos[b].tolist(), data.xquat[b].tolist()]
                                    for b in range(1, model.nbody)}
        window.tell("stepped", time=reply["time"])

        window.heard("fast")
        conversation["freerun"] = client.call("set_mode", mode="freerun")
    finally:  # (closed first: their connections' TIME_WAIT stays on the client's side)
        subscriber.close()  # (again: pyzmq closes once)
        client.close()
    window.tell("live")

    window.heard("stopped")
    ports = serving["request_port"], serving["state_port"]
    conversation["ports_free"] = [port_is_free(port) for port in ports]
    window.tell("checked")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(conversation, Blender's report, its process, folder)."""
    folder = tmp_path_factory.mktemp("bridge_window")
    ports = free_port(), free_port()
    if os.environ.get("MJBLEND_UPDATE_DOCS") == "1" and port_is_free(5559) and port_is_free(5555):
        ports = 5559, 5555  # (the docs' picture shows the default ports)
    window = Window(folder, ports)
    conversation: dict = {}
    try:
        drive(window, conversation)
    finally:
        proc = window.end()
    report = read_report(proc, folder / "result.json")
    return conversation, report, proc, folder


def pixels(picture) -> np.ndarray:
    """(height, width, 3) floats of a screenshot, row 0 at the bottom (Blender's loader)."""
    import bpy

    image = bpy.data.images.load(str(picture))
    try:
        return np.array(image.pixels[:]).reshape(image.size[1], image.size[0], image.channels)[:, :, :3]
    finally:
        bpy.data.images.remove(image)


def keep_for_docs(picture, name):
    """With MJBLEND_UPDATE_DOCS=1 the screenshot replaces the user guide's picture."""
    if os.environ.get("MJBLEND_UPDATE_DOCS") == "1":
        with open(picture, "rb") as src, open(os.path.join(DOCS, name), "wb") as dst:
            dst.write(src.read())


@pytest.mark.gui
def test_start_bridge_is_clicked_in_the_sidebar(served):
    conversation, report, proc, folder = served
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "register_cli_command" not in proc.stdout + proc.stderr  # (its commands registered quietly)
    assert report["threads_before"] == []
    # the buttons in the 3D view's sidebar, clicked (a layout's operator button runs in
    # the area's main region: INVOKE_REGION_WIN)
    start, stop = report["calls"]
    assert start == ["start", "VIEW_3D", "WINDOW", "LEFTMOUSE", ["RUNNING_MODAL"]]
    assert stop == ["stop", "VIEW_3D", "WINDOW", None, ["FINISHED"]]
    x, _y, width, _height = report["sidebar"]
    for click in (report["start_click"], report["header_click"]):  # (X11 pixels of the window)
        assert x <= click[0] - report["area"][0] < x + width
    status = report["status_started"]
    assert [status["request_port"], status["state_port"]] == [conversation["serving"]["request_port"],
                                                             conversation["serving"]["state_port"]]
    assert status["address"] == "127.0.0.1" and status["local"] and not status["shm"]
    assert report["threads_serving"] and report["threaded"]
    assert leftover_processes(folder) == []


@pytest.mark.gui
def test_a_clients_direct_steps_show_on_the_objects(served):
    conversation, report, _proc, _folder = served
    assert conversation["hello_op"] == "hello_ok"
    assert conversation["set_mode"]["current_mode"] == "direct" and conversation["reset"] == "reset_ok"
    assert conversation["entity_qpos"] > 0
    assert conversation["same_qpos"]  # the served simulation steps as MuJoCo does, bit for bit
    reply_time, mujoco_time, timestep = conversation["time"]
    assert reply_time == mujoco_time == pytest.approx(CALLS * STEPS_PER_CALL * timestep)
    shown = report["shown"]
    assert shown["time"] == reply_time and not shown["playing"]
    assert shown["display"] == "OBJECTS" and not shown["fast_now"]
    expected, bodies = conversation["expected"], report["bodies"]
    assert set(bodies) == set(expected)
    for name, (xpos, xquat) in expected.items():
        matrix = np.array(bodies[name])
        rotation = np.empty(9)
        mujoco.mju_quat2Mat(rotation, np.array(xquat))
        assert np.abs(matrix[:3, 3] - xpos).max() < 1e-5, name
        assert np.abs(matrix[:3, :3] - rotation.reshape(3, 3)).max() < 1e-5, name
        assert np.abs(matrix[3] - [0, 0, 0, 1]).max() == 0, name
    status = report["status_direct"]
    assert status["mode"] == "direct" and status["sessions"] == 1 and status["last_op"] == "step"
    assert status["requests"] >= CALLS + 3 and status["errors"] == 0


@pytest.mark.gui
def test_the_state_stream_sends_every_direct_step(served):
    conversation, report, _proc, _folder = served
    streamed = conversation["streamed"]
    timestep = conversation["time"][2]
    assert streamed[-1] == conversation["time"][0]
    # after the reset, one message per step call (a call of several steps streams its end)
    steps = np.round(np.array(streamed) / timestep).astype(int)
    assert len(streamed) >= CALLS and np.all(np.diff(steps[-CALLS:]) == STEPS_PER_CALL), steps
    assert report["status_direct"]["published"] >= CALLS


@pytest.mark.gui
def test_the_bridge_panel_is_drawn(served):
    _conversation, report, _proc, folder = served
    assert "MJBLEND_PT_bridge" in report["drawn"]
    assert report["stop_button"] == report["start_click"]  # (Stop Bridge where Start Bridge was)
    # the screenshot of the 3D view against the same view with the sidebar hidden: the
    # panel (its first button and the status box below it) is drawn where it should be
    picture = folder / "bridge.png"
    shown, hidden = pixels(picture), pixels(folder / "no-sidebar.png")
    assert shown.shape == hidden.shape and shown.shape[1] > 1000
    x, _y, width, _height = report["sidebar"]
    button_x, button_y = report["stop_button_pixel"]
    assert x < button_x < x + width
    outside = np.s_[:, :x - 120]  # (the viewport left of the sidebar and its gizmos)
    assert np.abs(shown[outside] - hidden[outside]).max() == 0  # the same view, still
    # (the panels are drawn over the viewport half transparent: any change is the panel)
    panel = np.s_[max(button_y - 200, 0):button_y + 10, x + 10:x + width - 30]  # (rows grow upwards)
    drawn = np.abs(shown[panel] - hidden[panel]).max(axis=-1) > 1.5 / 255
    assert drawn.mean() > 0.95, f"only {drawn.mean():.0%} of the panel's place differs from the viewport"
    assert shown[panel].std() > 0.05  # text and buttons, not a flat fill
    button = np.s_[button_y - 5:button_y + 5, x + 20:x + width - 40]
    assert np.abs(shown[button] - hidden[button]).mean() > 0.1  # the button, opaque
    keep_for_docs(picture, "bridge-panel.png")


@pytest.mark.gui
def test_the_fast_display_plays_what_the_client_lets_run(served):
    conversation, report, _proc, _folder = served
    assert conversation["freerun"]["op"] == "set_mode_ok"
    assert conversation["freerun"]["current_mode"] == "freerun"
    fast = report["fast"]
    assert fast["mode"] == "live" and fast["playing"] and fast["fast_now"], fast
    assert fast["instancer_visible"] and fast["instances"] >= fast["sources"] > 0, fast
    assert fast["sources_hidden"] and fast["advanced"] > 0.1


@pytest.mark.gui
def test_stop_bridge_lets_go_of_the_ports(served):
    conversation, report, _proc, _folder = served
    assert conversation["ports_free"] == [True, True]  # bound again while Blender runs
    assert report["after_stop"] == {"threads": [], "simulation": True, "playing": True}

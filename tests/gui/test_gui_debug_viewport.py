"""URLab's debug and viewport namespaces in Blender's real user interface (issue 33):
a network client (tests/bridge/wire_client.py, the documented protocol) draws
markers that a screenshot of the 3D view then shows (red where the red marker
is, none after clear_markers) and the view as the X server shows it (the lit
floor, not black), sets the view's eye and reads it back within
1e-6, frames the model and follows a falling ball (track_actor) while the
simulation plays. tests/gui/debug_viewport_window.py is the Blender side.
The conversation runs once per module; the tests read it."""

import json
import os
import struct
import sys
import threading
import time
import zlib

import gui_x11
import numpy as np
import pytest
from addon_loader import ROOT
from gui_blender import leftover_processes, read_report, run_gui_script
from helpers import free_port

from mjblend.engine import png

sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))
from wire_client import WireClient  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BALL = """<mujoco model="drop"><option timestep="0.002"/><worldbody>
<geom name="floor" type="plane" size="3 3 .1"/>
<body name="ball" pos="0 0 2"><freejoint name="free"/><geom type="sphere" size=".1"/></body>
</worldbody></mujoco>"""
EYE = {"location": [0.0, -3.0, 1.0], "rotation_euler": [0.0, -18.43494882292201, -90.0], "fov": 60.0}
OFFSET = [0.0, -2.0, 1.0]


def decode_png(png: bytes) -> np.ndarray:
    """(height, width, 4) uint8 of an unfiltered 8-bit RGBA PNG (the bridge's screenshots)."""
    at, data, size = 8, b"", None
    while at < len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        kind, body = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            data += body
        at += 12 + length
    width, height = size
    rows = np.frombuffer(zlib.decompress(data), np.uint8).reshape(height, 1 + width * 4)
    assert not rows[:, 0].any()
    return rows[:, 1:].reshape(height, width, 4)


def red(pixels: np.ndarray) -> int:
    r, g, b = (pixels[..., i].astype(int) for i in range(3))
    return int(np.count_nonzero((r > 180) & (g < 80) & (b < 80)))


def converse(folder, port: int, out: dict) -> None:
    serving = folder / "blender-serving.json"
    deadline = time.monotonic() + 120
    while not serving.exists():
        assert time.monotonic() < deadline, "Blender never served"
        time.sleep(0.1)
    client = WireClient(port, timeout_ms=30000)
    try:
        hello = client.hello()
        out["hello"] = hello["op"]
        prefix = next(e["prefix"] for e in hello["entities"] if e["kind"] == "articulation")
        out["paused"] = client.call("set_paused", paused=True)["op"]
        out["mode"] = client.call("set_viewport_mode", mode="unlit")
        out["set"] = client.call("set_camera", **EYE)
        out["get"] = client.call("get_camera")

        def shot():
            reply = client.call("screenshot")
            assert reply["op"] == "screenshot_ok", reply
            return reply, decode_png(reply["png"])
        _reply, out["before"] = shot()
        out["line"] = client.call("draw_line", **{"from": [-0.6, 0.0, 0.6], "to": [0.6, 0.0, 0.6]},
                                  color=[1.0, 0.0, 0.0], thickness=6.0, ttl=-1.0)
        out["marker"] = client.call("draw_marker", location=[0.0, 0.0, 0.3], color=[0.0, 1.0, 0.0],
                                    label="goal", ttl=-1.0)
        out["text"] = client.call("set_overlay_text", text="MJBlend debug")
        time.sleep(0.3)
        out["drawn_reply"], out["drawn"] = shot()
        (folder / "grab-ask.json").write_text("{}")  # (Blender reads the region from the X server)
        until = time.monotonic() + 20
        while not (folder / "grab-done.json").exists():
            assert time.monotonic() < until, "Blender never grabbed the view"
            time.sleep(0.05)
        out["laid_over"] = json.loads((folder / "grab-done.json").read_text())
        out["grab"] = png.read(str(folder / "grab.png"))
        started = client.call("snapshot", image=True)  # (URLab's scene snapshot with MJBlend's image)
        assert started["op"] == "op_started", started
        job = started["job_id"]
        while (status := client.call("op_status", job_id=job))["state"] not in ("done", "failed"):
            time.sleep(0.05)
        out["snapshot"] = status
        out["cleared"] = client.call("clear_markers")
        time.sleep(0.3)
        _reply, out["after"] = shot()

        out["frame"] = client.call("frame_actor", target=prefix)
        out["framed_get"] = client.call("get_camera")
        out["ball_start"] = client.call("get_state")["arts"][prefix]["qpos"][:3]
        out["track"] = client.call("track_actor", target=prefix, offset=OFFSET, smoothing=0.0)
        # (the view moves on Blender's timer: read until it is at the ball plus the offset, or 10 s)
        wanted, until = np.add(out["ball_start"], OFFSET), time.monotonic() + 10
        while True:
            out["tracked_start"] = client.call("get_camera")
            if np.abs(np.subtract(out["tracked_start"]["location"], wanted)).max() < 1e-4:
                break
            if time.monotonic() > until:
                break
            time.sleep(0.02)
        client.call("set_paused", paused=False)
        falling = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            z = client.call("get_state")["arts"][prefix]["qpos"][2]
            falling.append((z, client.call("get_camera")["location"]))
            if z < 0.11 and len(falling) > 3:
                break
            time.sleep(0.05)
        out["falling"] = falling
        time.sleep(1.0)  # (at rest: the view has caught up)
        client.call("set_paused", paused=True)
        time.sleep(0.2)
        out["ball_end"] = client.call("get_state")["arts"][prefix]["qpos"][:3]
        out["tracked_end"] = client.call("get_camera")
        out["untrack"] = client.call("untrack")
        out["untrack_again"] = client.call("untrack")
    finally:
        client.close()
        (folder / "test-done.json").write_text("{}")


@pytest.fixture(scope="module")
def conversation(tmp_path_factory):
    folder = tmp_path_factory.mktemp("debug_viewport")
    model = folder / "ball.xml"
    model.write_text(BALL)
    port = free_port()
    env = {"MJBLEND_RESULT": str(folder / "result.json"), "MJBLEND_MODEL": str(model),
           "MJBLEND_BRIDGE_PORTS": f"{port},{free_port()}"}
    out: dict = {}
    problems: list = []

    def talk():
        try:
            converse(folder, port, out)
        except BaseException as problem:  # noqa: BLE001 -- reported by the tests
            problems.append(problem)
            (folder / "test-abort.json").write_text("{}")
    thread = threading.Thread(target=talk)
    thread.start()
    proc = run_gui_script(os.path.join(HERE, "debug_viewport_window.py"), folder, env=env, timeout=240)
    thread.join()
    report = read_report(proc, folder / "result.json")
    if problems:
        raise problems[0]
    out["report"] = report
    out["leftover"] = leftover_processes(folder)
    json.dumps(report)
    return out


def test_a_scene_snapshot_carries_the_3d_view_when_asked(conversation):
    status = conversation["snapshot"]
    assert status["state"] == "done", status
    snapshot = status["result"]
    assert snapshot["op"] == "snapshot_ok" and snapshot["actors"], snapshot.keys()
    image, drawn = snapshot["image"], conversation["drawn"]
    pixels = decode_png(image["png"])
    assert pixels.shape == (image["height"], image["width"], 4) == drawn.shape
    assert red(pixels) > 200, "the red line is not in the snapshot's image"


def test_a_screenshot_shows_the_view_as_the_screen_does(conversation):
    """The bridge's screenshot against the region read from the X server just after:
    the floor lit grey, not black (a draw callback's framebuffer has no surfaces), the
    background, the markers, their label and the overlay text, within 3 levels (but
    for a few pixels of the markers' edges)."""
    drawn, grab = conversation["drawn"][..., :3].astype(int), conversation["grab"].astype(int)
    assert drawn.shape == grab.shape
    covered = gui_x11.covered(grab.shape, conversation["laid_over"])  # (drawn over the view after it)
    assert covered.mean() < 0.2, conversation["laid_over"]
    floor = (grab.min(axis=2) > 120) & (np.ptp(grab, axis=2) < 8) & ~covered  # lit grey
    floor[:grab.shape[0] // 2] = False  # (the lower half: the floor, below the markers and their text)
    assert floor.mean() > 0.3, floor.mean()
    assert np.abs(drawn[floor] - grab[floor]).max() <= 3
    difference = np.abs(drawn - grab).max(axis=2)[~covered]
    assert np.count_nonzero(difference) < 0.01 * difference.size  # (the same but for rounding at edges)
    # (where the markers blend into the view the screenshot redoes Blender's merge from 8-bit layers,
    # undithered: near black the display curve turns that rounding into a few levels, at a few pixels)
    assert difference.max() <= 8 and np.count_nonzero(difference > 3) <= 20, \
        (difference.max(), np.count_nonzero(difference > 3))
    assert red(conversation["grab"]) > 200 and abs(red(drawn) - red(conversation["grab"])) < 20


def test_markers_drawn_show_in_a_screenshot_and_clear(conversation):
    c = conversation
    assert c["line"] == {"op": "draw_line_ok", "markers": 1}
    assert c["marker"]["op"] == "draw_marker_ok" and c["text"]["op"] == "set_overlay_text_ok"
    assert c["cleared"] == {"op": "clear_markers_ok", "cleared": 2}
    reply, drawn = c["drawn_reply"], c["drawn"]
    assert drawn.shape == (reply["height"], reply["width"], 4) and reply["width"] > 400
    assert red(c["before"]) == 0 and red(c["after"]) == 0, "red without a red marker"
    assert red(drawn) > 200, "the red line is not in the screenshot"
    # the line lies across the middle of the view (the eye looks at it from straight in front)
    rows, columns = np.nonzero((drawn[..., 0] > 180) & (drawn[..., 1] < 80) & (drawn[..., 2] < 80))
    assert abs(columns.mean() - drawn.shape[1] / 2) < drawn.shape[1] * 0.05
    green = np.count_nonzero((drawn[..., 1] > 180) & (drawn[..., 0] < 80) & (drawn[..., 2] < 80))
    assert green > 20, "the green marker is not in the screenshot"


def test_the_eye_set_reads_back(conversation):
    c = conversation
    assert c["mode"] == {"op": "set_mode_ok", "mode": "unlit"}
    for pose in (c["set"], c["get"]):
        np.testing.assert_allclose(pose["location"], EYE["location"], atol=1e-6)
        np.testing.assert_allclose(pose["rotation_euler"], EYE["rotation_euler"], atol=1e-6)
        assert pose["fov"] == pytest.approx(EYE["fov"], abs=1e-6)
    np.testing.assert_allclose(c["get"]["rotation_quat"], c["set"]["rotation_quat"], atol=1e-6)
    assert c["report"]["view"]["shading"] == "SOLID"


def test_frame_and_track_a_falling_ball(conversation):
    c = conversation
    assert c["frame"]["op"] == "frame_actor_ok"
    np.testing.assert_allclose(c["frame"]["location"], c["framed_get"]["location"], atol=1e-6)
    assert c["track"] == {"op": "track_actor_ok", "tracked_actor_path": "drop"}
    start, end = np.array(c["ball_start"]), np.array(c["ball_end"])
    assert start[2] == pytest.approx(2.0, abs=1e-6) and end[2] < 0.11
    # the eye sits at the ball plus the offset (the ball does not turn) and looks at it
    np.testing.assert_allclose(c["tracked_start"]["location"], start + OFFSET, atol=1e-4)
    np.testing.assert_allclose(c["tracked_end"]["location"], end + OFFSET, atol=1e-4)
    heights = [location[2] for _z, location in c["falling"]]
    assert heights[0] - heights[-1] > 1.0, f"the view did not follow the fall: {heights}"
    assert c["untrack"] == {"op": "untrack_ok", "was_tracking": True}
    assert c["untrack_again"] == {"op": "untrack_ok", "was_tracking": False}
    assert c["leftover"] == []


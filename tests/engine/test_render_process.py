"""engine/render_process.py: CameraRenderer in a child process, against mujoco.Renderer
in this one (real EGL, real processes, no bpy): the same pixels, the same errors, the
child at a lower priority."""

import os
import sys

import mujoco
import numpy as np
import pytest
from addon_loader import ROOT

from mjblend.engine import cameras, render_process

DESK = os.path.join(ROOT, "examples", "desk_toys.xml")
ALL = ("rgb", "depth", "segmentation")


def moved(model, steps=150):
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=steps)
    mujoco.mj_forward(model, data)  # (the poses of the state now: what CameraRenderer draws)
    return data


def reference(model, data, cam, width, height):
    """A fresh mujoco.Renderer's first frames, in the sensor path's order (update_scene,
    RGB, depth, segmentation: tests/engine/test_cameras.py says why the order matters)."""
    renderer = mujoco.Renderer(model, height, width)
    try:
        renderer.update_scene(data, cam)
        rgb = renderer.render()
        renderer.enable_depth_rendering()
        depth = renderer.render()
        renderer.enable_segmentation_rendering()
        seg = renderer.render()
        return rgb, depth, seg
    finally:
        renderer.close()


def test_frames_from_the_child_equal_mujoco_renderer_bit_for_bit():
    model = mujoco.MjModel.from_xml_path(DESK)
    data = moved(model)
    with render_process.ProcessRenderer(model) as renderer:
        frame = renderer.render(data, "overview", ALL, 320, 240)
        later = renderer.render(moved(model, 300), "overview", ("depth",), 160, 120)
    rgb, depth, seg = reference(model, data, "overview", 320, 240)
    assert frame.rgb.dtype == np.uint8 and np.array_equal(frame.rgb, rgb)
    assert np.array_equal(frame.depth.view(np.uint32), depth.view(np.uint32))
    assert np.array_equal(frame.segmentation, seg) and len(np.unique(seg[..., 0])) > 3
    assert frame.sim_time == data.time and frame.camera.name == "overview"
    assert type(frame) is cameras.Frame and type(frame.camera) is cameras.Camera  # (this side's classes)
    assert np.array_equal(frame.K, cameras.camera(model, "overview").K(320, 240))
    assert later.depth.shape == (120, 160) and later.rgb is None and later.sim_time > frame.sim_time


def test_errors_come_back_as_they_were_raised_and_the_child_goes_on():
    model = mujoco.MjModel.from_xml_path(DESK)
    data = moved(model)
    with render_process.ProcessRenderer(model) as renderer:
        with pytest.raises(cameras.CameraError, match="No camera 'nope'.*overview"):
            renderer.render(data, "nope")
        with pytest.raises(cameras.CameraError, match="offwidth"):
            renderer.render(data, "overview", width=100000, height=10)
        assert renderer.render(data, "overview", width=32, height=24).rgb.shape == (24, 32, 3)
        process = renderer._process
    assert process.poll() is not None  # closed: the child has ended


def test_a_renderer_that_cannot_start_in_the_child_says_what_to_set(monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "glfw")  # (the child inherits it: no display, no GLFW window)
    monkeypatch.setenv("DISPLAY", "")
    monkeypatch.setenv("WAYLAND_DISPLAY", "")
    model = mujoco.MjModel.from_xml_path(DESK)
    with render_process.ProcessRenderer(model) as renderer:
        with pytest.raises(cameras.RendererUnavailable, match="MUJOCO_GL=glfw.*MUJOCO_GL=egl"):
            renderer.render(mujoco.MjData(model), "overview")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_child_draws_at_a_lower_priority_with_cores_left_to_the_physics():
    """What keeps it out of the simulation's way (engine/render_process.py measures it):
    nice 10 more than this process, llvmpipe told to leave two cores, EGL on Linux."""
    model = mujoco.MjModel.from_xml_path(DESK)
    with render_process.ProcessRenderer(model) as renderer:
        renderer.render(moved(model), "overview", width=32, height=24)
        pid = renderer._process.pid
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0)
                                                           + render_process.NICE)
        with open(f"/proc/{pid}/environ", "rb") as fh:
            environment = dict(item.split(b"=", 1) for item in fh.read().split(b"\0") if b"=" in item)
    threads = os.environ.get("LP_NUM_THREADS", str(max(1, min((os.cpu_count() or 1) - 2, 8))))
    assert environment[b"LP_NUM_THREADS"] == threads.encode()
    assert environment[b"MUJOCO_GL"] == os.environ.get("MUJOCO_GL", "egl").encode()

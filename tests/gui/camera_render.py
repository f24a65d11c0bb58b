"""Runs inside Blender's real user interface (Debian's blender under Xvfb), MJBlend
installed from its zip, with no MUJOCO_GL in the environment: the backend the add-on
chose (EGL on Linux) draws MuJoCo camera images beside Blender's own OpenGL window,
on the main thread and on a RenderWorker thread beside a running runner; each frame
is compared with mujoco.Renderer's, and the viewport is screenshotted afterwards.

Usage (tests/gui/test_gui_camera_render.py does this):
    xvfb-run blender start.blend --python-use-system-env --python camera_render.py
"""

import importlib
import os
import statistics
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import ADDON, SCREENSHOT, report, run_steps, screenshot_view  # noqa: E402

SCENE = """<mujoco>
  <visual><global offwidth="320" offheight="240"/></visual>
  <worldbody>
    <light pos="0 0 3"/>
    <geom type="plane" size="2 2 0.1" rgba="0.3 0.5 0.7 1"/>
    <body pos="0 0 0.6"><freejoint/><geom type="box" size="0.2 0.2 0.2" rgba="0.9 0.4 0.1 1"/></body>
    <camera name="eye" pos="0 -1.5 1" xyaxes="1 0 0 0 0.6 0.8" resolution="320 240"/>
  </worldbody>
</mujoco>"""
ALL = ("rgb", "depth", "segmentation")


def reference(mujoco, model, data):
    """mujoco.Renderer's RGB, depth and segmentation, in CameraRenderer's call order."""
    renderer = mujoco.Renderer(model, 240, 320)
    renderer.update_scene(data, "eye")
    rgb = renderer.render()
    renderer.enable_depth_rendering()
    depth = renderer.render()
    renderer.disable_depth_rendering()
    renderer.enable_segmentation_rendering()
    segmentation = renderer.render()
    renderer.close()
    return rgb, depth, segmentation


def reference_on_thread(mujoco, model, data):
    """`reference`, drawn on a thread of its own (no other API's context current there)."""
    out = []
    thread = threading.Thread(target=lambda: out.append(reference(mujoco, model, data)))
    thread.start()
    thread.join()
    return out[0]


def same(frame, images) -> bool:
    ours = (frame.rgb, frame.depth, frame.segmentation)
    return all(np.array_equal(a, b) for a, b in zip(ours, images, strict=True))


def steps():
    import mujoco  # (the extension's, imported by its register after it chose MUJOCO_GL)

    cameras = importlib.import_module(ADDON + ".engine.cameras")
    gl_backend = importlib.import_module(ADDON + ".engine.gl_backend")
    commands = importlib.import_module(ADDON + ".engine.commands")
    runner_module = importlib.import_module(ADDON + ".engine.runner")
    session_module = importlib.import_module(ADDON + ".engine.session")
    report["mujoco_gl"] = os.environ.get("MUJOCO_GL")
    report["taken"] = gl_backend.taken()
    report["gl_context"] = sys.modules["mujoco.rendering.classic.gl_context"].GLContext.__module__
    report["mujoco_file"] = mujoco.__file__
    report["OpenGL_file"] = sys.modules["OpenGL"].__file__

    model = mujoco.MjModel.from_xml_string(SCENE)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    # On Blender's main thread, its window open: Blender's own context is current there.
    import ctypes
    import gpu
    report["blender_gpu"] = gpu.platform.backend_type_get()
    glx = ctypes.CDLL("libGLX.so.0")
    glx.glXGetCurrentContext.restype = ctypes.c_void_p
    report["glx_current_on_main"] = bool(glx.glXGetCurrentContext())
    try:
        with cameras.CameraRenderer(model) as renderer:
            times = []
            for _ in range(10):
                start = time.perf_counter()
                frame = renderer.render(data, "eye", ALL)
                times.append(time.perf_counter() - start)
        report["main_thread_equal"] = same(frame, reference(mujoco, model, data))
        report["main_thread_ms"] = 1000 * statistics.median(times)  # RGB + depth + segmentation, 320 x 240
        report["main_thread_error"] = None
    except cameras.RendererUnavailable as exc:
        report["main_thread_error"] = str(exc)
    yield 0.2

    # On a RenderWorker thread beside a running runner (the box falls).
    runner = runner_module.Runner(session_module.EngineSession(model), threaded=True)
    worker = cameras.RenderWorker(lambda: runner.latest)
    runner.listen(lambda _snapshot: worker.notify())
    runner.start()
    worker.start()
    try:
        worker.request(cameras.Request(("eye",), kinds=ALL))
        runner.send(commands.Play())
        start = time.perf_counter()
        while worker.frame_id < 10 and worker.error is None and time.perf_counter() - start < 30:
            yield 0.1  # (Blender's UI keeps running meanwhile)
        report["worker_frames"] = worker.frame_id
        report["worker_fps"] = worker.fps
        runner.wait(runner.send(commands.Pause()), timeout=5)
        snap = runner.latest
        asked = worker.request(cameras.Request(("eye",), kinds=ALL, continuous=False))
        assert worker.wait_request(asked, timeout=10), worker.error
        frame = worker.latest("eye")
        state = mujoco.MjData(model)
        state.qpos[:], state.qvel[:], state.time = snap.qpos, snap.qvel, snap.time
        mujoco.mj_forward(model, state)
        report["worker_equal"] = same(frame, reference_on_thread(mujoco, model, state))
        report["geoms_seen"] = sorted(set(np.unique(frame.segmentation[..., 0]).tolist()) - {-1})
        report["worker_sim_time"] = [frame.sim_time, snap.time]
    finally:
        report["worker_stopped"] = worker.stop()
        runner.stop()
    report["worker_error"] = repr(worker.error) if worker.error else None
    # Blender's own drawing goes on beside MuJoCo's EGL contexts.
    if SCREENSHOT:
        screenshot_view(SCREENSHOT)
    yield 0.1


run_steps(steps)

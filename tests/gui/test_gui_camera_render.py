"""MuJoCo's renderer inside Blender's real user interface (issue 32): with no MUJOCO_GL
in Blender's environment, the installed extension's own choice (EGL on Linux) draws
camera images beside Blender's OpenGL window on a render thread beside a running
simulation, mujoco.Renderer's bit for bit. On Blender's main thread, which holds its
window's GLX context, EGL cannot be made current: a clear RendererUnavailable says to
render on a thread of its own, and a camera dataset made from the window does
(cameras.RenderThread)."""

import json
import os

import numpy as np
import pytest
from gui_blender import assert_real_screenshot, leftover_processes, run_reporting_script


def run_without_mujoco_gl(tmp_path_factory, script, env):
    with pytest.MonkeyPatch.context() as patch:
        # (tests/conftest.py sets MUJOCO_GL=egl for this process: Blender must not inherit it)
        patch.delenv("MUJOCO_GL", raising=False)
        patch.delenv("PYOPENGL_PLATFORM", raising=False)
        return run_reporting_script(tmp_path_factory, script, env=env)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return run_without_mujoco_gl(tmp_path_factory, "camera_render.py",
                                 lambda folder: {"MJBLEND_SCREENSHOT": str(folder / "view.png")})


@pytest.mark.gui
def test_the_add_on_chooses_egl_and_the_bundled_pyopengl_draws(rendered):
    proc, report, folder = rendered
    assert report["mujoco_gl"] == "egl" and report["taken"] == "egl", report
    assert report["gl_context"] == "mujoco.egl", report
    # mujoco and PyOpenGL from the wheels Blender unpacked for the extension
    for name in ("mujoco_file", "OpenGL_file"):
        assert "/extensions/.local/lib/python" in report[name], report[name]


@pytest.mark.gui
def test_camera_frames_equal_mujoco_renderer_on_a_render_thread(rendered):
    proc, report, folder = rendered
    assert report["worker_error"] is None and report["worker_stopped"], report
    assert report["worker_frames"] >= 10 and report["worker_equal"], report
    assert report["geoms_seen"] == [0, 1], report
    frame_time, snapshot_time = report["worker_sim_time"]
    assert frame_time == snapshot_time > 0, report
    print(f"\n{report['blender']}: 320 x 240 RGB + depth + segmentation on a RenderWorker thread beside "
          f"the UI and a running simulation: {report['worker_fps']:.1f} frames/s")


@pytest.mark.gui
def test_blenders_main_thread_is_refused_with_a_clear_message(rendered):
    """Blender draws with OpenGL here (GLX, current on its main thread): EGL refuses that
    thread (EGL_BAD_ACCESS) and the error says where to render instead."""
    proc, report, folder = rendered
    assert report["blender_gpu"] == "OPENGL" and report["glx_current_on_main"], report
    message = report["main_thread_error"]
    assert message and "cannot start on this thread" in message and "RenderWorker" in message, report


@pytest.mark.gui
def test_blender_still_draws_its_window(rendered):
    proc, report, folder = rendered
    assert_real_screenshot(folder / "view.png")
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


@pytest.mark.gui
def test_a_camera_dataset_made_from_the_window_renders_with_mujoco(tmp_path_factory):
    """The Camera Dataset operator in the 3D view's context, on Blender's main thread:
    MuJoCo's renderer runs on a thread of its own and every frame is written."""
    proc, report, folder = run_without_mujoco_gl(tmp_path_factory, "dataset_window.py",
                                                 lambda folder: {"MJBLEND_DATASET": str(folder / "set")})
    assert report["imported"] == report["baked"] == report["dataset"] == ["FINISHED"], report
    manifest = json.loads((folder / "set" / "manifest.json").read_text())
    assert manifest["complete"] and manifest["renderer"]["name"] == "mujoco", manifest
    assert manifest["renderer"]["MUJOCO_GL"] == "egl", manifest
    assert len(manifest["frames"]) >= 5, manifest
    for camera in ("top", "side"):
        for kind in ("rgb", "depth", "segmentation"):
            assert len(os.listdir(folder / "set" / camera / kind)) == len(manifest["frames"]), (camera, kind)
    depth = np.load(folder / "set" / "top" / "depth" / f"{manifest['frames'][0]:06d}.npy")
    assert depth.dtype == np.float32 and np.isfinite(depth).all() and depth.min() > 0, depth
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]

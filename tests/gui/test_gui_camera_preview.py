"""The camera preview in Blender's real user interface (issue 32): desk_toys plays on
the physics thread with the preview of its 'overview' camera on, first from MuJoCo's
renderer, then from Blender's; the preview's own timer uploads the frames, the Camera
panel draws, the image is in the viewport's top left corner of the screenshot, and
the render thread ends with the preview and with the simulation.

The extension zip does not bundle PyOpenGL (mujoco.Renderer's EGL backend needs it):
in an installed MJBlend MuJoCo's renderer cannot start, and the preview must say so,
the simulation going on at real time. Once the zip bundles it, the same test wants
MuJoCo's frames instead."""

import os
import shutil

import numpy as np
import pytest
from addon_loader import ROOT
from gui_blender import assert_real_screenshot, leftover_processes, run_reporting_script, screenshot_pixels


@pytest.fixture(scope="module")
def previewed(tmp_path_factory):
    import OpenGL  # (the driver's own PyOpenGL, pure Python: offered to Blender's Python in a folder)

    offered = tmp_path_factory.mktemp("pyopengl")
    os.symlink(os.path.dirname(OpenGL.__file__), offered / "OpenGL")
    return run_reporting_script(tmp_path_factory, "camera_preview_view.py",
                                env=lambda folder: {"MJBLEND_SCREENSHOT": str(folder / "preview.png"),
                                                    "MJBLEND_PYOPENGL": str(offered)})


def drawn_like_the_frame(pixels, shown) -> float:
    """Mean absolute difference (0-1) between the frame and the screenshot pixels at each
    frame pixel's centre, where the image is drawn (scaled by the UI scale)."""
    x, y, w, h = shown["rect"]
    width, height = shown["frame"][:2]
    frame = np.array(shown["rgb"], dtype=float).reshape(height, width, 3) / 255
    rows = (y + (np.arange(height) + 0.5) * h / height).astype(int)
    columns = (x + (np.arange(width) + 0.5) * w / width).astype(int)
    return float(np.abs(pixels[rows][:, columns] - frame).mean())


@pytest.mark.gui
def test_the_preview_shows_the_camera_while_playing(previewed):
    proc, report, folder = previewed
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "MJBLEND_PT_camera_preview" in report["drawn"]  # the Camera panel drew, without an error
    # MuJoCo's renderer: its frames, or (no PyOpenGL in the zip) why not, and nothing else changed
    message, alert = report["mujoco_status"]
    if report["mujoco_frame"] is not None:
        assert not alert and report["mujoco_frame"][:2] == [160, 120] and report["mujoco_fps"] > 0
    else:
        assert alert and "MuJoCo's renderer cannot start" in message and "OpenGL" in message, message
        assert report["mujoco_threads"] == []  # (its thread and process ended; no retry until a change)
    assert report["speed"] > 0.9  # (real time, the preview beside it, on a busy software-rendering machine)
    # Blender's renderer: frames on the main thread, drawn in the viewport's corner
    assert report["status"] == ["", False], report["status"]
    assert report["frame"] is not None and report["frame"][:2] == [160, 120]
    assert report["image"] == [160, 120] and report["threads"] == []
    times = [t for _id, t in report["frames"]]
    assert len(set(times)) >= 3 and times == sorted(times)  # it follows the simulation
    assert report["fps"][0] > 0
    assert report["threads_off"] == [] and not report["image_off"] and report["threads_stopped"] == []
    picture = folder / "preview.png"
    assert_real_screenshot(picture)
    pixels = screenshot_pixels(picture)
    assert drawn_like_the_frame(pixels, report) < 0.08  # the frame's pixels, as drawn
    if os.environ.get("MJBLEND_UPDATE_DOCS") == "1":
        shutil.copyfile(picture, os.path.join(ROOT, "docs", "images", "camera_preview.png"))


@pytest.mark.gui
def test_with_pyopengl_the_mujoco_preview_comes_from_its_render_process(previewed):
    """PyOpenGL on Blender's sys.path (as installed into Blender's Python): a changed
    request starts MuJoCo's renderer again; its frames follow the simulation, drawn in
    the corner, the simulation at real time beside the render process."""
    _proc, report, folder = previewed
    mujoco = report["pyopengl"]
    assert mujoco["status"] == ["", False], mujoco["status"]
    assert mujoco["frame"][:2] == [160, 120] and mujoco["image"] == [160, 120]
    assert len(mujoco["threads"]) == 1 and mujoco["fps"][0] > 0
    times = [t for _id, t in report["pyopengl_frames"]]
    assert len(set(times)) >= 3 and times == sorted(times)
    assert report["pyopengl_speed"] > 0.9
    picture = folder / "preview_mujoco.png"
    assert_real_screenshot(picture)
    assert drawn_like_the_frame(screenshot_pixels(picture), mujoco) < 0.08

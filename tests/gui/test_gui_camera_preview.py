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
    return run_reporting_script(tmp_path_factory, "camera_preview_view.py",
                                env=lambda folder: {"MJBLEND_SCREENSHOT": str(folder / "preview.png")})


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
    x, y, w, h = report["rect"]
    height, width = report["frame"][1], report["frame"][0]
    frame = np.array(report["rgb"], dtype=float).reshape(height, width, 3) / 255
    # the image as drawn (scaled by the UI scale): the screenshot pixel at each frame pixel's centre
    rows = (y + (np.arange(height) + 0.5) * h / height).astype(int)
    columns = (x + (np.arange(width) + 0.5) * w / width).astype(int)
    shown_image = pixels[rows][:, columns]
    assert np.abs(shown_image - frame).mean() < 0.08  # the frame's pixels, as drawn
    if os.environ.get("MJBLEND_UPDATE_DOCS") == "1":
        shutil.copyfile(picture, os.path.join(ROOT, "docs", "images", "camera_preview.png"))

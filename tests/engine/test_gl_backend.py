"""The OpenGL backend the add-on asks MuJoCo's renderer for (engine/gl_backend.py): this
platform's default unless the user set MUJOCO_GL, and a clear RendererUnavailable when
mujoco was imported (by someone else) before the add-on could choose. Real mujoco,
real renderers, in child processes: the backend is fixed at mujoco's first import."""

import os
import platform
import subprocess
import sys
import threading

import mujoco
import numpy as np
import pytest
from mjblend.engine import cameras, gl_backend

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(script, **env):
    """Run `script` in a fresh Python (tests/ on the path, no MUJOCO_GL unless given, no display)."""
    base = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM")}
    base.update(DISPLAY="", WAYLAND_DISPLAY="",
                PYTHONPATH=os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")]), **env)
    out = subprocess.run([sys.executable, "-c", "import addon_loader\n" + script], env=base,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_each_platform_gets_a_backend_mujoco_knows():
    # (mujoco's gl_context.py: egl / osmesa / glx are Linux's, cgl macOS's; glfw everywhere)
    assert gl_backend.DEFAULTS == {"Linux": "egl", "Darwin": "cgl", "Windows": "glfw"}
    for system, backend in gl_backend.DEFAULTS.items():
        assert f"MUJOCO_GL={backend}" in gl_backend.CHOICES[system]


def test_the_default_is_chosen_only_where_the_user_set_none(monkeypatch):
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    assert gl_backend.choose() == gl_backend.DEFAULTS[platform.system()]
    assert os.environ["MUJOCO_GL"] == gl_backend.DEFAULTS[platform.system()]
    monkeypatch.setenv("MUJOCO_GL", "osmesa")  # the user's own wins
    assert gl_backend.choose() == "osmesa" and os.environ["MUJOCO_GL"] == "osmesa"


def test_chosen_before_mujoco_is_imported_it_renders():
    """No MUJOCO_GL, no display: the add-on's choice (EGL here) is what mujoco takes, and
    a camera renders as mujoco.Renderer draws it."""
    out = child("""
from mjblend.engine import gl_backend
print("CHOSE", gl_backend.choose())
import mujoco, numpy as np
from mjblend.engine import cameras
model = mujoco.MjModel.from_xml_string(
    "<mujoco><worldbody><geom size='1'/><camera name='c' pos='0 0 5'/></worldbody></mujoco>")
data = mujoco.MjData(model)
mujoco.mj_forward(model, data)
with cameras.CameraRenderer(model) as renderer:
    frame = renderer.render(data, "c", ("rgb",), width=32, height=24)
reference = mujoco.Renderer(model, 24, 32)
reference.update_scene(data, "c")
import sys
print("TAKEN", gl_backend.taken(), sys.modules["mujoco.rendering.classic.gl_context"].GLContext.__module__,
      np.array_equal(frame.rgb, reference.render()), len(np.unique(frame.rgb)))
""")
    chose = gl_backend.DEFAULTS[platform.system()]
    assert f"CHOSE {chose}" in out
    taken = out.split("TAKEN ")[1].split()
    assert taken[:3] == [chose, f"mujoco.{chose}", "True"] and int(taken[3]) > 1, out


def test_mujoco_imported_first_with_another_backend_is_named():
    """Another add-on imported mujoco before MJBlend chose (MUJOCO_GL unset then: glfw,
    which needs a display): the error says so, and what to start Blender with."""
    out = child("""
import mujoco  # someone else's import, before the add-on registers
from mjblend.engine import cameras, gl_backend
gl_backend.choose()
model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><camera name='c'/></worldbody></mujoco>")
try:
    cameras.CameraRenderer(model).render(mujoco.MjData(model), "c")
except cameras.RendererUnavailable as exc:
    print("MESSAGE", exc)
""")
    assert "MESSAGE" in out, out
    assert "imported before MJBlend could choose" in out and "MUJOCO_GL was unset" in out, out
    assert f"Start Blender with MUJOCO_GL={gl_backend.DEFAULTS[platform.system()]}" in out, out


def test_a_render_thread_renders_as_mujoco_renderer_on_a_thread_of_its_own():
    """cameras.RenderThread (for callers on Blender's main thread in a window, where no
    backend may take the thread: tests/gui/test_gui_camera_render.py): its frames are
    mujoco.Renderer's, drawn on its own thread; errors reach the caller."""
    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><light pos='0 0 3'/><geom type='plane' size='2 2 .1'/>"
        "<geom type='box' size='.2 .2 .2' pos='0 0 .2' rgba='1 .5 0 1'/>"
        "<camera name='eye' pos='0 -1.5 1' xyaxes='1 0 0 0 .6 .8'/></worldbody></mujoco>")
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with cameras.RenderThread(model) as thread:
        frame = thread.render(data, "eye", ("rgb", "depth", "segmentation"), 64, 48)
        where = thread.call(threading.current_thread)
        with pytest.raises(cameras.CameraError, match="nope"):
            thread.render(data, "nope")
        assert thread.render(data, "eye", width=64, height=48).rgb.shape == (48, 64, 3)  # still serves
    thread.close()  # (a second close does nothing)
    assert where is not threading.current_thread() and where.name.startswith("MJBlend renderer")
    reference = mujoco.Renderer(model, 48, 64)
    reference.update_scene(data, "eye")
    rgb = reference.render()
    reference.enable_depth_rendering()
    depth = reference.render()
    reference.disable_depth_rendering()
    reference.enable_segmentation_rendering()
    segmentation = reference.render()
    reference.close()
    assert np.array_equal(frame.rgb, rgb) and np.array_equal(frame.depth, depth)
    assert np.array_equal(frame.segmentation, segmentation)

"""Which OpenGL backend MuJoCo's renderer (`mujoco.Renderer`, engine/cameras.py) uses,
and why it cannot start. Standard library only: it runs before mujoco is imported.

MuJoCo reads `MUJOCO_GL` once, when mujoco is first imported, and keeps that
backend for the life of the process. Inside Blender nobody sets it, and mujoco's
own default (glfw, a hidden window) needs a display on Linux, so the add-on
asks for one that works in Blender on each platform (`choose`, before
its first `import mujoco`): DEFAULTS. A user's own MUJOCO_GL wins.

Inside Blender's window, render on a thread of its own (RenderWorker): Blender's
main thread holds its window's OpenGL context, beside which EGL cannot be made
current (libglvnd: EGL_BAD_ACCESS; measured in Debian's Blender 5.2 under Xvfb),
and CGL / glfw would replace it as the thread's current context. In the bpy
module and `blender --background` there is no window and the main thread renders.
"""

from __future__ import annotations

import os
import platform
import sys

# platform.system() -> MUJOCO_GL the add-on asks for. Linux: EGL (a GPU driver's, or
# Mesa's, software included) works headless and beside Blender's own GL context; macOS:
# CGL, Apple's offscreen context; Windows: glfw, MuJoCo's only backend there (it has no
# WGL module of its own). The extension zips bundle what they import: PyOpenGL (EGL,
# OSMesa) and glfw.
DEFAULTS = {"Linux": "egl", "Darwin": "cgl", "Windows": "glfw"}
# Each platform's backends, for the message when none starts (mujoco's gl_context.py).
CHOICES = {
    "Linux": "MUJOCO_GL=egl (a GPU driver's or Mesa's EGL), MUJOCO_GL=osmesa (software) or "
             "MUJOCO_GL=glfw (needs a display)",
    "Darwin": "MUJOCO_GL=cgl or MUJOCO_GL=glfw",
    "Windows": "MUJOCO_GL=glfw",
}
# What mujoco takes where MUJOCO_GL is unset (its gl_context.py).
UNSET = {"Linux": "glfw, which needs a display", "Darwin": "cgl, else glfw", "Windows": "glfw"}
_GL_CONTEXT = "mujoco.rendering.classic.gl_context"  # the module that picks, at import


def choose() -> str | None:
    """Ask for this platform's backend (DEFAULTS) unless MUJOCO_GL is already set;
    return the MUJOCO_GL now in force. Only takes effect if mujoco is not imported yet
    (`taken` says what it read then)."""
    default = DEFAULTS.get(platform.system())
    if default:
        os.environ.setdefault("MUJOCO_GL", default)
    return os.environ.get("MUJOCO_GL")


def _normal(value: str | None) -> str:
    return (value or "").lower().strip()


def taken() -> str | None:
    """The MUJOCO_GL mujoco read when it was imported ("" for unset), or None when
    mujoco's renderer module is not loaded (or this mujoco does not say)."""
    module = sys.modules.get(_GL_CONTEXT)
    value = getattr(module, "_MUJOCO_GL", None)
    return None if value is None else _normal(value)


def explain(exc: BaseException) -> str:
    """Why mujoco.Renderer could not start (`exc`, what it raised) and what to change."""
    system = platform.system()
    asked = _normal(os.environ.get("MUJOCO_GL"))
    read = taken()
    shown = read if read is not None else asked
    backend = f"MUJOCO_GL={shown}" if shown else f"MUJOCO_GL unset ({UNSET.get(system, 'glfw')})"
    text = f"MuJoCo's renderer cannot start: no OpenGL context with {backend} ({type(exc).__name__}: {exc})."
    if read is not None and read != asked:
        # Someone imported mujoco before MJBlend chose (another add-on, a startup script):
        # mujoco keeps what it read then, whatever MUJOCO_GL says now.
        return (f"{text} mujoco was imported before MJBlend could choose its backend (by another add-on "
                f"or a script), when MUJOCO_GL was {read or 'unset'}, and keeps that backend until "
                f"Blender restarts. Start Blender with MUJOCO_GL={asked or DEFAULTS.get(system, 'egl')} "
                f"in its environment, or let MJBlend load before whatever imports mujoco.")
    if "EGL_BAD_ACCESS" in str(exc):
        # libglvnd's EGL refuses a thread where another window system's context is current:
        # Blender's main thread, which holds its window's (GLX) context.
        return (f"MuJoCo's renderer cannot start on this thread: another OpenGL context is current here "
                f"(Blender's own window, on its main thread), and EGL cannot share a thread with it "
                f"({type(exc).__name__}: EGL_BAD_ACCESS). Render MuJoCo images on a thread of their "
                f"own (engine.cameras.RenderWorker).")
    missing = ""
    if isinstance(exc, ImportError) or "Failed to import OpenGL backend" in str(exc):
        missing = (" The backend's Python package is missing: the MJBlend extension zip bundles "
                   "PyOpenGL and glfw; a development checkout needs them installed (pip install "
                   "PyOpenGL glfw).")
    return (f"{text}{missing} Set {CHOICES.get(system, 'MUJOCO_GL=egl or MUJOCO_GL=osmesa')} in the "
            f"environment before Blender (or Python) starts: MuJoCo picks its backend once, when it "
            f"is first imported. PyOpenGL must be installed for EGL and OSMesa.")

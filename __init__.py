# SPDX-License-Identifier: GPL-3.0-or-later
"""MJBlend: Blender as a MuJoCo scene editor and simulator.

This file only registers the add-on (app/registration.py does the work); the
folders are the pipeline's stages, each named for its job in its __init__.py
(map: docs/developing.md, "Layout"). Blender (4.2 or newer) reads the
extension's name, version and requirements from blender_manifest.toml.
"""

from .engine import gl_backend  # (the standard library only: no mujoco needed)
from .engine.errors import MJBlendError  # (the standard library only: no mujoco needed)


class MuJoCoMissing(MJBlendError, ImportError):
    """Blender's Python cannot import mujoco (no bundled wheel fits this Blender,
    or the folder was enabled without the extension's wheels)."""


def _require_mujoco():
    """Raise one clear message when Blender's Python has no MuJoCo bindings.

    The extension zip bundles the mujoco-core wheel; this folder enabled without
    the zip's wheels (a development checkout) needs it installed by hand.
    """
    try:
        import mujoco  # noqa: F401
    except ImportError as exc:
        import sys

        from .components.schema_table import MUJOCO_VERSION

        raise MuJoCoMissing(
            f"MJBlend needs MuJoCo's Python bindings, which this Blender's Python cannot import "
            f"({exc}). Install the MJBlend extension zip, which bundles them, or install them into "
            f"this Blender's Python with:  \"{sys.executable}\" -m pip install "
            f"mujoco-core=={MUJOCO_VERSION}. Nothing was registered.") from None


def register():
    # MuJoCo's renderer backend (camera sensors) is read once, at mujoco's first import:
    # choose this platform's (EGL / CGL / glfw) before that, unless the user set MUJOCO_GL.
    gl_backend.choose()
    _require_mujoco()  # before anything is registered: no half-enabled add-on
    from .app import registration

    registration.register()


def unregister():
    from .app import registration

    registration.unregister()

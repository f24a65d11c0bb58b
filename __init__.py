# SPDX-License-Identifier: GPL-3.0-or-later
"""MJBlend: Blender as a MuJoCo scene editor and simulator.

This file only registers the add-on (app/registration.py does the work); the
folders are the pipeline's stages, each named for its job in its __init__.py
(map: docs/developing.md, "Layout").
"""

# Read by Blender 3.4 - 4.1, which load this folder as a legacy add-on.
# Blender 4.2+ reads blender_manifest.toml instead.
bl_info = {
    "name": "MJBlend",
    "author": "MJBlend developers",
    "version": (0, 1, 0),
    "blender": (3, 4, 0),
    "location": "File > Import/Export, Properties > Object > MuJoCo",
    "description": "MuJoCo scene editor and simulator",
    "category": "Physics",
}


class MuJoCoMissing(ImportError):
    """Blender's Python cannot import mujoco (a legacy install without it)."""


def _require_mujoco():
    """Raise one clear message when Blender's Python has no MuJoCo bindings.

    The extension zip (Blender 4.2+) bundles the mujoco-core wheel; a Blender
    that loads this folder as a legacy add-on needs it installed by hand.
    """
    try:
        import mujoco  # noqa: F401
    except ImportError as exc:
        import sys

        from .components.schema_table import MUJOCO_VERSION

        raise MuJoCoMissing(
            f"MJBlend needs MuJoCo's Python bindings, which this Blender's Python cannot import "
            f"({exc}). Install them with:  \"{sys.executable}\" -m pip install "
            f"mujoco-core=={MUJOCO_VERSION}  (or, on Blender 4.2 and later, install the MJBlend "
            f"extension zip, which bundles them). Nothing was registered.") from None


def register():
    _require_mujoco()  # before anything is registered: no half-enabled add-on
    from .app import registration

    registration.register()


def unregister():
    from .app import registration

    registration.unregister()

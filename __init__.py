# SPDX-License-Identifier: GPL-3.0-or-later
"""MJBlend: Blender as a MuJoCo scene editor and simulator.

This file only registers the add-on; everything else lives in the packages
named in ARCHITECTURE.md (components/, engine/, importer/, operators/, addon/).
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


def register():
    from .addon import registration

    registration.register()


def unregister():
    from .addon import registration

    registration.unregister()

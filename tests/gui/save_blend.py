"""Runs in Debian's Blender without a window: `blender --background --python
save_blend.py -- MODEL OUT.blend`. Enables MJBlend (installed from its zip),
imports MODEL with File > Import and saves the scene as OUT.blend."""

import os
import sys

import addon_utils
import bpy

model_path, blend_path = sys.argv[sys.argv.index("--") + 1:][:2]
errors = []
addon_utils.enable(os.environ["MJBLEND_ADDON"], default_set=True, handle_error=errors.append)
assert not errors, errors
for obj in list(bpy.data.objects):
    bpy.data.objects.remove(obj)
assert bpy.ops.import_scene.mjcf(filepath=model_path) == {"FINISHED"}
bpy.ops.wm.save_as_mainfile(filepath=blend_path)

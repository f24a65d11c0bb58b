# SPDX-License-Identifier: GPL-3.0-or-later
"""Where Blender's Python API differs between the Blenders MJBlend runs on.

Tested: Blender 4.2 LTS, 4.5 LTS, 5.0, 5.1 and 5.2 LTS (blender_manifest.toml
asks for 4.2 or newer). Every version difference the add-on cares about is one
name here, with the version that changed it; the rest of the code asks these
names and never `bpy.app.version` or `hasattr` on Blender's types. A change made
at or before 4.2 is no flag: the code takes the new API as it is.

5.1 and 5.2 need no name here (issue 29): no API the add-on calls changed from
5.0 (the suite passes on bpy 5.1.2 and 5.2.3, and Blender raises no
DeprecationWarning in it). What did change is handled the same way on every
release: their Python is 3.13 and their numpy 2 (no str times a numpy bool);
5.2's viewport draws no instance of a source hidden with hide_viewport (the Fast
display hides its sources per view layer); 5.2's image shader reads a texture's
colour as sRGB (the overlay labels hold straight alpha on whole pixels).
"""

import bpy

VERSION = bpy.app.version

# ------------------------------------------------------------------ meshes

# 4.5: free custom normals are a float3 "custom_normal" corner attribute; before,
# Mesh.normals_split_custom_set on smooth faces.
FREE_NORMALS = VERSION >= (4, 5, 0)
# 4.3: Mesh.vertices.foreach_set("co", ...) tags the mesh for the depsgraph itself
# (4.2.23 does not, 4.3.0 does; an attribute's foreach_set tags it on 4.5 and 5.0,
# not on 4.2.23); before, the evaluated mesh kept its old positions until
# Mesh.update().
POSITIONS_WRITE_TAGS = VERSION >= (4, 3, 0)

# ------------------------------------------------------------------ animation

# 4.4: slotted Actions: F-Curves live in a layer's keyframe strip, in the channelbag
# of the slot the animated datablock uses (5.0 removed Action.fcurves).
SLOTTED_ACTIONS = VERSION >= (4, 4, 0)

# ------------------------------------------------------------------ rendering

# 5.0: EEVEE's render engine is "BLENDER_EEVEE" again; 4.2 - 4.5 name EEVEE Next
# "BLENDER_EEVEE_NEXT" (seen in RenderSettings.engine's items of bpy 4.2.23 and 4.5.15).
EEVEE_NEXT_NAME = VERSION < (5, 0, 0)
EEVEE = "BLENDER_EEVEE_NEXT" if EEVEE_NEXT_NAME else "BLENDER_EEVEE"  # (the engine's name here)
# 5.0: an image format's media type (ImageFormatSettings.media_type) picks a multilayer
# OpenEXR ("MULTI_LAYER_IMAGE"); before, file_format "OPEN_EXR_MULTILAYER" did, and
# 5.0's file_format no longer lists it until the media type is set.
IMAGE_MEDIA_TYPE = VERSION >= (5, 0, 0)

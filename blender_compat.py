# SPDX-License-Identifier: GPL-3.0-or-later
"""Where Blender's Python API differs between the Blenders MJBlend runs on.

Tested: Blender 4.2 LTS, 4.5 LTS and 5.0 (the bpy module from PyPI, headless)
and Debian's Blender 3.4 (the GUI tier, which loads MJBlend as a legacy
add-on). Every version difference the add-on cares about is one name here,
with the version that changed it; the rest of the code asks these names and
never `bpy.app.version` or `hasattr` on Blender's types.
"""

import bpy

VERSION = bpy.app.version

# ------------------------------------------------------------------ meshes

# 4.1: positions, corner vertices and flat shading are plain attributes
# ("position", ".corner_vert", "sharp_face"); writing them as attributes is
# ~100x faster than MeshVertex.co / MeshLoop.vertex_index / use_smooth.
ATTRIBUTE_MESH = VERSION >= (4, 1, 0)
# 4.0: a polygon's corner count is derived from the next loop_start; before,
# MeshPolygon.loop_total had to be written.
SET_LOOP_TOTAL = not bpy.types.MeshPolygon.bl_rna.properties["loop_total"].is_readonly
# 4.1: custom normals show without Mesh.use_auto_smooth (which 4.1 removed), and
# smooth and flat faces split their normals by themselves.
NEEDS_AUTO_SMOOTH = VERSION < (4, 1, 0)
# 4.5: free custom normals are a float3 "custom_normal" corner attribute; before,
# Mesh.normals_split_custom_set on smooth faces.
FREE_NORMALS = VERSION >= (4, 5, 0)
# 3.5: MeshUVLoopLayer.uv is a float2 array (before: MeshUVLoop.uv per corner).
UV_VECTOR_ARRAY = VERSION >= (3, 5, 0)
# 4.3: Mesh.vertices.foreach_set("co", ...) tags the mesh for the depsgraph itself
# (4.2.23 does not, 4.3.0 does); before, the evaluated mesh kept its old positions
# until Mesh.update(), whose tag (like any attribute write's) makes Blender
# re-flush the visibility of its whole dependency graph on the next update.
POSITIONS_WRITE_TAGS = VERSION >= (4, 3, 0)
# 4.2 (measured; 3.4 does not): Geometry Nodes instances of an object hidden with
# hide_viewport are drawn in the viewport. Before, the Fast display hides its
# sources per view layer (hide_set), whose instances 3.4 does draw.
DRAWS_INSTANCES_OF_HIDDEN = VERSION >= (4, 2, 0)

# ------------------------------------------------------- materials and nodes

# 4.0: node group sockets live in NodeTree.interface (before: .inputs / .outputs).
NODE_TREE_INTERFACE = VERSION >= (4, 0, 0)
# 4.2 (EEVEE Next): Material.surface_render_method replaces blend_method and
# shadow_method (the latter removed in 4.2).
SURFACE_RENDER_METHOD = VERSION >= (4, 2, 0)
# 4.2 (EEVEE Next): Material.use_transparent_shadow (not in Blender 3.4); a
# transparent material sets it.
HAS_TRANSPARENT_SHADOW = "use_transparent_shadow" in bpy.types.Material.bl_rna.properties

# ------------------------------------------------------------------ animation

# 4.4: slotted Actions: F-Curves live in a layer's keyframe strip, in the channelbag
# of the slot the animated datablock uses (5.0 removed Action.fcurves).
SLOTTED_ACTIONS = VERSION >= (4, 4, 0)

# ------------------------------------------------------------ user interface

# 4.1: a file dropped on an editor can run an import operator (bpy.types.FileHandler).
FILE_HANDLER = VERSION >= (4, 1, 0)
# 4.1: UILayout.panel, a collapsible sub-layout inside a panel (before: a titled box).
LAYOUT_PANEL = VERSION >= (4, 1, 0)
# 3.2: Event.mouse_prev_press_x/y, where the button went down.
EVENT_PRESS_POSITION = VERSION >= (3, 2, 0)

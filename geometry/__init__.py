"""Blender meshes and images <-> MuJoCo shapes, both directions."""

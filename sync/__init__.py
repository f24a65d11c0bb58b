"""Simulated state -> Blender: body transforms to their objects, vertices to their
meshes, authored poses put back."""

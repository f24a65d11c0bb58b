"""Read-only questions about Blender data that every stage asks."""

"""The Blender side of a running simulation: one session per scene, its settings."""

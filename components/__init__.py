"""The MJCF schema (generated from mujoco) and the Blender properties built from it."""

"""The bpy-free runtime: imports mujoco and numpy only, never bpy."""

"""MJCF/URDF -> Blender objects. MuJoCo's MjSpec does the parsing."""

"""Thin bpy.types.Operator classes, one file per user-facing area; the work is done by the stages below."""

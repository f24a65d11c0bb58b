"""Registers every class and property of the add-on, and removes them again."""

import bpy

CLASSES = []


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

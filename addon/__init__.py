"""Blender glue: registration, panels, menus, preferences, handlers."""

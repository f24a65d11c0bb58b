"""Registration and Blender's application handlers (load, undo, save, depsgraph)."""

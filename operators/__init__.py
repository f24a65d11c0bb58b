"""bpy.types.Operator classes, kept thin: they call importer, engine and scan."""

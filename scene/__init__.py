"""What every stage shares about Blender data: transforms as named tuples, unique names,
the error base class, the add-on preferences."""

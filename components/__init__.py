"""The data model a .blend holds: the generated MJCF schema, the property groups built
from it, the Scene's settings groups (simulation, overlays, plots, preview, bake record),
how one value is kept, the generic Mjs <-> properties copy, every stored key and its
format version."""

"""The data model a .blend holds: the generated MJCF schema, the element-kind registry
(kinds.py: where each kind goes), the property groups built from it, the Scene's
settings groups (simulation, overlays, plots, preview, bake record), how one value
is kept, the generic Mjs <-> properties copy, every stored key and its format version."""

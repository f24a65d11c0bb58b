"""Default classes of a spec, with their nesting.

MjSpec's Python API finds a class by name (`find_default`) but cannot list
classes or tell a class's parent. MuJoCo's own writer can: the nesting is read
from the `<default>` tree of `spec.to_xml()` (MuJoCo's output, not the user's
file). The values of each class come from `find_default(name)` itself.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET


def class_tree(spec, source: bytes | None = None) -> list[tuple[str, str]]:
    """[(class, parent class)] in document order, "main" first with parent "".

    `source`, the text of the file the spec was read from, spares MuJoCo's
    writer (it compiles the model again, as long as the import's own compile)
    when that file cannot define a class besides "main"."""
    classes = [("main", "")]
    if source is not None and not may_define_classes(source):
        return classes
    try:
        root = ET.fromstring(spec.to_xml())
    except Exception:  # to_xml can fail on models it cannot write; fall back to what is in use
        return classes + [(name, "main") for name in sorted(_used_classes(spec) - {"main"})]
    top = root.find("default")
    if top is None:
        return classes

    def walk(element, parent):
        for child in element.findall("default"):
            name = child.get("class")
            if name:
                classes.append((name, parent))
                walk(child, name)

    walk(top, top.get("class", "main"))
    return classes


def may_define_classes(source: bytes) -> bool:
    """False when an MJCF or URDF text has no class besides "main": at most one
    `<default` (the top-level one is "main": MuJoCo refuses to rename it) and no
    included file or attached model, which may bring their own."""
    return source.count(b"<default") > 1 or b"<include" in source or b"<attach" in source


def _used_classes(spec) -> set[str]:
    names = {"main"}
    for listname in ("geoms", "joints", "sites", "cameras", "lights", "meshes", "materials",
                     "textures", "pairs", "equalities", "tendons", "actuators", "flexes"):
        for element in getattr(spec, listname):
            cls = getattr(element, "classname", None)
            if cls is not None and cls.name:
                names.add(cls.name)
    return names

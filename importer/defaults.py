"""Default classes of a spec, with their nesting.

MjSpec's Python API finds a class by name (`find_default`) but cannot list
classes or tell a class's parent. MuJoCo's own writer can: the nesting is read
from the `<default>` tree of `spec.to_xml()` (MuJoCo's output, not the user's
file). The values of each class come from `find_default(name)` itself.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET


def class_tree(spec) -> list[tuple[str, str]]:
    """[(class, parent class)] in document order, "main" first with parent ""."""
    classes = [("main", "")]
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


def _used_classes(spec) -> set[str]:
    names = {"main"}
    for listname in ("geoms", "joints", "sites", "cameras", "lights", "meshes", "materials",
                     "textures", "pairs", "equalities", "tendons", "actuators", "flexes"):
        for element in getattr(spec, listname):
            cls = getattr(element, "classname", None)
            if cls is not None and cls.name:
                names.add(cls.name)
    return names

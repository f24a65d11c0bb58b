"""Default classes of a spec, with their nesting.

MjSpec's Python API finds a class by name (`find_default`) but cannot list
classes or tell a class's parent. MuJoCo's own writer can: the nesting is read
from the `<default>` tree of `spec.to_xml()` (MuJoCo's output, not the user's
file). The values of each class come from `find_default(name)` itself.

MuJoCo's writer compiles the model first, which costs as much as the
import's own compile, mostly in the assets (mesh hulls and inertias, texture
files and builtin textures). The classes do not depend on the assets, so
where there are any, the writer is given the file read again with trivial
assets instead (`_without_assets`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import mujoco

from ..components import spec_io

_TETRAHEDRON = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]


def class_tree(spec, source: bytes | None = None, filepath=None) -> list[tuple[str, str]]:
    """[(class, parent class)] in document order, "main" first with parent "".

    `source`, the text of the file the spec was read from, spares MuJoCo's
    writer when that file cannot define a class besides "main"; `filepath`,
    that file (or a function parsing it again), lets the writer work on a copy
    without the assets' cost."""
    classes = [("main", "")]
    if source is not None and not may_define_classes(source):
        return classes
    try:
        root = ET.fromstring(_written(spec, filepath))
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


def _written(spec, filepath: str | None) -> str:
    """MuJoCo's MJCF of `spec`, for its <default> tree: of the file read again with
    trivial assets where the spec has assets (anything failing there: of `spec`)."""
    if filepath and (len(spec.meshes) or len(spec.textures) or len(spec.hfields)):
        previous = mujoco.get_mju_user_warning()
        mujoco.set_mju_user_warning(lambda _text: None)  # about the stand-ins, not the model
        try:
            return _without_assets(filepath).to_xml()
        except Exception:
            pass
        finally:
            mujoco.set_mju_user_warning(previous)
    return spec.to_xml()


def _without_assets(filepath):
    """The file parsed again (`filepath`: its path, or a function parsing it), each mesh a
    tetrahedron, each texture one flat texel, each height field 2 x 2 flat samples: cheap
    to compile, same classes."""
    spec = filepath() if callable(filepath) else mujoco.MjSpec.from_file(filepath)
    for mesh in spec.meshes:
        mesh.file = mesh.content_type = ""
        mesh.plugin.active = False
        mesh.uservert = _TETRAHEDRON
        for name in ("userface", "usernormal", "usertexcoord", "userfacenormal",
                     "userfacetexcoord", "usernode", "usertet"):
            setattr(mesh, name, [])
    for texture in spec.textures:
        texture.file = texture.content_type = ""
        texture.cubefiles = [""] * len(texture.cubefiles)
        texture.builtin = mujoco.mjtBuiltin.mjBUILTIN_FLAT
        texture.width = texture.height = 1
    for hfield in spec.hfields:
        hfield.file = hfield.content_type = ""
        hfield.nrow = hfield.ncol = 2
        hfield.userdata = [0.0] * 4
    return spec


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
            cls = spec_io.class_of(element)
            if cls is not None and cls.name:
                names.add(cls.name)
    return names

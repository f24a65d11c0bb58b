"""Generate components/schema_table.py from the installed mujoco.

The MJCF attribute table is derived, never typed by hand:
- every field of every `mjs*` struct (and of mjOption, mjVisual, mjStatistic,
  mjLROpt and the size fields of mjSpec), with its C type, array size and doc
  comment, comes from `mujoco.introspect.structs.STRUCTS`;
- enum members come from `mujoco.introspect.enums.ENUMS`;
- default values come from fresh elements made by a fresh `mujoco.MjSpec`;
- tooltips come from `mujoco/doc/XMLreference.rst`, the C doc comment where the
  reference has no entry.

What introspection cannot know is written below as small rule tables: which
string fields name other elements (references), which fields are the
element's pose (spatial), which fields are bookkeeping rather than MJCF
attributes, and where each kind is documented. tests/blender/test_schema.py fails
when a mujoco upgrade adds a field none of these cover.

Run: `make schema` (or `python tools/gen_schema.py [--check]`).
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import pprint
import re
import sys

import mujoco
import numpy as np
from mujoco.introspect import ast_nodes, enums, structs

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, "..", "components", "schema_table.py")

# kind -> (C struct, how to make a fresh python element from a fresh spec,
#          where its attributes are documented in XMLreference.rst)
ELEMENT_KINDS = {
    "body": ("mjsBody", lambda s: s.worldbody.add_body(), ["body"]),
    "frame": ("mjsFrame", lambda s: s.worldbody.add_frame(), ["frame"]),
    "joint": ("mjsJoint", lambda s: s.worldbody.add_body().add_joint(), ["body-joint"]),
    "geom": ("mjsGeom", lambda s: s.worldbody.add_geom(), ["body-geom"]),
    "site": ("mjsSite", lambda s: s.worldbody.add_site(), ["body-site"]),
    "camera": ("mjsCamera", lambda s: s.worldbody.add_camera(), ["body-camera"]),
    "light": ("mjsLight", lambda s: s.worldbody.add_light(), ["body-light"]),
    "flex": ("mjsFlex", lambda s: s.add_flex(), ["deformable-flex", "flex-*", "flexcomp-*"]),
    "skin": ("mjsSkin", lambda s: s.add_skin(), ["deformable-skin"]),
    "mesh": ("mjsMesh", lambda s: s.add_mesh(), ["asset-mesh"]),
    "hfield": ("mjsHField", lambda s: s.add_hfield(), ["asset-hfield"]),
    "texture": ("mjsTexture", lambda s: s.add_texture(), ["asset-texture"]),
    "material": ("mjsMaterial", lambda s: s.add_material(), ["asset-material"]),
    "pair": ("mjsPair", lambda s: s.add_pair(), ["contact-pair"]),
    "exclude": ("mjsExclude", lambda s: s.add_exclude(), ["contact-exclude"]),
    "equality": ("mjsEquality", lambda s: s.add_equality(), ["equality-*"]),
    "tendon": ("mjsTendon", lambda s: s.add_tendon(), ["tendon-spatial", "tendon-fixed"]),
    "wrap": ("mjsWrap", lambda s: s.add_tendon().wrap_site("s"), ["tendon-spatial-*", "tendon-fixed-*"]),
    "actuator": ("mjsActuator", lambda s: s.add_actuator(), ["actuator-general", "actuator-*"]),
    "sensor": ("mjsSensor", lambda s: s.add_sensor(), ["sensor-*"]),
    "numeric": ("mjsNumeric", lambda s: s.add_numeric(), ["custom-numeric"]),
    "text": ("mjsText", lambda s: s.add_text(), ["custom-text"]),
    "tuple": ("mjsTuple", lambda s: s.add_tuple(), ["custom-tuple", "tuple-*"]),
    "key": ("mjsKey", lambda s: s.add_key(), ["keyframe-key"]),
    "plugin": ("mjsPlugin", lambda s: s.add_plugin(), ["extension-plugin*"]),
}

# Scene-wide settings, all held by the model root.
# kind -> (C struct, python path from the spec, fields of that struct to take
#          (None: all), documentation anchors)
MODEL_KINDS = {
    "model": ("mjSpec", "", ["comment"], ["mujoco"]),
    "compiler": ("mjsCompiler", "compiler", None, ["compiler"]),
    "lengthrange": ("mjLROpt", "compiler.LRopt", None, ["compiler-lengthrange"]),
    "option": ("mjOption", "option", None, ["option", "option-flag"]),
    "size": ("mjSpec", "", ["memory", "nemax", "nuserdata", "nuser_body", "nuser_jnt",
                             "nuser_geom", "nuser_site", "nuser_cam", "nuser_tendon",
                             "nuser_actuator", "nuser_sensor", "nkey", "njmax",
                             "nconmax", "nstack"], ["size"]),
    "statistic": ("mjStatistic", "stat", None, ["statistic"]),
}
for _part in ("global", "quality", "headlight", "map", "scale", "rgba"):
    MODEL_KINDS["visual_" + _part] = (
        "visual." + _part, "visual." + ("global_" if _part == "global" else _part),
        None, ["visual-" + _part])

# mjSpec fields that are structure or bookkeeping, not <mujoco> attributes.
SPEC_STRUCTURE = {"element", "modelname", "compiler", "option", "visual", "stat",
                  "modelfiledir", "hasImplicitPluginElem", "authored"}
# Fields of any struct that are not MJCF attributes: the element header, the
# compile signature, compiler-error annotations and authored-field bitmasks.
NOT_ATTRIBUTES = {"element", "signature", "info"}
NOT_ATTRIBUTES_IN = {("compiler", "authored"), ("plugin", "name")}  # (kind, field)

# Python-only properties of the Mjs classes: structure handled elsewhere
# (the element name, class, tree) -- or, for wraps, attributes the C struct
# keeps out of view. Those are typed here because introspection cannot.
PYTHON_STRUCTURE = {"id", "name", "classname", "parent", "frame", "compiler", "signature",
                    "bodies", "frames", "geoms", "joints", "sites", "cameras", "lights",
                    "path"}
PYTHON_ONLY_ATTRIBUTES = {
    ("wrap", "target"): {"type": "ref", "ref": "@type",
                         "doc": "wrapped object (site, geom, joint) or the pulley"},
    ("wrap", "sidesite"): {"type": "ref", "ref": "site", "doc": "side site for geom wrapping"},
    ("wrap", "coef"): {"type": "float", "default": 1.0, "doc": "joint coefficient in a fixed tendon"},
    ("wrap", "divisor"): {"type": "float", "default": 1.0, "doc": "pulley divisor"},
    ("plugin", "config"): {"type": "keyvalues", "doc": "plugin configuration: key/value pairs"},
}

# String fields that name other elements. "@field": the kind depends on the
# element's own enum field (an actuator's trntype, a sensor's objtype, ...);
# "@a|b": field a, or field b where a selects no kind.
REFERENCES = {
    "material": "material", "meshname": "mesh", "hfieldname": "hfield",
    "textures": "texture", "targetbody": "body", "childclass": "default",
    "geomname1": "geom", "geomname2": "geom", "bodyname1": "body", "bodyname2": "body",
    "refsite": "site", "slidersite": "site", "sidesite": "site",
    "bodyname": "body", "nodebody": "body", "vertbody": "body",
    "plugin.name": "plugin",
}
REFERENCES_IN = {
    ("light", "texture"): "texture",
    ("actuator", "target"): "@trntype",
    ("sensor", "objname"): "@objtype", ("sensor", "refname"): "@reftype",
    # an equality's objtype is UNKNOWN unless a connect/weld names sites: its type decides
    ("equality", "name1"): "@objtype|type", ("equality", "name2"): "@objtype|type",
    ("tuple", "objname"): "@objtype",
}

# The element's pose: held by the Blender object transform, not by properties.
SPATIAL = {"pos", "quat", "alt", "fromto", "axis", "dir"}
SPATIAL_KINDS = {"body", "frame", "joint", "geom", "site", "camera", "light"}

# int fields whose doc comment does not name their enum.
INT_ENUMS = {"disableflags": ("flags", "mjtDisableBit"), "enableflags": ("flags", "mjtEnableBit"),
             "output": ("flags", "mjtCamOutBit")}

# XML attribute names that differ from the struct field names.
XML_NAMES = {"targetbody": "target", "userdata": "user", "fluid_coefs": "fluidcoef",
             "fluid_ellipsoid": "fluidshape", "plugin.plugin_name": "plugin",
             "plugin.name": "instance", "textures": "texture", "o_margin": "o_margin",
             "name1": "body1", "name2": "body2", "LRopt": "lengthrange"}

SCALARS = {"double": "float", "mjtNum": "float", "float": "float32", "int": "int",
           "mjtByte": "int", "mjtSize": "int64", "mjtBool": "bool", "char": "string"}
VECTORS = {"mjDoubleVec": "floatvec", "mjFloatVec": "float32vec", "mjIntVec": "intvec",
           "mjStringVec": "stringvec", "mjByteVec": "bytes", "mjIntVecVec": "intvecvec",
           "mjFloatVecVec": "float32vecvec", "mjString": "string"}
NESTED = {"mjsOrientation", "mjsPlugin", "mjLROpt"}


def enum_table(name: str):
    """[(identifier, label, value, C name)] of an enum, without counters.

    mjtGeom's members after mjNGEOMTYPES are visualisation-only types, so a
    member named mjN* ends the list of MJCF-level values.
    """
    members = []
    for cname, value in enums.ENUMS[name].values.items():
        if cname.startswith("mjN"):
            break
        ident = cname.split("_", 1)[1] if "_" in cname else cname
        members.append((ident, ident.lower(), int(value), cname))
    return members


def _ctype(t):
    """(base type name, array size or 0, is pointer)."""
    if isinstance(t, ast_nodes.ArrayType):
        return t.inner_type.name, int(np.prod(t.extents)), False
    if isinstance(t, ast_nodes.PointerType):
        return t.inner_type.name, 0, True
    if isinstance(t, ast_nodes.ValueType):
        return t.name, 0, False
    return None, 0, False


def struct_fields(struct: str):
    if struct.startswith("visual."):
        part = struct.split(".", 1)[1]
        field = next(f for f in structs.STRUCTS["mjVisual"].fields if f.name == part)
        return field.type.fields
    return structs.STRUCTS[struct].fields


# ---------------------------------------------------------------- sections

HEADERS = ("mjspec.h", "mjmodel.h")


def header_sections() -> dict[str, dict[str, str]]:
    """{struct: {field: section}} from the comment lines MuJoCo's own headers use to
    group a struct's fields ("// contact related", "// visual", ...)."""
    folder = os.path.join(os.path.dirname(mujoco.__file__), "include", "mujoco")
    out: dict[str, dict[str, str]] = {}
    for header in HEADERS:
        path = os.path.join(folder, header)
        if not os.path.exists(path):
            continue
        struct, section = None, ""
        for line in open(path, encoding="utf-8"):
            start = re.match(r"^typedef struct (mj\w+?)_? \{", line)
            if start:
                struct, section = start.group(1).rstrip("_"), ""
                out[struct] = {}
                continue
            if struct is None:
                continue
            if line.startswith("}"):
                struct = None
                continue
            comment = re.match(r"^\s*//\s*(.+?)\s*$", line)
            if comment:
                section = comment.group(1)
                continue
            field = re.match(r"^\s*[\w\s\*]+?\b(\w+)(\[[^\]]*\])*\s*;", line)
            if field and section:
                out[struct][field.group(1)] = section
    return out


# ---------------------------------------------------------------- docs


def load_reference_docs():
    """{anchor: (attribute name, first paragraph)} from XMLreference.rst."""
    path = os.path.join(os.path.dirname(mujoco.__file__), "doc", "XMLreference.rst")
    if not os.path.exists(path):
        return {}
    lines = open(path, encoding="utf-8").read().splitlines()
    docs = {}
    for i, line in enumerate(lines):
        m = re.match(r"^\.\. _([\w-]+):\s*$", line)
        if not m:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        at = re.match(r"^:at:`([^`]+)`:\s*(?::at-val:`([^`]*)`)?", lines[j]) if j < len(lines) else None
        if not at:
            continue
        body = []
        for k in range(j + 1, len(lines)):
            if lines[k].startswith("   ") or not lines[k].strip():
                if not lines[k].strip() and body:
                    break
                if not lines[k].strip().startswith(("..", ":")):  # figures and their options
                    body.append(lines[k].strip())
            else:
                break
        docs[m.group(1)] = (at.group(1), clean_rst(" ".join(body)), at.group(2) or "")
    return docs


def clean_rst(text: str) -> str:
    text = re.sub(r":ref:`([^`<]*?)\s*<[^>]*>`", r"\1", text)
    text = re.sub(r":\w+(?:-\w+)*:`([^`]*)`", r"\1", text)
    text = re.sub(r"`+([^`]*)`+", r"\1", text)
    text = text.replace("**", "").replace("|-|", "")
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > 480:  # a tooltip, not the manual: whole sentences up to ~480 chars
        cut = text.rfind(". ", 0, 480)
        text = text[: cut + 1] if cut > 80 else text[:477] + "..."
    return text


def find_doc(docs, patterns, field):
    """(tooltip, XML attribute name) from the reference, or None."""
    leaf = field.split(".")[-1]
    if "." in field and leaf in ("type", "name", "active"):
        return None  # a nested struct's bookkeeping, not the element's own "type"
    candidates = [XML_NAMES.get(field), XML_NAMES.get(leaf), leaf,
                  re.sub(r"name(\d?)$", r"\1", leaf), leaf.replace("_", "")]
    anchors = list(docs)
    for pattern in patterns:
        for cand in filter(None, candidates):
            for anchor in fnmatch.filter(anchors, f"{pattern}-{cand}"):
                return docs[anchor][1], docs[anchor][0]
    return None


# ---------------------------------------------------------------- table


def default_value(obj, path):
    value = obj
    for part in path.split("."):
        value = getattr(value, part)
    return value


def to_literal(value, kind, enum):
    """A python literal for the default value of an attribute."""
    if kind in ("enum",):
        ident = {v: i for i, _, v, _ in enum_table(enum)}
        return ident.get(int(value), None)
    if kind == "flags":
        return tuple(i for i, _, v, _ in enum_table(enum) if int(value) & v)
    if kind in ("float", "float32"):
        return tuple(float(x) for x in value) if np.ndim(value) else float(value)
    if kind in ("int", "int64"):
        return tuple(int(x) for x in value) if np.ndim(value) else int(value)
    if kind == "bool":
        return bool(value)
    if kind == "string":
        if value is None:
            return ""
        return value if isinstance(value, str) else "".join(value)
    if kind == "ref":
        return "" if value is None else str(value)
    return None  # variable-length: empty by default


def make_attr(kind, struct, field, prefix, sample, patterns, docs, section=""):
    """One attribute row for a struct field (None for nested structs)."""
    base, size, pointer = _ctype(field.type)
    name = prefix + field.name
    row = {"name": name}
    if base in NESTED:
        return None
    if base in SCALARS and not pointer:
        row["type"] = SCALARS[base]
        if base == "char":
            row["size"] = size
            size = 0
    elif base in VECTORS and pointer:
        row["type"] = VECTORS[base]
    elif base and base.startswith("mjt") and base in enums.ENUMS:
        row["type"], row["enum"] = "enum", base
    else:
        raise SystemExit(f"gen_schema: no rule for {struct}.{field.name} of C type {base}")
    if row["type"] == "int":
        doc_enum = re.search(r"\((mjt\w+)\)", field.doc or "")
        if field.name in INT_ENUMS:
            row["type"], row["enum"] = INT_ENUMS[field.name]
        elif doc_enum and doc_enum.group(1) in enums.ENUMS:
            row["type"], row["enum"] = "enum", doc_enum.group(1)
    if size:
        row["size"] = size
    ref = REFERENCES_IN.get((kind, name)) or REFERENCES.get(name)
    if ref and row["type"] in ("string", "stringvec"):
        row["type"] = "ref" if row["type"] == "string" else "refvec"
        row["ref"] = ref
    if kind in SPATIAL_KINDS and name.split(".")[0] in SPATIAL:
        row["spatial"] = True
    if sample is not None:
        literal = to_literal(default_value(sample, _pyname(name)), row["type"], row.get("enum"))
        if literal not in (None, "", ()):
            row["default"] = literal
    if section:
        row["section"] = section
    doc, xml = find_doc(docs, patterns, name) or ("", "")
    if xml and xml != name:
        row["xml"] = xml
    if len(doc) < 30 and doc.startswith("See "):
        doc = ""  # a bare cross-reference ("See CUser.") says less than the C comment
    row["doc"] = doc or (field.doc or "").strip()
    return row


def _pyname(name):
    return name.replace("global.", "global_.")


def kind_rows(kind, struct, patterns, docs, sample, only=None, prefix="", sections=None):
    rows = []
    sections = sections if sections is not None else SECTIONS.get(struct, {})
    for field in struct_fields(struct):
        if only is not None and field.name not in only:
            continue
        if field.name in NOT_ATTRIBUTES or (kind, prefix + field.name) in NOT_ATTRIBUTES_IN:
            continue
        if struct == "mjSpec" and field.name in SPEC_STRUCTURE:
            continue
        base, _, _ = _ctype(field.type)
        if base in NESTED and not (kind == "compiler" and base == "mjLROpt"):
            # a nested struct's fields sit in the section of the field that holds it
            inner = {f.name: sections.get(field.name, "") for f in struct_fields(base)}
            rows += kind_rows(kind, base, patterns, docs, sample, prefix=prefix + field.name + ".",
                              sections=inner)
            continue
        if base == "mjLROpt":
            continue  # its own kind: "lengthrange"
        rows.append(make_attr(kind, struct, field, prefix, sample, patterns, docs,
                              sections.get(field.name, "")))
    return rows


SECTIONS: dict[str, dict[str, str]] = {}


def build_table():
    SECTIONS.clear()
    SECTIONS.update(header_sections())
    docs = load_reference_docs()
    table = {}
    for kind, (struct, make, patterns) in ELEMENT_KINDS.items():
        sample = make(mujoco.MjSpec())
        rows = kind_rows(kind, struct, patterns, docs, sample)
        for (k, name), extra in PYTHON_ONLY_ATTRIBUTES.items():
            if k == kind:
                doc, xml = find_doc(docs, patterns, name) or (extra["doc"], "")
                rows.append({"name": name, **extra, **({"xml": xml} if xml and xml != name else {}),
                             "doc": doc})
        table[kind] = {"struct": struct, "attrs": rows}
    for kind, (struct, path, only, patterns) in MODEL_KINDS.items():
        spec = mujoco.MjSpec()
        sample = default_value(spec, path) if path else spec
        table[kind] = {"struct": struct, "path": path,
                       "attrs": tuple(kind_rows(kind, struct, patterns, docs, sample, only=only))}
    # strippath is a <compiler> attribute that mjSpec keeps at its top level.
    spec_rows = kind_rows("compiler", "mjSpec", ["compiler"], docs, mujoco.MjSpec(), only=["strippath"])
    table["compiler"]["attrs"] += tuple({**row, "path": ""} for row in spec_rows)
    used = sorted({a["enum"] for t in table.values() for a in t["attrs"] if "enum" in a})
    return table, {name: enum_table(name) for name in used}


def render(table, enum_tables) -> str:
    out = [
        '"""The MJCF attribute table. GENERATED by tools/gen_schema.py: do not edit.',
        "",
        "Regenerate with `make schema` after a mujoco upgrade.",
        '"""',
        "",
        "# fmt: off",
        f"MUJOCO_VERSION = {mujoco.__version__!r}",
        'nan = float("nan")  # MuJoCo\'s "not set" marker in some defaults',
        'inf = float("inf")',
        "",
        "# enum name -> ((identifier, label, value, C name), ...)",
        "ENUMS = {",
    ]
    for name, members in enum_tables.items():
        out.append(f"    {name!r}: (")
        out += [f"        {m!r}," for m in members]
        out.append("    ),")
    defaults = tuple(f.name for f in structs.STRUCTS["mjsDefault"].fields if f.name != "element")
    out += ["}", "", "# the kinds a <default> class sets (the fields of mjsDefault)",
            f"DEFAULT_KINDS = {defaults!r}",
            "", "# kind -> {struct, [path,] attrs: ({attribute}, ...)}", "KINDS = {"]
    for kind, entry in table.items():
        out.append(f"    {kind!r}: {{")
        out.append(f"        'struct': {entry['struct']!r},")
        if "path" in entry:
            out.append(f"        'path': {entry['path']!r},")
        out.append("        'attrs': (")
        for row in entry["attrs"]:
            out.append("            " + pprint.pformat(row, width=10_000, sort_dicts=False) + ",")
        out.append("        ),")
        out.append("    },")
    out.append("}")
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the committed table differs from a fresh one")
    args = parser.parse_args(argv)
    text = render(*build_table())
    if args.check:
        current = open(OUTPUT, encoding="utf-8").read() if os.path.exists(OUTPUT) else ""
        if current != text:
            print("components/schema_table.py is stale: run `make schema`", file=sys.stderr)
            return 1
        return 0
    with open(OUTPUT, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {os.path.relpath(OUTPUT)}: {len(text.splitlines())} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())

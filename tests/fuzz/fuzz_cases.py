"""The fuzz tier's cases, made from real models with a seeded random source.

`make_cases(root, seed)` writes every case's files under `root` and returns the
cases, each a dict: id, kind, group ("builtin": made from the repository's own
models and inline MJCF, always run; "corpus": made from ../shared/corpus),
path (the file to import), note (what was done to it), and allow_refusal (None,
or why a refusal with a clear message is acceptable even if MuJoCo loads it).
The same seed and the same corpus give the same files, byte for byte.

A corpus model is mutated in a mirror of its folder: a folder of symlinks to
every entry of the original, so its meshes and includes still resolve; the
mutated files are new files at the mirror's top level (the corpus is never
written to).
"""

from __future__ import annotations

import csv
import os
import random
import re
import struct
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))
DEFAULT_SEED = 16

BUILTIN_MODELS = ("examples/desk_toys.xml", "tests/blender/data/saved_before_layout.xml")

# A small model with one of most element kinds, so the mutations reach them without the corpus.
KITCHEN_SINK = """<mujoco model="kitchen_sink">
  <compiler angle="degree"/>
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <size nkey="1"/>
  <default>
    <default class="arm"><joint damping="0.1" range="-90 90"/><geom rgba="0.8 0.2 0.2 1"/></default>
  </default>
  <asset>
    <texture name="grid" type="2d" builtin="checker" width="64" height="64" rgb1="0 0 0" rgb2="1 1 1"/>
    <material name="grid" texture="grid" texrepeat="2 2"/>
    <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
    <hfield name="bumps" nrow="3" ncol="3" size="1 1 0.2 0.1" elevation="0 1 0 1 0 1 0 1 0"/>
  </asset>
  <worldbody>
    <light name="sun" pos="0 0 3" dir="0 0 -1"/>
    <camera name="overview" pos="0 -3 2" xyaxes="1 0 0 0 0.6 0.8"/>
    <geom name="floor" type="plane" size="2 2 0.1" material="grid"/>
    <geom name="ground" type="hfield" hfield="bumps" pos="3 0 0"/>
    <body name="base" pos="0 0 0.5" childclass="arm">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom name="upper" type="capsule" fromto="0 0 0 0 0 0.4" size="0.05"/>
      <site name="tip" pos="0 0 0.4"/>
      <body name="fore" pos="0 0 0.4" quat="1 0 0 0">
        <joint name="slide" type="slide" axis="0 0 1" range="-0.1 0.1"/>
        <geom name="fore" type="box" size="0.05 0.05 0.2" pos="0 0 0.2"/>
        <geom name="tet" type="mesh" mesh="tet" pos="0 0 0.4"/>
        <site name="end" pos="0 0 0.4"/>
      </body>
    </body>
    <body name="ball" pos="1 0 1">
      <freejoint name="ball"/>
      <geom name="ball" type="sphere" size="0.1" mass="0.5"/>
    </body>
    <body name="mocap" mocap="true" pos="0 1 1"><geom type="box" size="0.05 0.05 0.05" contype="0"/></body>
  </worldbody>
  <tendon><spatial name="cord" width="0.01"><site site="tip"/><site site="end"/></spatial></tendon>
  <equality><connect name="link" body1="ball" body2="mocap" anchor="0 0 0" active="false"/></equality>
  <actuator>
    <motor name="motor" joint="hinge" gear="10" ctrlrange="-1 1"/>
    <position name="servo" joint="slide" kp="100"/>
  </actuator>
  <sensor><jointpos name="angle" joint="hinge"/><framepos name="where" objtype="site" objname="end"/></sensor>
  <custom><numeric name="gain" data="1 2 3"/><text name="label" data="hello"/></custom>
  <keyframe><key name="start" qpos="0.5 0 1 0 1 1 0 0 0"/></keyframe>
</mujoco>
"""

FLEX = """<mujoco model="cloth">
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <flexcomp name="cloth" type="grid" count="4 4 1" spacing="0.1 0.1 0.1" pos="0 0 1" dim="2">
      <edge equality="true"/>
    </flexcomp>
  </worldbody>
</mujoco>
"""

INLINE_MODELS = {"kitchen_sink.xml": KITCHEN_SINK, "cloth.xml": FLEX}

# Values a number in an attribute becomes.
HOSTILE_NUMBERS = ("nan", "NaN", "-nan", "inf", "-inf", "INF", "1e308", "-1e308", "1e309", "-1e309",
                   "1e-320", "-0", "0", "-1", "-1e9", "99999999999999999999999", "2147483648",
                   "-2147483649", "0x10", "1,5", "", " ", "abc", "1e", "--1", "+", ".", "1.2.3")
GARBAGE_TEXT = ("", " ", "\t\n", "&amp;&lt;&gt;", "\u00e9\u00e8\u4e2d\u6587", "\U0001f600", "a" * 300,
                "../../etc/passwd", "%s%n%x", "{}", "'\"", "\u202e", "\ufeff", "&#x10FFFF;", "&#0;")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
ATTRIBUTE = re.compile(r'(\s)([A-Za-z_:][\w:.-]*)="([^"]*)"')
SELF_CLOSING = re.compile(r"<([A-Za-z_]\w*)\b[^<>]*/>")
TAGS = ("body", "geom", "joint", "site", "camera", "light", "mesh", "texture", "material", "motor",
        "default", "include", "frame", "replicate", "flexcomp", "composite", "key", "worldbody")


def corpus_models() -> list[str]:
    index = os.path.join(CORPUS, "models.tsv")
    if not os.path.exists(index):
        return []
    with open(index, encoding="utf-8") as fh:
        return [row["path"] for row in csv.DictReader(fh, delimiter="\t")]


class Maker:
    """Writes cases under `root`; each case's random source depends only on (seed, case id)."""

    def __init__(self, root: str, seed: int):
        self.root = root
        self.seed = seed
        self.cases: list[dict] = []
        os.makedirs(root, exist_ok=True)

    def rng(self, case_id: str) -> random.Random:
        return random.Random(f"{self.seed}/{case_id}")

    def folder(self, name: str) -> str:
        path = os.path.join(self.root, name)
        os.makedirs(path, exist_ok=True)
        return path

    def add(self, kind, group, case_id, path, note, allow_refusal=None):
        self.cases.append({"id": case_id, "kind": kind, "group": group, "path": path, "note": note,
                           "allow_refusal": allow_refusal, "seed": self.seed})


def write(folder: str, name: str, content) -> str:
    """A new file in `folder` (never through a symlink: the corpus stays untouched)."""
    path = os.path.join(folder, name)
    assert os.path.realpath(os.path.dirname(path)) == os.path.realpath(folder), path
    data = content.encode("utf-8") if isinstance(content, str) else content
    with open(path, "xb") as fh:
        fh.write(data)
    return path


class Source:
    """A model to derive cases from, seen through a mirror folder of symlinks."""

    def __init__(self, maker: Maker, label: str, original: str | None, group: str, text: str | None = None):
        self.label = label
        self.group = group
        slug = re.sub(r"\W+", "_", label)[-60:]
        self.mirror = maker.folder(os.path.join("models", f"{len(maker.cases):04d}_{slug}"))
        if original is not None:
            folder = os.path.dirname(original)
            for entry in os.listdir(folder):
                os.symlink(os.path.join(folder, entry), os.path.join(self.mirror, entry))
            self.entry = os.path.basename(original)
            with open(original, "rb") as fh:
                self.raw = fh.read()
        else:
            self.entry = label
            self.raw = text.encode("utf-8")
            write(self.mirror, self.entry, self.raw)
        self.text = self.raw.decode("utf-8", errors="replace")
        self.includes = [m.group(1) for m in re.finditer(r'<include\s+file="([^"]+)"', self.text)
                         if os.path.isfile(os.path.join(self.mirror, m.group(1)))]

    def read_include(self, name: str) -> str:
        with open(os.path.join(self.mirror, name), "rb") as fh:
            return fh.read().decode("utf-8", errors="replace")


# ---------------------------------------------------------------- mutations of a model's text

def mutate_number(rng, text):
    spans = [m for m in ATTRIBUTE.finditer(text) if NUMBER.search(m.group(3))]
    if not spans:
        return text, "no number"
    m = rng.choice(spans)
    value = m.group(3)
    numbers = list(NUMBER.finditer(value))
    k = rng.choice(numbers)
    new = rng.choice(HOSTILE_NUMBERS)
    if rng.random() < 0.3:  # every number of the attribute
        value2 = NUMBER.sub(new, value)
    else:
        value2 = value[:k.start()] + new + value[k.end():]
    return (text[:m.start(3)] + value2 + text[m.end(3):],
            f"{m.group(2)}={value!r}->{value2!r}")


def delete_attribute(rng, text):
    spans = list(ATTRIBUTE.finditer(text))
    if not spans:
        return text, "no attribute"
    m = rng.choice(spans)
    return text[:m.start()] + text[m.end():], f"deleted {m.group(2)}={m.group(3)!r}"


def garbage_attribute(rng, text):
    spans = list(ATTRIBUTE.finditer(text))
    if not spans:
        return text, "no attribute"
    m = rng.choice(spans)
    new = rng.choice(GARBAGE_TEXT).replace("\"", "&quot;")
    return text[:m.start(3)] + new + text[m.end(3):], f"{m.group(2)}={m.group(3)!r}->{new!r}"


def duplicate_element(rng, text):
    spans = list(SELF_CLOSING.finditer(text))
    if not spans:
        return text, "no element"
    m = rng.choice(spans)
    return text[:m.end()] + m.group(0) + text[m.end():], f"duplicated <{m.group(1)}>"


def delete_element(rng, text):
    spans = list(SELF_CLOSING.finditer(text))
    if not spans:
        return text, "no element"
    m = rng.choice(spans)
    return text[:m.start()] + text[m.end():], f"deleted <{m.group(1)}>"


def collide_names(rng, text):
    spans = [m for m in ATTRIBUTE.finditer(text) if m.group(2) == "name"]
    if len(spans) < 2:
        return text, "fewer than two names"
    a, b = rng.sample(spans, 2)
    return text[:b.start(3)] + a.group(3) + text[b.end(3):], f"name {b.group(3)!r}->{a.group(3)!r}"


def rename_tag(rng, text):
    spans = list(re.finditer(r"<([A-Za-z_]\w*)\b", text))
    if not spans:
        return text, "no tag"
    m = rng.choice(spans)
    new = rng.choice(TAGS)
    return text[:m.start(1)] + new + text[m.end(1):], f"<{m.group(1)}> -> <{new}>"


def flip_bytes(rng, text):
    chars = list(text)
    where = []
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(chars))
        chars[i] = rng.choice("<>/=\"'& \n\x00x9-.e")
        where.append(i)
    return "".join(chars), f"characters changed at {sorted(where)}"


MUTATIONS = (mutate_number, mutate_number, mutate_number, delete_attribute, garbage_attribute,
             duplicate_element, delete_element, collide_names, rename_tag, flip_bytes)


def nan_everywhere(text, value):
    """Every number of every attribute but names, classes and files replaced by `value`."""
    def attribute(m):
        if m.group(2) in ("name", "class", "childclass", "file", "model", "content_type") or \
                m.group(2).endswith("dir"):
            return m.group(0)
        return m.group(1) + m.group(2) + '="' + NUMBER.sub(value, m.group(3)) + '"'
    return ATTRIBUTE.sub(attribute, text)


def source_cases(maker: Maker, src: Source, mutants: int, truncations: int, encodings: bool):
    group = src.group
    base = f"{group}:{src.label}"
    maker.add("base", group, base, os.path.join(src.mirror, src.entry), "the model as it is")

    for n in range(mutants):
        case_id = f"{base}:mutation{n}"
        rng = maker.rng(case_id)
        # mutate the entry file or one of the files it includes
        target = rng.choice([None] + src.includes)
        text = src.text if target is None else src.read_include(target)
        notes = []
        for _ in range(rng.randint(1, 3)):
            text, note = rng.choice(MUTATIONS)(rng, text)
            notes.append(note)
        name = f"fuzz_mutation{n}.xml"
        if target is None:
            path = write(src.mirror, name, text)
        else:
            inc = write(src.mirror, f"fuzz_mutation{n}_included.xml", text)
            entry = src.text.replace(f'file="{target}"', f'file="{os.path.basename(inc)}"')
            path = write(src.mirror, name, entry)
            notes.insert(0, f"in included {target}")
        maker.add("mutation", group, case_id, path, "; ".join(notes))

    for n in range(truncations):
        case_id = f"{base}:truncation{n}"
        rng = maker.rng(case_id)
        offset = rng.randrange(1, len(src.raw))
        path = write(src.mirror, f"fuzz_truncation{n}.xml", src.raw[:offset])
        maker.add("truncation", group, case_id, path, f"first {offset} of {len(src.raw)} bytes")

    case_id = f"{base}:everywhere"
    value = maker.rng(case_id).choice(("nan", "inf", "-inf", "1e308", "-1e308"))
    path = write(src.mirror, "fuzz_everywhere.xml", nan_everywhere(src.text, value))
    maker.add("nan_inf", group, case_id, path, f"every number is {value}")

    if encodings:
        encoding_cases(maker, src)


def encoding_cases(maker: Maker, src: Source):
    group = src.group
    base = f"{group}:{src.label}"
    raw = src.text.encode("utf-8")
    root = re.search(rb"<mujoco\b[^>]*>", raw)
    names = list(re.finditer(rb'\sname="([^"]*)"', raw))

    def after_root(extra: bytes) -> bytes:
        return raw[:root.end()] + extra + raw[root.end():]

    def in_first_name(extra: bytes) -> bytes:
        m = names[0]
        return raw[:m.end(1)] + extra + raw[m.end(1):]

    variants = {
        "latin1_comment": (after_root(b"<!-- caf\xe9, na\xefve, \xa9 -->"), "a Latin-1 byte in a comment"),
        "utf8_bom": (b"\xef\xbb\xbf" + raw, "a UTF-8 byte order mark"),
        "utf16_bom": (src.text.encode("utf-16"), "UTF-16 with a byte order mark"),
        "utf16be_bom": (b"\xfe\xff" + src.text.encode("utf-16-be"),
                        "UTF-16 big endian with a byte order mark"),
        "invalid_utf8_comment": (after_root(b"<!-- \xff\xfe \xc0\xaf \xed\xa0\x80 -->"),
                                 "invalid UTF-8 (0xff, overlong, surrogate) in a comment"),
        "nul_in_comment": (after_root(b"<!-- a\x00b -->"), "a NUL byte in a comment"),
        "cr_lf": (raw.replace(b"\n", b"\r\n"), "CRLF line ends"),
    }
    if names:
        variants["latin1_name"] = (in_first_name(b"\xe9"), "a Latin-1 byte in a name")
        variants["invalid_utf8_name"] = (in_first_name(b"\x80\xe2\x82"),
                                         "a lone continuation byte and a cut sequence in a name")
        variants["cr_in_name"] = (in_first_name(b"&#13;x"), "a carriage return in a name")
        variants["long_unicode_name"] = (in_first_name("\u00e9".encode("utf-8") * 40),
                                         "a name longer than Blender's 63 bytes, multibyte at the cut")
    for key, (content, note) in variants.items():
        path = write(src.mirror, f"fuzz_{key}.xml", content)
        maker.add("encoding", group, f"{base}:{key}", path, note)


# ---------------------------------------------------------------- inline hostile cases

def model(worldbody: str = "", asset: str = "", head: str = "") -> str:
    return (f'<mujoco model="fuzz">{head}<asset>{asset}</asset>'
            f'<worldbody><light pos="0 0 3"/>{worldbody}</worldbody></mujoco>')


def binary_stl(triangles, count=None) -> bytes:
    body = b"".join(struct.pack("<12fH", 0, 0, 1, *[c for v in t for c in v], 0) for t in triangles)
    return b"\0" * 80 + struct.pack("<I", len(triangles) if count is None else count) + body


TETRA = [((0, 0, 0), (1, 0, 0), (0, 1, 0)), ((0, 0, 0), (0, 1, 0), (0, 0, 1)),
         ((0, 0, 0), (0, 0, 1), (1, 0, 0)), ((1, 0, 0), (0, 0, 1), (0, 1, 0))]


def png(width: int, height: int, pixels: bytes | None = None, truncate: int | None = None) -> bytes:
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    if pixels is None:
        pixels = b"".join(b"\0" + b"\x80\x40\x20" * width for _ in range(height))
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b""))
    return data if truncate is None else data[:truncate]


def inline_cases(maker: Maker):
    group = "builtin"

    def case(kind, key, files, note, entry="model.xml", allow_refusal=None, setup=None):
        folder = maker.folder(os.path.join("inline", kind, key))
        for name, content in files.items():
            sub = os.path.join(folder, os.path.dirname(name))
            os.makedirs(sub, exist_ok=True)
            write(sub, os.path.basename(name), content)
        if setup:
            setup(folder)
        maker.add(kind, group, f"{group}:{kind}:{key}", os.path.join(folder, entry), note, allow_refusal)

    # absurd counts and sizes
    big = "a model Blender cannot hold as objects or mesh data"
    case("absurd", "replicate_1e6", {"model.xml": model(
        '<replicate count="1000000" offset="0.01 0 0"><geom size="0.01"/></replicate>')},
        "a replicate of 10^6 geoms", allow_refusal=big)
    case("absurd", "nested_replicates", {"model.xml": model(
        '<replicate count="40" offset="1 0 0"><replicate count="40" offset="0 1 0">'
        '<body><freejoint/><geom size="0.1"/></body></replicate></replicate>')},
        "nested replicates: 1600 free bodies")
    case("absurd", "bodies_2000", {"model.xml": model(
        '<replicate count="2000" offset="0 0 0.3"><body><freejoint/><geom size="0.1"/></body></replicate>')},
        "2000 free bodies (MuJoCo's default arena is too small for their first step)")
    case("absurd", "flexcomp_1000x1000", {"model.xml": model(
        '<flexcomp name="f" type="grid" count="1000 1000 1" spacing="0.01 0.01 0.01" dim="2"/>')},
        "a 1000 x 1000 flexcomp", allow_refusal=big)
    case("absurd", "nkey_1e8", {"model.xml": model('<body><freejoint/><geom size="1"/></body>',
                                                    head='<size nkey="100000000"/>')},
         '<size nkey="100000000">', allow_refusal="10^8 keyframes")
    case("absurd", "nuser_huge", {"model.xml": model('<body><geom size="1"/></body>',
                                                      head='<size nuser_body="10000000"/>')},
         '<size nuser_body="10000000">')
    case("absurd", "memory_1e15", {"model.xml": model('<geom size="1"/>', head='<size memory="1P"/>')},
         '<size memory="1P">')
    case("absurd", "hfield_20000", {"model.xml": model(
        '<geom type="hfield" hfield="h"/>', '<hfield name="h" nrow="20000" ncol="20000" size="1 1 1 0.1"/>')},
        "a 20000 x 20000 height field", allow_refusal="a 4 * 10^8 vertex height-field mesh")
    case("absurd", "hfield_1000", {"model.xml": model(
        '<geom type="hfield" hfield="h"/>', '<hfield name="h" nrow="1000" ncol="1000" size="1 1 1 0.1"/>')},
        "a 1000 x 1000 height field")
    case("absurd", "texture_huge", {"model.xml": model(
        '<geom size="1" material="m"/>', '<texture name="t" type="2d" builtin="checker" width="100000" '
        'height="100000"/><material name="m" texture="t"/>')}, "a 100000 x 100000 builtin texture",
        allow_refusal="a 3 * 10^10 byte image")
    depth = 300
    case("absurd", f"nested_bodies_{depth}", {"model.xml": model(
        "".join(f'<body name="b{i}" pos="0 0 0.01"><joint/><geom size="0.01"/>' for i in range(depth))
        + "</body>" * depth)}, f"{depth} nested bodies, each with a hinge")
    case("absurd", "nested_xml_5000", {"model.xml": model("<body>" * 5000 + "</body>" * 5000)},
         "5000 nested elements")
    case("absurd", "nested_defaults_200", {"model.xml": model(
        '<geom class="d199" size="1"/>',
        head="<default>" + "".join(f'<default class="d{i}"><geom rgba="1 0 0 1"/>' for i in range(200))
        + "</default>" * 200 + "</default>")}, "200 nested default classes")
    case("absurd", "long_name", {"model.xml": model(f'<body name="{"n" * 100000}"><geom size="1"/></body>')},
         "a name of 10^5 characters")
    case("absurd", "names_same_first_63", {"model.xml": model(
        f'<body name="{"x" * 70}a"><geom size="1"/></body><body name="{"x" * 70}b"><geom size="1"/></body>')},
        "two names equal in their first 63 bytes")
    case("absurd", "mesh_inline_huge_values", {"model.xml": model(
        '<geom type="mesh" mesh="m"/>', '<mesh name="m" vertex="0 0 0 1e30 0 0 0 1e30 0 0 0 1e30"/>')},
        "a mesh with vertices at 1e30")
    case("nan_inf", "option_nan", {"model.xml": model(
        '<body><freejoint/><geom size="1"/></body>',
        head='<option timestep="nan" gravity="nan inf -inf"/>')}, "timestep NaN, gravity NaN/inf")
    case("nan_inf", "option_tiny_timestep", {"model.xml": model(
        '<body><freejoint/><geom size="1"/></body>', head='<option timestep="1e-300"/>')},
        "timestep 1e-300")
    case("nan_inf", "zero_quat", {"model.xml": model(
        '<body quat="0 0 0 0"><geom size="1"/></body><body euler="nan 0 0"><geom size="1"/></body>')},
        "an all-zero quaternion and a NaN Euler angle")
    case("nan_inf", "inf_size", {"model.xml": model('<geom type="box" size="inf inf inf" pos="1e308 0 0"/>')},
         "an infinite box far away")

    # hostile paths
    ok_stl = binary_stl(TETRA)
    escape_note = "an include outside the model's folder (MuJoCo reads it)"

    def outside(folder):
        parent = os.path.dirname(folder)
        if not os.path.exists(os.path.join(parent, "outside.xml")):
            write(parent, "outside.xml", '<mujoco><worldbody><geom name="from_outside" size="1"/>'
                  '</worldbody></mujoco>')
    case("hostile_path", "include_escapes",
         {"model.xml": '<mujoco><include file="../outside.xml"/></mujoco>'}, escape_note, setup=outside)
    case("hostile_path", "include_passwd", {"model.xml": '<mujoco><include file="/etc/passwd"/></mujoco>'},
         "/etc/passwd as an include")
    case("hostile_path", "include_dev_zero", {"model.xml": '<mujoco><include file="/dev/zero"/></mujoco>'},
         "/dev/zero as an include")
    case("hostile_path", "include_loop", {"model.xml": '<mujoco><include file="b.xml"/></mujoco>',
                                          "b.xml": '<mujoco><include file="model.xml"/></mujoco>'},
         "two files including each other")
    case("hostile_path", "self_include", {"model.xml": '<mujoco><include file="model.xml"/></mujoco>'},
         "a file including itself")
    case("hostile_path", "include_folder", {"model.xml": '<mujoco><include file="."/></mujoco>'},
         "a folder as an include")
    for kind, element, use in (
            ("mesh", '<mesh name="a" file="{f}"/>', '<geom type="mesh" mesh="a"/>'),
            ("texture", '<texture name="a" type="2d" file="{f}"/><material name="m" texture="a"/>',
             '<geom size="1" material="m"/>'),
            ("hfield", '<hfield name="a" file="{f}" size="1 1 1 0.1"/>', '<geom type="hfield" hfield="a"/>')):
        ext = {"mesh": "stl", "texture": "png", "hfield": "png"}[kind]
        for target, label in (("/etc/passwd", "passwd"), ("/dev/zero", "zero"), ("/dev/urandom", "urandom")):
            case("hostile_path", f"{kind}_{label}_symlink",
                 {"model.xml": model(use, element.format(f=f"{label}.{ext}"))},
                 f"a symlink to {target} as a {kind} file",
                 setup=lambda folder, t=target, n=f"{label}.{ext}": os.symlink(t, os.path.join(folder, n)))
        case("hostile_path", f"{kind}_passwd_absolute",
             {"model.xml": model(use, element.format(f="/etc/passwd"))},
             f"/etc/passwd (absolute) as a {kind} file")
        case("hostile_path", f"{kind}_fifo", {"model.xml": model(use, element.format(f=f"fifo.{ext}"))},
             f"a FIFO as a {kind} file",
             setup=lambda folder, n=f"fifo.{ext}": os.mkfifo(os.path.join(folder, n)))
        case("hostile_path", f"{kind}_folder", {"model.xml": model(use, element.format(f=f"folder.{ext}"))},
             f"a folder as a {kind} file",
             setup=lambda folder, n=f"folder.{ext}": os.mkdir(os.path.join(folder, n)))
    case("hostile_path", "mesh_absolute_ok", {"model.xml": model(
        '<geom type="mesh" mesh="a"/>', '<mesh name="a" file="{f}"/>'), "elsewhere/tet.stl": ok_stl},
        "a valid mesh by absolute path outside the model's folder",
        setup=lambda folder: _rewrite(folder, "{f}", os.path.join(folder, "elsewhere", "tet.stl")))
    case("hostile_path", "mesh_symlink_outside_ok", {"model.xml": model(
        '<geom type="mesh" mesh="a"/>', '<mesh name="a" file="link.stl"/>')},
        "a valid mesh through a symlink to a file outside the model's folder",
        setup=lambda folder: (write(os.path.dirname(folder), "tet_outside.stl", ok_stl)
                              if not os.path.exists(os.path.join(os.path.dirname(folder), "tet_outside.stl"))
                              else None,
                              os.symlink(os.path.join(os.path.dirname(folder), "tet_outside.stl"),
                                         os.path.join(folder, "link.stl"))))
    case("hostile_path", "meshdir_escapes", {"model.xml": model(
        '<geom type="mesh" mesh="a"/>', '<mesh name="a" file="../../../../../../../../etc/passwd.stl"/>',
        head='<compiler meshdir="/"/>')}, "meshdir / and a path climbing out of it")
    case("hostile_path", "unicode_paths", {"modèle é.xml": model(
        '<geom type="mesh" mesh="a"/>', '<mesh name="a" file="mesh ü 中.stl"/>'), "mesh ü 中.stl": ok_stl},
        "spaces and non-ASCII characters in the model's and the mesh's file names", entry="modèle é.xml")
    case("hostile_path", "model_is_fifo", {}, "the model file is a FIFO",
         setup=lambda folder: os.mkfifo(os.path.join(folder, "model.xml")))
    case("hostile_path", "model_is_dev_zero", {}, "the model file is a symlink to /dev/zero",
         setup=lambda folder: os.symlink("/dev/zero", os.path.join(folder, "model.xml")))
    case("hostile_path", "model_dangling_symlink", {}, "the model file is a dangling symlink",
         setup=lambda folder: os.symlink("nowhere.xml", os.path.join(folder, "model.xml")))
    case("hostile_path", "long_asset_path", {"model.xml": model(
        '<geom type="mesh" mesh="a"/>', f'<mesh name="a" file="{"d/" * 2000}m.stl"/>')},
        "a 4000-character asset path")

    # XML entities
    laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              + "".join(f'<!ENTITY lol{i} "{("&lol%s;" % ("" if i == 1 else i - 1)) * 10}">'
                        for i in range(1, 10))
              + ']><mujoco model="&lol9;"><worldbody><geom size="1"/></worldbody></mujoco>')
    case("entity", "billion_laughs", {"model.xml": laughs}, "the billion laughs")
    case("entity", "external_entity", {"model.xml": (
        '<?xml version="1.0"?><!DOCTYPE m [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        '<mujoco model="&xxe;"><worldbody><geom size="1"/></worldbody></mujoco>')},
        "an external entity naming /etc/passwd")
    case("entity", "external_dtd", {"model.xml": (
        '<?xml version="1.0"?><!DOCTYPE mujoco SYSTEM "/dev/zero">'
        '<mujoco><worldbody><geom size="1"/></worldbody></mujoco>')}, "an external DTD /dev/zero")
    case("entity", "character_references", {"model.xml": (
        '<mujoco model="&#x1F600;&#233;&lt;&amp;"><worldbody><body name="&#x10FFFF;"><geom size="1"/>'
        '</body><body name="&#xD800;"><geom size="1"/></body></worldbody></mujoco>')},
        "character references, one to a lone surrogate")
    case("entity", "cdata_and_pi", {"model.xml": (
        '<?xml version="1.0"?><?php evil() ?><mujoco><![CDATA[<geom size="1"/>]]>'
        '<worldbody><geom size="1"/></worldbody></mujoco>')}, "CDATA and a processing instruction")

    # asset files of garbage
    for kind, element, use, exts in (
            ("mesh", '<mesh name="a" file="a.{e}"/>', '<geom type="mesh" mesh="a"/>', ("stl", "obj", "msh")),
            ("texture", '<texture name="a" type="2d" file="a.{e}"/><material name="m" texture="a"/>',
             '<geom size="1" material="m"/>', ("png",)),
            ("hfield", '<hfield name="a" file="a.{e}" size="1 1 1 0.1"/>', '<geom type="hfield" hfield="a"/>',
             ("png",)),
            ("skin", '<skin name="a" file="a.{e}"/>', "", ("skn",))):
        for ext in exts:
            for size in (0, 3, 84, 4096):
                key = f"{kind}_{ext}_random_{size}"
                rng = maker.rng(f"{group}:garbage_asset:{key}")
                data = bytes(rng.randrange(256) for _ in range(size))
                case("garbage_asset", key, {"model.xml": model(use, element.format(e=ext)), f"a.{ext}": data},
                     f"{size} random bytes as a .{ext} {kind}")
    structured = {
        "stl_count_huge": ("stl", binary_stl(TETRA, count=0xFFFFFFFF),
                           "a binary STL claiming 2^32-1 triangles"),
        "stl_nan": ("stl", binary_stl([((float("nan"),) * 3, (1, 0, 0), (0, 1, 0))] + TETRA),
                    "a binary STL with a NaN vertex"),
        "stl_ascii_garbage": ("stl", b"solid x\nfacet normal nan inf 0\nouter loop\nvertex a b c\n",
                              "a broken ASCII STL"),
        "obj_bad_index": ("obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 999999\nf -5 1 2\n",
                          "an OBJ with face indices out of range"),
        "obj_nan": ("obj", b"v nan 0 0\nv 1 inf 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 3 4\nf 1 2 4\nf 2 3 4\n",
                    "an OBJ with NaN / inf vertices"),
        "obj_empty_faces": ("obj", b"v 0 0 0\nf\nf 1\n", "an OBJ with empty faces"),
    }
    for key, (ext, data, note) in structured.items():
        files = {"model.xml": model('<geom type="mesh" mesh="a"/>', f'<mesh name="a" file="a.{ext}"/>'),
                 f"a.{ext}": data}
        case("garbage_asset", key, files, note)
    for key, data, note in (
            ("png_huge_header", png(100000, 100000, pixels=b"\0" * 10),
             "a PNG header claiming 100000 x 100000"),
            ("png_truncated", png(64, 64, truncate=60), "a PNG cut in its first chunk"),
            ("png_bad_crc", png(8, 8)[:-5] + b"\0\0\0\0\0", "a PNG with a bad CRC")):
        case("garbage_asset", f"texture_{key}", {"model.xml": model(
            '<geom size="1" material="m"/>', '<texture name="a" type="2d" file="a.png"/>'
            '<material name="m" texture="a"/>'), "a.png": data}, note)
        case("garbage_asset", f"hfield_{key}", {"model.xml": model(
            '<geom type="hfield" hfield="a"/>', '<hfield name="a" file="a.png" size="1 1 1 0.1"/>'),
            "a.png": data}, note)


def _rewrite(folder, old, new):
    path = os.path.join(folder, "model.xml")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace(old, new))


def make_cases(root: str, seed: int = DEFAULT_SEED, corpus: bool = True) -> list[dict]:
    maker = Maker(root, seed)
    for rel in BUILTIN_MODELS:
        source_cases(maker, Source(maker, rel, os.path.join(ROOT, rel), "builtin"),
                     mutants=6, truncations=3, encodings=True)
    for name, text in INLINE_MODELS.items():
        source_cases(maker, Source(maker, name, None, "builtin", text), mutants=8, truncations=3,
                     encodings=name == "kitchen_sink.xml")
    inline_cases(maker)
    if corpus:
        for n, rel in enumerate(corpus_models()):
            src = Source(maker, rel, os.path.join(CORPUS, rel), "corpus")
            # a few models carry the encodings; all get mutations and a truncation
            source_cases(maker, src, mutants=4, truncations=1, encodings=n % 5 == 0)
    return maker.cases

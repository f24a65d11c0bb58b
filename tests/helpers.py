"""Shared test helpers: the corpus of real models and fresh MuJoCo elements."""

import csv
import importlib.util
import math
import os
import socket

import mujoco
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))


def corpus_models():
    """Entry files listed in the corpus's models.tsv (empty when it is absent)."""
    index = os.path.join(CORPUS, "models.tsv")
    if not os.path.exists(index):
        return []
    with open(index, encoding="utf-8") as fh:
        return [row["path"] for row in csv.DictReader(fh, delimiter="\t")]


needs_corpus = pytest.mark.skipif(not os.path.exists(os.path.join(CORPUS, "models.tsv")),
                                  reason=f"no corpus at {CORPUS}")


def corpus_params():
    models = corpus_models()
    if not models:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no corpus at {CORPUS}"))]
    return [pytest.param(m, id=m.replace("/", ":"), marks=pytest.mark.corpus) for m in models]


def corpus_with(column):
    """Corpus models whose models.tsv `column` is > 0, as pytest params."""
    index = os.path.join(CORPUS, "models.tsv")
    if not os.path.exists(index):
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no corpus at {CORPUS}"))]
    with open(index, encoding="utf-8") as fh:
        paths = [row["path"] for row in csv.DictReader(fh, delimiter="\t") if int(row[column]) > 0]
    assert paths, f"no corpus model has {column} > 0"
    return [pytest.param(p, id=p.replace("/", ":"), marks=pytest.mark.corpus) for p in paths]


def skinned_model(path, inflate=None):
    """(model, data) of a corpus model, every skin's inflate set (None: as written), posed
    at qpos0 by mj_kinematics."""
    spec = load_corpus_spec(path)
    if inflate is not None:
        for element in spec.skins:
            element.inflate = inflate
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    return model, data


def mujoco_skin_vertices(model, data):
    """Skin vertices as MuJoCo's visualiser poses them (mjv_updateScene): float32."""
    scene = mujoco.MjvScene(model, maxgeom=2000)
    mujoco.mjv_updateScene(model, data, mujoco.MjvOption(), None, mujoco.MjvCamera(),
                           mujoco.mjtCatBit.mjCAT_ALL, scene)
    return np.asarray(scene.skinvert).reshape(-1, 3)


def site_without_mujoco(tmp_path):
    """A folder of symlinks to every package of this environment but mujoco*: on the
    path of a `python -I -S` child, it gives bpy, numpy, ... and no MuJoCo."""
    import bpy  # noqa: F401  (already imported by conftest; its folder is site-packages)

    site_packages = os.path.dirname(os.path.dirname(os.path.abspath(importlib.util.find_spec("bpy").origin)))
    site = os.path.join(tmp_path, "site-packages-without-mujoco")
    os.makedirs(site)
    for entry in os.listdir(site_packages):
        if not entry.startswith("mujoco"):
            os.symlink(os.path.join(site_packages, entry), os.path.join(site, entry))
    return site


def load_corpus_spec(path):
    return mujoco.MjSpec.from_file(os.path.join(CORPUS, path))


def load_tool(name):
    """A module of tools/ (not a package), e.g. the schema generator."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tools", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_schema = load_tool("gen_schema")
# kind -> how to make a fresh element of it in a given spec (the generator's own makers)
FRESH = {kind: entry[1] for kind, entry in gen_schema.ELEMENT_KINDS.items()}

# kind -> the spec's list of elements of that kind
SPEC_LISTS = {
    "body": "bodies", "frame": "frames", "joint": "joints", "geom": "geoms", "site": "sites",
    "camera": "cameras", "light": "lights", "flex": "flexes", "skin": "skins",
    "mesh": "meshes", "hfield": "hfields", "texture": "textures", "material": "materials",
    "pair": "pairs", "exclude": "excludes", "equality": "equalities", "tendon": "tendons",
    "actuator": "actuators", "sensor": "sensors", "numeric": "numerics", "text": "texts",
    "tuple": "tuples", "key": "keys", "plugin": "plugins",
}


_ALIVE = []  # an element is a view into its spec: keep each fresh spec alive


def fresh(kind):
    """A new element of `kind` with MuJoCo's defaults, in a spec of its own."""
    spec = mujoco.MjSpec()
    _ALIVE.append(spec)
    return FRESH[kind](spec)


def spec_elements(spec):
    """(kind, element) for every element of a spec (the world body excluded)."""
    for kind, listname in SPEC_LISTS.items():
        for element in getattr(spec, listname):
            if kind == "body" and element.name == "world":
                continue
            yield kind, element


def default_classes(spec):
    """Every default class some element of the spec uses, by name."""
    names = {"main"}
    for _, element in spec_elements(spec):
        cls = getattr(element, "classname", None)
        if cls is not None:
            names.add(cls.name)
        child = getattr(element, "childclass", None)
        if child:
            names.add(child)
    return {name: spec.find_default(name) for name in sorted(names) if spec.find_default(name)}


def as_comparable(value):
    """A value in a form where == is exact (floats compared bit for bit)."""
    if isinstance(value, (bytes, str, bool, int)) or value is None:
        return value
    if isinstance(value, float):
        return ("f", np.float64(value).view(np.uint64).item())
    if isinstance(value, dict):
        return {k: as_comparable(v) for k, v in value.items()}
    if hasattr(value, "name") and hasattr(value, "value"):  # an enum member
        return int(value)
    if hasattr(value, "name") and not isinstance(value, str):  # an element
        return ("element", value.name)
    arr = list(value)
    if arr and isinstance(arr[0], (list, tuple)) or (arr and hasattr(arr[0], "__len__")
                                                    and not isinstance(arr[0], str)):
        return [as_comparable(list(a)) for a in arr]
    out = []
    for v in arr:
        if isinstance(v, (float, np.floating)):
            out.append(("f", np.float64(v).view(np.uint64).item()))
        elif isinstance(v, (int, np.integer)):
            out.append(int(v))
        else:
            out.append(v)
    return out


def isnan(x):
    return isinstance(x, float) and math.isnan(x)


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A TCP port nothing listens on now (for a server a test starts), never one this
    process was given before: the kernel may hand the same free port to two calls in a
    row (a test asking for a camera, request and state port got one twice in CI)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def port_is_free(port: int) -> bool:
    """A plain bind (no SO_REUSEADDR): nothing listens on the port, or lingers there."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True

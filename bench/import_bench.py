"""Import time of every corpus model next to MuJoCo's own load of the same file.

    .venv/bin/python bench/import_bench.py [--repeat N] [--stages] [--json FILE] [model ...]

MuJoCo 4 caches assets within a process, so first and repeat loads are
timed separately, each side in its own fresh process: a "first" time is a
cold process's first load, a "repeat" time the median of N more loads in that
process. Prints one row per model and the median ratios (import / MuJoCo).
Target (issue 3): median ratio <= 2.

The `floor` columns are Blender's own floor for the same result, timed the same
way in a third fresh process with no MJBlend code: plain bpy making as many
objects (named as imported, linked to a collection, parented, placed with a
location and quaternion), meshes of the same vertex / corner / face / edge
counts (foreach_set), images of the same sizes (foreach_set pixels) and
materials, writing the same custom property values onto them (each
datablock's property tree as nested dicts, one assignment per top-level key),
then one depsgraph update (view_layer.update). What the import writes is read
off its result (`census`). The import also includes MuJoCo's own parse and
compile, so with one Blender object per element an import cannot beat about
1 + floor/MuJoCo: the floor ratios say whether <= 2 is reachable at all.

`--stages` prints, instead, where each import's time goes (ms, the median of the
N repeat imports in one fresh process; the first import's total beside them):
  read      the file and its includes read (mujoco_load.read_source)
  guard     the hostile-file guard: start_load + Load.run, less read and load
  load      MuJoCo's load in this process (mujoco_load.load: parse, compile, forward)
  settings, assets, defaults (of which class_tree: the classes' second parse),
  tree, attributes (_copy_attributes), hide, bounds (framing.model_bounds),
  others (_deformables, _collected, _world, ...): Builder's stage methods and
  build.py's helpers, timed by wrapping them from this script (importer/ is
  not changed for it); when the Builder keeps
  `timings` (a dict of seconds per stage) those are shown instead
  build+    the rest of import_loaded (new collection and root, transaction,
            view_layer.update calls made by build) less the stages
  depsgraph depsgraph evaluations during the import (depsgraph_update_pre -> the
            first post handler), already counted in the stage that asked for them
  op+       the operator's own time: the total less the load phase and import_loaded
`--json FILE` keeps every figure.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))

# Runs in a fresh interpreter; prints {"first": s, "repeat": [s, ...]} as JSON.
MUJOCO_SIDE = """
import json, sys, time, mujoco
path, n = sys.argv[1], int(sys.argv[2])
t = time.perf_counter(); mujoco.MjModel.from_xml_path(path); first = time.perf_counter() - t
repeat = []
for _ in range(n):
    t = time.perf_counter(); mujoco.MjModel.from_xml_path(path); repeat.append(time.perf_counter() - t)
print(json.dumps({"first": first, "repeat": repeat}))
"""

MJBLEND_SIDE = """
import json, os, sys, time
sys.path.insert(0, sys.argv[3])
import bpy, addon_utils
addon_utils.enable("mjblend", default_set=True)
path, n = sys.argv[1], int(sys.argv[2])
def once():
    bpy.ops.wm.read_homefile(use_empty=True)
    t = time.perf_counter()
    assert bpy.ops.import_scene.mjcf(filepath=path) == {"FINISHED"}
    return time.perf_counter() - t
first = once()
repeat = [once() for _ in range(n)]

def plain(value):  # ID properties as JSON; ID pointers left out
    value = value.to_dict() if hasattr(value, "to_dict") else value
    value = value.to_list() if hasattr(value, "to_list") else value
    if isinstance(value, dict):
        return {k: v for k, v in ((k, plain(v)) for k, v in value.items()) if v is not None}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value if isinstance(value, (int, float, str)) else None

def props(block):  # custom properties and the add-on's (system) property groups
    out = {k: plain(block[k]) for k in block.keys()}
    system = block.bl_system_properties_get()
    out.update({k: plain(system[k]) for k in (system.keys() if system is not None else ())})
    return out

objects, meshes = list(bpy.data.objects), list(bpy.data.meshes)
index, mesh_index = {o: i for i, o in enumerate(objects)}, {m: i for i, m in enumerate(meshes)}
census = {
    "objects": [[o.name, index.get(o.parent, -1), mesh_index.get(o.data, -1),
                 list(o.location) + list(o.rotation_quaternion), props(o)] for o in objects],
    "meshes": [[len(m.vertices), len(m.loops), len(m.polygons), len(m.edges), props(m)]
               for m in meshes],
    "images": [[*i.size, props(i)] for i in bpy.data.images],
    "materials": [props(m) for m in bpy.data.materials],
}
with open(sys.argv[4], "w") as fh:
    json.dump(census, fh)
print(json.dumps({"first": first, "repeat": repeat}))
"""

# Where an import's time goes: Builder's stage methods and the load's steps wrapped from
# here (no change to importer/); prints {"first": {stage: s}, "repeat": [{stage: s}, ...]}.
STAGES_SIDE = """
import json, sys, time, types
sys.path.insert(0, sys.argv[3])
import bpy, addon_utils
addon_utils.enable("mjblend", default_set=True)
from mjblend.importer import build, defaults, framing, mujoco_load
path, n = sys.argv[1], int(sys.argv[2])
times = {}
builders = []
clock = time.perf_counter

def add(key, seconds):
    times[key] = times.get(key, 0.0) + seconds

def timed(owner, name, key):
    function = getattr(owner, name, None)
    if function is None:  # (a part another change renamed: left out of the table)
        return
    def wrapped(*args, **kwargs):
        start = clock()
        try:
            result = function(*args, **kwargs)
        finally:
            add(key, clock() - start)
        if isinstance(result, types.GeneratorType):  # a stepped stage: time its steps
            return stepped(result, key)
        return result
    setattr(owner, name, wrapped)

def stepped(generator, key):
    while True:
        start = clock()
        try:
            item = next(generator)
        except StopIteration as stop:
            add(key, clock() - start)
            return stop.value
        add(key, clock() - start)
        yield item

STAGES = {"_settings": "settings", "_assets": "assets", "_defaults": "defaults", "_tree": "tree",
          "_copy_attributes": "attributes"}
OTHERS = ("_deformables", "_collected", "_world", "_unmark_derived_materials",
          "_choose_angle_unit", "_aim_trackers")
for name, key in STAGES.items():
    timed(build.Builder, name, key)
for name in OTHERS:
    timed(build.Builder, name, "others")
timed(build, "hide", "hide")
timed(framing, "model_bounds", "bounds")
timed(defaults, "class_tree", "class_tree")
timed(build, "start_load", "start_load")
timed(mujoco_load, "read_source", "read")
timed(mujoco_load, "load", "load")
timed(mujoco_load.Load, "run", "run")
timed(build, "import_loaded", "import_loaded")
original_init = build.Builder.__init__
def init(self, *args, **kwargs):
    builders.append(self)
    original_init(self, *args, **kwargs)
build.Builder.__init__ = init

evaluating = []
@bpy.app.handlers.persistent  # (a file load drops the others)
def pre(*_args):
    evaluating.append(clock())
@bpy.app.handlers.persistent
def post(*_args):
    if evaluating:
        add("depsgraph", clock() - evaluating.pop())
bpy.app.handlers.depsgraph_update_pre.insert(0, pre)
bpy.app.handlers.depsgraph_update_post.insert(0, post)

def once():
    bpy.ops.wm.read_homefile(use_empty=True)
    times.clear()
    builders.clear()
    evaluating.clear()
    t = clock()
    assert bpy.ops.import_scene.mjcf(filepath=path) == {"FINISHED"}
    total = clock() - t
    kept = dict(times)
    out = {"total": total}
    out["read"] = kept.get("read", 0.0)
    out["load"] = kept.get("load", 0.0)
    out["guard"] = kept.get("start_load", 0.0) + kept.get("run", 0.0) - out["read"] - out["load"]
    own = getattr(builders[-1], "timings", None) if builders else None
    stages = dict(own) if own else {k: kept[k] for k in (*STAGES.values(), "class_tree", "others", "hide",
                                                         "bounds") if k in kept}
    if own:
        out["timings"] = sorted(own)
    out.update(stages)
    counted = sum(v for k, v in stages.items() if k != "class_tree")  # (inside defaults)
    out["build+"] = kept.get("import_loaded", 0.0) - counted
    out["depsgraph"] = kept.get("depsgraph", 0.0)
    out["op+"] = total - kept.get("start_load", 0.0) - kept.get("run", 0.0) - kept.get("import_loaded", 0.0)
    out["objects"] = len(bpy.data.objects)
    return out

first = once()
repeat = [once() for _ in range(n)]
print(json.dumps({"first": first, "repeat": repeat}))
"""

# Plain bpy, no add-on: the same objects, meshes, images, materials and property values
# as the import made (sys.argv[1], its census), timed like the import.
FLOOR_SIDE = """
import json, sys, time
import bpy
import numpy as np
with open(sys.argv[1]) as fh:
    census = json.load(fh)
n = int(sys.argv[2])

def write(block, values):
    for key, value in values.items():
        block[key] = value

def mesh(nverts, ncorners, nfaces, nedges):
    m = bpy.data.meshes.new("mesh")
    m.vertices.add(nverts)
    m.attributes["position"].data.foreach_set("vector", np.zeros(3 * nverts, np.float32))
    if nedges:
        m.edges.add(nedges)
        m.edges.foreach_set("vertices", np.arange(2 * nedges, dtype=np.int32) % max(nverts, 1))
    if nfaces:
        m.loops.add(ncorners)
        m.attributes[".corner_vert"].data.foreach_set(
            "value", np.arange(ncorners, dtype=np.int32) % max(nverts, 1))
        m.polygons.add(nfaces)
        m.polygons.foreach_set("loop_start", np.linspace(0, ncorners, nfaces, endpoint=False,
                                                         dtype=np.int32))
    m.update(calc_edges=True)
    return m

def once():
    bpy.ops.wm.read_homefile(use_empty=True)
    t = time.perf_counter()
    collection = bpy.data.collections.new("floor")
    bpy.context.scene.collection.children.link(collection)
    meshes = []
    for *counts, values in census["meshes"]:
        meshes.append(mesh(*counts))
        write(meshes[-1], values)
    for width, height, values in census["images"]:
        image = bpy.data.images.new("image", width, height)
        image.pixels.foreach_set(np.zeros(width * height * 4, np.float32))
        write(image, values)
    for values in census["materials"]:
        write(bpy.data.materials.new("material"), values)
    objects = []
    for name, _parent, data, _pose, _values in census["objects"]:
        objects.append(bpy.data.objects.new(name, meshes[data] if data >= 0 else None))
        collection.objects.link(objects[-1])
    for obj, (_name, parent, _data, pose, values) in zip(objects, census["objects"]):
        if parent >= 0:  # census order is Blender's (by name): parents may come later
            obj.parent = objects[parent]
        obj.rotation_mode = "QUATERNION"
        obj.location, obj.rotation_quaternion = pose[:3], pose[3:]
        write(obj, values)
    bpy.context.view_layer.update()
    return time.perf_counter() - t

first = once()
repeat = [once() for _ in range(n)]
print(json.dumps({"first": first, "repeat": repeat}))
"""


def run(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                         text=True)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def corpus_models():
    with open(os.path.join(CORPUS, "models.tsv"), encoding="utf-8") as fh:
        return [row["path"] for row in csv.DictReader(fh, delimiter="\t")]


STAGE_COLUMNS = ("read", "guard", "load", "settings", "assets", "defaults", "class_tree", "tree",
                 "attributes", "hide", "bounds", "others", "build+", "depsgraph", "op+")
IN_OTHER_COLUMNS = ("class_tree", "depsgraph")  # shown in (brackets): already inside another column


def stage_times(path, repeat, scratch):
    """{"first": {stage: seconds}, "repeat": [...]} of importing `path` in a fresh process."""
    return run(STAGES_SIDE, path, repeat, scratch)


def stage_medians(result) -> dict:
    """Each stage's median over the repeat imports (the first import when there were none)."""
    rows = result["repeat"] or [result["first"]]
    keys = [k for k in rows[0] if isinstance(rows[0][k], (int, float))]
    return {k: statistics.median(row.get(k, 0.0) for row in rows) for k in keys}


def stage_columns(tables) -> list[str]:
    """The standard columns, then any stage a Builder's own `timings` adds."""
    seen = [k for k in STAGE_COLUMNS if any(k in t for t in tables)]
    for table in tables:
        seen += [k for k, v in table.items() if k not in seen and k not in ("total", "objects", "first")
                 and isinstance(v, (int, float))]
    return seen


def print_stages(rows, label_width=50):
    """rows: [(label, medians with "first" added)]: one line per model (ms), then the median
    over the models of each column, and each column's share of the median total."""
    columns = stage_columns([r for _label, r in rows])
    head = [("first", "first"), ("total", "rep")] + [(c, f"({c})" if c in IN_OTHER_COLUMNS else c)
                                                     for c in columns]
    widths = [max(7, len(title) + 1) for _key, title in head]
    print(f"{'model (ms; rep = median of repeats)':{label_width}s} {'objs':>6s}"
          + "".join(f"{title:>{w}s}" for (_k, title), w in zip(head, widths, strict=True)))
    for label, row in rows:
        label = label if len(label) <= label_width else "…" + label[1 - label_width:]
        print(f"{label:{label_width}s} {int(row.get('objects', 0)):6d}"
              + "".join(f"{row.get(k, 0.0) * 1e3:{w}.1f}" for (k, _t), w in zip(head, widths, strict=True)))
    if len(rows) > 1:
        median = {k: statistics.median(r.get(k, 0.0) for _l, r in rows) for k, _t in head}
        print(f"{'median over the models':{label_width}s} {'':6s}"
              + "".join(f"{median[k] * 1e3:{w}.1f}" for (k, _t), w in zip(head, widths, strict=True)))
        shares = {k: statistics.median(r.get(k, 0.0) / r["total"] for _l, r in rows) for k, _t in head}
        print(f"{'median share of the import (%)':{label_width}s} {'':6s}"
              + "".join(f"{'' if k == 'first' else f'{shares[k] * 100:.0f}':>{w}s}"
                        for (k, _t), w in zip(head, widths, strict=True)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stages", action="store_true",
                        help="where each import's time goes, per stage (see the docstring)")
    parser.add_argument("--json", help="write every measured figure to this file")
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()
    models = args.models or corpus_models()
    scratch = tempfile.mkdtemp(prefix="mjblend-bench-")
    os.symlink(ROOT, os.path.join(scratch, "mjblend"))
    kept = {}
    if args.stages:
        rows = []
        for model in models:
            result = kept[model] = stage_times(os.path.join(CORPUS, model), args.repeat, scratch)
            rows.append((model, {**stage_medians(result), "first": result["first"]["total"]}))
        print_stages(rows)
    else:
        kept = imports_against_mujoco(models, args.repeat, scratch)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(kept, fh, indent=1)


def imports_against_mujoco(models, repeat, scratch) -> dict:
    census = os.path.join(scratch, "census.json")
    ratios = {"first": [], "repeat": [], "floor first": [], "floor repeat": []}
    kept = {}
    print(f"{'model':58s} {'mujoco first':>12s} {'import first':>12s} {'ratio':>6s}"
          f" {'mujoco rep':>10s} {'import rep':>10s} {'ratio':>6s}"
          f" {'floor first':>11s} {'ratio':>6s} {'floor rep':>9s} {'ratio':>6s}")
    for model in models:
        path = os.path.join(CORPUS, model)
        mj = run(MUJOCO_SIDE, path, repeat)
        ours = run(MJBLEND_SIDE, path, repeat, scratch, census)
        floor = run(FLOOR_SIDE, census, repeat)
        kept[model] = {"mujoco": mj, "import": ours, "floor": floor}
        mj_rep, our_rep = statistics.median(mj["repeat"]), statistics.median(ours["repeat"])
        floor_rep = statistics.median(floor["repeat"])
        ratios["first"].append(ours["first"] / mj["first"])
        ratios["repeat"].append(our_rep / mj_rep)
        ratios["floor first"].append(floor["first"] / mj["first"])
        ratios["floor repeat"].append(floor_rep / mj_rep)
        print(f"{model:58s} {mj['first'] * 1e3:10.1f}ms {ours['first'] * 1e3:10.1f}ms"
              f" {ratios['first'][-1]:6.2f} {mj_rep * 1e3:8.1f}ms {our_rep * 1e3:8.1f}ms"
              f" {ratios['repeat'][-1]:6.2f} {floor['first'] * 1e3:9.1f}ms"
              f" {ratios['floor first'][-1]:6.2f} {floor_rep * 1e3:7.1f}ms"
              f" {ratios['floor repeat'][-1]:6.2f}")
    median = {key: statistics.median(values) for key, values in ratios.items()}
    print(f"median ratio import/MuJoCo: first load {median['first']:.2f}, "
          f"repeat load {median['repeat']:.2f}  (targets, issue 35: first <= 2, repeat <= 4)")
    print(f"median ratio floor/MuJoCo: first load {median['floor first']:.2f}, "
          f"repeat load {median['floor repeat']:.2f}  (Blender alone; an import with one "
          f"object per element needs about 1 + this)")
    return kept


if __name__ == "__main__":
    main()

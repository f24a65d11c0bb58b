"""Import time of every corpus model next to MuJoCo's own load of the same file.

    .venv/bin/python bench/import_bench.py [--repeat N] [model ...]

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()
    models = args.models or corpus_models()
    scratch = tempfile.mkdtemp(prefix="mjblend-bench-")
    os.symlink(ROOT, os.path.join(scratch, "mjblend"))
    census = os.path.join(scratch, "census.json")
    ratios = {"first": [], "repeat": [], "floor first": [], "floor repeat": []}
    print(f"{'model':58s} {'mujoco first':>12s} {'import first':>12s} {'ratio':>6s}"
          f" {'mujoco rep':>10s} {'import rep':>10s} {'ratio':>6s}"
          f" {'floor first':>11s} {'ratio':>6s} {'floor rep':>9s} {'ratio':>6s}")
    for model in models:
        path = os.path.join(CORPUS, model)
        mj = run(MUJOCO_SIDE, path, args.repeat)
        ours = run(MJBLEND_SIDE, path, args.repeat, scratch, census)
        floor = run(FLOOR_SIDE, census, args.repeat)
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
          f"repeat load {median['repeat']:.2f}  (target <= 2)")
    print(f"median ratio floor/MuJoCo: first load {median['floor first']:.2f}, "
          f"repeat load {median['floor repeat']:.2f}  (Blender alone; an import with one "
          f"object per element needs about 1 + this)")


if __name__ == "__main__":
    main()

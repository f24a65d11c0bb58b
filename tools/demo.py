"""MJBlend's demo: import a model, simulate it, save a .blend and render a picture.

    .venv/bin/python tools/demo.py [--model PATH] [--seconds S] [--out DIR]

Runs in the bpy module (Blender as a Python module), the same code path a user
takes: File > Import > MuJoCo (`import_scene.mjcf`), then `mujoco.simulate`.
The model is the humanoid from ../shared/corpus when the corpus is there (it
falls over in a few seconds), else MJBlend's own examples/desk_toys.xml.
Writes demo.blend (the authored model: a .blend never holds simulated poses)
and demo.png (a render of the simulated state) to --out (default: the
repository root), and compares the simulated poses with MuJoCo's own run of
the original file.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

import bpy
import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS_MODEL = os.path.join(ROOT, "..", "shared", "corpus", "mujoco_model", "model", "humanoid",
                            "humanoid.xml")
OWN_MODEL = os.path.join(ROOT, "examples", "desk_toys.xml")


def load_render_helpers():
    spec = importlib.util.spec_from_file_location("render_docs", os.path.join(ROOT, "tools",
                                                                              "render_docs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def largest_body_error(model_path, seconds) -> float:
    """Largest distance between a Blender body and MuJoCo's own run of the file."""
    model = mujoco.MjModel.from_xml_path(model_path)
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=int(round(seconds / model.opt.timestep)))
    mujoco.mj_kinematics(model, data)  # (the objects show the final state's poses; mj_step leaves the last)
    bpy.context.view_layer.update()
    worst = 0.0
    for obj in bpy.context.scene.objects:
        if obj.mujoco.kind == "BODY" and obj.mujoco.name:
            where = np.array(obj.matrix_world.translation)
            worst = max(worst, float(np.abs(where - data.xpos[model.body(obj.mujoco.name).id]).max()))
    return worst


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = CORPUS_MODEL if os.path.exists(CORPUS_MODEL) else OWN_MODEL
    parser.add_argument("--model", default=default, help=f"MJCF or URDF file (default: {default})")
    parser.add_argument("--seconds", type=float, default=3.0, help="simulated time (default 3)")
    parser.add_argument("--out", default=ROOT, help="folder for demo.blend and demo.png")
    parser.add_argument("--size", default="800x500", help="picture WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    model_path = os.path.abspath(args.model)
    os.makedirs(args.out, exist_ok=True)

    render = load_render_helpers()
    render.enable_addon()
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene

    started = time.perf_counter()
    bpy.ops.import_scene.mjcf(filepath=model_path)
    imported = time.perf_counter()
    print(f"imported {os.path.relpath(model_path, ROOT)}: {len(scene.objects)} objects "
          f"in {imported - started:.2f} s")
    bpy.ops.mujoco.simulate(duration=args.seconds)
    simulated = time.perf_counter()
    live = importlib.import_module(f"{render.ADDON[0]}.live.scene_session").get(scene)
    shot = live.latest
    print(f"simulated {shot.time:.3f} s of model time in {simulated - imported:.2f} s of wall time")
    error = largest_body_error(model_path, args.seconds)
    print(f"largest body position difference from MuJoCo's own run of the file: {error:.2e} m")

    blend = os.path.join(args.out, "demo.blend")
    bpy.ops.wm.save_as_mainfile(filepath=blend, copy=True)
    print(f"saved {blend} (the authored model)")

    width, height = (int(v) for v in args.size.split("x"))
    engine = render.pick_engine()
    render.set_engine(scene, engine)
    if engine == "CYCLES":
        scene.cycles.samples = 16  # denoised: enough for a preview, half the CPU time
    render.neutral_world(scene)
    root = next(o for o in scene.objects if o.mujoco.kind == "MODEL")
    collection = root.users_collection[0]
    render.prepare_scene(scene, collection, width, height, {"azimuth": -50, "elevation": 20})
    picture = os.path.join(args.out, "demo.png")
    scene.render.filepath = picture
    scene.render.image_settings.file_format = "PNG"
    bpy.ops.render.render(write_still=True)
    print(f"rendered {picture} with {engine} in {time.perf_counter() - simulated:.1f} s "
          f"(the simulated state at t = {shot.time:.2f} s)")
    return 0 if error < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

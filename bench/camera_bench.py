"""Cameras as sensors. Part 1: MuJoCo's renderer through MJBlend's sensor path
(engine/cameras.py: the state put into a private MjData by mj_setState + mj_forward,
update_scene, render, a Frame with K and the pose) against mujoco.Renderer alone
(update_scene + render of an MjData already forwarded), in one run.

    MUJOCO_GL=egl .venv/bin/python bench/camera_bench.py [--model PATH] [--camera NAME]
        [--frames F] [--repeat R] [--width 640 --height 480]

1. one RGB camera at 640 x 480: frames per second, MJBlend / mujoco.Renderer alone
   (target >= 0.9);
2. RGB + depth + segmentation of that camera together, likewise.

Both sides render the same 30 states of a simulation of the model (default: the
corpus humanoid, its "side" camera), interleaved repeat by repeat; medians of R.

Part 2, streaming (`--stream-steps N`, 0 skips it): the model served by a real Bridge
(bridge/host.ModelHost, ZMQ on free ports) in direct mode; a client's `step`
(`--substeps` physics steps) with that camera included at 320 x 240 (`include_cameras`,
the BGRA8 frame in the reply) against the same step without, alternated N times each:
the added time (median with - median without) and its ratio to a bare mujoco.Renderer
render (update_scene + RGB) at 320 x 240, measured in the same run.

Part 3 (`--dataset`, needs the bpy module: datasets from the timeline, see
`dataset_costs`): seconds per dataset frame of the camera at its own resolution,
RGB + depth + segmentation, rendered by Blender's Workbench, by Cycles (samples
stated) and by MuJoCo's renderer, each a dataset of the same bake written by
`bpy.ops.mujoco.render_dataset` (images, JSON and states included), beside the
simulation's own cost per frame (MuJoCo stepping from one baked frame to the next).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("MUJOCO_GL", "egl")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import addon_loader  # noqa: E402,F401  (links the add-on as `mjblend`, as the tests do)
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from mjblend.engine import cameras  # noqa: E402

TARGET = 0.9
HUMANOID = os.path.join(ROOT, "..", "shared", "corpus", "mujoco_model", "model", "humanoid", "humanoid.xml")
KINDS = {"rgb": ("rgb",), "rgb+depth+segmentation": cameras.KINDS}


def states(model, count: int):
    """`count` full-physics states 0.02 s apart, and an MjData forwarded in each."""
    data = mujoco.MjData(model)
    if model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    size = mujoco.mj_stateSize(model, cameras.STATE)
    vectors, datas = [], []
    for _ in range(count):
        end = data.time + 0.02
        while data.time < end:
            mujoco.mj_step(model, data)
        vector = np.empty(size)
        mujoco.mj_getState(model, data, vector, cameras.STATE)
        forwarded = mujoco.MjData(model)
        mujoco.mj_setState(model, forwarded, vector, cameras.STATE)
        mujoco.mj_forward(model, forwarded)
        vectors.append(vector)
        datas.append(forwarded)
    return vectors, datas


def draw(renderer, kinds) -> None:
    """Each kind of the scene already updated, drawn with mujoco.Renderer alone."""
    for kind in kinds:
        if kind == "depth":
            renderer.enable_depth_rendering()
        elif kind == "segmentation":
            renderer.enable_segmentation_rendering()
        renderer.render()
    renderer.disable_depth_rendering()
    renderer.disable_segmentation_rendering()


def alone(renderer, datas, cam_id: int, kinds, frames: int) -> float:
    """Frames per second of mujoco.Renderer alone."""
    start = time.perf_counter()
    for i in range(frames):
        renderer.update_scene(datas[i % len(datas)], cam_id)
        draw(renderer, kinds)
    return frames / (time.perf_counter() - start)


def sensor(renderer, vectors, name: str, kinds, frames: int, width: int, height: int) -> float:
    """Frames per second through MJBlend's sensor path, from state vectors."""
    start = time.perf_counter()
    for i in range(frames):
        renderer.render(vectors[i % len(vectors)], name, kinds, width, height)
    return frames / (time.perf_counter() - start)


def streaming(path: str, camera: str, steps: int, substeps: int, width: int = 320, height: int = 240) -> dict:
    """Part 2: a direct-mode step with one camera included against the same step without."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))
    from helpers import free_port
    from wire_client import WireClient

    from mjblend.bridge.host import ModelHost, prefix_of
    from mjblend.bridge.server import Bridge

    spec = mujoco.MjSpec.from_file(path)
    name = f"{prefix_of(spec.modelname or os.path.splitext(os.path.basename(path))[0])}_{camera}"
    host = ModelHost.from_file(path, cameras={name: {"resolution": (width, height)}})
    port = free_port()
    bridge = Bridge(host, request_port=port, state_port=free_port(), camera_port=free_port())
    bridge.start()
    client = WireClient(port)
    try:
        assert client.hello()["op"] == "hello_ok"
        assert client.call("set_mode", mode="direct")["op"] == "set_mode_ok"
        with_camera, without = [], []
        for i in range(steps + 5):  # (the first 5 pairs warm up: GL context, caches)
            for include, times in ((True, with_camera), (False, without)):
                fields = {"include_cameras": [name]} if include else {}
                start = time.perf_counter()
                reply = client.call("step", n_steps=substeps, **fields)
                elapsed = time.perf_counter() - start
                assert reply["op"] == "step_ok", reply
                if include:
                    assert len(reply["cameras"][name]["data"]) == width * height * 4
                if i >= 5:
                    times.append(elapsed)
        model = host.session.model
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        cam_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name)
        bare = []
        with mujoco.Renderer(model, height, width) as renderer:
            for i in range(steps + 5):
                start = time.perf_counter()
                renderer.update_scene(data, cam_id)
                renderer.render()
                if i >= 5:
                    bare.append(time.perf_counter() - start)
    finally:
        client.close()
        bridge.stop()
        host.close()
    step_with, step_without = statistics.median(with_camera), statistics.median(without)
    render = statistics.median(bare)
    added = step_with - step_without
    return {"camera": name, "width": width, "height": height, "substeps": substeps, "steps": steps,
            "step_without_ms": step_without * 1e3, "step_with_camera_ms": step_with * 1e3,
            "added_ms": added * 1e3, "bare_render_ms": render * 1e3, "added_over_bare_render": added / render}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=HUMANOID)
    parser.add_argument("--camera", default="side")
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--stream-steps", type=int, default=100, help="part 2's steps of each kind (0: skip)")
    parser.add_argument("--substeps", type=int, default=10, help="physics steps a part 2 step takes")
    parser.add_argument("--dataset", action="store_true", help="part 3 only: dataset frames (needs bpy)")
    parser.add_argument("--dataset-frames", type=int, default=3, help="part 3: frames per dataset")
    parser.add_argument("--cycles-samples", type=int, default=16, help="part 3: Cycles' samples per pixel")
    args = parser.parse_args(argv)
    if args.dataset:
        print(json.dumps(dataset_costs(args)))
        return 0

    model = mujoco.MjModel.from_xml_path(args.model)
    cam = cameras.camera(model, args.camera)
    vectors, datas = states(model, 30)
    print(f"model {os.path.relpath(args.model, ROOT)}, camera '{cam.name}', {args.width} x {args.height}, "
          f"MUJOCO_GL={os.environ['MUJOCO_GL']}, mujoco {mujoco.__version__}; {args.frames} frames x "
          f"{args.repeat} repeats, medians")
    results = {}
    with mujoco.Renderer(model, args.height, args.width) as baseline, cameras.CameraRenderer(model) as ours:
        for label, kinds in KINDS.items():
            alone(baseline, datas, cam.id, kinds, 3)  # warm both
            sensor(ours, vectors, cam.name, kinds, 3, args.width, args.height)
            ref, mine = [], []
            for _ in range(args.repeat):
                ref.append(alone(baseline, datas, cam.id, kinds, args.frames))
                mine.append(sensor(ours, vectors, cam.name, kinds, args.frames, args.width, args.height))
            ref_fps, mine_fps = statistics.median(ref), statistics.median(mine)
            ratio = mine_fps / ref_fps
            results[label] = {"mujoco_renderer_fps": ref_fps, "mjblend_fps": mine_fps, "ratio": ratio}
            met = "met" if ratio >= TARGET else "MISSED"
            verdict = f" (target >= {TARGET}: {met})" if label == "rgb" else ""
            print(f"{label:>24}: mujoco.Renderer alone {ref_fps:7.1f} frames/s, MJBlend's sensor path "
                  f"{mine_fps:7.1f} frames/s, ratio {ratio:.3f}{verdict}")
    if args.stream_steps:
        part = results["streaming"] = streaming(args.model, args.camera, args.stream_steps, args.substeps)
        print(f"streaming, direct-mode step ({part['substeps']} physics steps) over ZMQ, camera "
              f"'{part['camera']}' {part['width']} x {part['height']}: "
              f"without {part['step_without_ms']:.3f} ms, "
              f"with include_cameras {part['step_with_camera_ms']:.3f} ms: added {part['added_ms']:.3f} ms, "
              f"{part['added_over_bare_render']:.2f} x a bare mujoco.Renderer render "
              f"({part['bare_render_ms']:.3f} ms); medians of {part['steps']}")
    print(json.dumps(results))
    return 0 if results["rgb"]["ratio"] >= TARGET else 1


# ------------------------------------------------------------------ part 3: datasets

def dataset_costs(args) -> dict:
    """Part 3: the model imported into Blender and baked (frames at the scene's 24 fps),
    then datasets of `--dataset-frames` frames of the camera (RGB + depth + segmentation
    at its own resolution) through Workbench, Cycles and MuJoCo's renderer; seconds per
    frame are medians of the frames' wall times (the first frame of each dataset, which
    starts the renderer, left out), the simulation's own cost per frame the median of
    MuJoCo stepping a frame's steps on the file's model."""
    import tempfile

    import addon_loader as loader
    import bpy

    from mjblend.engine import dataset
    from mjblend.engine.recording import steps_at
    from mjblend.importer import build
    from mjblend.live import camera_dataset

    loader.enable_addon()
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    build.import_file(args.model, scene)
    frames = args.dataset_frames + 1  # (+1: the first, warming, frame)
    fps = scene.render.fps / scene.render.fps_base
    assert bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, frame_end=frames) == {"FINISHED"}

    model = mujoco.MjModel.from_xml_path(args.model)
    data = mujoco.MjData(model)
    stepping = []
    for k in range(1, 4 * frames):
        steps = steps_at(k, fps, model.opt.timestep) - steps_at(k - 1, fps, model.opt.timestep)
        start = time.perf_counter()
        mujoco.mj_step(model, data, nstep=steps)
        stepping.append(time.perf_counter() - start)
    sim = statistics.median(stepping)
    cam = cameras.camera(model, args.camera)
    print(f"part 3: dataset frames of '{cam.name}' at {cam.width} x {cam.height}, RGB + depth + "
          f"segmentation, {args.dataset_frames} frames each (medians, the first frame left out); scene at "
          f"{fps:g} fps = {steps_at(1, fps, model.opt.timestep)} steps of {model.opt.timestep:g} s per frame")
    print(f"{'simulation (MuJoCo stepping)':>34}: {sim * 1e3:9.2f} ms per frame")
    results = {"simulation_s_per_frame": sim, "width": cam.width, "height": cam.height}
    runs = (("mujoco", "BLENDER_WORKBENCH", None, "MuJoCo renderer"),
            ("blender", "BLENDER_WORKBENCH", None, "Blender Workbench"),
            ("blender", "CYCLES", args.cycles_samples, f"Blender Cycles, {args.cycles_samples} samples"))
    for renderer, engine, samples, label in runs:
        settings = dataset.Settings(cameras=(cam.name,), renderer=renderer, engine=engine, samples=samples)
        with tempfile.TemporaryDirectory() as folder:
            job = camera_dataset.job(scene, folder, settings)
            times = []
            while True:
                start = time.perf_counter()
                if not job.step():
                    break
                times.append(time.perf_counter() - start)
        per_frame = statistics.median(times[1:])
        results[label] = {"s_per_frame": per_frame, "ratio_to_simulation": per_frame / sim,
                          "renderer": job.dataset.manifest["renderer"]}
        print(f"{label:>34}: {per_frame:9.3f} s per frame ({per_frame / sim:,.0f} x the simulation's cost)")
    return results


if __name__ == "__main__":
    sys.exit(main())

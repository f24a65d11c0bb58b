"""MJBlend's demo: import a model, simulate it, render a picture and a movie, save a .blend.

    .venv/bin/python tools/demo.py [--model PATH] [--seconds S] [--out DIR]
                                   [--movie-seconds S] [--fps N] [--movie-size WxH]
                                   [--movie-engine ENGINE]

Runs in the bpy module (Blender as a Python module), the same code path a user
takes: File > Import > MuJoCo (`import_scene.mjcf`), then `mujoco.simulate`
and `mujoco.bake`. The model is the humanoid from ../shared/corpus when the
corpus is there (it falls over in a few seconds), else MJBlend's own
examples/desk_toys.xml. Writes to --out (default: the repository root):

- demo.png: a render of the simulated state after --seconds;
- demo.mp4: the first --movie-seconds baked into the timeline from the
  reference pose (qpos0) and rendered as an animation (H.264 in MPEG-4; another
  codec the bpy module has if it lacks that one, and then another extension);
- demo_dataset/: the bake's first frames seen by every MuJoCo camera of the model
  (docs/index.md, "Camera datasets");
- demo.blend: the authored model with that bake, the movie's camera and render
  settings (Play shows the simulation, Render Animation writes the movie
  again, Clear Bake leaves the authored model alone: a bake never changes it).

Both the picture's state and the bake's frames are compared with MuJoCo's own
run of the original file; the exit status is 1 when they differ.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import time

# MuJoCo reads MUJOCO_GL at its first import, here before the add-on's own choice
# (engine/gl_backend.py): ask for the same, EGL, for the camera dataset's renderer.
os.environ.setdefault("MUJOCO_GL", "egl")

import bpy  # noqa: E402
import mujoco  # noqa: E402
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS_MODEL = os.path.join(ROOT, "..", "shared", "corpus", "mujoco_model", "model", "humanoid",
                            "humanoid.xml")
OWN_MODEL = os.path.join(ROOT, "examples", "desk_toys.xml")
FRAMING = {"azimuth": -50, "elevation": 20}  # the picture's camera
MOVIE_FRAMING = {"azimuth": -75, "elevation": 15}  # more from the side: the humanoid falls along +x

# (container, codec, file extension) for the movie, best first: H.264 in MPEG-4 plays
# everywhere; the bpy module's FFmpeg build may lack an encoder, then the next is tried.
MOVIE_FORMATS = (("MPEG4", "H264", ".mp4"), ("MPEG4", "MPEG4", ".mp4"), ("OGG", "THEORA", ".ogv"),
                 ("AVI", "PNG", ".avi"))
PICTURE_TOLERANCE = 1e-4  # m: MuJoCo's run vs the simulated state in the picture
BAKE_TOLERANCE = 1e-5  # m: MuJoCo's run vs the baked keys
DATASET_FRAMES = 6  # frames of the bake rendered into demo_dataset/


def load_render_helpers():
    spec = importlib.util.spec_from_file_location("render_docs", os.path.join(ROOT, "tools",
                                                                              "render_docs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def body_error(model, data) -> float:
    """Largest distance (m) between a Blender body object's world position now and
    data.xpos of the same body."""
    bpy.context.view_layer.update()
    worst = 0.0
    for obj in bpy.context.scene.objects:
        if obj.mujoco.kind == "BODY" and obj.mujoco.name:
            where = np.array(obj.matrix_world.translation)
            worst = max(worst, float(np.abs(where - data.xpos[model.body(obj.mujoco.name).id]).max()))
    return worst


def largest_body_error(model_path, seconds) -> float:
    """Largest distance between a Blender body and MuJoCo's own run of the file."""
    model = mujoco.MjModel.from_xml_path(model_path)
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=int(round(seconds / model.opt.timestep)))
    mujoco.mj_kinematics(model, data)  # (the objects show the final state's poses; mj_step leaves the last)
    return body_error(model, data)


def largest_bake_error(model_path, scene, frames) -> float:
    """Largest distance between a Blender body at each of `frames` (scene frames of the
    bake, which starts at scene.frame_start from qpos0) and MuJoCo's own run of the file
    after round(k / (fps * timestep)) steps, k = frame - frame_start."""
    model = mujoco.MjModel.from_xml_path(model_path)
    data = mujoco.MjData(model)
    fps = scene.render.fps / scene.render.fps_base
    worst, done = 0.0, 0
    for frame in sorted(frames):
        steps = int(round((frame - scene.frame_start) / (fps * model.opt.timestep)))
        if steps > done:
            mujoco.mj_step(model, data, nstep=steps - done)
            done = steps
        mujoco.mj_kinematics(model, data)
        scene.frame_set(frame)
        worst = max(worst, body_error(model, data))
    return worst


def motion_bbox(render, scene, collection, frames) -> tuple[np.ndarray, np.ndarray]:
    """(min corner, max corner) of the model's visible meshes over `frames`: what the
    movie's camera must keep in view."""
    corners = []
    for frame in frames:
        scene.frame_set(frame)
        corners.extend(render.world_bbox(render.subject_objects(collection)))
    return np.min(corners, axis=0), np.max(corners, axis=0)


def set_movie_engine(render, scene, engine):
    render.set_engine(scene, engine)
    if engine == "CYCLES":
        scene.cycles.samples = 4  # denoised; about 2.5 s a frame at 480x300 on this 2-core machine
        scene.render.use_persistent_data = True  # (keeps the scene between frames)
    elif engine == "BLENDER_WORKBENCH":
        shading = scene.display.shading
        shading.color_type = "TEXTURE"  # the floor's checker; plain materials keep their colour
        shading.show_shadows = True
        shading.show_cavity = True


def render_movie(scene, base) -> str:
    """Render scene.frame_start..frame_end to `base` + the first extension of MOVIE_FORMATS
    whose encoder the bpy module has; returns the path written."""
    settings = scene.render.image_settings
    if hasattr(settings, "media_type"):  # Blender 5: movies are a media type of their own
        settings.media_type = "VIDEO"
    settings.file_format = "FFMPEG"
    settings.color_mode = "RGB"
    ffmpeg = scene.render.ffmpeg
    problems = []
    for container, codec, extension in MOVIE_FORMATS:
        path = base + extension
        if os.path.exists(path):
            os.remove(path)
        ffmpeg.format, ffmpeg.codec = container, codec
        if codec == "H264":
            ffmpeg.constant_rate_factor = "MEDIUM"
            ffmpeg.ffmpeg_preset = "GOOD"
        ffmpeg.audio_codec = "NONE"
        scene.render.filepath = path
        scene.render.use_file_extension = True  # (the path already ends in it: kept as is)
        try:
            bpy.ops.render.render(animation=True)
        except RuntimeError as error:
            problems.append(f"{codec} in {container}: {str(error).strip()}")
            continue
        if os.path.exists(path) and os.path.getsize(path) > 0:
            if problems:
                print("could not write the movie as " + "; ".join(problems))
            return path
        problems.append(f"{codec} in {container}: nothing written")
    raise SystemExit("no movie format works in this bpy module: " + "; ".join(problems))


def movie_frames(path) -> tuple[int, float]:
    """(frames, frames per second) of the movie at `path`, read back with Blender's loader."""
    clip = bpy.data.movieclips.load(path, check_existing=False)
    try:
        return clip.frame_duration, float(clip.fps)
    finally:
        bpy.data.movieclips.remove(clip)


def size(text) -> tuple[int, int]:
    width, height = (int(v) for v in text.lower().split("x"))
    return width, height


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = CORPUS_MODEL if os.path.exists(CORPUS_MODEL) else OWN_MODEL
    parser.add_argument("--model", default=default, help=f"MJCF or URDF file (default: {default})")
    parser.add_argument("--seconds", type=float, default=3.0, help="simulated time of the picture "
                        "(default 3)")
    parser.add_argument("--out", default=ROOT, help="folder for demo.blend, demo.png and demo.mp4")
    parser.add_argument("--size", default="800x500", help="picture WIDTHxHEIGHT (default 800x500)")
    parser.add_argument("--movie-seconds", type=float, default=3.0,
                        help="simulated seconds in the movie (default 3)")
    parser.add_argument("--fps", type=int, default=24, help="movie frames per second (default 24)")
    parser.add_argument("--movie-size", default="480x300", help="movie WIDTHxHEIGHT (default 480x300)")
    parser.add_argument("--movie-engine", default="BLENDER_WORKBENCH",
                        choices=("BLENDER_WORKBENCH", "CYCLES"),
                        help="movie render engine (default BLENDER_WORKBENCH: a few tenths of a second a "
                             "frame; CYCLES: a few seconds a frame here)")
    args = parser.parse_args(argv)
    model_path = os.path.abspath(args.model)
    os.makedirs(args.out, exist_ok=True)

    render = load_render_helpers()
    render.enable_addon()
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene

    # The picture: the simulated state after --seconds.
    started = time.perf_counter()
    bpy.ops.import_scene.mjcf(filepath=model_path)
    imported = time.perf_counter()
    print(f"imported {os.path.relpath(model_path, ROOT)}: {len(scene.objects)} objects "
          f"in {imported - started:.2f} s")
    bpy.ops.mujoco.simulate(duration=args.seconds)
    simulated = time.perf_counter()
    live = importlib.import_module(f"{render.ADDON[0]}.live.scene_session").simulation(scene)
    shot = live.latest
    print(f"simulated {shot.time:.3f} s of model time in {simulated - imported:.2f} s of wall time")
    error = largest_body_error(model_path, args.seconds)
    print(f"largest body position difference from MuJoCo's own run of the file: {error:.2e} m")

    width, height = size(args.size)
    engine = render.pick_engine()
    render.set_engine(scene, engine)
    if engine == "CYCLES":
        scene.cycles.samples = 16  # denoised: enough for a preview, half the CPU time
    render.neutral_world(scene)
    root = next(o for o in scene.objects if o.mujoco.kind == "MODEL")
    collection = root.users_collection[0]
    render.prepare_scene(scene, collection, width, height, FRAMING)
    picture = os.path.join(args.out, "demo.png")
    scene.render.filepath = picture
    scene.render.image_settings.file_format = "PNG"
    rendering = time.perf_counter()
    bpy.ops.render.render(write_still=True)
    pictured = time.perf_counter()
    print(f"rendered {picture} with {engine} in {pictured - rendering:.1f} s "
          f"(the simulated state at t = {shot.time:.2f} s)")

    # The movie: --movie-seconds baked into the timeline from qpos0, rendered.
    scene.render.fps, scene.render.fps_base = args.fps, 1.0
    bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1, duration=args.movie_seconds)
    baked = time.perf_counter()
    first = 1
    last = first + int(np.ceil(args.movie_seconds * args.fps - 1e-9))
    scene.frame_start, scene.frame_end = first, last
    count = last - first + 1
    print(f"baked {args.movie_seconds:g} s into frames {first}-{last} at {args.fps} fps "
          f"in {baked - pictured:.2f} s")
    checked = sorted({first, first + count // 3, first + 2 * count // 3, last})
    bake_error = largest_bake_error(model_path, scene, checked)
    print(f"largest baked body position difference from MuJoCo's own run of the file "
          f"(frames {', '.join(map(str, checked))}): {bake_error:.2e} m")

    # A camera dataset of the bake's first frames from every MuJoCo camera of the model:
    # what a vision pipeline reads (RGB, depth, segmentation, intrinsics, extrinsics, states).
    folder = os.path.join(args.out, "demo_dataset")
    shutil.rmtree(folder, ignore_errors=True)
    last_frame = min(last, first + DATASET_FRAMES - 1)
    started_dataset = time.perf_counter()
    bpy.ops.mujoco.render_dataset(directory=folder, frame_start=first, frame_end=last_frame)
    with open(os.path.join(folder, "manifest.json")) as file:
        manifest = json.load(file)
    written = len(manifest["frames"])
    dataset_ok = manifest["complete"] and written == last_frame - first + 1
    print(f"rendered {folder}: {written} frames x {len(manifest['cameras'])} cameras with MuJoCo's "
          f"renderer in {time.perf_counter() - started_dataset:.1f} s")

    movie_width, movie_height = size(args.movie_size)
    scene.render.resolution_x, scene.render.resolution_y = movie_width, movie_height
    lo, hi = motion_bbox(render, scene, collection, range(first, last + 1, max(1, args.fps // 4)))
    render.add_camera(scene, lo, hi, name="MJBlend demo movie camera", **MOVIE_FRAMING)
    set_movie_engine(render, scene, args.movie_engine)
    scene.frame_set(first)
    rendering = time.perf_counter()
    movie = render_movie(scene, os.path.join(args.out, "demo"))
    rendered = time.perf_counter() - rendering
    frames, fps = movie_frames(movie)
    print(f"rendered {movie} ({scene.render.ffmpeg.codec} in {scene.render.ffmpeg.format}, "
          f"{movie_width}x{movie_height}, {frames} frames at {fps:g} fps = {frames / fps:.2f} s, "
          f"{os.path.getsize(movie) / 1024:.0f} kB) with {args.movie_engine} in {rendered:.1f} s "
          f"({rendered / count:.2f} s a frame)")
    movie_ok = frames == count
    if not movie_ok:
        print(f"the movie has {frames} frames, not the {count} baked")

    blend = os.path.join(args.out, "demo.blend")
    scene.render.filepath = "//" + os.path.basename(movie)  # (Render Animation: next to the .blend)
    bpy.ops.wm.save_as_mainfile(filepath=blend, copy=True)
    print(f"saved {blend} (the authored model, baked frames {first}-{last}, the movie's camera and "
          "render settings)")
    print(f"total {time.perf_counter() - started:.1f} s")
    failed = [what for what, bad in (
        (f"the picture's state is off MuJoCo's by more than {PICTURE_TOLERANCE:g} m",
         error >= PICTURE_TOLERANCE),
        (f"the bake is off MuJoCo's by more than {BAKE_TOLERANCE:g} m", bake_error >= BAKE_TOLERANCE),
        ("the movie's frame count is not the bake's", not movie_ok),
        ("the camera dataset is incomplete", not dataset_ok)) if bad]
    for what in failed:
        print(f"FAILED: {what}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

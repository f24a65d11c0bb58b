"""Headless camera datasets: a .blend's bake rendered from its MuJoCo cameras into a
folder (engine/dataset.py's layout), without a window.

    MUJOCO_GL=egl blender --command mjblend_dataset robot.blend out/ --cameras head,wrist \\
        --renderer mujoco --kinds rgb,depth,segmentation --randomize frame --seed 7

A .blend without a bake is baked first with --bake SECONDS (from the reference pose
qpos0, or --keyframe K). Exit status 0 when the dataset is complete. Registered with
Blender's command line while the add-on is enabled (Blender 4.2+); the same `main`
runs from the bpy module.
"""

from __future__ import annotations

import argparse
import os

import bpy

from ..engine import dataset
from ..live import camera_dataset
from ..operators.dataset import settings_of
from ..scene.errors import MJBlendError
from . import command_line

COMMAND = "mjblend_dataset"  # Blender's command ids are global: named after the add-on


def parser() -> argparse.ArgumentParser:
    out = argparse.ArgumentParser(
        prog=f"blender --command {COMMAND}",
        description="Render a .blend's bake from its MuJoCo cameras into a dataset folder: RGB (PNG), depth "
        "(float32 .npy), segmentation (16-bit PNG + segmentation.json), per-frame intrinsics and "
        "extrinsics (JSON, OpenCV), MuJoCo states and sensor values (states.npz).",
    )
    out.add_argument("blend", help="the .blend file")
    out.add_argument("folder", help="the dataset folder (empty or missing, or an earlier dataset: replaced)")
    out.add_argument("--scene", default=None, help="the scene (default: the file's active one)")
    out.add_argument("--cameras", default="", help="comma-separated camera names (default: every camera)")
    out.add_argument("--kinds", default="rgb,depth,segmentation", help="images per frame and camera")
    out.add_argument("--renderer", choices=dataset.RENDERERS, default="mujoco")
    out.add_argument(
        "--engine",
        choices=("workbench", "eevee", "cycles"),
        default="workbench",
        help="Blender's engine (--renderer blender)",
    )
    out.add_argument("--samples", type=int, default=0, help="Cycles / EEVEE samples (0: the scene's)")
    out.add_argument("--width", type=int, default=0, help="image width (0: each camera's resolution)")
    out.add_argument("--height", type=int, default=0, help="image height (0: each camera's resolution)")
    out.add_argument("--randomize", choices=dataset.RANDOMIZE, default="none")
    out.add_argument("--seed", type=int, default=0)
    out.add_argument("--textures", default="", metavar="DIR",
                     help="a folder of images (.png, .jpg): --randomize also draws one per material")
    out.add_argument("--frame-start", type=int, default=None, help="first frame (default: the bake's first)")
    out.add_argument("--frame-end", type=int, default=None, help="last frame (default: the bake's last)")
    out.add_argument(
        "--bake",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="bake this many simulated seconds first (from the scene's start frame)",
    )
    out.add_argument("--keyframe", type=int, default=-1, help="--bake from this keyframe (-1: qpos0)")
    return out


ENGINES = {"workbench": "BLENDER_WORKBENCH", "eevee": "BLENDER_EEVEE", "cycles": "CYCLES"}


def main(argv) -> int:
    """Render; the process's exit status (0: a complete dataset written)."""
    args, status = command_line.read(parser(), argv, "blend")
    if args is None:
        return status
    try:
        bpy.ops.wm.open_mainfile(filepath=args.blend)
    except RuntimeError as error:
        return command_line.fail(f"{args.blend}: {error}")
    scene = bpy.data.scenes.get(args.scene) if args.scene else bpy.context.scene
    if scene is None:
        return command_line.fail(f"{args.blend}: no scene named {args.scene!r}")
    if args.bake > 0:
        with bpy.context.temp_override(scene=scene):
            if bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=args.keyframe, duration=args.bake) != {
                "FINISHED"
            }:
                return command_line.fail("the bake failed")
    bake = scene.mujoco_bake
    start = bake.frame_start if args.frame_start is None else args.frame_start
    end = bake.frame_end if args.frame_end is None else args.frame_end
    values = {
        "cameras": args.cameras,
        "kinds": set(args.kinds.split(",")),
        "renderer": args.renderer,
        "engine": ENGINES[args.engine],
        "samples": args.samples,
        "width": args.width,
        "height": args.height,
        "randomize": args.randomize,
        "seed": args.seed,
        "textures": os.path.abspath(args.textures) if args.textures else "",
        "frames": None
        if (start, end) == (bake.frame_start, bake.frame_end)
        else tuple(range(start, end + 1)),
    }
    try:
        job = camera_dataset.job(scene, args.folder, settings_of(values))
        job.run(lambda done, total: print(f"MJBlend dataset: frame {done} of {total}", flush=True))
    except (MJBlendError, OSError) as error:
        return command_line.fail(str(error))
    print(f"MJBlend dataset of {job.done} frames written to {job.dataset.folder}", flush=True)
    return 0


command = command_line.Command(COMMAND, main)
register, unregister = command.register, command.unregister

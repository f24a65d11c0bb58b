"""Headless export for training: a .blend -> the folder a training script opens with
`batch.open_pool`, without Blender from then on.

    blender --command mjblend_export_batch robot.blend out/
    python -c "from mjblend.batch import open_pool; pool = open_pool('out/robot.xml', 1024)"

writes out/robot.xml, its asset files, and out/robot.randomization.json when the
scene randomizes anything (live/batch_scene.export_for_training). The command is
registered with Blender's command line while the add-on is enabled (Blender 4.2+).
"""

from __future__ import annotations

import argparse
import sys

import bpy

from ..live import batch_scene
from . import command_line
from ..scene.errors import MJBlendError

COMMAND = "mjblend_export_batch"  # Blender's command ids are global: named after the add-on



def parser() -> argparse.ArgumentParser:
    export = argparse.ArgumentParser(
        prog=f"blender --command {COMMAND}",
        description="Export a .blend's MuJoCo scene for batched training: the MJCF, its assets and its "
                    "domain randomization (<name>.randomization.json), for mjblend.batch.open_pool.")
    export.add_argument("blend", help="the .blend file")
    export.add_argument("folder", help="the folder to write into (made if missing)")
    export.add_argument("--name", default=None, help="the file name, without .xml (default: the .blend's)")
    export.add_argument("--scene", default=None, help="the scene to export (default: the file's active one)")
    return export


def main(argv) -> int:
    """Export; the process's exit status (0: written)."""
    args, status = command_line.read(parser(), argv, "blend")
    if args is None:
        return status
    path = args.blend
    try:
        bpy.ops.wm.open_mainfile(filepath=path)
    except RuntimeError as error:
        return command_line.fail(f"{path}: {error}")
    scene = bpy.data.scenes.get(args.scene) if args.scene else bpy.context.scene
    if scene is None:
        return command_line.fail(f"{path}: no scene named {args.scene!r}")
    warnings: list[str] = []
    try:
        written = batch_scene.export_for_training(scene, args.folder, args.name, warnings)
    except MJBlendError as error:
        return command_line.fail(str(error))
    for warning in warnings:
        print(f"MJBlend: {warning}", file=sys.stderr)
    print(f"MJBlend exported {written}", flush=True)
    return 0


command = command_line.Command(COMMAND, main)
register, unregister = command.register, command.unregister

"""A `blender --command NAME ...` entry of the add-on (Blender 4.2+ registers
command-line commands; earlier releases simply have none)."""

from __future__ import annotations

import os
import sys

import bpy


def fail(message: str) -> int:
    """Print a command's error for the shell and give its exit status."""
    print(f"MJBlend: {message}", file=sys.stderr, flush=True)
    return 1


def read(parser, argv, file_argument: str):
    """(`parser`'s arguments with `file_argument` made an absolute path, None), or
    (None, the exit status) after --help, arguments it cannot use (argparse says
    which on stderr) or no such file."""
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as done:
        return None, int(done.code or 0)
    path = os.path.abspath(getattr(args, file_argument))
    if not os.path.isfile(path):
        return None, fail(f"no file {path}")
    setattr(args, file_argument, path)
    return args, None


class Command:
    """`name` (Blender's command ids are global: named after the add-on) runs
    `main(argv) -> exit status` with the arguments after the id."""

    def __init__(self, name: str, main):
        self.name = name
        self.main = main
        self.handle = None  # while registered

    def register(self) -> None:
        if hasattr(bpy.utils, "register_cli_command") and self.handle is None:
            self.handle = bpy.utils.register_cli_command(self.name, self.main)

    def unregister(self) -> None:
        if self.handle is not None:
            bpy.utils.unregister_cli_command(self.handle)
            self.handle = None

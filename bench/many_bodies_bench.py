"""Import time of a scene of many bodies (issue 16's 20,000-body case), per stage.

    .venv/bin/python bench/many_bodies_bench.py [--bodies N] [--free] [--repeat R] [--json FILE]

The scene is issue 16's: N static bodies, each a box geom on a 100-wide grid,
and one free ball (tests/blender/test_import_hostile.py's `static_boxes`;
default N = 20000). MuJoCo's arena estimate for it fails the first forward
pass, so the import's load compiles again with a larger arena and warns.
`--free`: loop_bench's `many_bodies(N)` instead (N free bodies on a plane;
at 20,000 MuJoCo 4.0.1 cannot allocate its compile on a 23 GB machine).
Prints, in seconds: MuJoCo's own first load of the file
(`MjModel.from_xml_path`: parse and compile, no forward pass; a fresh process),
then File > Import MJCF of it in a fresh bpy process (the operator,
as import_bench runs it), split into import_bench's `--stages` (read, guard,
load, settings, assets, defaults, tree, attributes, hide, bounds, others,
build+, depsgraph, op+; see its docstring), for the first import and the
median of R more imports in the same process (default 0: the 20,000-body
import takes tens of seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from import_bench import IN_OTHER_COLUMNS, MUJOCO_SIDE, ROOT, run, stage_columns, stage_times  # noqa: E402
from loop_bench import many_bodies  # noqa: E402


BALL = '<body name="ball" pos="0 0 1"><freejoint/><geom size=".1"/></body>'


def static_bodies(count: int) -> str:
    boxes = "".join(f'<body pos="{i % 100} {i // 100} 0"><geom type="box" size=".1 .1 .1"/></body>'
                    for i in range(count))
    return f"<mujoco><worldbody>{boxes}{BALL}</worldbody></mujoco>"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=20000)
    parser.add_argument("--free", action="store_true", help="free bodies (loop_bench's scene), not static")
    parser.add_argument("--repeat", type=int, default=0, help="more imports after the first, same process")
    parser.add_argument("--json", help="write every measured figure to this file")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="mjblend-bench-")
    os.symlink(ROOT, os.path.join(scratch, "mjblend"))
    kind = "free" if args.free else "static"
    path = os.path.join(scratch, f"{kind}{args.bodies}.xml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(many_bodies(args.bodies) if args.free else static_bodies(args.bodies))
    mj = run(MUJOCO_SIDE, path, 0)
    stages = stage_times(path, args.repeat, scratch)
    first, repeats = stages["first"], stages["repeat"]
    print(f"{args.bodies} {kind} bodies: MuJoCo's first load {mj['first']:.2f} s; "
          f"import {first['total']:.2f} s = {first['total'] / mj['first']:.2f}x "
          f"({first['objects']} objects)")
    print(f"{'stage':14s} {'first (s)':>10s} {'share':>6s}" + (f" {'repeat (s)':>11s}" if repeats else ""))
    for key in ["total", *stage_columns([first])]:
        label = f"({key})" if key in IN_OTHER_COLUMNS else key
        line = f"{label:14s} {first.get(key, 0.0):10.2f} {first.get(key, 0.0) / first['total'] * 100:5.0f}%"
        if repeats:
            line += f" {statistics.median(r.get(key, 0.0) for r in repeats):11.2f}"
        print(line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"bodies": args.bodies, "scene": kind, "mujoco": mj, "import": stages}, fh, indent=1)


if __name__ == "__main__":
    main()

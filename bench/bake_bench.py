"""Baking into the timeline: the `mujoco.bake` operator against MuJoCo's own stepping, in the same run.

    .venv/bin/python bench/bake_bench.py [--seconds S] [--bodies N] [--repeat R] [--fps F]

For the corpus humanoid (else examples/desk_toys.xml) and a scene of N free
bodies (default 1000), each at 60 fps: bakes S simulated seconds (default 10)
from qpos0, `bpy.ops.mujoco.bake(start="KEYFRAME", keyframe=-1, frame_start=1,
duration=S)`, timed from call to return (compile, recording, ending the
simulation, clearing any earlier bake, writing the keys), and, in the same run,
interleaved with it, MuJoCo alone stepping the same number of steps from the
same start (`mj_step(m, d, nstep=...)` on the file's model): the simulation's
own stepping. Per scene it prints the frames, the bodies keyed, both times and

    (bake - stepping) / (bodies keyed x frames)

in microseconds: the bake's cost per body per frame beyond the stepping.
Target (issue 17): <= 2 us.

Three bakes per repeat, on a freshly imported scene: a first bake (unbaked), a re-bake (a baked
scene: the earlier bake is cleared first) and a re-bake with its undo push
(`bpy.ops.mujoco.bake("EXEC_DEFAULT", True, ...)`, as a click in a window
pushes one: operators called from Python push no undo step unless asked, so
the first two exclude it). The first two are broken down into sections, timed
by wrapping the functions the operator calls (a few microseconds per call):
compile + runner start (scene_session.start_simulation), recording (the Record command,
stepping included), ending the simulation (scene_session.end_simulation: objects back as
authored), clearing the earlier bake (timeline.clear), writing the keys
(timeline.write; within it: poses to parent-local frames, the Actions with
their F-Curves and keys, the recording kept), and the rest.

Inline (no physics thread), as in scripts and the bpy module. Each figure is
the median of R repeats. Runs on the interpreter that runs it: any venv with
bpy and mujoco (e.g. .venv-bpy-4.2.23/bin/python bench/bake_bench.py).
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HUMANOID = os.path.join(ROOT, "..", "shared", "corpus", "mujoco_model", "model", "humanoid", "humanoid.xml")
DESK = os.path.join(ROOT, "examples", "desk_toys.xml")
TARGET_US = 2.0

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loop_bench import many_bodies  # noqa: E402 (the same scene of free bodies)

# (label, indent): the sections printed, in the order the operator runs them
SECTIONS = (("compile + runner start", 0), ("recording (Record command)", 0), ("end simulation", 0),
            ("clear previous bake", 0), ("write keys", 0), ("poses to parent frames", 1),
            ("Actions, F-Curves, keys", 1), ("keep the recording", 1))
TOP = [label for label, indent in SECTIONS if indent == 0]
OTHER = "other (reset, copies, frame_set)"  # the operator's time outside the sections


class Sections:
    """Seconds spent in each wrapped function during one bake."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.baked = None  # what timeline.write returned

    def wrap(self, owner, name: str, label: str) -> None:
        inner = getattr(owner, name)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                result = inner(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - start
            if label == "write keys":
                self.baked = result
            return result

        setattr(owner, name, timed)


class Bench:
    def __init__(self, args):
        self.args = args
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import addon_loader  # (links the add-on as `mjblend`, as the tests do)
        import bpy
        import mujoco
        addon_loader.enable_addon()
        from mjblend.engine import commands
        from mjblend.engine import frames as mjframes
        from mjblend.engine.recording import steps_for_frames
        from mjblend.importer import build
        from mjblend.live import scene_session, simulation
        from mjblend.sync import timeline
        self.bpy, self.mujoco, self.build = bpy, mujoco, build
        self.scene_session, self.timeline, self.steps_for_frames = scene_session, timeline, steps_for_frames
        self.folder = tempfile.mkdtemp(prefix="mjblend-bench-")
        simulation.THREADED = False  # (inline, as in scripts and the bpy module)
        bpy.context.preferences.edit.undo_steps = 2  # (a bake's undo step holds every key)
        self.sections = Sections()
        for owner, name, label in (
                (scene_session, "ensure", "compile + runner start"),
                (commands.Record, "apply", "recording (Record command)"),
                (scene_session, "drop", "end simulation"),
                (timeline, "clear", "clear previous bake"),
                (timeline, "write", "write keys"),
                (mjframes, "float32_locals_frames", "poses to parent frames"),
                (timeline, "_animate", "Actions, F-Curves, keys"),
                (timeline, "_keep_recording", "keep the recording")):
            self.sections.wrap(owner, name, label)

    def bodies_file(self, count):
        path = os.path.join(self.folder, f"bodies{count}.xml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(many_bodies(count))
        return path

    def load(self, path):
        """A fresh scene with `path` imported, at args.fps frames per second."""
        bpy = self.bpy
        self.scene_session.end_all()
        bpy.ops.wm.read_homefile(use_empty=True)
        self.build.import_file(path, bpy.context.scene)
        scene = bpy.context.scene
        scene.render.fps, scene.render.fps_base = self.args.fps, 1.0
        bpy.ops.ed.undo_push(message="imported")
        return scene

    def bake(self, undo: bool = False):
        """One bake from qpos0: (seconds from call to return, {section: seconds}, Baked)."""
        sections = self.sections
        sections.seconds, sections.baked = {}, None
        start = time.perf_counter()
        result = self.bpy.ops.mujoco.bake("EXEC_DEFAULT", undo, start="KEYFRAME", keyframe=-1,
                                          frame_start=1, duration=self.args.seconds)
        seconds = time.perf_counter() - start
        assert result == {"FINISHED"}, result
        return seconds, dict(sections.seconds), sections.baked

    def stepping(self, model, steps: int) -> float:
        """Seconds of plain `mj_step` over `steps` steps from the reset state."""
        mujoco = self.mujoco
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        start = time.perf_counter()
        mujoco.mj_step(model, data, nstep=steps)
        return time.perf_counter() - start

    def scene(self, path: str, label: str) -> float:
        """Bench one scene; prints its figures and returns the first bake's us per body per frame."""
        args, mujoco = self.args, self.mujoco
        model = mujoco.MjModel.from_xml_path(path)
        seconds = float(np.float32(args.seconds))  # (the operator's duration is a float32 property)
        frames = math.ceil(seconds * args.fps - 1e-9) + 1  # (as the operator counts them)
        steps = self.steps_for_frames(frames, args.fps, model.opt.timestep)
        runs = {"first": [], "again": [], "undo": []}
        stepping = []
        baked = None
        for _ in range(args.repeat):
            # (a freshly imported scene each time, not Clear Bake: on 4.5.15 a bake cleared
            # after an undo push, then File New, hangs the process at exit)
            self.load(path)
            stepping.append(self.stepping(model, steps))
            runs["first"].append(self.bake())
            stepping.append(self.stepping(model, steps))
            runs["again"].append(self.bake())
            runs["undo"].append(self.bake(undo=True))
            baked = runs["first"][-1][2]
        self.scene_session.end_all()
        bodies = baked.objects
        assert baked.frames == frames, (baked.frames, frames)
        step_s = statistics.median(stepping)

        def per_body_frame(seconds):
            return (seconds - step_s) / (bodies * frames) * 1e6

        totals = {kind: statistics.median(run[0] for run in done) for kind, done in runs.items()}
        print(f"{label}: {frames} frames ({args.seconds:g} s at {args.fps:g} fps), {bodies} bodies keyed, "
              f"{steps} steps of {model.opt.timestep:g} s")
        print(f"  MuJoCo stepping (mj_step, nstep={steps}): {step_s * 1e3:9.1f} ms")
        names = {"first": "bake (unbaked scene)", "again": "re-bake (baked scene)",
                 "undo": "re-bake + undo push"}
        for kind, seconds in totals.items():
            us = per_body_frame(seconds)
            verdict = "meets" if us <= TARGET_US else "misses"
            print(f"  {names[kind]:38s} {seconds * 1e3:9.1f} ms  (bake - stepping) / (bodies x frames) = "
                  f"{us:6.2f} us  {verdict} the target (<= {TARGET_US:g} us)")
        print(f"  {'breakdown (median ms)':38s} {'bake':>9s} {'re-bake':>9s}   (us per body per frame)")
        for section, indent in SECTIONS + ((OTHER, 0),):
            row = []
            for kind in ("first", "again"):
                values = []
                for total, parts, _baked in runs[kind]:
                    rest = total - sum(parts.get(name, 0.0) for name in TOP)
                    values.append(rest if section == OTHER else parts.get(section, 0.0))
                row.append(statistics.median(values))
            per = "  ".join(f"{value / (bodies * frames) * 1e6:6.2f}" for value in row)
            print(f"    {'  ' * indent}{section:34s} {row[0] * 1e3:9.1f} {row[1] * 1e3:9.1f}   ({per})")
        record = statistics.median(parts["recording (Record command)"] for _t, parts, _b in runs["first"])
        print(f"    recording beyond the stepping: {(record - step_s) / frames * 1e6:.1f} us per frame "
              f"({(record - step_s) / (bodies * frames) * 1e6:.2f} us per body per frame)")
        return per_body_frame(totals["first"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds baked")
    parser.add_argument("--bodies", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fps", type=int, default=60)
    args = parser.parse_args()
    bench = Bench(args)
    import bpy
    import mujoco
    print(f"Blender {bpy.app.version_string}, MuJoCo {mujoco.__version__}, median of {args.repeat}")
    model = HUMANOID if os.path.exists(HUMANOID) else DESK
    results = [bench.scene(os.path.abspath(model), os.path.relpath(os.path.abspath(model), ROOT)),
               bench.scene(bench.bodies_file(args.bodies), f"{args.bodies} free bodies")]
    verdict = "met" if max(results) <= TARGET_US else "not met"
    print(f"target <= {TARGET_US:g} us per body per frame beyond the stepping (first bake): {verdict} "
          f"({', '.join(f'{us:.2f}' for us in results)} us)")


if __name__ == "__main__":
    main()

"""The camera preview against the simulation it watches, in one run.

    .venv/bin/python bench/camera_preview_bench.py [--seconds S] [--repeat R] [--width W] [--fps F]

examples/desk_toys.xml on a physics thread, the main thread showing the latest
snapshot at 60 Hz of wall time (as the Play operator's timer) and, with the
preview on, calling `camera_preview.update` each frame (as its timer does): the
render worker draws camera 'overview' (W pixels wide, at most F frames a second)
on a thread of its own, in its render process (started, and its first frame out,
before each run is timed). Off and on interleaved, R times each; medians of:

1. real time (Speed 1): simulated seconds per wall second (target: 1.00 both);
2. fast-forward: steps per second, on / off (the render thread competes for the
   CPU only: on a machine with a core to spare the ratio is 1);
3. the preview's frames per second rendered and shown, and the main thread's
   milliseconds per `update` (median; the upload included when there is one);
4. the same fast-forward with mujoco.Renderer on the worker thread itself
   (`camera_preview.RENDERER = cameras.CameraRenderer`: Blender's priority, llvmpipe
   on every core), against off: why the preview draws in a child process;
5. Blender's renderer (Workbench, main thread): seconds per preview frame, and the
   simulation's real-time speed while it previews.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DESK = os.path.join(ROOT, "examples", "desk_toys.xml")
FRAME = 1 / 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--fps", type=int, default=30)
    args = parser.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import bpy
    from addon_loader import enable_addon
    enable_addon()
    from mjblend.engine import cameras, commands
    from mjblend.importer import build
    from mjblend.engine import render_process
    from mjblend.live import camera_preview, scene_session, simulation

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    build.import_file(DESK, scene)
    simulation.THREADED = True
    running = scene_session.start_simulation(scene)
    settings = scene.mujoco_camera_preview
    settings.camera_name, settings.width, settings.max_fps = "overview", args.width, args.fps

    def loop(preview_on: bool, fast: bool) -> dict:
        settings.enabled = preview_on
        warm = time.perf_counter()  # (the render process started and its first frame out: steady state)
        while preview_on and camera_preview.of(scene).frame is None and time.perf_counter() - warm < 60:
            running.tick(time.perf_counter())
            camera_preview.update(scene)
            time.sleep(FRAME)
        running.send(commands.FastForward(fast), None)
        running.send(commands.Reset(), None)
        running.play()
        shot0, start = running.latest, time.perf_counter()
        next_frame, costs, shown = start, [], 0
        while time.perf_counter() - start < args.seconds:
            running.tick(time.perf_counter())
            if preview_on:
                t = time.perf_counter()
                shown += camera_preview.update(scene)
                costs.append(time.perf_counter() - t)
            next_frame += FRAME
            time.sleep(max(0.0, next_frame - time.perf_counter()))
        shot, wall = running.latest, time.perf_counter() - start
        preview = camera_preview.of(scene)
        worker = preview.worker if preview is not None else None
        result = {"speed": (shot.time - shot0.time) / wall, "steps": (shot.steps - shot0.steps) / wall,
                  "rendered": worker.frame_id / wall if worker is not None else 0.0,
                  "shown": shown / wall, "ms": statistics.median(costs) * 1e3 if costs else 0.0,
                  "max_ms": max(costs) * 1e3 if costs else 0.0}
        running.pause()
        settings.enabled = False  # (a fresh worker for every run: frame ids count from 1)
        time.sleep(0.1)
        return result

    for fast in (False, True):
        runs = {False: [], True: []}
        for _ in range(args.repeat):
            for on in (False, True):
                runs[on].append(loop(on, fast))

        def med(on, key, runs=runs):
            return statistics.median(r[key] for r in runs[on])
        if not fast:
            print(f"1. real time: {med(False, 'speed'):.3f} s/s preview off, {med(True, 'speed'):.3f} s/s on "
                  f"(runs off {[round(r['speed'], 3) for r in runs[False]]}, "
                  f"on {[round(r['speed'], 3) for r in runs[True]]})")
        else:
            off, on = med(False, "steps"), med(True, "steps")
            print(f"2. fast-forward: {off:.0f} steps/s preview off, {on:.0f} on = {on / off:.3f} "
                  f"(runs off {[round(r['steps']) for r in runs[False]]}, "
                  f"on {[round(r['steps']) for r in runs[True]]})")
        mode = "fast-forward" if fast else "real time"
        print(f"3. {mode}: preview {args.width} px wide, max {args.fps} fps: "
              f"{med(True, 'rendered'):.1f} fps rendered, {med(True, 'shown'):.1f} shown, "
              f"{med(True, 'ms'):.2f} ms per update on the main thread")
    camera_preview.RENDERER = cameras.CameraRenderer
    runs = {False: [], True: []}
    for _ in range(args.repeat):
        for on in (False, True):
            runs[on].append(loop(on, True))
    off, on = (statistics.median(r["steps"] for r in runs[k]) for k in (False, True))
    print(f"4. fast-forward, mujoco.Renderer on the render thread: {off:.0f} steps/s off, {on:.0f} on = "
          f"{on / off:.3f}")
    camera_preview.RENDERER = render_process.ProcessRenderer
    settings.renderer = "BLENDER"
    results = [loop(True, False) for _ in range(args.repeat)]
    print(f"5. Blender Workbench preview, {min(args.width, camera_preview.BLENDER_MAX_WIDTH)} px wide: "
          f"{statistics.median(r['shown'] for r in results):.2f} frames/s shown, "
          f"{statistics.median(r['max_ms'] for r in results) / 1e3:.2f} s per frame (main thread), real time "
          f"{statistics.median(r['speed'] for r in results):.3f} s/s")
    scene_session.end_all()
    print(f"(cores: {os.cpu_count()}, affinity {len(os.sched_getaffinity(0))})")


if __name__ == "__main__":
    main()

"""The viewport's MuJoCo overlays: their per-frame cost on a scene with 100+ contacts,
against the same frame without them, in one run.

    .venv/bin/python bench/overlay_bench.py [--boxes N] [--frames F] [--repeat R] [--no-gui]

A pile of N boxes (default 40) resting on a plane: about 4 contacts each.

1. The frame's work in the bpy module (this environment's Blender): a display
   frame of simulation (1/60 s of steps, the snapshot shown on the objects, the
   depsgraph evaluated) without overlays, and the same frame plus everything the
   overlay draw callback computes for it with every overlay and body labels on
   (a new snapshot each frame, so nothing is cached). The bpy module has no GPU.
2. The GPU side, in Debian's Blender (5.2) user interface under Xvfb (software
   OpenGL): the 3D view's redraw with every overlay on (recomputed on every
   redraw) against the same redraw with them off, interleaved.

Target: <= 2 ms per frame extra. Medians of R repeats (the machine is noisy:
about one core of real throughput).

3. Debug markers (URLab's client.debug over the bridge, issue 33): 1000 markers
   (spheres, lines, arrows, boxes, axes; a label on every fifth) in the served
   scene's store. In the bpy module: what a frame computes when they are unchanged
   (the store's frame only: the batches are kept) and when they changed (the
   segments and labels moved into Blender's world for new batches). In the GUI:
   the 3D view's redraw with them against without, unchanged and changing every
   redraw (new batches each time). Target: <= 1 ms per frame with 1000 markers.
   `--markers-only` runs this case alone.

4. simulate's readouts (issue 34) on the humanoid: the Info line and the four MuJoCo
   figures (Counts, Convergence, CPU time, Dimensions). In the bpy module: a display
   frame of simulation with them against without (the snapshot's extras on the
   runner: Info, always, and the figures' data when shown; the corner's layout, the
   figures' segments and texts' places, a new snapshot each frame), and the extras' parts
   alone. In the GUI: the 3D view's redraw with them against without, interleaved; the
   corner's whole cost (waiting for llvmpipe, which rasterizes after the callback
   returns) and the floors (one small quad, one quad of the backgrounds' area, the
   Info line with blf). Target: <= 1 ms per frame. `--readouts-only` runs this case alone.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 0.002  # seconds per frame
SCREEN = "960x640x24"  # small: software OpenGL fills pixels slowly, and its noise grows with them


def pile(count: int) -> str:
    side = max(1, int(count ** 0.5))
    boxes = "\n".join(
        f'<body name="box{i}" pos="{(i % side) * 0.35:g} {(i // side) * 0.35:g} .1"><freejoint/>'
        f'<geom type="box" size=".1 .1 .1"/></body>' for i in range(count))
    return f'<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="20 20 .1"/>{boxes}' \
           '</worldbody></mujoco>'


def bpy_module_part(path: str, frames: int, repeat: int) -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import addon_loader  # (links the add-on as `mjblend`, as the tests do)
    import bpy
    addon_loader.enable_addon()
    from mjblend.components import overlay_settings
    from mjblend.engine import commands
    from mjblend.importer import build
    from mjblend.live import scene_session, simulation
    from mjblend.ui.overlays import layers

    simulation.THREADED = False
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    build.import_file(path, scene)
    running = scene_session.start_simulation(scene)
    running.send(commands.Step(400))
    per_frame = running.steps_for(1 / 60)
    switches = scene.mujoco_overlays

    def frame(overlays: bool) -> float:
        start = time.perf_counter()
        running.send(commands.Step(per_frame))
        running.show(force=True)
        bpy.context.view_layer.update()
        if overlays:
            layers.of_scene(scene)
        return time.perf_counter() - start

    def switch(on: bool) -> None:
        for name, _label, _text in overlay_settings.OVERLAYS:
            setattr(switches, name, on)
        switches.labels = "BODY" if on else "NONE"
        scene.mujoco_simulation.show_inertia = on

    with_, without = [], []
    for r in range(repeat):
        for on in ((True, False) if r % 2 else (False, True)):
            switch(on)
            frame(on)  # (warm)
            (with_ if on else without).append(statistics.median(frame(on) for _ in range(frames)))
    shot = running.latest
    drawn = layers.of_scene(scene)
    extra = statistics.median(a - b for a, b in zip(with_, without, strict=True))
    print(f"== bpy {bpy.app.version_string}: {shot.model.nbody - 1} bodies, {len(shot.contacts)} contacts, "
          f"{len(drawn.layers)} layers, {sum(len(x.lines) // 2 for x in drawn.layers)} segments, "
          f"{len(drawn.labels)} labels")
    print(f"1. frame without overlays {statistics.median(without) * 1e3:6.2f} ms, with every overlay "
          f"{statistics.median(with_) * 1e3:6.2f} ms: {extra * 1e3:+.2f} ms per frame "
          f"({statistics.median(with_) / statistics.median(without):.2f}x)  (target <= +{TARGET * 1e3:g} ms)")
    scene_session.end_all()


MARKERS = 1000
MARKER_TARGET = 0.001  # seconds per frame


def marker_requests(count: int = MARKERS) -> list:
    """`count` debug-draw requests of every kind, spread over a 4 m square (as URLab's client sends)."""
    kinds = ("draw_marker", "draw_line", "draw_arrow", "draw_box", "draw_axes")
    out = []
    for i in range(count):
        x, y = (i % 32) * 0.12 - 2, (i // 32) * 0.12 - 2
        kind = kinds[i % len(kinds)]
        request = {"op": kind, "color": [1.0, 0.2 + 0.6 * (i % 2), 0.1], "ttl": -1.0}
        if kind in ("draw_marker", "draw_axes"):
            request["location"] = [x, y, 0.5]
        elif kind == "draw_box":
            request.update(center=[x, y, 0.3], half_extents=[0.04, 0.04, 0.04])
        else:
            request.update({"from": [x, y, 0.2], "to": [x + 0.08, y, 0.4]})
        if kind == "draw_marker" and i % 5 == 0:
            request["label"] = f"m{i}"
        out.append(request)
    return out


def markers_bpy_part(frames: int, repeat: int) -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import addon_loader
    import bpy
    import numpy as np
    addon_loader.enable_addon()
    from mjblend.bridge import debug_markers
    from mjblend.ui.overlays import debug_draw

    store = debug_markers.MarkerStore()
    for request in marker_requests():
        store.add(debug_markers.SHAPES[request["op"]](request))
    world = np.array(((0, -1, 0, 1), (1, 0, 0, 2), (0, 0, 1, 0.5), (0, 0, 0, 1)), float)  # (a moved root)

    def unchanged() -> float:
        start = time.perf_counter()
        store.frame()
        return time.perf_counter() - start

    def changed() -> float:
        start = time.perf_counter()
        frame = store.frame()
        debug_draw.lines_by_width(frame.markers, world)
        debug_draw.labels_of(frame.markers, world)
        return time.perf_counter() - start

    kept = [statistics.median(unchanged() for _ in range(frames)) for _ in range(repeat)]
    made = [statistics.median(changed() for _ in range(frames)) for _ in range(repeat)]
    segments = sum(len(m.lines) // 2 for m in store.frame().markers)
    print(f"== bpy {bpy.app.version_string}: {len(store)} debug markers, {segments} segments")
    print(f"3. a frame's marker work, unchanged (batches kept) {statistics.median(kept) * 1e3:6.3f} ms; "
          f"changed (segments for new batches) {statistics.median(made) * 1e3:6.3f} ms  "
          f"(target <= {MARKER_TARGET * 1e3:g} ms)")


def markers_gui_part(repeat: int) -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests", "gui"))
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from gui_blender import run_gui_script

    folder = pathlib.Path(tempfile.mkdtemp(prefix="mjblend-marker-bench-"))
    result = folder / "result.json"
    requests = folder / "markers.json"
    requests.write_text(json.dumps(marker_requests()))
    env = {"MJBLEND_RESULT": str(result), "MJBLEND_BENCH_MARKERS": str(requests),
           "MJBLEND_BENCH_REPEAT": str(repeat)}
    proc = run_gui_script(os.path.join(ROOT, "bench", "debug_markers_gui.py"), folder, timeout=600,
                          screen=SCREEN, env=env)
    figures = pathlib.Path(str(result) + ".figures")
    if not figures.exists():
        print("3. GUI markers part failed:\n" + proc.stdout[-2000:] + proc.stderr[-2000:])
        return
    f = json.loads(figures.read_text())
    off = f["redraw"]["off"]
    print(f"== Blender {f['blender']} UI, software OpenGL (llvmpipe) under Xvfb ({SCREEN}): "
          f"{f['markers']} debug markers, {f['segments']} segments")
    print(f"3. 3D view redraw without markers {off * 1e3:6.2f} ms; with them:")
    for config, label in (("static", "unchanged (batches kept)"), ("changing", "changed every redraw")):
        print(f"   {label:32s} {f['redraw'][config] * 1e3:6.2f} ms: {f['extra'][config] * 1e3:+6.2f} ms per "
              f"frame ({f['redraw'][config] / off:.2f}x), the draw callback itself "
              f"{f['callback'][config] * 1e3:5.2f} ms")
    print(f"   (target <= +{MARKER_TARGET * 1e3:g} ms per frame)")


def gui_part(path: str, repeat: int) -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests", "gui"))
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from gui_blender import run_gui_script

    folder = pathlib.Path(tempfile.mkdtemp(prefix="mjblend-overlay-bench-"))
    result = folder / "result.json"
    proc = run_gui_script(os.path.join(ROOT, "bench", "overlay_gui.py"), folder, timeout=600, screen=SCREEN,
                          env={"MJBLEND_RESULT": str(result), "MJBLEND_BENCH_SCENE": path,
                               "MJBLEND_BENCH_REPEAT": str(repeat)})
    figures = pathlib.Path(str(result) + ".figures")
    if not figures.exists():
        print("2. GUI part failed:\n" + proc.stdout[-2000:] + proc.stderr[-2000:])
        return
    f = json.loads(figures.read_text())
    print(f"== Blender {f['blender']} UI, software OpenGL (llvmpipe) under Xvfb ({SCREEN}): "
          f"{f['ncon']} contacts")
    print(f"2. 3D view redraw without overlays {f['redraw']['off'] * 1e3:6.2f} ms; with (recomputed each "
          "redraw):")
    for config, label in (("all", "every overlay and body labels"), ("no labels", "every overlay, no labels"),
                          ("labels", "body labels only"), ("contacts", "contact points, forces, frames")):
        print(f"   {label:32s} {f['redraw'][config] * 1e3:6.2f} ms: {f['extra'][config] * 1e3:+6.2f} ms per "
              f"frame, the overlay callback itself {f['callback'][config] * 1e3:5.2f} ms")
    print(f"   of the callback, computing every overlay's layers (no GPU): {f['computed'] * 1e3:.2f} ms")
    print(f"   (target <= +{TARGET * 1e3:g} ms per frame)")


READOUTS_TARGET = 0.001  # seconds per frame
HUMANOID = os.path.join(ROOT, "..", "shared", "corpus", "mujoco_model", "model", "humanoid", "humanoid.xml")


def readouts_bpy_part(frames: int, repeat: int) -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import addon_loader
    import bpy
    addon_loader.enable_addon()
    from mjblend.engine import commands, info
    from mjblend.importer import build
    from mjblend.live import scene_session, simulation
    from mjblend.ui import readouts
    from mjblend.ui.plots import draw

    simulation.THREADED = False
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    build.import_file(os.path.abspath(HUMANOID), scene)
    settings = scene.mujoco_plots
    settings.show_plots = settings.show_profiler = False
    running = scene_session.start_simulation(scene)
    running.send(commands.Step(400))
    per_frame = running.steps_for(1 / 60)

    def frame(on: bool) -> float:
        start = time.perf_counter()
        running.send(commands.Step(per_frame))
        running.show(force=True)
        bpy.context.view_layer.update()
        if on:  # (what the draw callback computes before its GPU calls, but the glyphs' quads)
            placed = draw.layout(scene, 1400, 1200)
            draw.figure_parts(placed.figures, 1.0)
        return time.perf_counter() - start

    def switch(on: bool) -> None:
        settings.show_info = settings.show_figures = on
        readouts.ask(scene, running)

    with_, without = [], []
    for r in range(repeat):
        for on in ((True, False) if r % 2 else (False, True)):
            switch(on)
            frame(on)  # (warm)
            (with_ if on else without).append(statistics.median(frame(on) for _ in range(frames)))
    switch(True)
    session = running.runner.session
    profiler = info.Profiler()

    def part(function) -> float:
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(frames):
                function()
            runs.append((time.perf_counter() - start) / frames)
        return statistics.median(runs)
    shot = running.latest
    took = part(lambda: info.take(session.model, session.data, None))
    rings = part(lambda: profiler.take(session.model, session.data, shot.info))
    laid = part(lambda: draw.layout(scene, 1400, 1200))
    placed = draw.layout(scene, 1400, 1200)
    points = sum(len(line) for _f, fig in placed.figures for line in fig.lines)
    extra = statistics.median(a - b for a, b in zip(with_, without, strict=True))
    print(f"== bpy {bpy.app.version_string}: humanoid, {shot.info.nefc} constraints, {shot.info.ncon} "
          f"contacts, {len(placed.figures)} figures, {points} points")
    base, more = statistics.median(without), statistics.median(with_)
    print(f"4. frame without readouts {base * 1e3:6.3f} ms, with the Info line and 4 figures "
          f"{more * 1e3:6.3f} ms: {extra * 1e3:+.3f} ms per frame ({more / base:.3f}x)  "
          f"(target <= +{READOUTS_TARGET * 1e3:g} ms)")
    print(f"   parts: Info of a snapshot {took * 1e6:.1f} us, the figures' data {rings * 1e6:.1f} us (runner "
          f"thread); the corner's layout with the Info line and figures {laid * 1e6:.1f} us (main thread)")
    print(f"   Info line: {readouts.info_line(running)}")
    scene_session.end_all()


def readouts_gui_part(repeat: int) -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests", "gui"))
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from gui_blender import run_gui_script

    folder = pathlib.Path(tempfile.mkdtemp(prefix="mjblend-readouts-bench-"))
    result = folder / "result.json"
    env = {"MJBLEND_RESULT": str(result), "MJBLEND_BENCH_SCENE": os.path.abspath(HUMANOID),
           "MJBLEND_BENCH_REPEAT": str(repeat)}
    proc = run_gui_script(os.path.join(ROOT, "bench", "readouts_gui.py"), folder, timeout=600, screen=SCREEN,
                          env=env)
    figures = pathlib.Path(str(result) + ".figures")
    if not figures.exists():
        print("4. GUI readouts part failed:\n" + proc.stdout[-2000:] + proc.stderr[-2000:])
        return
    f = json.loads(figures.read_text())
    off, on = f["redraw"]["off"], f["redraw"]["on"]
    print(f"== Blender {f['blender']} UI, software OpenGL (llvmpipe) under Xvfb ({SCREEN}): humanoid")
    print(f"4. 3D view redraw without readouts {off * 1e3:6.2f} ms, with the Info line and 4 figures "
          f"{on * 1e3:6.2f} ms: {f['extra'] * 1e3:+6.2f} ms per frame ({on / off:.2f}x)  "
          f"(target <= +{READOUTS_TARGET * 1e3:g} ms)")
    callback = f["callback"]
    print(f"   MJBlend's draw callbacks inside it: {callback['off'] * 1e3:.2f} ms without, "
          f"{callback['on'] * 1e3:.2f} ms with (Python and the driver: llvmpipe rasterizes later); "
          f"waiting for the GPU before and after, the corner's whole cost: {callback['synced'] * 1e3:.2f} ms")
    floor = {name: callback[f"floor {name}"] * 1e3 for name in ("one quad", "backgrounds", "blf line")}
    print(f"   floors, the same way: one small quad {floor['one quad']:.2f} ms, one quad the size of the "
          f"figures' and Info line's backgrounds {floor['backgrounds']:.2f} ms, the Info line with blf "
          f"{floor['blf line']:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boxes", type=int, default=40)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-gui", action="store_true",
                        help="skip the GUI parts (Debian's Blender under Xvfb)")
    parser.add_argument("--markers-only", action="store_true", help="only case 3 (debug markers)")
    parser.add_argument("--readouts-only", action="store_true", help="only case 4 (Info line and figures)")
    args = parser.parse_args()
    if args.readouts_only:
        if not args.no_gui:
            readouts_gui_part(args.repeat)
        readouts_bpy_part(args.frames, args.repeat)
        return
    if args.markers_only:
        if not args.no_gui:
            markers_gui_part(args.repeat)
        markers_bpy_part(args.frames, args.repeat)
        return
    path = os.path.join(tempfile.mkdtemp(prefix="mjblend-overlay-bench-"), f"pile{args.boxes}.xml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(pile(args.boxes))
    if not args.no_gui:
        gui_part(path, args.repeat)
        markers_gui_part(args.repeat)
        readouts_gui_part(args.repeat)
    bpy_module_part(path, args.frames, args.repeat)
    markers_bpy_part(args.frames, args.repeat)
    readouts_bpy_part(args.frames, args.repeat)


if __name__ == "__main__":
    main()

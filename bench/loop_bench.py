"""The simulation loop: the runner and the viewport sync, against raw `mj_step` in the same run.

    .venv/bin/python bench/loop_bench.py [--seconds S] [--bodies N] [--repeat R] [--quick]

1. raw `mj_step` throughput: the corpus humanoid (else examples/desk_toys.xml)
   and a scene of N free bodies (default 1000), steps per second, from the
   reset state over as many steps as the runner took in part 2;
2. fast-forward: the runner's steps per second on its physics thread while the
   main thread shows the latest snapshot at 60 Hz of wall time (the display
   mode Auto picks: Objects for the humanoid, Fast for N bodies; each frame
   counted until the depsgraph has evaluated it), as a fraction of raw;
   target >= 90% on both;
3. sync per body per frame on the N free bodies, until the depsgraph has
   evaluated what the viewport will draw: Fast (the instancer) target
   <= 1 us per body; Objects against plain Python writes of the same poses to
   the same objects (ratio; target <= 1); and a moved MJBlend body against a
   bare Blender object (issue 35, target <= 1.1): the same plain writes to
   bare objects of the same hierarchy (a mirror of the imported model in a
   scene of its own: one object per imported object, same parents, data,
   local transforms and visibility, no MJBlend properties), each frame's
   ratio (MJBlend bodies / bare, and the Objects display / bare), median
   over the frames, the two sides taking turns;
4. the largest scene of free bodies that holds real time at 60 displayed
   frames per second, in Fast and in Objects mode (the runner on its thread,
   the display loop on the main thread, both for real).

Each figure is the median of R repeats, interleaved with its baseline (the
machine is noisy: about one core of real throughput).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HUMANOID = os.path.join(ROOT, "..", "shared", "corpus", "mujoco_model", "model", "humanoid", "humanoid.xml")
DESK = os.path.join(ROOT, "examples", "desk_toys.xml")
FRAME = 1 / 60


def many_bodies(count: int) -> str:
    side = int(np.ceil(np.sqrt(count)))
    bodies = "\n".join(
        f'<body pos="{(i % side) * 0.3:g} {(i // side) * 0.3:g} {1 + (i % 7) * 0.1:g}"><freejoint/>'
        f'<geom size=".1"/></body>' for i in range(count))
    return f'<mujoco><option timestep="0.005"/><worldbody><geom type="plane" size="50 50 .1"/>{bodies}' \
           '</worldbody></mujoco>'


class Bench:
    def __init__(self, args):
        self.args = args
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import addon_loader  # (links the add-on as `mjblend`, as the tests do)
        import bpy
        import mujoco
        addon_loader.enable_addon()
        from mjblend.engine import commands
        from mjblend.importer import build
        from mjblend.live import scene_session, simulation
        self.bpy, self.mujoco, self.build = bpy, mujoco, build
        self.commands, self.scene_session, self.simulation = commands, scene_session, simulation
        self.folder = tempfile.mkdtemp(prefix="mjblend-bench-")

    def load(self, path, display="AUTO", threaded=True):
        """A fresh scene with `path` imported; its live simulation (not playing)."""
        bpy = self.bpy
        self.scene_session.end_all()
        bpy.ops.wm.read_homefile(use_empty=True)
        self.build.import_file(path, bpy.context.scene)
        bpy.context.scene.mujoco_simulation.display = display
        self.simulation.THREADED = threaded
        return self.scene_session.start_simulation(bpy.context.scene)

    def bodies_file(self, count):
        path = os.path.join(self.folder, f"bodies{count}.xml")
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(many_bodies(count))
        return path

    def raw_rate(self, model, steps):
        """Steps per second of plain `mj_step` from the model's reset state, over
        `steps` steps (the same stretch of simulation the runner went through)."""
        mujoco = self.mujoco
        data = mujoco.MjData(model)
        start = time.perf_counter()
        mujoco.mj_step(model, data, nstep=steps)
        return steps / (time.perf_counter() - start)

    def display_loop(self, running, seconds):
        """The viewport on the main thread for `seconds` of wall time: every 1/60 s,
        show the latest snapshot and let the depsgraph evaluate it. Returns (display
        frames per second, of which showed a new snapshot, median seconds of work
        per frame)."""
        view_layer = self.bpy.context.view_layer
        start = time.perf_counter()
        next_frame, frames, fresh, costs = start, 0, 0, []
        while time.perf_counter() - start < seconds:
            now = time.perf_counter()
            if running.tick(now):
                view_layer.update()
                fresh += 1
            frames += 1
            costs.append(time.perf_counter() - now)
            next_frame += FRAME
            time.sleep(max(0.0, next_frame - time.perf_counter()))
        wall = time.perf_counter() - start
        return frames / wall, fresh / wall, statistics.median(costs)

    # ------------------------------------------------------------- parts

    def fast_forward(self, path, label):
        """Part 1 and 2 for one model: raw, and the runner in fast-forward under a 60 Hz display."""
        args = self.args
        running = self.load(path)
        model = running.model
        running.send(self.commands.FastForward(True))
        raws, rates, mode = [], [], None
        for _ in range(args.repeat):
            running.send(self.commands.Reset())
            running.play()
            before, start = running.latest.steps, time.perf_counter()
            self.display_loop(running, args.seconds)
            steps = running.latest.steps - before
            rates.append(steps / (time.perf_counter() - start))
            mode = "Fast" if running.display.fast_now else "Objects"
            running.pause()
            time.sleep(0.05)
            raws.append(self.raw_rate(model, steps))
        self.scene_session.end_all()
        raw, rate = statistics.median(raws), statistics.median(rates)
        print(f"1. raw mj_step, {label}: {raw:10.0f} steps/s")
        print(f"2. fast-forward under a 60 Hz {mode} display, {label}: {rate:10.0f} steps/s = "
              f"{rate / raw * 100:.1f}% of raw  (target >= 90%)")

    def sync_cost(self):
        """Part 3: per body per frame, Fast and Objects, and plain writes of the same poses."""
        args, bpy = self.args, self.bpy
        count = args.bodies
        running = self.load(self.bodies_file(count), display="FAST", threaded=False)
        view_layer = bpy.context.view_layer
        running.send(self.commands.Step(200))  # falling and landing: every pose differs
        running.send(self.commands.FastForward(True))
        running.play()
        bodies = [obj for obj, _body in running.binding.driven]
        times = {"FAST": [], "OBJECTS": []}
        plain, bare, bare_ratios, display_ratios = [], [], [], []
        for display in ("FAST", "OBJECTS"):  # (each a run of frames: switching costs once)
            if display == "OBJECTS":
                mirror, bare_bodies = bare_mirror(bpy, bodies)
            bpy.context.scene.mujoco_simulation.display = display
            running.runner.tick(budget=0.005)
            running.display.show(running.latest, running.binding, running.held, display)
            view_layer.update()
            for frame in range(args.repeat * 4):
                running.runner.tick(budget=0.005)  # a few more steps: every pose moves
                shot = running.latest
                start = time.perf_counter()
                running.display.show(shot, running.binding, running.held, display)
                view_layer.update()
                times[display].append(time.perf_counter() - start)
                assert running.display.fast_now == (display == "FAST")
                if display == "OBJECTS":
                    obj, body = running.binding.driven[-1]  # the synced pose is what the depsgraph shows
                    assert np.allclose(np.array(obj.matrix_world.translation), shot.xpos[body], atol=1e-5)
                    sides = [(bodies, view_layer, plain), (bare_bodies, mirror.view_layers[0], bare)]
                    for objects, layer, kept in sides[::1 if frame % 2 else -1]:  # (taking turns)
                        kept.append(plain_move_times(bpy, objects, layer, shot, frame))
                    bare_ratios.append(plain[-1] / bare[-1])
                    display_ratios.append(times[display][-1] / bare[-1])
        fast, objects = times["FAST"], times["OBJECTS"]
        per_body = (len(mirror.objects) - 1) / count  # (less the model's root)
        bpy.data.scenes.remove(mirror)
        self.scene_session.end_all()
        fast_us, objects_us, plain_us = (statistics.median(t) / count * 1e6 for t in (fast, objects, plain))
        print(f"3. sync of {count} free bodies per frame, until the depsgraph has evaluated it:")
        print(f"   Fast (instancer):   {fast_us:7.2f} us per body  (target <= 1 us)")
        print(f"   Objects:            {objects_us:7.2f} us per body; plain Python writes of the same poses "
              f"to the same objects: {plain_us:.2f} us; ratio {objects_us / plain_us:.2f}  (target <= 1)")
        bare_us = statistics.median(bare) / count * 1e6
        print(f"   a moved MJBlend body against a bare Blender object (the same writes to a bare mirror, "
              f"{per_body:.1f} objects per body): bare {bare_us:.2f} us per body;")
        print(f"     MJBlend bodies / bare: {statistics.median(bare_ratios):.2f}  (target <= 1.1, issue 35); "
              f"Objects display / bare: {statistics.median(display_ratios):.2f}")

    def largest_realtime(self, display):
        """Part 4: the most free bodies that hold real time at 60 displayed frames per second."""
        args = self.args
        good, bad = 0, None
        count = args.start_bodies
        while bad is None or bad - good > max(25, good // 8):
            ok, figures = self.holds_realtime(count, display)
            print(f"   {display:7s} {count:5d} bodies: {figures}  {'holds' if ok else 'falls behind'}")
            if ok:
                good = count
                count = count * 2 if bad is None else (count + bad) // 2
            else:
                bad = count
                count = (good + count) // 2
            if count > args.max_bodies:
                break
        return good

    def holds_realtime(self, count, display):
        running = self.load(self.bodies_file(count), display=display)
        running.play()
        time.sleep(0.2)
        start_sim, start = running.latest.time, time.perf_counter()
        rate, fresh, frame_cost = self.display_loop(running, self.args.seconds)
        speed = (running.latest.time - start_sim) / (time.perf_counter() - start)
        self.scene_session.end_all()
        ok = speed >= 0.97 and rate >= 57 and fresh >= 50
        return ok, (f"{speed:.2f}x real time, {rate:.0f} frames/s ({fresh:.0f} with a new state), "
                    f"{frame_cost * 1e3:.1f} ms display work per frame")


def bare_mirror(bpy, bodies):
    """A scene of its own holding a bare copy of the model `bodies` belong to: one object per
    object of the model (its root and everything below it), with the same parent, object
    data (shared), local transform and visibility, and no MJBlend properties. Returns the
    scene and the copies of `bodies`, in order."""
    root = bodies[0]
    while root.parent is not None:
        root = root.parent
    scene = bpy.data.scenes.new("bare mirror")
    originals = [root, *root.children_recursive]
    copies = {}
    for obj in originals:
        copy = copies[obj] = bpy.data.objects.new(f"bare {obj.name}", obj.data)
        scene.collection.objects.link(copy)
    layer = scene.view_layers[0]
    for obj in originals:
        copy = copies[obj]
        if obj.parent is not None:
            copy.parent = copies[obj.parent]
            copy.matrix_parent_inverse = obj.matrix_parent_inverse
        copy.rotation_mode = obj.rotation_mode
        copy.matrix_basis = obj.matrix_basis
        copy.empty_display_type, copy.empty_display_size = obj.empty_display_type, obj.empty_display_size
        copy.hide_viewport, copy.hide_render = obj.hide_viewport, obj.hide_render
        copy.hide_set(obj.hide_get(), view_layer=layer)
    layer.update()
    return scene, [copies[obj] for obj in bodies]


def plain_move_times(bpy, objects, view_layer, shot, frame):
    """Seconds to give `objects` the snapshot's poses (shifted a little each frame, so
    they move) by plain assignments and update the view layer: Blender alone, no
    MJBlend code in between (its depsgraph handler, which notes moved objects for
    the scan, is taken out)."""
    from mjblend.app import handlers

    ids = [int(i) for i in range(1, len(objects) + 1)]
    pos = (shot.xpos[ids] + 1e-4 * (frame + 1)).astype(np.float32).tolist()
    quat = shot.xquat[ids].astype(np.float32).tolist()
    bpy.app.handlers.depsgraph_update_post.remove(handlers.note_moved_and_reshaped)
    start = time.perf_counter()
    for obj, p, q in zip(objects, pos, quat, strict=True):
        obj.location = p
        obj.rotation_quaternion = q
    view_layer.update()
    seconds = time.perf_counter() - start
    bpy.app.handlers.depsgraph_update_post.append(handlers.note_moved_and_reshaped)
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="wall seconds per measurement")
    parser.add_argument("--bodies", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--start-bodies", type=int, default=100, help="part 4 starts its search here")
    parser.add_argument("--max-bodies", type=int, default=20000)
    parser.add_argument("--skip", default="", help="parts to skip, e.g. '4'")
    args = parser.parse_args()
    bench = Bench(args)
    model = HUMANOID if os.path.exists(HUMANOID) else DESK
    if "1" not in args.skip and "2" not in args.skip:
        bench.fast_forward(model, os.path.relpath(model, ROOT))
        bench.fast_forward(bench.bodies_file(args.bodies), f"{args.bodies} free bodies")
    if "3" not in args.skip:
        bench.sync_cost()
    if "4" not in args.skip:
        print("4. the largest scene of free bodies holding real time at 60 displayed frames per second:")
        fast = bench.largest_realtime("FAST")
        objects = bench.largest_realtime("OBJECTS")
        print(f"   Fast: {fast} bodies; Objects: {objects} bodies")


if __name__ == "__main__":
    main()

"""The simulation loop: stepping and syncing cost, against raw `mj_step` in the same run.

    .venv/bin/python bench/loop_bench.py [--model PATH] [--seconds S] [--bodies N] [--repeat R]

1. raw `mj_step` throughput on one model (default: the corpus humanoid, else
   examples/desk_toys.xml), steps per second;
2. the session's advance + sync with a sync every 1/60 s of simulated time
   (each sync counted until the depsgraph has evaluated every moved object, as
   a viewport frame needs), steps per second, and its ratio to 1;
3. sync cost per body per frame on a scene of N free bodies (default 1000):
   writing the poses plus the view layer update that makes every object's
   evaluated `matrix_world` show them, per body.

Targets (issue 5): 2 >= 90% of 1; 3 <= 2 us per body. Each figure is the
median of R repeats (the machine is noisy). Baselines measured in the same run
show what Blender itself costs: for 2, plain assignments of the same poses to
the same objects plus the update (so the highest fraction of raw any sync can
reach); for 3, the same assignments on MJBlend's objects, and on bare twins of
them (same hierarchy and meshes, no add-on properties).
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


def many_bodies(count: int) -> str:
    side = int(np.ceil(np.sqrt(count)))
    bodies = "\n".join(
        f'<body pos="{(i % side) * 0.3:g} {(i // side) * 0.3:g} {1 + (i % 7) * 0.1:g}"><freejoint/>'
        f'<geom size=".1"/></body>' for i in range(count))
    return f'<mujoco><option timestep="0.005"/><worldbody><geom type="plane" size="50 50 .1"/>{bodies}' \
           '</worldbody></mujoco>'


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=HUMANOID if os.path.exists(HUMANOID) else DESK)
    parser.add_argument("--seconds", type=float, default=2.0, help="simulated time per measurement")
    parser.add_argument("--bodies", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    addons = tempfile.mkdtemp(prefix="mjblend-bench-")
    os.symlink(ROOT, os.path.join(addons, "mjblend"))
    sys.path.insert(0, addons)
    import bpy
    import addon_utils
    import mujoco
    addon_utils.enable("mjblend", default_set=True)
    from mjblend.live import scene_session
    from mjblend.importer import build

    # 1 + 2: raw stepping, then the session stepping with a synced frame every 1/60 s
    bpy.ops.wm.read_homefile(use_empty=True)
    build.import_file(args.model, bpy.context.scene)
    running = scene_session.ensure(bpy.context.scene)
    model = running.session.model
    steps = int(round(args.seconds / model.opt.timestep))
    per_frame = max(1, int(round(1 / 60 / model.opt.timestep)))
    view_layer = bpy.context.view_layer

    def raw():
        data = mujoco.MjData(model)
        start = time.perf_counter()
        mujoco.mj_step(model, data, nstep=steps)
        return steps / (time.perf_counter() - start)

    frame_parts = {"step": [], "sync": [], "depsgraph": []}

    def session():
        running.session.reset(-1)
        start = time.perf_counter()
        done = 0
        while done < steps:
            t0 = time.perf_counter()
            done += running.session.step(per_frame)
            t1 = time.perf_counter()
            running.sync()
            t2 = time.perf_counter()
            view_layer.update()
            t3 = time.perf_counter()
            for part, seconds in zip(frame_parts, (t1 - t0, t2 - t1, t3 - t2), strict=True):
                frame_parts[part].append(seconds)
        return done / (time.perf_counter() - start)

    plain = [obj for obj, _body in running.driven]
    floor_frames = []

    def blender_floor():
        """Blender's own share of a frame: see plain_move_times."""
        floor_frames.extend(plain_move_times(plain, view_layer, max(1, steps // per_frame)))

    raw_rates, session_rates = [], []
    for _ in range(args.repeat):  # interleaved, so all see the same machine load
        raw_rates.append(raw())
        session_rates.append(session())
        blender_floor()
    running.sync()  # the simulated poses back on the objects the floor moved
    raw_rate, session_rate = statistics.median(raw_rates), statistics.median(session_rates)
    # the best any sync can do: raw stepping plus Blender's own cost of a frame
    floor_frame = statistics.median(floor_frames)
    best_rate = per_frame / (per_frame / raw_rate + floor_frame)
    parts = ", ".join(f"{part} {statistics.median(times) * 1e3:.3f} ms"
                      for part, times in frame_parts.items())
    name = os.path.relpath(args.model, ROOT)
    print(f"model {name}: {model.nbody} bodies, timestep {model.opt.timestep:g}, "
          f"{per_frame} steps per 1/60 s frame")
    print(f"1. raw mj_step:                 {raw_rate:10.0f} steps/s")
    print(f"2. session advance + 60 Hz sync: {session_rate:10.0f} steps/s  = "
          f"{session_rate / raw_rate * 100:.1f}% of raw  (target >= 90%)")
    print(f"   per frame (median): {parts}")
    print(f"   baseline, Blender alone (plain writes of the {len(plain)} moved objects + update): "
          f"{floor_frame * 1e3:.3f} ms per frame; raw stepping plus that = {best_rate:.0f} steps/s "
          f"= {best_rate / raw_rate * 100:.1f}% of raw, the most any sync can reach here")
    scene_session.drop_all()

    # 3: sync cost per body on N free bodies
    path = os.path.join(tempfile.mkdtemp(prefix="mjblend-bench-"), "bodies.xml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(many_bodies(args.bodies))
    bpy.ops.wm.read_homefile(use_empty=True)
    build.import_file(path, bpy.context.scene)
    running = scene_session.ensure(bpy.context.scene)
    view_layer = bpy.context.view_layer  # (the file load freed the first one)
    bodies = [o for o in bpy.context.scene.objects if o.mujoco.kind == "BODY"]
    write_times, total_times = [], []
    for _ in range(args.repeat * 4):
        running.session.step(4)
        start = time.perf_counter()
        running.sync()
        written = time.perf_counter()
        view_layer.update()
        done = time.perf_counter()
        write_times.append(written - start)
        total_times.append(done - start)
    # the floor: the same objects given new poses by plain assignments, same update
    floor_times = plain_move_times(bodies, view_layer, args.repeat * 4)
    bare_times = bare_floor(bpy, bodies, view_layer, args.repeat * 4)
    running.sync()
    view_layer.update()
    data = running.session.data
    last = running.by_id[("body", 1)]
    assert np.allclose(np.array(last.matrix_world.translation), data.xpos[1], atol=1e-5), \
        "the evaluated matrix_world does not show the synced pose"
    count = len(bodies)
    write, total = statistics.median(write_times) / count, statistics.median(total_times) / count
    print(f"3. sync of {count} free bodies: {total * 1e6:.2f} us per body per frame "
          f"(writing {write * 1e6:.2f} us + depsgraph {(total - write) * 1e6:.2f} us)  (target <= 2 us)")
    floor = statistics.median(floor_times) / count
    print(f"   baseline, plain Blender writes of the same objects + update: {floor * 1e6:.2f} us per body; "
          f"ratio {total / floor:.2f}")
    bare = statistics.median(bare_times) / count
    print(f"   baseline, bare Blender objects (the same hierarchy without MJBlend's properties) "
          f"+ update: {bare * 1e6:.2f} us per body; Blender's own floor, {bare * 1e6 / 2:.0f}x the target")
    scene_session.drop_all()


def plain_move_times(objects, view_layer, frames):
    """Seconds per frame to give `objects` new poses by plain assignments and update
    the view layer: what Blender itself costs, no MJBlend code in between (its
    depsgraph handler, which notes moved objects for the scan, is taken out)."""
    import bpy
    from mjblend.app import handlers

    pos = [list(obj.location) for obj in objects]
    times = []
    bpy.app.handlers.depsgraph_update_post.remove(handlers.note_moved_and_reshaped)
    for _ in range(frames):
        for p in pos:
            p[2] += 1e-4
        start = time.perf_counter()
        for obj, p in zip(objects, pos, strict=True):
            obj.location = p
            obj.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
        view_layer.update()
        times.append(time.perf_counter() - start)
    bpy.app.handlers.depsgraph_update_post.append(handlers.note_moved_and_reshaped)
    return times


def bare_floor(bpy, bodies, view_layer, repeat):
    """Seconds per frame to move `bodies`' bare twins (same parenting, same mesh
    data, no custom properties) and update: what Blender costs before any add-on."""
    collection = bpy.data.collections.new("bare")
    bpy.context.scene.collection.children.link(collection)
    twins = []
    for body in bodies:
        twin = bpy.data.objects.new("bare " + body.name, None)
        collection.objects.link(twin)
        for child in body.children:
            copy = bpy.data.objects.new("bare " + child.name, child.data)
            collection.objects.link(copy)
            copy.parent = twin
        twins.append(twin)
    view_layer.update()
    times = plain_move_times(twins, view_layer, repeat)
    for twin in twins:
        for child in twin.children:
            bpy.data.objects.remove(child)
        bpy.data.objects.remove(twin)
    bpy.data.collections.remove(collection)
    return times


if __name__ == "__main__":
    main()

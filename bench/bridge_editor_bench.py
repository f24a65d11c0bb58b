"""What URLab's editor ops over the bridge cost Blender's main thread (issue 33), against
the same work done by hand on the main thread in the same run, and a 60 Hz frame.

    .venv/bin/python bench/bridge_editor_bench.py [--repeat R]

The corpus humanoid imported and served (bpy module, its simulation on a physics
thread). A client on a thread of its own sends each op R times; this, the main thread,
serves the bridge's jobs as a window's timer does (bridge_host.watch), and each job's
main-thread time is read from the bridge (MainThread.seconds). Baselines, taking turns
with the ops: the reads a script would make for the same answer (the model roots and
their objects' boxes), and the edits by hand (a model root moved and the simulation
made to follow, as Blender's next frame would: LiveSimulation.check_edits; an undo step).

Target (issue 33): no bridge request stalls Blender more than one frame (16.7 ms at
60 Hz). Edits that recompile the model cost what the same edit by hand costs (the ratio
column); medians of R (the machine is noisy: about one core of real throughput).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))

import bpy  # noqa: E402,F401  (before the add-on: the bpy module)
import addon_loader  # noqa: E402
from helpers import CORPUS, free_port  # noqa: E402
from wire_client import WireClient  # noqa: E402

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
FRAME = 1.0 / 60.0


def served_call(bridge_host, client, op, fields):
    """`client.call(op, **fields)` on a thread while this thread serves the bridge's jobs;
    a long op followed with op_status to its end. The reply."""
    out = {}

    def run():
        reply = client.call(op, **fields)
        while reply.get("op") == "op_started":
            status = client.call("op_status", job_id=reply["job_id"])
            if status["state"] in ("done", "failed"):
                reply = status.get("result", status)
                break
            time.sleep(0.001)
        out["reply"] = reply
    thread = threading.Thread(target=run)
    thread.start()
    while thread.is_alive():
        bridge_host.watch()
        thread.join(0.001)
    return out["reply"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    addon_loader.enable_addon()
    from mjblend.importer import build
    from mjblend.live import bridge_host, bridge_scene, scene_session

    scene = bpy.context.scene
    root = build.import_file(HUMANOID, scene).root
    port = free_port()
    served = bridge_host.start(scene, request_port=port, state_port=free_port(), camera_port=free_port())
    main_thread = served.host.main_thread
    client = WireClient(port)
    actor = client.hello()["articulations"][0]["prefix"]

    def by_hand_move(z):
        def move():
            root.location.z = z
            bpy.context.view_layer.update()
            bridge_scene.undo_step("Move (by hand)")
            scene_session.simulation(scene).check_edits()
        return move

    def by_hand_bounds():
        bridge_scene.actor_bounds(scene, actor)

    def by_hand_roots():
        bridge_scene.actors(scene)

    cases = [  # (op, its fields per round, the by-hand baseline per round)
        ("list_actors", lambda i: {}, lambda i: by_hand_roots),
        ("find_actors", lambda i: {"name_prefix": actor[:3]}, lambda i: by_hand_roots),
        ("get_actor_bounds", lambda i: {"target": actor}, lambda i: by_hand_bounds),
        ("select_actor", lambda i: {"target": actor}, None),
        ("snapshot", lambda i: {}, None),
        ("set_actor_transform", lambda i: {"target": actor, "location": [0.0, 0.0, 0.01 * (i % 2)]},
         lambda i: by_hand_move(0.02 + 0.01 * (i % 2))),
    ]
    rows = []
    for op, fields, baseline in cases:
        ours, hand = [], []
        for i in range(args.repeat):
            reply = served_call(bridge_host, client, op, fields(i))
            assert reply.get("op") == f"{op}_ok", reply
            ours.append(main_thread.seconds[op])
            if baseline is not None:
                work = baseline(i)
                started = time.perf_counter()
                work()
                hand.append(time.perf_counter() - started)
            if op == "set_actor_transform":
                client.hello()  # (the move recompiled: a new session, as URLab's client would)
        rows.append((op, statistics.median(ours), statistics.median(hand) if hand else None))

    # hello with include_assets: the main thread's part (the served spec copied)
    ours = []
    for _ in range(args.repeat):
        reply = served_call(bridge_host, client, "hello", {"include_assets": True})
        assert reply.get("op") == "hello_ok", reply
        ours.append(main_thread.seconds["include_assets"])
    rows.append(("hello include_assets", statistics.median(ours), None))
    client.close()
    bridge_host.stop()
    scene_session.end_all()

    print(f"== bpy {bpy.app.version_string}, the corpus humanoid served; medians of {args.repeat}; "
          f"a 60 Hz frame is {FRAME * 1e3:.1f} ms")
    print(f"{'op':24s} {'main thread':>12s} {'frames':>7s} {'by hand':>9s} {'ratio':>6s}")
    for op, seconds, hand in rows:
        by_hand = f"{hand * 1e3:7.2f}ms" if hand is not None else f"{'-':>9s}"
        ratio = f"{seconds / hand:5.2f}x" if hand else f"{'-':>6s}"
        print(f"{op:24s} {seconds * 1e3:10.2f}ms {seconds / FRAME:7.2f} {by_hand} {ratio}")
    worst = max(rows, key=lambda row: row[1])
    print(f"longest: {worst[0]} {worst[1] * 1e3:.2f} ms = {worst[1] / FRAME:.2f} frames "
          f"({'within' if worst[1] <= FRAME else 'beyond'} one frame)")


if __name__ == "__main__":
    main()

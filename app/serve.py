"""Headless serving: a .blend's or an MJCF / URDF file's simulation over the bridge until
stopped (SIGTERM, SIGINT, or a client's `shutdown` op).

Blender 4.2+ with the MJBlend extension enabled (the command is registered with
Blender's command line while the add-on is enabled):

    blender --command mjblend_serve robot.xml --port 5559 --state-port 5555

The bpy module (the add-on importable as `mjblend`, e.g. from a folder holding a
link named `mjblend` to it):

    python -c "import sys, addon_utils; addon_utils.enable('mjblend', default_set=True); \\
        from mjblend.app import serve; sys.exit(serve.main(sys.argv[1:]))" robot.xml

A .blend is opened; an MJCF or URDF file is imported into the current scene as
File > Import does. One line starting with `MJBlend bridge serving` names the
endpoints once clients may connect.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

import bpy
import mujoco

from ..importer import build
from . import command_line
from ..live import bridge_host, scene_session, simulation

COMMAND = "mjblend_serve"  # Blender's command ids are global identifiers: named after the add-on
READY = "MJBlend bridge serving"  # the first words of the line a caller may wait for
SHUTDOWN_GRACE = 0.25  # seconds for a `shutdown_ok` reply to leave before the sockets close
POLL = 0.1  # seconds between the loop's looks at its stop flags



def parser() -> argparse.ArgumentParser:
    serve = argparse.ArgumentParser(
        prog=f"blender --command {COMMAND}",
        description="Serve a model's MuJoCo simulation over MJBlend's bridge (URLab's wire protocol) "
                    "until SIGTERM, Ctrl+C or a client's 'shutdown' request.")
    serve.add_argument("path", help="a .blend file, or an MJCF (.xml) or URDF file to import")
    serve.add_argument("--address", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1: this computer only)")
    serve.add_argument("--port", type=int, default=5559, help="ZMQ request port (default 5559)")
    serve.add_argument("--state-port", type=int, default=5555, help="ZMQ state stream port (default 5555)")
    serve.add_argument("--transport", choices=("zmq", "shm"), default="zmq",
                       help="zmq, or shm: ZMQ and shared memory for clients on this computer")
    serve.add_argument("--keyframe", default=None,
                       help="start from this keyframe (its name or index) instead of qpos0")
    serve.add_argument("--stream-rate", type=float, default=None, metavar="HZ",
                       help="state snapshots per second while the simulation plays (default 120)")
    serve.add_argument("--paused", action="store_true",
                       help="start paused (default: the simulation plays, URLab's freerun)")
    return serve


def main(argv) -> int:
    """Serve until stopped; the process's exit status (0: stopped as asked)."""
    args, status = command_line.read(parser(), argv, "path")
    if args is None:
        return status
    path = args.path
    try:
        scene = _load(path)
    except (build.ImportFailed, RuntimeError) as error:
        return command_line.fail(str(error))
    transports = ("zmq", "shm") if args.transport == "shm" else ("zmq",)
    try:
        served = bridge_host.start(scene, args.address, args.port, args.state_port, transports,
                                   remote_stop=True, stream_rate=args.stream_rate)
    except bridge_host.BridgeError as error:
        return command_line.fail(str(error))
    live = served.host.live
    try:
        if args.keyframe is not None:
            live.reset(_keyframe(live.model, args.keyframe, served.host.root_prefixes()))
        if not args.paused:
            live.play()
    except (ValueError, simulation.SimulationError) as error:
        _stop()
        return command_line.fail(str(error))
    print(_endpoints(served, path), flush=True)
    return _serve(served)


def _serve(served) -> int:
    stop = threading.Event()
    reason = []

    def on_signal(number, _frame):
        reason.append(signal.Signals(number).name)
        stop.set()
    previous = {number: signal.signal(number, on_signal) for number in (signal.SIGTERM, signal.SIGINT)}
    asked = served.bridge.dispatcher.stop_requested
    try:
        while not stop.is_set():
            if asked.is_set():
                reason.append("a client's shutdown request")
                stop.wait(SHUTDOWN_GRACE)  # (the sockets close with linger 0: let the reply go)
                break
            pause = bridge_host.watch()
            if pause is None:  # (the simulation ended)
                reason.append("the simulation ended")
                break
            # (a bridge thread asking for Blender's frames wakes the loop; none are rendered
            # before the main thread's share allows: blender_frames.SHARE)
            frames = served.host.blender_frames
            if served.host.main_thread.waiting:
                continue
            if frames.waiting:
                stop.wait(min(POLL, frames.wait_left()))
            else:
                frames.wake.wait(min(POLL, pause))
    finally:
        for number, handler in previous.items():
            # None: the handler was Blender's own, installed from C (the executable has
            # one for SIGINT), which Python cannot put back; ours stays, harmlessly.
            if handler is not None:
                signal.signal(number, handler)
        _stop()
    print(f"MJBlend bridge stopped ({reason[0] if reason else 'done'})", flush=True)
    return 0


def _load(path: str):
    """The scene to serve: the .blend's, or the current scene with the file imported."""
    if path.lower().endswith(".blend"):
        bpy.ops.wm.open_mainfile(filepath=path)
        return bpy.context.scene
    scene = bpy.context.scene
    result = build.import_file(path, scene)
    for warning in result.warnings:
        print(f"MuJoCo: {warning}", file=sys.stderr)
    print(result.summary(), flush=True)
    return scene


def _keyframe(model, wanted: str, prefixes) -> int:
    """A keyframe of the served model by index or name (its own, or under a root's prefix)."""
    if wanted.lstrip("-").isdigit():
        index = int(wanted)
        if not 0 <= index < model.nkey:
            raise ValueError(f"no keyframe {index}: the model has {model.nkey}")
        return index
    for name in (wanted, *(f"{prefix}_{wanted}" for prefix in prefixes)):
        index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, name)
        if index >= 0:
            return index
    raise ValueError(f"no keyframe named {wanted!r}")


def _endpoints(served, path: str) -> str:
    zmq = served.bridge.zmq
    shm = served.bridge.shm
    shm = f", shared memory in {getattr(shm, 'directory', '?')}" if shm is not None else ""
    registry = served.bridge.registry
    registry = f", URLab pool entry {registry.path}" if registry is not None else ""
    return (f"{READY} {os.path.basename(path)}: requests {zmq.request_endpoint}, "
            f"state {zmq.state_endpoint}{shm}{registry}")


def _stop() -> None:
    bridge_host.stop()
    scene_session.end_all(restore=False)


command = command_line.Command(COMMAND, main)
register, unregister = command.register, command.unregister

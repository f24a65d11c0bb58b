"""A CameraRenderer in a child process: MuJoCo's renderer at a lower priority.

Beside a simulation, the render should take only the CPU the physics leaves. In a
thread of its own process it cannot be told so: it runs at Blender's priority, and
Mesa's software rasterizer (llvmpipe, on machines without a GPU) draws on every
core. Measured on this 2-core machine (examples/desk_toys.xml, 320 x 240, mj_step
on one Python thread beside a render loop): the physics made 65,200 steps/s alone,
33,800 beside a render thread (11.7 frames/s), 58,400 beside this process (nice 10,
LP_NUM_THREADS=1: 3 frames/s) and 27,100 beside this process at nice 0 with two
llvmpipe threads: the priority and the core count are what matter. (mujoco.Renderer
releases the GIL while it draws: a Python thread beside it keeps its pace.) The
process also keeps MuJoCo's OpenGL context out of Blender's, which draws with its
own.

`ProcessRenderer` has CameraRenderer's face (`model`, `render(state, camera, kinds,
width, height)`, `close`) for RenderWorker (`renderer=ProcessRenderer`); the
drawing happens in a Python of its own, started from `sys.executable` with this
process's `sys.path`, which gets the model once and a state (qpos, qvel, act,
mocap, time, ctrl, eq_active) per frame and sends back the Frame's fields: the
same CameraRenderer, the same mujoco.Renderer calls in the same order, so the same
pixels.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import secrets
import subprocess
import sys
from multiprocessing.connection import Client, Listener
from types import SimpleNamespace

import numpy as np

from . import cameras, gl_backend

START_TIMEOUT = 60.0  # seconds for the child to import mujoco and connect
STOP_TIMEOUT = 5.0
NICE = 10  # the child's lower priority (Unix), from its first line: the simulation first
_STATE_FIELDS = ("qpos", "qvel", "act", "mocap_pos", "mocap_quat", "ctrl", "eq_active")
_ERRORS = {"CameraError": cameras.CameraError, "RendererUnavailable": cameras.RendererUnavailable}


def child_environment() -> dict:
    """This process's environment; the platform's OpenGL backend the add-on asks for
    (gl_backend.DEFAULTS) unless MUJOCO_GL names one; Mesa's software rasterizer
    (llvmpipe) told to leave two cores (the physics thread's and Blender's) unless
    LP_NUM_THREADS says otherwise."""
    env = dict(os.environ)
    backend = gl_backend.DEFAULTS.get(platform.system())
    if backend:
        env.setdefault("MUJOCO_GL", backend)
    env.setdefault("LP_NUM_THREADS", str(max(1, min((os.cpu_count() or 1) - 2, 8))))
    return env


def state_of(snapshot) -> SimpleNamespace:
    """What `cameras.load_state` reads of a snapshot, and nothing else (sent per frame)."""
    values = {field: np.asarray(getattr(snapshot, field))
              for field in _STATE_FIELDS if hasattr(snapshot, field)}
    return SimpleNamespace(time=float(snapshot.time), **values)


class ProcessRenderer:
    """CameraRenderer's interface, drawn in a child process (see the module's text)."""

    def __init__(self, model, max_geom: int = 10000):
        self.model = model
        self._process = None
        self._conn = None
        authkey = secrets.token_bytes(16)
        package = __name__.rsplit(".", 2)[0]  # (this add-on's package, e.g. bl_ext.user_default.mjblend)
        folder = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        with Listener(("127.0.0.1", 0), authkey=authkey) as listener:
            args = json.dumps([listener.address, authkey.hex(), [os.path.dirname(folder), *sys.path],
                               os.path.basename(folder)])
            code = (f"import importlib, json, os, sys; hasattr(os, 'nice') and os.nice({NICE}); "
                    "a = json.loads(sys.argv[1]); sys.path[:0] = a[2]; "
                    "importlib.import_module(a[3] + '.engine.render_process').serve(*a[:2])")
            try:
                self._process = subprocess.Popen([sys.executable, "-c", code, args], stdin=subprocess.DEVNULL,
                                                 env=child_environment())
            except OSError as exc:
                raise cameras.RendererUnavailable(f"MuJoCo's renderer process cannot start ({exc})") from exc
            sock = getattr(getattr(listener, "_listener", None), "_socket", None)
            if sock is not None:
                sock.settimeout(START_TIMEOUT)  # (accept would wait for ever on a child that died)
            try:
                self._conn = listener.accept()
            except OSError as exc:
                self.close()
                raise cameras.RendererUnavailable(
                    f"MuJoCo's renderer process did not start within {START_TIMEOUT:g} s ({exc}; package "
                    f"{package})") from exc
        self._call(("model", model, max_geom))

    def _call(self, message):
        try:
            self._conn.send(message)
            ok, value = self._conn.recv()
        except (EOFError, OSError) as exc:
            code = self._process.poll() if self._process is not None else None
            raise cameras.RendererUnavailable(
                f"MuJoCo's renderer process ended (exit status {code}): {type(exc).__name__}") from exc
        if not ok:
            kind, text = value
            raise _ERRORS.get(kind, RuntimeError)(text)
        return value

    def render(self, state, which, kinds=("rgb",), width: int | None = None, height: int | None = None
               ) -> cameras.Frame:
        frame, camera = self._call(("render", state_of(state), which, tuple(kinds), width, height))
        return cameras.Frame(camera=cameras.Camera(**camera), **frame)

    def close(self) -> None:
        """The child told to stop (its GL contexts freed), then waited for; killed if it hangs."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.send(None)
            except OSError:
                pass
            conn.close()
        process, self._process = self._process, None
        if process is not None:
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _plain(frame: cameras.Frame) -> tuple[dict, dict]:
    """A Frame as builtins and arrays: (its fields but the camera, the camera's fields).
    The parent's classes are not the child's: this package is `mjblend` here and, in
    Blender, `bl_ext.<repository>.mjblend` there, so a pickled Frame would not load."""
    fields = {f.name: getattr(frame, f.name) for f in dataclasses.fields(frame) if f.name != "camera"}
    return fields, {f.name: getattr(frame.camera, f.name) for f in dataclasses.fields(frame.camera)}


def serve(address, authkey_hex: str) -> None:
    """The child's loop: a model, then frames, until told to stop or the parent is gone."""
    conn = Client(tuple(address), authkey=bytes.fromhex(authkey_hex))
    renderer = None
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message is None:
                return
            try:
                if message[0] == "model":
                    if renderer is not None:
                        renderer.close()
                    renderer = cameras.CameraRenderer(message[1], message[2])
                    reply = (True, None)
                else:
                    _op, state, which, kinds, width, height = message
                    reply = (True, _plain(renderer.render(state, which, kinds, width, height)))
            except Exception as exc:  # noqa: BLE001 -- every error goes back to the caller
                reply = (False, (type(exc).__name__, str(exc)))
            conn.send(reply)
    finally:
        if renderer is not None:
            renderer.close()
        conn.close()

"""MuJoCo's own text dumps of the model and of the simulation's data (simulate's File >
Print model / Print data: mj_printModel, mj_printData) into Blender text blocks.

mjData is printed by the runner, on the thread that owns it: a `commands.Call` that runs
mj_printData between two steps and hands the text back, waited for here. So the text is
of the runner's own MjData, every field of it (contacts, constraint rows, warnings,
timers, solver statistics of the last step), which a copy rebuilt from a snapshot's state
with mj_forward would not reproduce, and no other thread touches MjData while it runs.
Without a running simulation: the checked model's reference pose (mj_forward of qpos0).
"""

from __future__ import annotations

import os
import tempfile
import threading

import bpy
import mujoco

from ..engine import commands
from ..live import scene_session
from . import authoring, validation

MODEL_TEXT = "MJMODEL.TXT"  # simulate's file names, as the text blocks' names
DATA_TEXT = "MJDATA.TXT"
DATA_WAIT = 5.0  # seconds to wait for the physics thread to print its MjData


def printed(write) -> str:
    """What `write(path)` (mj_printModel, mj_printData) writes to a file, as text."""
    with tempfile.TemporaryDirectory(prefix="mjblend-print-") as folder:
        path = os.path.join(folder, "print.txt")
        write(path)
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()


def model_text(context) -> str:
    """mj_printModel of the running simulation's model, else of the checked model."""
    running = _running(context)
    model = running.model if running is not None else _checked_model(context)
    return printed(lambda path: mujoco.mj_printModel(model, path))


def data_text(context) -> str:
    """mj_printData of the running simulation's MjData (printed by its runner, waited for),
    else of the checked model's reference pose."""
    running = _running(context)
    if running is None:
        model = _checked_model(context)
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        return printed(lambda path: mujoco.mj_printData(model, data, path))
    done, result = threading.Event(), {}

    def print_data(session):  # (on the runner's thread, between two steps)
        try:
            result["text"] = printed(lambda path: mujoco.mj_printData(session.model, session.data, path))
        except Exception as error:  # noqa: BLE001 (handed to the waiting main thread)
            result["error"] = error
        finally:
            done.set()
    running.queue(commands.Call(print_data, what="Printing mjData", changes=False))
    if not done.wait(DATA_WAIT):
        raise authoring.AuthoringError(
            f"The physics thread did not print its data within {DATA_WAIT:g} s (inside a long step, "
            "or lent to a network client that is not stepping?)")
    if "error" in result:
        raise authoring.AuthoringError(f"mj_printData failed: {result['error']}")
    return result["text"]


def to_text_block(name: str, text: str) -> bpy.types.Text:
    """Text block `name` holding `text` (replaced), shown in the Text Editors on screen."""
    block = bpy.data.texts.get(name) or bpy.data.texts.new(name)
    block.clear()
    block.write(text)
    screen = bpy.context.screen
    for area in screen.areas if screen is not None else ():
        if area.type == "TEXT_EDITOR":
            area.spaces.active.text = block
    return block


def _running(context):
    running = scene_session.simulation(context.scene)
    return running if running is not None and not running.ended else None


def _checked_model(context) -> mujoco.MjModel:
    root = authoring.model_root(context)
    outcome = validation.validate(context.scene)
    if not outcome.ok:
        raise authoring.AuthoringError(f"The model does not compile: {outcome.message}")
    return outcome.models[root.name]

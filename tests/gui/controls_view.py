"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

simulate's tools (issue 34, part 2): a two-link arm (written here) simulated on the
physics thread with control noise on (scale 0.3, rate 0.2 s, seed 5: set through the
scene's settings, as the Simulation panel's sliders do), played with `mujoco.play`
INVOKE'd for 1.5 s, paused; then, paused, the elbow joint's slider value set (its
`mujoco_qpos`, what the Joints panel's slider writes), Copy Pose (the system clipboard,
which the bpy module lacks) and Print Data run in the 3D view's context. The sidebar's
MuJoCo tab is open on the Simulation panel with its Joints and Controls sub-panels, their
draws recorded; what the state, the clipboard and the text block hold goes to
MJBLEND_RESULT, a screenshot of the 3D view to MJBLEND_SCREENSHOT.
"""

import importlib
import os
import sys
import tempfile
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import (ADDON, SCREENSHOT, look, open_sidebar_tab, overlay_view, physics_parked,  # noqa: E402
                        play_invoke, report, run_steps, screenshot_view, view3d)
from gui_script import reopen_sidebar  # noqa: E402

ARM = """
<mujoco>
  <worldbody>
    <light pos="0 0 3"/>
    <geom type="plane" size="2 2 .1"/>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" axis="0 1 0" damping=".5"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
      <body name="forearm" pos=".5 0 0">
        <joint name="elbow" axis="0 1 0" range="-90 90" damping=".2"/>
        <geom type="capsule" fromto="0 0 0 .4 0 0" size=".04"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="shoulder" joint="shoulder" ctrlrange="-2 2"/>
    <motor name="elbow" joint="elbow" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""
OPEN = ("MJBLEND_PT_simulation", "MJBLEND_PT_joints", "MJBLEND_PT_controls")


def show_simulation_panels(sidebar):
    """The Simulation panel and its Joints and Controls sub-panels open, the tab's other
    top panels closed, every panel's draws recorded."""
    reopen_sidebar(sidebar, OPEN, record_all=True)

def steps():
    show_simulation_panels(importlib.import_module(ADDON + ".ui.sidebar"))
    build = importlib.import_module(ADDON + ".importer.build")
    keyframes = importlib.import_module(ADDON + ".authoring.keyframes")
    printing = importlib.import_module(ADDON + ".authoring.printing")
    for obj in list(bpy.context.scene.objects):  # the startup file's cube, light and camera
        bpy.data.objects.remove(obj)
    scene = bpy.context.scene
    path = os.path.join(tempfile.mkdtemp(prefix="mjblend-arm-"), "arm.xml")
    with open(path, "w", encoding="utf-8") as file:
        file.write(ARM)
    build.import_file(path, scene)
    window, area, region = view3d()
    overlay_view(area)
    look(area, (0.4, 0.0, 0.8), (1.4, 0.0, 0.0), 2.5)
    settings = scene.mujoco_simulation
    settings.noise_seed, settings.noise_rate, settings.noise_scale = 5, 0.2, 0.3
    area.spaces.active.show_region_ui = True
    yield 0.5
    yield from open_sidebar_tab(window, area, "MJBLEND_PT_simulation")

    running = play_invoke()
    report["threaded"] = running.runner.threaded
    start = time.perf_counter()
    while time.perf_counter() - start < 1.5:
        yield 0.2
    with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
        bpy.ops.mujoco.pause()
    yield 0.5
    shot = running.latest
    report["noise"] = list(running.session.noise_settings) if not running.runner.threaded else None
    report["paused_time"] = shot.time
    report["ctrl"] = shot.ctrl.tolist()
    elbow = next(o for o in scene.objects if o.mujoco.kind == "JOINT" and o.mujoco.name == "elbow")
    elbow.mujoco_qpos = 0.4
    yield 0.5
    shot = running.latest
    adr = int(shot.model.joint("elbow").qposadr[0])
    report["elbow"] = [float(shot.qpos[adr]), elbow.mujoco_qpos]
    with physics_parked(running), bpy.context.temp_override(window=window, area=area, region=region):
        report["copied"] = sorted(bpy.ops.mujoco.copy_pose(full_precision=True, store=False))
    # (not parked: the physics thread prints its own MjData; Blender 5.2's Python 3.13 resolves a
    # context override holding the GIL, so no parking is needed there)
    with bpy.context.temp_override(window=window, area=area, region=region):
        report["printed"] = sorted(bpy.ops.mujoco.print_data())
    report["clipboard"] = bpy.context.window_manager.clipboard
    report["key_text"] = keyframes.key_text(running.latest, True)
    report["data_text"] = bpy.data.texts[printing.DATA_TEXT].as_string()[:2000]
    report["drawn_after"] = list(report["drawn"])
    if SCREENSHOT:
        screenshot_view(SCREENSHOT)
    yield 0.3
    bpy.ops.mujoco.stop()
    yield 0.5


run_steps(steps)

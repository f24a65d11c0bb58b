"""Runs in Debian's Blender executable without a window: `blender --background
--python background_smoke.py -- MODEL OUT.json`. Enables MJBlend (installed
from its zip), notes where its mujoco comes from, imports MODEL with the File >
Import operator, simulates it, exports it with the File > Export operator and
compiles the export with MuJoCo."""

import json
import os
import sys
import tempfile
import traceback

import addon_utils
import bpy

model_path, result_path = sys.argv[sys.argv.index("--") + 1:][:2]
ADDON = os.environ.get("MJBLEND_ADDON", "mjblend")
report = {"blender": bpy.app.version_string, "errors": []}
try:
    addon_utils.enable(ADDON, default_set=True,
                       handle_error=lambda e: report["errors"].append(f"enable: {e!r}"))
    import mujoco  # the wheel Blender installed with the extension

    report["mujoco"] = mujoco.__file__
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    report["import"] = sorted(bpy.ops.import_scene.mjcf(filepath=model_path))
    report["simulate"] = sorted(bpy.ops.mujoco.simulate(duration=0.5))
    live = sys.modules[ADDON + ".live.scene_session"].simulation(bpy.context.scene)
    report["time"] = live.session.data.time
    original = mujoco.MjModel.from_xml_path(model_path)
    data = mujoco.MjData(original)
    mujoco.mj_step(original, data, nstep=int(round(0.5 / original.opt.timestep)))
    report["same_qpos"] = bool((live.session.data.qpos == data.qpos).all())
    exported = os.path.join(tempfile.mkdtemp(), "exported.xml")
    report["export"] = sorted(bpy.ops.export_scene.mjcf(filepath=exported))
    compiled = mujoco.MjModel.from_xml_path(exported)
    report["sizes"] = [compiled.nbody, compiled.njnt, compiled.ngeom,
                       original.nbody, original.njnt, original.ngeom]
except Exception:
    report["errors"].append(traceback.format_exc())
with open(result_path, "w", encoding="utf-8") as fh:
    json.dump(report, fh, indent=1)

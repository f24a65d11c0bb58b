"""Runs inside Blender's real user interface (Debian's blender under Xvfb).

Import framing (issue 20): dm_control's CMU humanoid (a floor plane, three cameras;
the corpus has no dog) dropped on the 3D view as a user drops a file (INVOKE with
files + directory: the waiting import operator on a real window timer). Before it,
the window has three 3D views: the main one looking far away (as if framed on a
floor), the Outliner's area turned into an orthographic view, the timeline's into a
view through the startup file's camera. After it, the two views that are not a
camera's frame the bodies; the camera view is left as it was. What it saw goes to
MJBLEND_RESULT; a screenshot of the main view to MJBLEND_SCREENSHOT.
"""

import importlib
import os
import sys
import time

import bpy
from bpy_extras import view3d_utils
from mathutils import Quaternion, Vector

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_script import ADDON, SCREENSHOT, report, run_steps, screenshot_view, view3d  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(HERE, "..", "..", "..", "shared", "corpus"))
MODEL = os.path.join(CORPUS, "pip", "dm_control", "suite", "humanoid_CMU.xml")
PLANE, HFIELD = 0, 1  # mjtGeom


def window_region(area):
    return next(r for r in area.regions if r.type == "WINDOW")


def world_box(obj):
    return [obj.matrix_world @ Vector(corner) for corner in obj.bound_box]


def projected(area, points):
    """Region pixels of `points` in the view of `area` (None for a point behind it)."""
    region = window_region(area)
    return [view3d_utils.location_3d_to_region_2d(region, region.data, p) for p in points]


def view_state(area):
    view = window_region(area).data
    return [view.view_perspective, list(view.view_location), view.view_distance]


def seen(area, geoms, floors):
    """How the view of `area` shows the bodies' geoms and the floor."""
    region = window_region(area)
    width, height = region.width, region.height
    centres = projected(area, [sum(world_box(g), Vector()) / 8 for g in geoms])
    inside = [p for p in centres if p is not None and 0 <= p.x <= width and 0 <= p.y <= height]
    corners = [p for p in projected(area, [c for g in geoms for c in world_box(g)]) if p is not None]
    xs, ys = [p.x for p in corners], [p.y for p in corners]
    floor = projected(area, [c for f in floors for c in world_box(f)])
    return {
        "size": [width, height],
        "centres_inside": len(inside),
        "centres": len(centres),
        # the bodies' projected extent against the region's smaller side
        "extent": max(max(xs) - min(xs), max(ys) - min(ys)) / min(width, height),
        "floor_corners_inside": sum(1 for p in floor
                                    if p is not None and 0 <= p.x <= width and 0 <= p.y <= height),
        "floor_corners": len(floor),
        "state": view_state(area),
    }


def steps():
    for obj in list(bpy.context.scene.objects):  # the startup cube and light (the camera stays)
        if obj.type != "CAMERA":
            bpy.data.objects.remove(obj)
    report["scene_camera"] = bpy.context.scene.camera.name
    window, main, region = view3d()
    ortho = next(a for a in window.screen.areas if a.type == "OUTLINER")
    camera = next(a for a in window.screen.areas if a.type == "DOPESHEET_EDITOR")
    ortho.type = camera.type = "VIEW_3D"
    yield 0.5  # the new views get their regions on the next redraw

    view = main.spaces.active.region_3d
    view.view_perspective = "PERSP"  # as if framed on a 40 m floor: the model a speck
    view.view_location, view.view_distance = (12.0, -9.0, 0.0), 60.0
    side = window_region(ortho).data
    side.view_perspective = "ORTHO"
    side.view_rotation = Quaternion((0.7071068, 0.7071068, 0, 0))  # from the front
    side.view_location, side.view_distance = (-20.0, 0.0, 5.0), 40.0
    window_region(camera).data.view_perspective = "CAMERA"
    yield 0.5
    report["camera_view_before"] = view_state(camera)

    with bpy.context.temp_override(window=window, area=main, region=region):
        bpy.ops.import_scene.mjcf("INVOKE_DEFAULT", directory=os.path.dirname(MODEL),
                                  files=[{"name": os.path.basename(MODEL)}])
    start = time.perf_counter()
    while time.perf_counter() - start < 60 and view.view_distance == 60.0:
        yield 0.2
    report["imported_in"] = time.perf_counter() - start
    yield 1.0  # drawn: the views' projection matrices are the new ones

    scene = bpy.context.scene
    import mujoco  # Blender's Python has it (.venv/blender-site)
    model = mujoco.MjModel.from_xml_path(MODEL)
    order = importlib.import_module(ADDON + ".components.stored_keys").ORDER  # an element's MuJoCo id
    geoms = {o[order]: o for o in scene.objects if o.mujoco.kind == "GEOM"}
    by_id = [geoms[g] for g in range(model.ngeom)]
    bodies = [by_id[g] for g in range(model.ngeom) if model.geom_bodyid[g] > 0 and model.geom_group[g] < 3]
    floors = [by_id[g] for g in range(model.ngeom) if model.geom_type[g] in (PLANE, HFIELD)]
    report["body_geoms"], report["floors"] = len(bodies), [f.name for f in floors]
    report["main"], report["ortho"] = seen(main, bodies, floors), seen(ortho, bodies, floors)
    report["camera_view_after"] = view_state(camera)
    report["active"] = bpy.context.view_layer.objects.active.mujoco.kind
    report["cameras"] = [[o.name, o.data.display_size] for o in scene.objects
                         if o.type == "CAMERA" and o.mujoco.kind == "CAMERA"]
    report["mujoco_camera_size"] = float(model.vis.scale.camera * model.stat.meansize)
    ortho.type, camera.type = "OUTLINER", "DOPESHEET_EDITOR"
    yield 0.5
    if SCREENSHOT:
        screenshot_view(SCREENSHOT)
    yield 0.2


run_steps(steps)

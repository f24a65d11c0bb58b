"""Import framing and sizes (issue 20): cameras are drawn at MuJoCo's own visual scale,
and the box a window's 3D views frame after an import is the model's bodies, not the
floor. (The views themselves move only in a window: tests/gui/test_gui_import_framing.py.)"""

import math
import os

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, corpus_models, needs_corpus

from mjblend.importer import build, framing

HERE = os.path.dirname(os.path.abspath(__file__))
CAMERA_SCALE = os.path.join(HERE, "data", "camera_scale.xml")
# corpus models with cameras (models.tsv's ncam), and ones with a floor plane and bodies
WITH_CAMERAS = ("mujoco_model/model/humanoid/humanoid.xml", "pip/dm_control/suite/humanoid_CMU.xml",
                "pip/dm_control/suite/cartpole.xml", "pip/dm_control/suite/manipulator.xml",
                "pip/gymnasium/envs/mujoco/assets/ant.xml", "menagerie/agility_cassie/scene.xml",
                "menagerie/google_barkour_vb/scene_hfield_mjx.xml", "menagerie/skydio_x2/scene.xml",
                "pip/gymnasium_robotics/envs/assets/adroit_hand/adroit_door.xml",
                "pip/dm_control/locomotion/walkers/assets/rodent.xml")
FRAMED = ("mujoco_model/model/humanoid/humanoid.xml", "pip/dm_control/suite/humanoid_CMU.xml",
          "pip/gymnasium/envs/mujoco/assets/ant.xml", "pip/dm_control/suite/cartpole.xml",
          "menagerie/franka_emika_panda/scene.xml", "menagerie/google_barkour_vb/scene_hfield_mjx.xml")


def cameras_drawn_as_mujoco(path):
    """(drawn size, MuJoCo's size, the camera) of each imported camera of `path`."""
    result = build.import_file(path, bpy.context.scene)
    model = mujoco.MjModel.from_xml_path(path)
    mujoco_size = float(model.vis.scale.camera) * float(model.stat.meansize)
    cameras = [result.by_id[("camera", i)] for i in range(model.ncam)]
    assert len(cameras) == model.ncam > 0
    return [(cam.data.display_size, mujoco_size, cam) for cam in cameras], model


@needs_corpus
@pytest.mark.parametrize("path", WITH_CAMERAS)
def test_cameras_are_drawn_at_mujocos_visual_scale(path, clean_scene):
    assert path in corpus_models()
    cameras, model = cameras_drawn_as_mujoco(os.path.join(CORPUS, path))
    for drawn, expected, cam in cameras:
        # the rodent's meansize (0.003) makes 0.0009 m: Blender draws no camera below 0.01 m
        expected = max(expected, build.CAMERA_DISPLAY_MIN)
        assert drawn == pytest.approx(expected, rel=0.01), cam.name
        assert drawn < 0.5 * model.stat.extent, cam.name  # never Blender's 1 m across the model


def test_a_models_own_camera_scale_is_followed_and_renders_do_not_change(clean_scene):
    cameras, model = cameras_drawn_as_mujoco(CAMERA_SCALE)
    assert model.vis.scale.camera == pytest.approx(0.8)
    for drawn, expected, cam in cameras:
        assert drawn == pytest.approx(expected, rel=0.01), cam.name
        assert drawn == pytest.approx(0.8 * model.stat.meansize, rel=0.01)
        # drawing only: the object is not scaled and the view is MuJoCo's
        assert tuple(cam.scale) == (1.0, 1.0, 1.0)
        cid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, cam.mujoco.name)
        if cam.data.type == "ORTHO":
            assert cam.data.ortho_scale == pytest.approx(model.cam_fovy[cid])
        else:
            assert cam.data.angle_y == pytest.approx(math.radians(model.cam_fovy[cid]), rel=1e-6)
    assert {cam.data.type for _, _, cam in cameras} == {"PERSP", "ORTHO"}


def world_box(objects):
    """Blender's box around `objects`: a mesh asset's vertices, the others' bound boxes."""
    points = []
    for obj in objects:
        if obj.data.mujoco.kind == "MESH":
            local = np.empty(3 * len(obj.data.vertices))
            obj.data.vertices.foreach_get("co", local)
            local = local.reshape(-1, 3)
        else:
            local = np.array([tuple(c) for c in obj.bound_box])
        matrix = np.array(obj.matrix_world)
        points.append(local @ matrix[:3, :3].T + matrix[:3, 3])
    points = np.concatenate(points)
    return points.min(axis=0), points.max(axis=0)


@needs_corpus
@pytest.mark.parametrize("path", FRAMED)
def test_the_framed_box_is_the_bodies_geoms_not_the_floor(path, clean_scene):
    result = build.import_file(os.path.join(CORPUS, path), bpy.context.scene)
    model = mujoco.MjModel.from_xml_path(os.path.join(CORPUS, path))
    floors = [result.by_id[("geom", g)] for g in range(model.ngeom)
              if model.geom_bodyid[g] == 0 and model.geom_type[g] in (framing.PLANE, framing.HFIELD)]
    assert floors, "a model with a floor or terrain"
    shown = [result.by_id[("geom", g)] for g in range(model.ngeom)
             if model.geom_bodyid[g] > 0 and model.geom_group[g] < 3
             and model.geom_type[g] not in (framing.PLANE, framing.HFIELD)]
    low, high = result.bounds
    # the box MuJoCo's geom_aabb gives is the one around Blender's own geom objects
    # (their meshes as imported): the import framed what the viewport shows
    blender_low, blender_high = world_box(shown)
    size = float(np.max(high - low))
    assert np.allclose(low, blender_low, atol=0.01 * size), (low, blender_low)
    assert np.allclose(high, blender_high, atol=0.01 * size), (high, blender_high)
    # and the floor is not in it: Blender shows a floor far larger than the model
    floor_low, floor_high = world_box(floors)
    assert np.max(floor_high - floor_low)[()] > 2 * size
    assert size < 0.9 * float(np.max(floor_high - floor_low))


def test_framing_falls_back_to_world_geoms_then_mujocos_extent(tmp_path):
    static = tmp_path / "static.xml"
    static.write_text('<mujoco><worldbody><geom type="plane" size="50 50 1"/>'
                      '<geom type="box" pos="1 2 0.5" size="0.5 0.25 0.5"/></worldbody></mujoco>')
    model = mujoco.MjModel.from_xml_path(str(static))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    low, high = framing.model_bounds(model, data, build.HIDDEN_GROUPS)
    assert np.allclose(low, (0.5, 1.75, 0)) and np.allclose(high, (1.5, 2.25, 1))
    plane = tmp_path / "plane.xml"
    plane.write_text('<mujoco><worldbody><geom type="plane" size="0 0 1"/></worldbody></mujoco>')
    model = mujoco.MjModel.from_xml_path(str(plane))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    low, high = framing.model_bounds(model, data, build.HIDDEN_GROUPS)
    assert np.allclose((low + high) / 2, model.stat.center)
    assert np.allclose(high - low, model.stat.extent)


@needs_corpus
def test_a_flex_is_framed_by_its_vertices(clean_scene):
    path = os.path.join(CORPUS, "mujoco_model/model/flex/flag.xml")
    result = build.import_file(path, bpy.context.scene)
    flexes = [o for o in result.collection.all_objects if o.mujoco.kind == "FLEX"]
    blender_low, blender_high = world_box(flexes)
    assert np.allclose(result.bounds[0], blender_low, atol=1e-4)
    assert np.allclose(result.bounds[1], blender_high, atol=1e-4)


def test_fit_distance_fills_the_narrower_side():
    # 50 mm lens: tan(half-angle) along the wider side is 36/50 (Blender's view zoom of 2)
    wide = framing.fit_distance(1.0, 50.0, 1600, 800, perspective=True)
    assert math.tan(math.asin(1.0 / wide)) == pytest.approx(36 / 50 / 2)
    assert framing.fit_distance(1.0, 50.0, 800, 1600, True) == pytest.approx(wide)
    assert framing.fit_distance(1.0, 50.0, 1000, 1000, False) == pytest.approx(50 / 36)


def test_the_import_operator_in_the_background_leaves_views_alone(clean_scene):
    """In the bpy module (and --background) nobody looks: the import moves no view and
    still succeeds, with the option on (its default)."""
    assert bpy.app.background
    space = next(a.spaces.active for a in bpy.context.window.screen.areas if a.type == "VIEW_3D")
    before = (tuple(space.region_3d.view_location), space.region_3d.view_distance)
    assert bpy.ops.import_scene.mjcf(filepath=CAMERA_SCALE, frame_view=True) == {"FINISHED"}
    assert (tuple(space.region_3d.view_location), space.region_3d.view_distance) == before
    assert len([o for o in bpy.context.scene.objects if o.type == "CAMERA"]) == 3

"""The viewport's MuJoCo overlays in Blender (the bpy module): what the draw callback
would draw this frame (ui/overlays/layers.py, no GPU needed) is engine/overlays.py's
geometry of the running simulation's latest snapshot, moved by the model root's
frame; switches, the keyboard operator, labels and the popover."""

import os

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus
from mathutils import Matrix

from mjblend.components import overlay_settings
from mjblend.engine import commands, overlays
from mjblend.importer import build
from mjblend.live import scene_session
from mjblend.ui.overlays import layers as overlay_layers, popover

ANT = os.path.join(CORPUS, "pip", "gymnasium", "envs", "mujoco", "assets", "ant.xml")
SWITCHES = [name for name, _label, _text in overlay_settings.OVERLAYS]


@pytest.fixture
def ant(clean_scene):
    if not os.path.exists(ANT):
        pytest.skip(f"no corpus at {CORPUS}")
    result = build.import_file(ANT, clean_scene)
    yield result
    scene_session.end_all()


def _all_on(scene):
    switches = scene.mujoco_overlays
    for name in SWITCHES:
        setattr(switches, name, True)
    return switches


def _by_name(drawn):
    return {layer.name: layer for layer in drawn.layers}


@needs_corpus
def test_drawn_layers_are_the_snapshots_overlays_in_blenders_world(ant):
    scene = bpy.context.scene
    # the model root moved and turned: MuJoCo's world sits in its frame
    ant.root.matrix_world = Matrix.LocRotScale((1.0, -2.0, 0.5), Matrix.Rotation(0.7, 3, "Z").to_quaternion(),
                                               None)
    _all_on(scene)
    running = scene_session.start_simulation(scene)
    running.send(commands.Step(300))
    shot = running.latest
    drawn = overlay_layers.of_scene(scene)
    world = np.array(running.binding.world)
    expected = overlays.layers(shot.model, shot, overlay_layers.options(scene))
    assert len(shot.contacts) >= 4  # the ant stands on the floor
    got = _by_name(drawn)
    for layer in expected:
        mine = got[layer.name]
        assert np.allclose(mine.lines, layer.lines @ world[:3, :3].T + world[:3, 3], atol=1e-9) if len(
            layer.lines) else not len(mine.lines)
        assert np.allclose(mine.points, layer.points @ world[:3, :3].T + world[:3, 3], atol=1e-9) if len(
            layer.points) else not len(mine.points)
        assert mine.color == layer.color
    # the contact points are where the ant's feet touch: on the floor in Blender's world
    feet = got["contact points"].points
    assert np.allclose(feet[:, 2], 0.5, atol=0.02)
    # same snapshot, same switches: the cached frame, not a recomputation
    assert overlay_layers.of_scene(scene) is drawn
    running.send(commands.Step(1))
    assert overlay_layers.of_scene(scene) is not drawn


@needs_corpus
def test_switches_and_the_keyboard_operator(ant):
    scene = bpy.context.scene
    running = scene_session.start_simulation(scene)
    running.send(commands.Step(100))
    assert {layer.name for layer in overlay_layers.of_scene(scene).layers} == set()  # all off by default
    bpy.ops.mujoco.toggle_overlay(overlay="contact_points")
    assert scene.mujoco_overlays.contact_points
    assert "contact points" in _by_name(overlay_layers.of_scene(scene))
    bpy.ops.mujoco.toggle_overlay(overlay="contact_points")
    assert not scene.mujoco_overlays.contact_points
    bpy.ops.mujoco.toggle_overlay(overlay="inertia")
    assert scene.mujoco_simulation.show_inertia and "inertia" in _by_name(overlay_layers.of_scene(scene))
    kinds = []
    for _ in range(len(overlay_settings.LABELS)):
        bpy.ops.mujoco.toggle_overlay(overlay="labels")
        kinds.append(scene.mujoco_overlays.labels)
    assert kinds == [key for key, _label, _text in overlay_settings.LABELS[1:]] + ["NONE"]
    assert kinds[:4] == ["BODY", "JOINT", "GEOM", "SITE"]  # (the released kinds first)
    with pytest.raises(RuntimeError, match="No MuJoCo overlay 'contacts'"):
        bpy.ops.mujoco.toggle_overlay(overlay="contacts")


@needs_corpus
def test_labels_and_joint_groups(ant):
    scene = bpy.context.scene
    running = scene_session.start_simulation(scene)
    running.send(commands.Step(10))
    model = running.model
    scene.mujoco_overlays.labels = "BODY"
    labels = overlay_layers.of_scene(scene).labels
    assert [text for text, _ in labels] == [model.body(i).name or f"body {i}" for i in range(1, model.nbody)]
    scene.mujoco_overlays.labels = "JOINT"
    scene.mujoco_overlays.joints = True
    names = [text for text, _ in overlay_layers.of_scene(scene).labels]
    assert len(names) == model.njnt
    axes = _by_name(overlay_layers.of_scene(scene))["joint axes"]
    assert len(axes.lines) == 2 * (model.njnt - 1)  # every hinge (one free joint)
    scene.mujoco_overlays.joint_groups = (False,) * 6
    assert "joint axes" not in _by_name(overlay_layers.of_scene(scene))
    assert overlay_layers.of_scene(scene).labels == []


def test_without_a_simulation_only_inertia_boxes_draw(clean_scene):
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "examples", "desk_toys.xml")
    build.import_file(path, clean_scene)
    _all_on(clean_scene)
    assert overlay_layers.of_scene(clean_scene).layers == []
    clean_scene.mujoco_simulation.show_inertia = True
    bpy.ops.mujoco.validate()
    checked = overlay_layers.of_scene(clean_scene).layers
    assert [layer.name for layer in checked] == ["inertia"]
    # the same boxes as a simulation of the authored pose draws (objects' float32 poses: 1e-5)
    running = scene_session.start_simulation(clean_scene)
    simulated = _by_name(overlay_layers.of_scene(clean_scene))["inertia"]
    assert running.latest.time == 0.0

    def boxes(layer):
        return sorted(np.round(layer.lines.reshape(-1, 24, 3), 4).reshape(-1, 72).tolist())
    assert np.allclose(boxes(checked[0]), boxes(simulated), atol=2e-4)
    assert len(simulated.points) == len(checked[0].points) > 0


def test_the_popover_and_the_operator_need_a_model(clean_scene):
    assert not bpy.ops.mujoco.toggle_overlay.poll()
    assert popover.MJBLEND_PT_overlays.bl_region_type == "HEADER"
    assert mujoco.mjNGROUP == overlay_settings.NGROUP

"""The model's `<visual>` edited while it simulates (the sidebar's Visualization panel,
ui/visual_panel.py): the edit reaches the running model between two steps without a
recompile (the same MjModel runs on), the overlays follow (contact-force arrows scale
by the new visual/map force over stat.meanmass, in the new colour), the state goes on
bit for bit as MuJoCo's own stepping without the edit, and the scene still exports to
the model it scans to."""

import copy
import os

import bpy
import mujoco
import numpy as np
from helpers import CORPUS, needs_corpus

from mjblend.engine import commands, overlays
from mjblend.importer import build
from mjblend.live import scene_session
from mjblend.scan import scene_scan
from mjblend.ui import visual_panel
from mjblend.ui.overlays import layers as overlay_layers

ANT = os.path.join(CORPUS, "pip", "gymnasium", "envs", "mujoco", "assets", "ant.xml")
FORCE, GREEN = 0.05, (0.0, 1.0, 0.0, 1.0)


@needs_corpus
def test_visual_edits_reach_the_running_model_without_a_recompile(clean_scene, tmp_path):
    scene = clean_scene
    result = build.import_file(ANT, scene)
    scene.mujoco_overlays.contact_forces = True
    running = scene_session.start_simulation(scene)
    try:
        running.send(commands.Step(300))  # standing on its legs: contacts with forces
        model = running.model
        start = copy.copy(running.runner.session.data)
        reference_model = copy.copy(model)
        assert model.vis.map.force != np.float32(FORCE)
        assert visual_panel.MJBLEND_PT_visualization.poll(bpy.context)
        assert visual_panel.model_root(bpy.context) == result.root

        settings = result.root.mujoco.model
        settings.visual_map.force = FORCE
        settings.visual_rgba.contactforce = GREEN
        assert running.check_edits() is False  # nothing recompiled...
        running.send(commands.Step(60))
        shot = running.latest
        assert running.model is model and shot.model is model  # ...the same model runs on
        assert model.vis.map.force == np.float32(FORCE)
        assert tuple(model.vis.rgba.contactforce) == GREEN

        # the state: MuJoCo's own stepping of the model without the edit (vis never moves anything)
        reference = copy.copy(start)
        for _ in range(60):
            mujoco.mj_step(reference_model, reference)
        assert np.array_equal(shot.qpos, reference.qpos) and np.array_equal(shot.qvel, reference.qvel)

        # the overlays follow: arrows by the new force scale, in the new colour
        layer = {layer.name: layer for layer in overlay_layers.of_scene(scene).layers}["contact forces"]
        assert layer.color == GREEN
        ids, forces = overlays.contact_forces_world(model, shot)
        assert len(ids) >= 4
        start_points, ends = overlays.contact_force_arrows(model, shot)
        assert np.allclose(ends - start_points, forces * (np.float32(FORCE) / model.stat.meanmass), atol=0)

        # the scene scans to a model with the edit, and exports to the same one
        spec, updated = scene_session.of(scene).scans.spec(result.root)
        assert updated == 0  # (written in place: no rescan)
        scanned = spec.copy().compile()
        assert scanned.vis.map.force == np.float32(FORCE)
        path = tmp_path / "ant.xml"
        assert bpy.ops.export_scene.mjcf(filepath=str(path)) == {"FINISHED"}
        exported = mujoco.MjModel.from_xml_path(str(path))
        assert exported.vis.map.force == scanned.vis.map.force
        assert tuple(exported.vis.rgba.contactforce) == tuple(scanned.vis.rgba.contactforce) == GREEN
        fresh = scene_scan.Scanner(result.root, []).spec.compile()  # a full scan agrees
        assert fresh.vis.map.force == scanned.vis.map.force
    finally:
        scene_session.end_all()


@needs_corpus
def test_a_statistic_edit_recompiles(clean_scene):
    scene = clean_scene
    result = build.import_file(ANT, scene)
    running = scene_session.start_simulation(scene)
    try:
        running.send(commands.Step(10))
        model = running.model
        result.root.mujoco.model.statistic.meansize = 0.5
        assert running.check_edits() is True
        assert running.model is not model and running.model.stat.meansize == 0.5
    finally:
        scene_session.end_all()

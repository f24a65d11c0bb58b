"""MuJoCo's geom, site and joint groups: a group switch hides and shows exactly the
objects of that group (the group MuJoCo compiles, also where a default class sets
it), in the viewport and in renders (F12); also while a simulation runs in the Fast
display (its instancer draws, renders and picks only what is shown) or in Objects,
and under the randomization preview. A new import follows the scene's switches.

The corpus model is Skydio's X2 quadrotor: every group comes from a default class
(visual meshes in group 2, collision boxes and rotors in group 3, sites in 5).
"""

import time
import os

import bpy
import numpy as np
import pytest
from helpers import CORPUS, load_tool, needs_corpus
from mathutils import Vector

from mjblend.engine import commands
from mjblend.importer import build
from mjblend.live import randomization_preview, scene_session
from mjblend.scan import scene_scan
from mjblend.scene import groups as scene_groups
from mjblend.sync import groups

pytestmark = needs_corpus
render_docs = load_tool("render_docs")

X2 = os.path.join(CORPUS, "menagerie/skydio_x2/scene.xml")
# element groups, some set by classes (X2, panda, Cassie), some by the elements themselves
# (manipulator's sites, rodent's joints in group 3)
MODELS = ["menagerie/skydio_x2/scene.xml", "menagerie/franka_emika_panda/scene.xml",
          "menagerie/agility_cassie/scene.xml", "pip/dm_control/suite/manipulator.xml",
          "pip/dm_control/locomotion/walkers/assets/rodent.xml"]
RED = (1.0, 0.0, 0.0, 1.0)
WIDTH, HEIGHT = 96, 72


def state(scene):
    """Every object's (hidden in the view layer, hidden in renders)."""
    return {obj.name: (obj.hide_get(), obj.hide_render) for obj in scene.objects}


def changed(before, after):
    return {name for name in after if before.get(name) != after[name]}


def of_group(scene, kind, group):
    return {obj.name for obj, g in groups.members(scene, kind) if g == group}


def compiled_groups(root):
    """{object name: (kind, the group MuJoCo compiles)} of the root's geoms, sites and joints."""
    scanner = scene_scan.Scanner(root, [])
    model = scanner.spec.compile()
    field = {"geom": model.geom_group, "site": model.site_group, "joint": model.jnt_group}
    return {block.name: (kind, int(field[kind][element.id]))
            for block, kind, element in scanner.elements.values() if kind in field}


def play_a_little(running, frames=3):
    running.send(commands.FastForward(True))
    running.play()
    for _ in range(frames):
        running.tick(time.perf_counter())


# -------------------------------------------------------------- which group


@pytest.mark.parametrize("path", MODELS)
def test_an_elements_group_is_the_one_mujoco_compiles(clean_scene, path):
    root = build.import_file(os.path.join(CORPUS, path), clean_scene).root
    expected = compiled_groups(root)
    classes = scene_groups.root_classes(root)
    ours = {obj.name: (obj.mujoco.kind.lower(), scene_groups.element_group(obj, classes))
            for obj in clean_scene.objects if obj.name in expected}
    assert ours == expected
    assert len({group for _kind, group in expected.values()}) >= 2  # (models of several groups)


def test_a_group_set_in_blender_by_a_class_or_an_element_is_the_one_mujoco_compiles(clean_scene):
    root = build.import_file(X2, clean_scene).root
    rotor_class = next(item for item in root.mujoco.model.defaults if item.name == "rotor")
    rotor_class.geom.group = 4  # (a class edit: its elements that leave group to it follow)
    box = next(obj for obj, g in groups.members(clean_scene, "geom") if g == 3 and "rotor" not in obj.name)
    box.mujoco.geom.group = 1  # an element's own
    expected = compiled_groups(root)
    members = dict(groups.members(clean_scene, "geom"))
    assert {obj.name: g for obj, g in members.items()} == \
        {name: g for name, (kind, g) in expected.items() if kind == "geom"}
    assert {name for name, (_kind, g) in expected.items() if g == 4} == {f"rotor{i}" for i in range(1, 5)}
    assert expected[box.name] == ("geom", 1)


def test_groups_outside_0_to_5_follow_the_nearest_switch(clean_scene, tmp_path):
    path = tmp_path / "far.xml"
    path.write_text('<mujoco><worldbody><geom name="low" size=".1" group="-2"/>'
                    '<geom name="high" size=".1" group="9" pos="1 0 0"/></worldbody></mujoco>')
    build.import_file(str(path), clean_scene)
    low, high = clean_scene.objects["low"], clean_scene.objects["high"]
    assert not low.hide_get() and high.hide_get()  # as switches 0 (on) and 5 (off)
    clean_scene.mujoco_overlays.geom_groups[5] = True
    assert not high.hide_get() and not high.hide_render
    clean_scene.mujoco_overlays.geom_groups[0] = False
    assert low.hide_get() and low.hide_render


# ------------------------------------------------------------ the switches


def test_a_switch_hides_and_shows_exactly_the_objects_of_its_group(clean_scene):
    build.import_file(X2, clean_scene)
    switches = clean_scene.mujoco_overlays
    collision, visual, sites = (of_group(clean_scene, "geom", 3), of_group(clean_scene, "geom", 2),
                                of_group(clean_scene, "site", 5))
    assert len(collision) == 8 and len(visual) == 2 and len(sites) == 5
    imported = state(clean_scene)
    # as MuJoCo shows it: groups 0-2 shown, 3-5 hidden (viewport and renders), no joint
    joints = {obj.name for obj, _group in groups.members(clean_scene, "joint")}
    assert {name for name, hidden in imported.items() if hidden == (True, True)} == collision | sites | joints
    for kind, group, names in (("geom", 3, collision), ("geom", 2, visual), ("site", 5, sites)):
        switch = getattr(switches, f"{kind}_groups")
        before = state(clean_scene)
        switch[group] = not switch[group]
        after = state(clean_scene)
        assert changed(before, after) == names, (kind, group)
        assert {after[name] for name in names} == ({(False, False)} if switch[group] else {(True, True)})
        switch[group] = not switch[group]
        assert state(clean_scene) == before
    assert state(clean_scene) == imported
    # a switch of a group no object is in changes nothing
    switches.geom_groups[4] = True
    assert state(clean_scene) == imported


def test_a_class_edit_moves_its_elements_to_another_switch(clean_scene):
    root = build.import_file(X2, clean_scene).root
    rotors = {f"rotor{i}" for i in range(1, 5)}
    next(item for item in root.mujoco.model.defaults if item.name == "rotor").geom.group = 4
    before = state(clean_scene)
    clean_scene.mujoco_overlays.geom_groups[4] = True
    assert changed(before, state(clean_scene)) == rotors  # hidden as group 3, shown as group 4
    clean_scene.mujoco_overlays.geom_groups[3] = True
    assert all(not clean_scene.objects[name].hide_get() for name in of_group(clean_scene, "geom", 3))
    clean_scene.mujoco_overlays.geom_groups[4] = False
    assert all(clean_scene.objects[name].hide_get() for name in rotors)


def test_an_object_shown_by_hand_stays_until_its_own_switch_turns(clean_scene):
    build.import_file(X2, clean_scene)
    switches = clean_scene.mujoco_overlays
    rotor = clean_scene.objects["rotor1"]
    rotor.hide_set(False)
    switches.geom_groups[1] = False  # another group's switch
    switches.geom_groups[1] = True
    assert not rotor.hide_get()
    switches.geom_groups[3] = True
    switches.geom_groups[3] = False
    assert rotor.hide_get() and rotor.hide_render


def test_joint_groups_hide_joint_objects_and_tendon_groups_change_no_object(clean_scene):
    rodent = "pip/dm_control/locomotion/walkers/assets/rodent.xml"
    build.import_file(os.path.join(CORPUS, rodent), clean_scene)
    hidden_joints = of_group(clean_scene, "joint", 3)
    assert hidden_joints and all(clean_scene.objects[n].hide_get() for n in hidden_joints)  # the import's
    clean_scene.mujoco_overlays.joints = True  # (joints show only with their overlay: test_first_look.py)
    before = state(clean_scene)
    clean_scene.mujoco_overlays.joint_groups[3] = True
    assert changed(before, state(clean_scene)) == hidden_joints
    before = state(clean_scene)
    clean_scene.mujoco_overlays.tendon_groups[0] = False
    clean_scene.mujoco_overlays.actuator_groups[0] = False
    assert state(clean_scene) == before


def test_an_import_follows_the_scenes_switches(clean_scene):
    switches = clean_scene.mujoco_overlays
    switches.geom_groups[3], switches.geom_groups[2], switches.site_groups[5] = True, False, True
    build.import_file(X2, clean_scene)
    for name, (hidden, unrendered) in state(clean_scene).items():
        obj = clean_scene.objects[name]
        if obj.mujoco.kind in ("GEOM", "SITE"):
            kind = obj.mujoco.kind.lower()
            group = dict((o.name, g) for o, g in groups.members(clean_scene, kind))[name]
            assert hidden == unrendered == (not getattr(switches, f"{kind}_groups")[group]), name
    assert clean_scene.objects["rotor1"].hide_get() is False and clean_scene.objects["x2 geom"].hide_get()
    # and the switch turned back hides exactly what it showed
    before = state(clean_scene)
    switches.geom_groups[3] = False
    assert changed(before, state(clean_scene)) == of_group(clean_scene, "geom", 3)


def test_the_switches_and_what_they_did_are_undone_together(clean_scene):
    build.import_file(X2, clean_scene)
    bpy.ops.ed.undo_push(message="imported")
    imported = state(clean_scene)
    clean_scene.mujoco_overlays.geom_groups[3] = True
    bpy.ops.ed.undo_push(message="group 3 shown")
    bpy.ops.ed.undo()
    scene = bpy.context.scene
    assert state(scene) == imported and not scene.mujoco_overlays.geom_groups[3]
    scene.mujoco_overlays.geom_groups[3] = True  # (the switch's record went back with it)
    assert changed(imported, state(scene)) == of_group(scene, "geom", 3)


def test_the_operator_needs_a_3d_view_and_a_model(clean_scene):
    """The keys' operator passes a key on to Blender (poll fails) without a 3D view or
    without a model (the bpy module has no 3D view: the GUI tier presses the keys)."""
    assert not bpy.ops.mujoco.toggle_group.poll()
    build.import_file(X2, clean_scene)
    assert not bpy.ops.mujoco.toggle_group.poll()  # (no area here)


# ------------------------------------------------------------------ renders


def red_pixels(scene, folder, name):
    """(red pixels, covered pixels) of a render (Workbench, flat material colours,
    transparent film)."""
    scene.render.filepath = str(folder / f"{name}.png")
    bpy.ops.render.render(write_still=True)
    pixels = render_docs.load_pixels(scene.render.filepath)
    red = (pixels[..., 0] > 0.8) & (pixels[..., 1] < 0.2) & (pixels[..., 2] < 0.2) & (pixels[..., 3] > 0.5)
    return int(red.sum()), int((pixels[..., 3] > 0.5).sum())


def prepare_render(scene):
    """The X2 without its floor, its rotors red (a material of their own: instances draw
    their object's materials), a camera above it."""
    for obj in scene.objects:
        if obj.mujoco.kind == "GEOM" and obj.mujoco.geom.type == "PLANE":
            obj.hide_render = True  # (by hand: no switch touches it)
    render_docs.use_workbench(scene)
    scene.display.shading.light = "FLAT"
    scene.render.film_transparent = True
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGBA"
    scene.render.resolution_x, scene.render.resolution_y = WIDTH, HEIGHT
    scene.render.resolution_percentage = 100
    rotors = [scene.objects[f"rotor{i}"] for i in range(1, 5)]
    red = bpy.data.materials.new("red")
    red.diffuse_color = RED
    for rotor in rotors:
        rotor.material_slots[0].material = red
    drone = [obj for obj, g in groups.members(scene, "geom") if g in (2, 3)]
    render_docs.add_camera(scene, *render_docs.world_bbox(drone), azimuth=-60, elevation=60)
    return rotors


def test_the_render_follows_the_switches(clean_scene, tmp_path):
    build.import_file(X2, clean_scene)
    prepare_render(clean_scene)
    switches = clean_scene.mujoco_overlays
    red, covered = red_pixels(clean_scene, tmp_path, "imported")
    assert red == 0 and covered > 100  # the visual meshes (group 2), no rotor (group 3)
    switches.geom_groups[3] = True
    red_on, _covered = red_pixels(clean_scene, tmp_path, "group3")
    assert red_on > 50
    switches.geom_groups[2] = False  # the visual meshes go: more of the rotors shows
    red_alone, covered_alone = red_pixels(clean_scene, tmp_path, "group3-alone")
    assert red_alone >= red_on and covered_alone < covered
    switches.geom_groups[3] = False
    assert red_pixels(clean_scene, tmp_path, "none") == (0, 0)


# --------------------------------------------------------- while it runs


def sources(running):
    return {obj.name for obj in running.display.instancer.sources}


def hit(scene, point):
    """The object a ray straight down onto `point` hits first (under the Fast display: the
    source its instance draws), or None."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    found, _location, _normal, _index, obj, matrix = scene.ray_cast(
        depsgraph, Vector(point) + Vector((0, 0, 5)), Vector((0, 0, -1)))
    running = scene_session.simulation(scene)
    if not found:
        return None
    return running.display.source_of(obj, matrix).name if running else obj.original.name


def rotor_centre(running):
    """Where MuJoCo has rotor 1 now, in Blender's world."""
    shot = running.latest
    rotor = shot.geom_xpos[shot.model.geom("rotor1").id]
    return (np.asarray(running.binding.world) @ np.append(rotor, 1.0))[:3]


def test_the_fast_display_draws_renders_and_picks_only_what_is_shown(clean_scene, tmp_path):
    build.import_file(X2, clean_scene)
    prepare_render(clean_scene)
    clean_scene.mujoco_overlays.geom_groups[2] = False  # (the propellers' mesh covers the rotors)
    authored = state(clean_scene)
    clean_scene.mujoco_simulation.display = "FAST"
    running = scene_session.start_simulation(clean_scene)
    play_a_little(running)
    display = running.display
    assert display.fast_now
    rotors = {f"rotor{i}" for i in range(1, 5)}
    assert not rotors & sources(running)
    assert red_pixels(clean_scene, tmp_path, "fast-off")[0] == 0
    assert hit(clean_scene, rotor_centre(running)) == "floor"  # through where the rotor would be

    clean_scene.mujoco_overlays.geom_groups[3] = True  # while it plays
    assert display.fast_now and rotors <= sources(running)
    assert all(not clean_scene.objects[name].visible_get() for name in rotors)  # (behind the instancer)
    play_a_little(running)
    assert red_pixels(clean_scene, tmp_path, "fast-on")[0] > 50
    assert hit(clean_scene, rotor_centre(running)) == "rotor1"  # its instance, where MuJoCo has it now

    clean_scene.mujoco_overlays.geom_groups[3] = False
    assert display.fast_now and not rotors & sources(running)
    play_a_little(running)
    assert red_pixels(clean_scene, tmp_path, "fast-off-again")[0] == 0
    clean_scene.mujoco_overlays.geom_groups[3] = True
    bpy.ops.mujoco.stop()
    # stopped: the objects as the switches now say, the rest as authored
    after = state(clean_scene)
    assert changed(authored, after) == of_group(clean_scene, "geom", 3)
    assert not any(obj.name.endswith("(fast display)") for obj in bpy.data.objects)


def test_the_objects_display_hides_and_shows_the_moving_objects(clean_scene):
    build.import_file(X2, clean_scene)
    clean_scene.mujoco_simulation.display = "OBJECTS"
    running = scene_session.start_simulation(clean_scene)
    play_a_little(running)
    assert not running.display.fast_now
    before = state(clean_scene)
    clean_scene.mujoco_overlays.geom_groups[2] = False
    assert changed(before, state(clean_scene)) == of_group(clean_scene, "geom", 2)
    play_a_little(running)
    assert all(clean_scene.objects[name].hide_get() for name in of_group(clean_scene, "geom", 2))
    assert running.latest.time > 0
    bpy.ops.mujoco.stop()
    assert all(clean_scene.objects[name].hide_get() for name in of_group(clean_scene, "geom", 2))


def test_the_randomization_preview_draws_only_what_is_shown(clean_scene):
    build.import_file(X2, clean_scene)
    authored = state(clean_scene)
    preview = randomization_preview.start(clean_scene, None, count=2)
    drawn = {obj.name for obj in preview.instancer.sources}
    rotors = {f"rotor{i}" for i in range(1, 5)}
    assert not rotors & drawn
    clean_scene.mujoco_overlays.geom_groups[3] = True
    assert randomization_preview.get(clean_scene) is preview and preview.instancer is not None
    assert rotors <= {obj.name for obj in preview.instancer.sources}
    preview.tick()
    clean_scene.mujoco_overlays.geom_groups[3] = False
    assert not rotors & {obj.name for obj in preview.instancer.sources}
    randomization_preview.stop(clean_scene)
    assert state(clean_scene) == authored

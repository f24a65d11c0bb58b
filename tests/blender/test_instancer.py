"""The Fast display (sync/instancer.py): one Geometry Nodes object draws every
source object moved by its body's displacement (in one chunk or several), in the
viewport, in ray casts and in renders, with the sources hidden; removing it
leaves nothing behind.

Plain Blender objects, no MuJoCo model: a group is whatever moves with one body."""

import bpy
import numpy as np
import pytest
from mathutils import Matrix, Quaternion, Vector

from mjblend.app import handlers
from mjblend.sync import instancer as fast

ATOL = 1e-6


def box(name, size=1.0, location=(0, 0, 0)):
    """A cube of half-size `size`, made with bpy.data, linked to the scene."""
    h = size
    verts = [(x, y, z) for x in (-h, h) for y in (-h, h) for z in (-h, h)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    return obj


def sphere(name, location):
    mesh = bpy.data.meshes.new(name)
    import bmesh
    bm = bmesh.new()
    bmesh.ops.create_icosphere(bm, subdivisions=2, radius=0.3)
    bm.to_mesh(mesh)
    bm.free()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    return obj


@pytest.fixture
def groups(clean_scene):
    """Four bodies; names chosen so that Blender's name order is not the groups' order."""
    a = box("zeta", 0.5, (1, 2, 3))
    a.rotation_euler = (0.3, -0.2, 0.9)
    b = box("Alpha", 0.4, (-2, 0, 1))
    b.scale = (0.5, 2.0, 1.5)  # scaled, and the parent of c
    c = sphere("b10", (0, 0, 0))
    c.parent = b
    c.location = (1.0, 0.5, -0.25)
    c.rotation_euler = (0, 0.7, 0)
    d = sphere("b9", (0.5, -1, 0))
    e = box("B2", 0.2, (3, -3, 0.5))
    clean_scene.view_layers[0].update()
    return [[a], [b, c], [], [d, e]]


def make(groups, name="model"):
    scene = bpy.context.scene
    return fast.Instancer(name, groups, scene.collection, bpy.context.view_layer)


def displacement(pos, quat):
    return Matrix.Translation(Vector(pos)) @ Quaternion(quat).to_matrix().to_4x4()


def random_motion(rng, n):
    pos = rng.uniform(-2, 2, (n, 3))
    quat = rng.normal(size=(n, 4))
    return pos, quat / np.linalg.norm(quat, axis=1, keepdims=True)


def instances_of(inst):
    """{source object name: [world matrices]} of the instancer's instances."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    found = {}
    for instance in depsgraph.object_instances:
        if instance.is_instance and instance.parent and instance.parent.original == inst.object:
            found.setdefault(instance.instance_object.original.name, []).append(instance.matrix_world.copy())
    return found


@pytest.mark.parametrize("chunk", [fast.CHUNK, 2], ids=["one chunk", "chunks of 2"])
def test_instances_follow_their_bodies(groups, monkeypatch, chunk):
    monkeypatch.setattr(fast, "CHUNK", chunk)
    authored = {obj.name: obj.matrix_world.copy() for group in groups for obj in group}
    inst = make(groups)
    inst.hide_sources(True)  # (the instances show while the sources hide)
    # one object per shape is instanced (here every source has its own mesh), in chunks
    assert sum(len(c.objects) for c in inst.collections) == len(inst.representatives) == len(authored)
    assert all(len(c.objects) <= chunk for c in inst.collections)
    rng = np.random.default_rng(7)
    for _ in range(3):
        pos, quat = random_motion(rng, len(groups))
        inst.write(pos, quat)
        bpy.context.view_layer.update()
        found = instances_of(inst)
        assert sorted(found) == sorted(authored)
        for row, group in enumerate(groups):
            for obj in group:
                (world,) = found[obj.name]
                expected = displacement(pos[row], quat[row]) @ authored[obj.name]
                error = np.abs(np.array(world) - np.array(expected)).max()
                assert error < ATOL, f"{obj.name}: {error}"
    # the sources themselves stay where they were authored
    for group in groups:
        for obj in group:
            assert np.allclose(np.array(obj.matrix_world), np.array(authored[obj.name]), atol=1e-7)
    inst.remove()


def test_a_shared_shape_names_its_own_source(clean_scene):
    """Geoms share meshes: one object draws the shape for all of them, and the
    instance a ray hits (which names that object) tells which one it draws."""
    shape = box("shape").data
    objects = []
    for i, name in enumerate(["b", "a", "c"]):
        obj = bpy.data.objects.new(name, shape)
        clean_scene.collection.objects.link(obj)
        obj.location = (3 * i, 0, 0)
        objects.append(obj)
    inst = make([[obj] for obj in objects])
    assert len(inst.representatives) == 1 and len(inst.collections) == 1
    quat = [(1, 0, 0, 0)] * 3
    inst.write([(0, 5, 0), (0, 5, 0), (1, -5, 0)], quat)
    inst.hide_sources(True)
    layer = bpy.context.view_layer
    layer.update()
    for obj, shift in zip(objects, [(0, 5), (0, 5), (1, -5)], strict=True):
        origin = obj.matrix_world.translation + Vector((shift[0], shift[1], 10))
        hit, _, _, _, hit_obj, matrix = clean_scene.ray_cast(layer.depsgraph, origin, Vector((0, 0, -1)))
        assert hit and hit_obj.original in objects
        assert inst.source_at(hit_obj, matrix) == obj
    inst.remove()


def test_instancer_is_no_element(groups):
    inst = make(groups)
    kind = inst.object.mujoco.bl_rna.properties["kind"].default
    assert inst.object.mujoco.kind == kind
    assert inst.object.parent is None and inst.object.hide_select
    assert inst.object.name in bpy.context.scene.collection.objects
    for sources in inst.collections:  # (linked to no scene: drawn only as instances)
        assert not any(sources in scene.collection.children_recursive for scene in bpy.data.scenes)
        assert not any(sources.name in c.children for c in bpy.data.collections)
    inst.remove()


def test_one_object_in_two_groups_is_refused(groups):
    with pytest.raises(ValueError):
        make([groups[0], groups[0]])


def test_write_checks_shapes(groups):
    inst = make(groups)
    with pytest.raises(ValueError):
        inst.write(np.zeros((3, 3)), np.zeros((3, 4)))
    inst.remove()


def box_hit(world, origin, direction, half):
    """Where a ray first hits the box [-half, half]^3 placed by `world` (slab method)."""
    inverse = world.inverted()
    o = np.array(inverse @ origin)
    d = np.array(inverse.to_3x3() @ direction)
    with np.errstate(divide="ignore"):
        t1, t2 = (-half - o) / d, (half - o) / d
    near = np.minimum(t1, t2).max()
    assert near <= np.maximum(t1, t2).min()
    return origin + float(near) * direction


def test_ray_cast_hits_the_moved_instance(groups):
    source = groups[0][0]
    authored = source.matrix_world.copy()
    inst = make(groups)
    rng = np.random.default_rng(3)
    pos, quat = random_motion(rng, len(groups))
    pos[0] = (5.0, -4.0, 2.0)
    inst.write(pos, quat)
    inst.hide_sources(True)
    layer = bpy.context.view_layer
    layer.update()
    moved = displacement(pos[0], quat[0]) @ authored
    centre = moved.translation
    origin = centre + Vector((0.05, -0.03, 10.0))
    direction = Vector((0.0, 0.0, -1.0))
    scene = bpy.context.scene
    hit, location, _normal, _index, obj, matrix = scene.ray_cast(layer.depsgraph, origin, direction)
    assert hit and obj.original == source
    assert (location - box_hit(moved, origin, direction, 0.5)).length < 1e-5
    assert np.abs(np.array(matrix) - np.array(moved)).max() < ATOL
    # nothing is left at the authored pose
    hit, *_ = scene.ray_cast(layer.depsgraph, authored.translation + Vector((0, 0, 10)), direction)
    assert not hit
    inst.remove()


# ---------------------------------------------------------------- rendering

SIZE = 16  # pixels, and world units across: one pixel per unit, the origin at the centre


def render_alpha(scene, tmp_path, name):
    scene.render.filepath = str(tmp_path / f"{name}.png")
    bpy.ops.render.render(write_still=True)
    image = bpy.data.images.load(scene.render.filepath)
    alpha = np.array(image.pixels[:]).reshape(SIZE, SIZE, 4)[..., 3]
    bpy.data.images.remove(image)
    return lambda x, y: alpha[int(y + SIZE / 2), int(x + SIZE / 2)]  # rows go up from the bottom


@pytest.fixture
def top_view(clean_scene):
    """Workbench, transparent film, an orthographic camera looking down on 16 x 16 units."""
    scene = clean_scene
    camera = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    scene.collection.objects.link(camera)
    camera.data.type = "ORTHO"
    camera.data.ortho_scale = SIZE
    camera.location = (0, 0, 20)
    scene.camera = camera
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.film_transparent = True
    scene.render.resolution_x = scene.render.resolution_y = SIZE
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGBA"
    return scene


def test_hidden_sources_are_neither_drawn_nor_rendered(top_view, tmp_path):
    scene = top_view
    shown = box("shown", 1.0, (-4.5, -4.5, 0))
    not_rendered = box("not rendered", 1.0, (-4.5, 4.5, 0))
    not_rendered.hide_render = True  # (as an unhidden collision geom: drawn, not rendered)
    inst = make([[shown], [not_rendered]])
    inst.write([(9.0, 9.0, 0.0), (9.0, -9.0, 0.0)], [(1, 0, 0, 0)] * 2)
    inst.hide_sources(True)
    layer = bpy.context.view_layer
    layer.update()

    # the viewport: no source of its own, both instances
    assert not shown.visible_get() and not not_rendered.visible_get()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    drawn = [(i.is_instance, i.object.original.name) for i in depsgraph.object_instances
             if i.object.original in (shown, not_rendered)]
    assert sorted(drawn) == [(True, "not rendered"), (True, "shown")]

    # a render: the moved instance where its source renders, nothing at the authored spots
    alpha = render_alpha(scene, tmp_path, "hidden")
    assert alpha(4.5, 4.5) > 0.99
    assert alpha(-4.5, -4.5) == 0 and alpha(-4.5, 4.5) == 0
    assert alpha(4.5, -4.5) == 0  # the instance of a source that does not render

    # shown again: the source renders at its authored pose, next to its instance
    inst.hide_sources(False)
    alpha = render_alpha(scene, tmp_path, "shown")
    assert alpha(-4.5, -4.5) > 0.99  # the source, where it was authored
    assert alpha(4.5, 4.5) == 0  # and no stale instance next to it (paused: objects show)
    assert alpha(-4.5, 4.5) == 0 and alpha(4.5, -4.5) == 0
    inst.remove()


# ---------------------------------------------------------------- clean up

def counts():
    data = bpy.data
    return {"objects": len(data.objects), "meshes": len(data.meshes),
            "node_groups": len(data.node_groups), "collections": len(data.collections)}


def looks(objects, besides=()):
    """How the objects are shown and selected, and where they are linked (besides the
    collections `besides`)."""
    layer = bpy.context.view_layer
    shown = {obj.name: (obj.hide_viewport, obj.hide_render, obj.hide_get(), obj.select_get(),
                        sorted(c.name for c in obj.users_collection if c not in besides)) for obj in objects}
    return shown | {"active": layer.objects.active and layer.objects.active.name}


def test_remove_leaves_everything_as_it_was(groups):
    sources = [obj for group in groups for obj in group]
    sources[0].select_set(True)
    sources[1].select_set(True)
    bpy.context.view_layer.objects.active = sources[1]
    sources[2].hide_render = True
    sources[3].hide_set(True)  # (the caller draws only visible objects; kept as it was all the same)
    before, looked = counts(), looks(sources)
    inst = make(groups)
    inst.hide_sources(True)
    assert all(obj.hide_get() and obj.hide_render for obj in sources)  # (hidden per view layer)
    assert not sources[0].select_get()  # (Blender deselects what it hides)
    inst.hide_sources(True)  # twice: still the state from before the first
    inst.hide_sources(False)
    assert looks(sources, besides=inst.collections) == looked
    inst.hide_sources(True)
    inst.remove()
    assert counts() == before
    assert looks(sources) == looked
    inst.remove()  # twice: nothing more to do


def test_remove_after_a_failed_build(groups):
    before = counts()
    layer = bpy.context.view_layer
    hidden = bpy.data.collections.new("elsewhere")  # not in the view layer: Blender shows no instance
    with pytest.raises(RuntimeError):
        fast.Instancer("model", groups, hidden, layer)
    bpy.data.collections.remove(hidden)
    assert counts() == before


def test_rotations_travel_as_quaternions(groups):
    """A point's rotation is its quaternion, as written: exact also at a quarter turn
    about Y (where XYZ Euler angles lock) and at half turns; one vertex per point."""
    authored = {obj.name: obj.matrix_world.copy() for group in groups for obj in group}
    inst = make(groups)
    inst.hide_sources(True)
    assert inst.mesh.attributes[fast.ROTATION].data_type == "QUATERNION"
    assert len(inst.mesh.vertices) == len(inst.sources)
    s = np.sqrt(0.5)
    quat = np.array([(s, 0, s, 0), (0, 1, 0, 0), (s, 0, -s, 0), (0.5, 0.5, 0.5, 0.5)])
    pos = np.zeros((len(groups), 3))
    inst.write(pos, quat)
    bpy.context.view_layer.update()
    found = instances_of(inst)
    for row, group in enumerate(groups):
        for obj in group:
            (world,) = found[obj.name]
            expected = displacement(pos[row], quat[row]) @ authored[obj.name]
            assert np.abs(np.array(world) - np.array(expected)).max() < ATOL, obj.name
    inst.remove()


def test_a_turn_in_place_is_drawn(clean_scene):
    """The positions write tags the mesh for the rotations written with it, also when
    no position changes."""
    source = box("spinning", 0.5)
    inst = make([[source]])
    inst.hide_sources(True)
    for quat in [(0, 1, 0, 0), (0, 0, 1, 0), (0.5, 0.5, 0.5, 0.5)]:
        inst.write(np.zeros((1, 3)), np.array([quat], float))
        bpy.context.view_layer.update()
        (world,) = instances_of(inst)["spinning"]
        assert np.abs(np.array(world) - np.array(displacement((0, 0, 0), quat))).max() < ATOL
    inst.remove()


def test_sweep_cleans_up_after_an_undo_brings_an_instancer_back(groups):
    """Undo can restore a state saved while the Fast display existed, with nothing
    left to remove it: the handlers' sweep removes it and shows the sources again."""
    sources = [obj for group in groups for obj in group]
    sources[2].hide_render = True
    before, looked = counts(), looks(sources)
    inst = make(groups)
    inst.hide_sources(True)
    del inst  # (what an undo leaves: the data, no Python object)
    assert counts() != before and all(obj.hide_get() for obj in sources)
    handlers.forget_sessions()
    assert counts() == before
    assert {name: look[:3] for name, look in looks(sources).items() if name != "active"} == \
        {name: look[:3] for name, look in looked.items() if name != "active"}
    assert all(fast.SHOWN not in obj.keys() for obj in sources)
    assert handlers.forget_sessions in bpy.app.handlers.undo_post

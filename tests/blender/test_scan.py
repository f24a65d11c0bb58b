"""The scan: an imported model, untouched, compiles to exactly MuJoCo's model."""

import os

import bpy
import mujoco
import numpy as np
import pytest
from helpers import CORPUS, corpus_params, needs_corpus

from mjblend.live import scene_session
from mjblend.scan import scene_scan
from mjblend.components import values
from mjblend.importer import build

# mjModel fields that record names or file paths (or their sizes), not the model
NAME_FIELDS = ("names", "paths", "name_", "path", "npaths", "nnames", "nbuffer")


def cached_spec(root):
    """The scene session's cached scan of `root` (what a simulation and validation use)."""
    return scene_session.of(bpy.context.scene).scans.spec(root)


def model_differences(ours, theirs):
    """[(field, description)] of every numeric mjModel field that differs."""
    out = []
    for field in dir(theirs):
        if field.startswith("_") or field.startswith(NAME_FIELDS) or field.endswith("pathadr") \
                or field == "signature":  # a hash MuJoCo sets when compiling, 0 from a .mjb
            continue
        a = getattr(theirs, field)
        if callable(a):
            continue
        b = getattr(ours, field)
        if isinstance(a, np.ndarray):
            if a.shape != b.shape:
                out.append((field, f"shape {a.shape} vs {b.shape}"))
            elif a.dtype.kind == "f" and not np.array_equal(a, b, equal_nan=True):
                out.append((field, f"max |diff| {np.nanmax(np.abs(a - b)):.3g}"))
            elif a.dtype.kind != "f" and not np.array_equal(a, b):
                out.append((field, "differs"))
        elif isinstance(a, (int, float)) and a != b:
            out.append((field, f"{a} vs {b}"))
    return out


# Known gaps, each a real limitation of the scan so far (see the issue notes):
KNOWN = {
}


@pytest.mark.parametrize("model", corpus_params())
def test_an_untouched_import_compiles_to_the_original_model(model, clean_scene, request):
    if model in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[model], strict=True))
    path = os.path.join(CORPUS, model)
    result = build.import_file(path, bpy.context.scene)
    ours = scene_scan.scan_model(result.root).compile()
    theirs = mujoco.MjModel.from_xml_path(path)
    differences = model_differences(ours, theirs)
    assert not differences, f"{model}: {len(differences)} fields differ: {differences[:8]}"


# ------------------------------------------------------------------ the cache


@needs_corpus
def test_rescan_reuses_the_spec_and_updates_only_what_changed(clean_scene):
    result = build.import_file(os.path.join(CORPUS, "pip/gymnasium/envs/mujoco/assets/ant.xml"),
                               bpy.context.scene)
    scene_session.end_all()
    spec, updated = cached_spec(result.root)
    assert updated is None  # the first scan is a full one
    again, updated = cached_spec(result.root)
    assert again is spec and updated == 0

    geom = result.by_id[("geom", 2)]
    geom.mujoco.geom.size[0] = 0.07  # a panel edit
    body = result.by_id[("body", 2)]
    body.location.z += 0.125  # a move in the viewport
    again, updated = cached_spec(result.root)
    assert again is spec and updated == 2
    incremental = spec.compile()
    full = scene_scan.scan_model(result.root).compile()
    assert model_differences(incremental, full) == []
    assert incremental.geom_size[2][0] == 0.07

    bpy.data.objects.new("new site", None)  # not in the model: nothing to redo
    assert cached_spec(result.root)[1] == 0
    extra = bpy.data.objects.new("extra", None)
    bpy.context.scene.collection.objects.link(extra)
    extra.parent = body
    extra.mujoco.kind = "SITE"
    _spec, updated = cached_spec(result.root)
    assert updated is None  # structure changed: a full scan


def _edit_by_foreach(mesh):
    coords = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", coords)
    coords[0] += 0.01
    mesh.vertices.foreach_set("co", coords)
    mesh.update()


def _edit_by_bmesh(mesh):
    import bmesh

    edit = bmesh.new()
    edit.from_mesh(mesh)
    edit.verts.ensure_lookup_table()
    edit.verts[0].co.x += 0.01
    edit.to_mesh(mesh)
    edit.free()


@needs_corpus
@pytest.mark.parametrize("edit", [_edit_by_foreach, _edit_by_bmesh])
def test_a_mesh_edited_after_a_scan_goes_in_as_its_new_geometry(edit, clean_scene):
    result = build.import_file(os.path.join(CORPUS, "menagerie/robotiq_2f85/scene.xml"), clean_scene)
    mesh = next(b for (kind, _), b in result.by_id.items() if kind == "mesh")
    assert scene_scan.Scanner(result.root, []).blender_meshes == []  # untouched: each mesh is its file
    edit(mesh)
    moved = np.array(mesh.vertices[0].co, dtype=float)
    scanner = scene_scan.Scanner(result.root, [])
    spec = scanner.spec
    assert scanner.blender_meshes == [mesh.mujoco.name]
    element = spec.mesh(mesh.mujoco.name)
    assert not element.file
    verts = np.reshape(element.uservert, (-1, 3))
    assert np.min(np.linalg.norm(verts - moved, axis=1)) < 1e-9


@needs_corpus
def test_a_mesh_signature_saved_in_the_older_form_still_counts(clean_scene):
    from mjblend.geometry import mujoco_meshes
    from mjblend.components.stored_keys import SIGNATURE

    result = build.import_file(os.path.join(CORPUS, "menagerie/robotiq_2f85/scene.xml"), clean_scene)
    mesh = next(b for (kind, _), b in result.by_id.items() if kind == "mesh")
    mesh.mujoco.mesh[SIGNATURE] = mujoco_meshes.mesh_signature(mesh, form="")  # blake2b, unmarked
    assert scene_scan.Scanner(result.root, []).blender_meshes == []
    _edit_by_foreach(mesh)
    assert scene_scan.Scanner(result.root, []).blender_meshes == [mesh.mujoco.name]


def test_settings_the_file_sets_and_later_edits_reach_the_spec(clean_scene, tmp_path):
    """The import records which settings the file sets (the scan reads only those,
    a new spec has the rest): what it sets, and any later edit, still goes in."""
    path = tmp_path / "settings.xml"
    path.write_text('<mujoco><option timestep="0.0025" integrator="RK4"/>'
                    '<visual><global fovy="33"/></visual>'
                    '<worldbody><body><freejoint/><geom size=".1"/></body></worldbody></mujoco>',
                    encoding="utf-8")
    root = build.import_file(str(path), bpy.context.scene).root
    settings = root.mujoco.model
    assert sorted(values.own(settings.option)) == ["integrator", "timestep"]
    assert scene_scan.scan_model(root).compile().opt.timestep == 0.0025
    settings.option.tolerance = 1e-6  # a default, edited: read from now on
    settings.option.integrator = "EULER"  # set by the file, edited back to the default
    settings.visual_global.fovy = 50
    model = scene_scan.scan_model(root).compile()
    assert model.opt.tolerance == 1e-6 and model.opt.timestep == 0.0025
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    assert model.vis.global_.fovy == 50


def test_an_edit_keeps_the_values_the_group_sets(clean_scene, tmp_path):
    """Storage format 2: a group stores what it sets (presence is ownership); an edit of
    one attribute adds it and the scan keeps every other value the group sets."""
    path = tmp_path / "old.xml"
    path.write_text('<mujoco><option timestep="0.0025"/><worldbody>'
                    '<body name="b" gravcomp="0.5"><inertial pos="0 0 0" mass="2" diaginertia="1 1 1"/>'
                    '<freejoint/><geom size=".1"/></body></worldbody></mujoco>', encoding="utf-8")
    result = build.import_file(str(path), bpy.context.scene)
    body = result.by_id[("body", 1)].mujoco.body
    option = result.root.mujoco.model.option
    assert "tolerance" not in option.keys() and option.tolerance == pytest.approx(1e-8)  # MuJoCo's
    body.gravcomp = 0.25  # edits
    option.tolerance = 1e-6
    assert {"mass", "gravcomp"} <= values.own(body) and values.own(option) == {"timestep", "tolerance"}
    model = scene_scan.scan_model(result.root).compile()
    assert model.body_mass[1] == 2 and model.body_gravcomp[1] == 0.25
    assert model.opt.timestep == 0.0025 and model.opt.tolerance == 1e-6


TWO_BODIES = ('<mujoco><worldbody><body name="a"><freejoint/><geom name="ga" size=".1"/></body>'
              '<body name="b" pos="1 0 0"><freejoint/><inertial pos="0 0 0" mass="1" diaginertia=".1 .1 .1"/>'
              '<geom name="gb" size=".1"/>'
              '<site name="s"/></body></worldbody></mujoco>')


def test_a_rescan_notices_every_change_of_structure(clean_scene, tmp_path):
    """The cached rescan compares only the object list and parents, and the identity
    (kind, MJCF name, class) of edited objects: each structural change still gives a
    full scan with the change in it; undo puts back values unreported: a full scan."""
    path = tmp_path / "two.xml"
    path.write_text(TWO_BODIES, encoding="utf-8")
    result = build.import_file(str(path), bpy.context.scene)
    scene_session.end_all()
    cached_spec(result.root)
    body_a, geom_b = result.by_id[("body", 1)], result.by_id[("geom", 1)]

    def full_scan():
        spec, updated = cached_spec(result.root)
        assert updated is None
        assert cached_spec(result.root) == (spec, 0)  # and then nothing to do
        return spec.compile()

    geom_b.mujoco.name = "renamed"
    assert mujoco.mj_name2id(full_scan(), mujoco.mjtObj.mjOBJ_GEOM, "renamed") == 1
    assert geom_b.mujoco.classname == "main"
    geom_b.mujoco.classname = ""  # (no class: MuJoCo gives it main)
    assert full_scan().ngeom == 2
    geom_b.parent = body_a
    assert list(full_scan().geom_bodyid) == [1, 1]
    bpy.data.objects.remove(result.by_id[("site", 0)])
    assert full_scan().nsite == 0

    before = cached_spec(result.root)[0].compile().body_mass[1]  # two spheres
    bpy.ops.ed.undo_push(message="before the edit")
    geom_b.mujoco.geom.mass = 5.0
    bpy.ops.ed.undo_push(message="the edit")
    spec, updated = cached_spec(result.root)
    assert updated == 1 and spec.compile().body_mass[1] == pytest.approx(before / 2 + 5)
    bpy.ops.ed.undo()
    assert scene_session.existing(bpy.context.scene) is None  # forgotten with its scene session
    spec, updated = cached_spec(scene_scan.model_roots(bpy.context.scene)[0])
    assert updated is None and spec.compile().body_mass[1] == before


def test_an_edit_that_adds_an_own_attribute_updates_in_place(clean_scene, tmp_path):
    """A body's first edit of an attribute adds it to its own set: the cached spec is
    updated in place (nothing needs a new element), and equals a full scan."""
    path = tmp_path / "two.xml"
    path.write_text('<mujoco><worldbody><body name="a"><freejoint/><geom size=".1"/></body>'
                    '<body name="b" pos="1 0 0"><freejoint/><geom size=".1"/></body></worldbody></mujoco>',
                    encoding="utf-8")
    result = build.import_file(str(path), bpy.context.scene)
    scene_session.end_all()
    spec, _ = cached_spec(result.root)
    body = result.by_id[("body", 2)].mujoco.body
    assert "gravcomp" not in values.own(body)
    body.gravcomp = 0.75
    again, updated = cached_spec(result.root)
    assert again is spec and updated == 1
    incremental = spec.compile()
    assert incremental.body_gravcomp[2] == 0.75
    assert model_differences(incremental, scene_scan.scan_model(result.root).compile()) == []


CLASS_EULER = """<mujoco>
  <compiler angle="degree"/>
  <default>
    <default class="turned"><geom euler="0 0 90" size=".1 .2 .3" type="box"/>
      <default class="tilted"><geom euler="30 0 0"/></default>
    </default>
  </default>
  <worldbody>
    <body>
      <geom class="turned"/>
      <geom class="turned" quat="0 1 0 0"/>
      <geom class="tilted" axisangle="0 1 0 45"/>
      <geom class="tilted"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_orientations_a_class_sets_and_an_element_overrides(clean_scene, tmp_path):
    """An element's own quaternion wins over its class's euler (the class's euler values
    stay in the element, unused); a class's euler over its parent's; each as MuJoCo."""
    path = tmp_path / "classes.xml"
    path.write_text(CLASS_EULER, encoding="utf-8")
    result = build.import_file(str(path), bpy.context.scene)
    ours = scene_scan.scan_model(result.root).compile()
    assert model_differences(ours, mujoco.MjModel.from_xml_path(str(path))) == []


def test_a_class_on_a_kind_without_classes_is_a_clear_error(clean_scene, tmp_path):
    """MuJoCo gives a sensor no class: a script that sets one gets the object named,
    not the binding's TypeError."""
    path = tmp_path / "sensor.xml"
    path.write_text('<mujoco><worldbody><body><freejoint/><geom size=".1"/><site name="s"/></body>'
                    '</worldbody><sensor><framepos objtype="site" objname="s"/></sensor></mujoco>',
                    encoding="utf-8")
    result = build.import_file(str(path), bpy.context.scene)
    sensor = result.by_id[("sensor", 0)]
    assert sensor.mujoco.classname == ""
    sensor.mujoco.classname = "main"
    with pytest.raises(scene_scan.ScanError, match="a sensor has no default class") as error:
        scene_scan.scan_model(result.root)
    assert error.value.objects == [sensor]

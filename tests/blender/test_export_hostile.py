"""Export onto hostile targets and of values no MJCF file keeps: each refused before
anything is written, with a message naming the file / object / attribute and the
cause; nothing hangs, no traceback, no staging folder left behind."""

import contextlib
import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time

import bpy
import mujoco
import numpy as np
import pytest
from test_scan import model_differences

from mjblend.exporter import target
from mjblend.importer import build

MODEL = """<mujoco model="hostile">
  <worldbody>
    <geom name="floor" type="plane" size="inf inf 0.1"/>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" type="hinge" range="-inf inf" limited="true"/>
      <geom name="box" type="box" size=".1 .1 .1"/>
    </body>
    <body name="ball" pos="1 0 1"><freejoint/><geom name="sphere" size=".1"/></body>
  </worldbody>
  <keyframe><key name="home" qpos="0.5 1 0 1 1 0 0 0"/></keyframe>
</mujoco>"""


@contextlib.contextmanager
def deadline(seconds=60):
    """Fail (instead of hanging the run) when the block takes longer than `seconds`."""
    def expired(_signum, _frame):
        raise TimeoutError(f"still running after {seconds} s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def model(clean_scene, tmp_path):
    """The model imported: its objects by MJCF (kind, name)."""
    path = tmp_path / "source" / "hostile.xml"
    path.parent.mkdir()
    path.write_text(MODEL, encoding="utf-8")
    result = build.import_file(str(path), bpy.context.scene)
    named = {(o.mujoco.kind.lower(), o.mujoco.name): o for o in result.root.children_recursive}
    named["model"] = result.root
    named["path"] = str(path)
    return named


def refused(filepath, match, **options):
    """Export to `filepath`: it must fail with a message matching `match` (no traceback)."""
    with deadline(), pytest.raises(RuntimeError, match=match) as info:
        bpy.ops.export_scene.mjcf(filepath=str(filepath), **options)
    assert "Traceback" not in str(info.value)
    return str(info.value)


def no_staging(folder):
    return [n for n in os.listdir(folder) if n.startswith(target.PREFIX)] == []


# ------------------------------------------------------------------ targets


def test_an_empty_path_is_refused(model):
    refused("", "no file to export to")


def test_a_folder_as_target_is_refused(model, tmp_path):
    folder = tmp_path / "out.xml"
    folder.mkdir()
    refused(folder, r"out\.xml: is a folder: add a file name")
    refused(str(tmp_path) + os.sep, "is a folder: add a file name")
    assert os.listdir(folder) == [] and no_staging(tmp_path)


def test_the_target_is_checked_before_the_scene(model):
    model[("body", "arm")].location.x = float("nan")  # the scan would refuse this too
    refused("", "no file to export to")


@pytest.mark.parametrize("device", ["/dev/full", "/dev/zero", "/dev/null"])
def test_a_device_as_target_is_refused_and_never_read(model, device):
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    refused(device, f"{device}: is a device, not a file")


def test_a_fifo_as_target_is_refused_and_never_opened(model, tmp_path):
    fifo = tmp_path / "pipe.xml"
    os.mkfifo(fifo)  # opening it to read would wait for a writer forever
    refused(fifo, r"pipe\.xml: is a named pipe \(FIFO\), not a file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and no_staging(tmp_path)


def test_a_socket_as_target_is_refused(model, tmp_path):
    path = tmp_path / "sock.xml"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        refused(path, r"sock\.xml: is a socket, not a file")


def test_a_missing_folder_is_refused(model, tmp_path):
    refused(tmp_path / "nowhere" / "model.xml", "nowhere: no such folder")
    (tmp_path / "plain").write_text("")
    refused(tmp_path / "plain" / "model.xml", "plain: is not a folder")


def test_a_read_only_folder_is_refused(model, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)  # refused even to root, who could write there
    try:
        refused(folder / "model.xml", "locked: cannot write there")
        assert os.listdir(folder) == []
    finally:
        folder.chmod(0o755)


def test_a_read_only_file_is_refused_and_kept(model, tmp_path):
    path = tmp_path / "model.xml"
    path.write_text("mine")
    path.chmod(0o444)
    refused(path, r"model\.xml: the file is read-only")
    assert path.read_text() == "mine" and no_staging(tmp_path)


def test_the_compiled_model_target_is_checked_too(model, tmp_path):
    (tmp_path / "model.mjb").mkdir()
    refused(tmp_path / "model.xml", r"model\.mjb: is a folder", save_mjb=True)
    assert not (tmp_path / "model.xml").exists() and no_staging(tmp_path)


def test_an_asset_folder_that_is_a_file_stops_the_export_before_anything_moves(model, tmp_path):
    mesh = bpy.data.meshes.new("tetra")  # a mesh only Blender has: written to assets/tetra.stl
    mesh.from_pydata([(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)], [],
                     [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)])
    mesh.mujoco.kind, mesh.mujoco.name = "MESH", "tetra"
    model["model"].mujoco.model.assets.add().block = mesh
    geom = model[("geom", "box")].mujoco.geom
    geom.type, geom.meshname = "MESH", mesh
    (tmp_path / "assets").write_text("not a folder")
    refused(tmp_path / "model.xml", r"assets: is a file, where the export puts a folder")
    assert sorted(os.listdir(tmp_path)) == ["assets", "source"]
    os.remove(tmp_path / "assets")
    bpy.ops.export_scene.mjcf(filepath=str(tmp_path / "model.xml"))
    assert (tmp_path / "assets" / "tetra.stl").is_file() and no_staging(tmp_path)


# ------------------------------------------------------------------ staging

KILLED_EXPORT = """
import sys, time
sys.path.insert(0, {tests!r})
from addon_loader import ADDON, enable_addon
import bpy, importlib
enable_addon()
build = importlib.import_module(ADDON + ".importer.build")
writer = importlib.import_module(ADDON + ".exporter.mjcf_writer")
build.import_file({model!r}, bpy.context.scene)
original = writer.place_assets

def slow(spec, folder, staging, *args, **kwargs):
    placed = original(spec, folder, staging, *args, **kwargs)
    with open({ready!r}, "w") as fh:
        fh.write(staging)
    time.sleep(600)  # killed here, while staging
    return placed

writer.place_assets = slow
bpy.ops.export_scene.mjcf(filepath={out!r})
"""


def test_a_killed_export_leaves_staging_that_the_next_export_removes(model, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    ready = tmp_path / "ready"
    script = KILLED_EXPORT.format(tests=os.path.dirname(os.path.dirname(__file__)), model=model["path"],
                                  ready=str(ready), out=str(folder / "model.xml"))
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + 300
        while not ready.exists() or not ready.read_text():
            assert process.poll() is None, process.stderr.read().decode(errors="replace")[-2000:]
            assert time.monotonic() < end, "the export in the subprocess never began staging"
            time.sleep(0.1)
        staging = ready.read_text()
        assert os.path.dirname(staging) == str(folder)
        # an export of this process into the same folder leaves the live one's staging alone
        bpy.ops.export_scene.mjcf(filepath=str(folder / "other.xml"))
        assert os.path.isdir(staging)
        process.kill()  # SIGKILL: no clean-up of its own can run
        process.wait(timeout=60)
        assert process.returncode == -signal.SIGKILL
        assert os.path.isdir(staging) and not (folder / "model.xml").exists()  # what a kill leaves
        bpy.ops.export_scene.mjcf(filepath=str(folder / "other.xml"))
        assert not os.path.exists(staging) and no_staging(folder)
        assert sorted(os.listdir(folder)) == ["other.xml"]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()


def test_staging_without_an_owner_is_removed_only_once_old(model, tmp_path):
    fresh = tmp_path / (target.PREFIX + "fresh")
    old = tmp_path / (target.PREFIX + "old")  # as MJBlend left them before the owner file
    for folder in (fresh, old):
        folder.mkdir()
        (folder / "model.xml").write_text("half")
    then = time.time() - 2 * target.GRACE
    os.utime(old, (then, then))
    bpy.ops.export_scene.mjcf(filepath=str(tmp_path / "model.xml"))
    assert fresh.is_dir() and not old.exists()


# ------------------------------------------------------------------ values


def test_an_imported_infinity_round_trips_exactly(model, tmp_path):
    """A plane's infinite size and an unbounded joint range are MuJoCo's own values."""
    written = tmp_path / "model.xml"
    bpy.ops.export_scene.mjcf(filepath=str(written))
    ours, theirs = mujoco.MjModel.from_xml_path(str(written)), mujoco.MjModel.from_xml_path(model["path"])
    assert not model_differences(ours, theirs)
    assert np.isinf(ours.geom_size[0][:2]).all() and np.isinf(ours.jnt_range[0]).all()


def refused_by_scan(attribute_message, tmp_path, *culprits):
    """Refused by export and by Play alike, naming the object and the attribute; the
    culprits selected; nothing written."""
    message = refused(tmp_path / "model.xml", attribute_message)
    assert not (tmp_path / "model.xml").exists() and no_staging(tmp_path)
    assert set(bpy.context.selected_objects) == {o for o in culprits if o.visible_get()}
    with pytest.raises(RuntimeError, match=attribute_message):
        bpy.ops.mujoco.play()
    return message


def test_an_infinite_position_is_refused(model, tmp_path):
    arm = model[("body", "arm")]
    arm.location.x = float("inf")  # Blender keeps 3.4e38
    refused_by_scan(r"arm: location x is infinite", tmp_path, arm)


def test_a_nan_position_or_rotation_is_refused(model, tmp_path):
    arm = model[("body", "arm")]
    arm.location.y = float("nan")
    refused_by_scan(r"arm: location y is not a number \(NaN\)", tmp_path, arm)
    arm.location.y = 0.0
    arm.rotation_quaternion[2] = float("nan")
    refused_by_scan(r"arm: rotation y is not a number \(NaN\)", tmp_path, arm)


def test_a_zero_quaternion_is_refused(model, tmp_path):
    ball = model[("body", "ball")]
    ball.rotation_quaternion = (0, 0, 0, 0)  # Blender's matrix of it turns 180 degrees about x
    refused_by_scan(r"ball: its rotation quaternion is zero", tmp_path, ball)


def test_a_zero_rotation_axis_is_refused(model, tmp_path):
    box = model[("geom", "box")]
    box.rotation_mode = "AXIS_ANGLE"
    box.rotation_axis_angle = (0.5, 0, 0, 0)
    refused_by_scan(r"box: its rotation axis is zero", tmp_path, box)


def test_a_zero_scale_is_refused(model, tmp_path):
    arm, box = model[("body", "arm")], model[("geom", "box")]
    box.location.x = 0.25  # moved: placed from its matrix, which a zero scale leaves no rotation in
    box.scale = (0, 1, 1)
    refused_by_scan(r"box: its scale is zero", tmp_path, box)
    box.scale = (1, 1, 1)
    arm.scale = (1, 0, 1)  # the parent's: its matrix has no inverse
    refused(tmp_path / "model.xml", r"box: the scale of its parent arm is zero")
    assert set(bpy.context.selected_objects) == {arm, box}


def test_a_nan_timestep_is_refused(model, tmp_path):
    model["model"].mujoco.model.option.timestep = float("nan")
    root = model["model"]
    refused_by_scan(r"option timestep is not a number \(NaN\)", tmp_path, root)


def test_an_infinite_or_nan_attribute_typed_in_blender_is_refused(model, tmp_path):
    box = model[("geom", "box")]
    box.mujoco.geom.size = (float("inf"), 0.1, 0.1)  # Blender keeps 3.4e38
    refused_by_scan(r"box: geom size \(value 1 of 3\) is infinite", tmp_path, box)
    box.mujoco.geom.size = (0.1, 0.1, 0.1)
    box.mujoco.geom.friction = (1, float("nan"), 0.005)
    refused_by_scan(r"box: geom friction \(value 2 of 3\) is not a number", tmp_path, box)


def test_an_imported_nan_is_refused(clean_scene, tmp_path):
    """MuJoCo reads "nan" (with a warning) and its writer leaves the attribute out."""
    path = tmp_path / "nan.xml"
    path.write_text('<mujoco><worldbody><body name="b"><freejoint/>'
                    '<geom name="g" size=".1" friction="nan 0.005 0.0001"/></body></worldbody></mujoco>')
    result = build.import_file(str(path), bpy.context.scene)
    geom = next(o for o in result.root.children_recursive if o.mujoco.name == "g")
    (tmp_path / "out").mkdir()
    refused_by_scan(r"g: geom friction \(value 1 of 3\) is not a number", tmp_path / "out", geom)


def test_a_nan_in_a_keyframe_is_refused(model, tmp_path):
    from mjblend.components import values
    from mjblend.components.schema import KINDS

    key = model[("key", "home")]
    values.set_vector_text(key.mujoco.key, KINDS["key"].attr("qpos"), "0.5 nan 0 1 1 0 0 0")  # (now its own)
    refused_by_scan(r"home: key qpos holds a value that is not a number", tmp_path, key)


@pytest.mark.parametrize("kind, first, second", [("body", "arm", "ball"), ("geom", "box", "sphere"),
                                                 ("joint", "hinge", None)])
def test_two_elements_of_one_kind_with_one_name_are_refused(model, tmp_path, kind, first, second):
    if second is None:  # the ball's free joint, made a named one
        second_obj = next(o for o in model[("body", "ball")].children if o.mujoco.kind == "JOINT")
    else:
        second_obj = model[(kind, second)]
    first_obj = model[(kind, first)]
    second_obj.mujoco.name = first
    message = refused_by_scan(rf"two {kind} elements named '{first}'", tmp_path,
                              first_obj, second_obj)
    assert first_obj.name in message and second_obj.name in message


def test_one_name_in_two_kinds_is_fine(model, tmp_path):
    model[("geom", "box")].mujoco.name = "arm"  # a body's name: MuJoCo's namespaces are per kind
    bpy.ops.export_scene.mjcf(filepath=str(tmp_path / "model.xml"))
    assert mujoco.MjModel.from_xml_path(str(tmp_path / "model.xml")).geom("arm").id == 1


def test_two_default_classes_with_one_name_are_refused(model, tmp_path):
    classes = model["model"].mujoco.model.defaults
    for _ in range(2):
        item = classes.add()
        item.name, item.parent = "twin", "main"
    refused(tmp_path / "model.xml", "two default classes are named 'twin'")


@pytest.mark.parametrize("char, called", [("\r", "carriage return"), ("\t", "tab"),
                                          ("\n", "line break"), ("\x07", "control character")])
def test_a_name_mjcf_cannot_keep_is_refused(model, tmp_path, char, called):
    box = model[("geom", "box")]
    box.mujoco.name = f"bo{char}x"
    message = refused(tmp_path / "model.xml", rf"box: its geom name .* holds a {called}")
    assert "rename it" in message and set(bpy.context.selected_objects) == {box}
    assert no_staging(tmp_path)
    bpy.ops.mujoco.play()  # a simulation keeps any name: no file is involved
    bpy.ops.mujoco.stop()


def test_a_control_character_in_any_attribute_text_is_refused(clean_scene, tmp_path):
    path = tmp_path / "text.xml"
    path.write_text('<mujoco><worldbody><geom size=".1"/></worldbody>'
                    '<custom><text name="note" data="one&#13;two"/></custom></mujoco>')
    result = build.import_file(str(path), bpy.context.scene)
    note = next(o for o in result.root.children_recursive if o.mujoco.name == "note")
    (tmp_path / "out").mkdir()
    refused(tmp_path / "out" / "model.xml", "note: its text holds a carriage return")
    assert os.listdir(tmp_path / "out") == []
    assert set(bpy.context.selected_objects) == ({note} if note.visible_get() else set())

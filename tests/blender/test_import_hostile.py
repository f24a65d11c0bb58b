"""Issue 16, the import: MJBlend opens what MuJoCo opens, and stops what MuJoCo cannot.

Each case the issue lists has its own test here: files that are not UTF-8,
models whose first forward pass MuJoCo's own arena estimate cannot hold, absurd
loads stopped by the memory and time limits or by a cancel (the probe process
killed, nothing left behind), things that are not files, and a height field
too large to show sample for sample.
"""

import os
import shutil
import subprocess
import sys
import time

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import ADDON, ROOT, disable_addon, enable_addon
from helpers import CORPUS, needs_corpus

from mjblend.importer import build, mujoco_load
from mjblend.live import scene_session

DATA = ("objects", "meshes", "materials", "images", "collections", "worlds", "node_groups", "textures")
BALL = '<body name="{name}" pos="0 0 1"><freejoint/><geom size=".1"/></body>'
ONE_BALL = "<mujoco><worldbody>" + BALL.format(name="ball") + "</worldbody></mujoco>"
MILLION = ('<mujoco><worldbody><replicate count="1000000" offset="1 0 0">'
           '<body><geom size=".1"/></body></replicate></worldbody></mujoco>')


def counts():
    return {name: len(getattr(bpy.data, name)) for name in DATA}


def write(folder, name, content):
    path = os.path.join(str(folder), name)
    with open(path, "wb") as fh:
        fh.write(content if isinstance(content, bytes) else content.encode())
    return path


def mjb(model):
    """The compiled model's bytes (MuJoCo's own binary format): equal bytes, equal models."""
    size = mujoco.mj_sizeModel(model)
    buffer = np.zeros(size, np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return buffer.tobytes()


def static_boxes(n):
    return "".join(f'<body pos="{i % 100} {i // 100} 0"><geom type="box" size=".1 .1 .1"/></body>'
                   for i in range(n))


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def children(pid):
    """The processes whose parent is `pid` (Linux's /proc)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if name.isdigit() and int(fields[1]) == pid:
            found.append(int(name))
    return found


def waiting_child(pid):
    """The one child of probe helper `pid` waiting for the next request: once it is the
    only child and asleep, seen twice 50 ms apart (a child that just answered may still
    be exiting, and the helper forks the next one after reaping it)."""
    def settled():
        first = children(pid)
        time.sleep(0.05)
        if len(first) == 1 and children(pid) == first and state(first[0]) == "S":
            return first[0]
        return None
    found = eventually(settled)
    assert found, f"no child of the probe helper waits: {children(pid)}"
    return found


def state(pid):
    """A process's state letter (R running, S sleeping, Z zombie, ...), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def eventually(check, seconds=30):
    """`check()`'s first true value, asked until `seconds` passed (the helper works on its
    own time: it reaps a child and forks the next after answering)."""
    deadline = time.monotonic() + seconds
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return value


def probe_pid_of(path, limits=None):
    """The pid of the process that probed `path` (the load run to its end)."""
    job = build.start_load(path, limits_=limits or mujoco_load.Limits(0, 120))
    pid = job.probe.pid
    job.run()
    job.outcome()
    return pid


# --------------------------------------------------------------------------- encodings


def test_a_latin1_byte_in_a_comment_imports_with_a_warning(clean_scene, tmp_path):
    path = write(tmp_path, "comment.xml", b"<mujoco>\n<!-- caf\xe9 -->\n<worldbody>"
                 + BALL.format(name="ball").encode() + b"</worldbody></mujoco>")
    with pytest.raises(UnicodeDecodeError):
        open(path, encoding="utf-8").read()  # (the file really is not UTF-8)
    result = build.import_file(path, clean_scene)
    assert result.counts["body"] == 1
    (warning,) = result.warnings
    assert "comment.xml is not UTF-8" in warning and "line 2: byte 0xE9 read as 'é'" in warning


def test_latin1_names_in_the_file_and_its_include_keep_their_characters(clean_scene, tmp_path):
    part = BALL.format(name="pi\xe8ce").encode("latin-1")
    write(tmp_path, "part.xml", b"<mujoco><worldbody>" + part + b"</worldbody></mujoco>")
    path = write(tmp_path, "main.xml", b'<mujoco><include file="part.xml"/><worldbody>'
                 + BALL.format(name="caf\xe9").encode("latin-1") + b"</worldbody></mujoco>")
    result = build.import_file(path, clean_scene)
    names = {o.mujoco.name for o in result.collection.all_objects if o.mujoco.kind == "BODY"}
    assert names == {"café", "pièce"}
    assert any("main.xml is not UTF-8" in w for w in result.warnings)
    assert any("part.xml is not UTF-8" in w for w in result.warnings)
    # the scene simulates (the names are valid text from here on)
    scene_session.start_simulation(clean_scene).simulate(0.01)


@needs_corpus
@pytest.mark.parametrize("model", ["mujoco_model/model/humanoid/humanoid.xml",
                                   "menagerie/franka_emika_panda/scene.xml",
                                   "pip/dm_control/suite/cartpole.xml"])
def test_a_latin1_comment_changes_nothing_mujoco_compiles(model, tmp_path):
    """The text route (from_string + includes + the file's folder for assets) compiles the
    same model as MuJoCo's own from_file of the original, byte for byte."""
    folder = shutil.copytree(os.path.dirname(os.path.join(CORPUS, model)), tmp_path / "model")
    original = os.path.join(folder, os.path.basename(model))
    raw = open(original, "rb").read()
    marked = write(folder, "marked.xml", raw.replace(b"<mujoco", b"<!-- \xe9t\xe9 -->\n<mujoco", 1))
    source = mujoco_load.read_source(marked)
    assert source.text is not None and source.changes
    _spec, compiled, _data, _added = mujoco_load.load(source)
    assert mjb(compiled) == mjb(mujoco.MjSpec.from_file(original).compile())


def test_utf16_is_refused_saying_so(clean_scene, tmp_path):
    path = write(tmp_path, "wide.xml", "<mujoco/>".encode("utf-16"))
    with pytest.raises(build.ImportFailed, match="UTF-16.*UTF-8"):
        build.import_file(path, clean_scene)


# --------------------------------------------------------------------------- MuJoCo's arena


def test_many_static_bodies_import_and_simulate_with_a_sized_arena(clean_scene, tmp_path):
    """MuJoCo compiles 3000 static boxes but its arena estimate fails the first mj_forward
    ("increase <size memory>"); MJBlend sizes the arena and says so, keeping the file's value."""
    path = write(tmp_path, "boxes.xml", f"<mujoco><worldbody>{static_boxes(3000)}"
                 + BALL.format(name="ball") + "</worldbody></mujoco>")
    plain = mujoco.MjSpec.from_file(path).compile()
    with pytest.raises(mujoco.FatalError, match="increase <size memory"):
        mujoco.mj_forward(plain, mujoco.MjData(plain))
    result = build.import_file(path, clean_scene)
    assert result.counts["body"] == 3001
    assert any("arena" in w and "kept as written" in w for w in result.warnings)
    exported = os.path.join(str(tmp_path), "out.xml")
    assert bpy.ops.export_scene.mjcf(filepath=exported) == {"FINISHED"}
    assert "memory" not in open(exported).read()  # the file's own (unset) value, as written
    live = scene_session.start_simulation(clean_scene)
    live.simulate(0.05)
    assert live.latest.time == pytest.approx(0.05, abs=0.003)
    ball = next(o for o in result.collection.all_objects if o.mujoco.name == "ball")
    assert ball.matrix_world.translation.z < 1.0  # it fell


def test_nested_replicates_of_static_bodies_import(clean_scene, tmp_path):
    path = write(tmp_path, "rep.xml", '<mujoco><worldbody><replicate count="50" offset="1 0 0">'
                 '<replicate count="50" offset="0 1 0"><body><geom size=".1"/></body>'
                 "</replicate></replicate></worldbody></mujoco>")
    result = build.import_file(path, clean_scene)
    assert result.counts["body"] == 2500


# --------------------------------------------------------------------------- limits and cancel


def test_over_the_memory_limit_is_refused_quickly_and_leaves_nothing(clean_scene, tmp_path):
    """A 20000 x 20000 height field: MuJoCo needs about 6 GB for it."""
    path = write(tmp_path, "huge.xml", '<mujoco><asset><hfield name="h" nrow="20000" ncol="20000" '
                 'size="1 1 1 1"/></asset><worldbody><geom type="hfield" hfield="h"/></worldbody></mujoco>')
    before = counts()
    start = time.monotonic()
    job = build.start_load(path, limits_=mujoco_load.Limits(memory_bytes=1 << 30, seconds=120))
    job.run()
    with pytest.raises(build.ImportFailed, match=r"huge.xml: MuJoCo needs more than 1.0 GB .*Memory Limit"):
        build.import_loaded(job, clean_scene)
    assert time.monotonic() - start < 60
    assert counts() == before


@pytest.mark.parametrize("name, text", [
    ("million.xml", MILLION),  # MuJoCo's parse of it is quadratic: hours
    ("keys.xml", '<mujoco><size nkey="100000000"/><worldbody>' + BALL.format(name="ball")
     + "</worldbody></mujoco>"),  # MuJoCo makes 10^8 keyframes one by one: hours, ~10 GB
])
def test_over_the_time_limit_is_stopped_saying_so(clean_scene, tmp_path, name, text):
    path = write(tmp_path, name, text)
    before = counts()
    job = build.start_load(path, limits_=mujoco_load.Limits(memory_bytes=0, seconds=2.0))
    pid = job.probe.pid
    start = time.monotonic()
    job.run()
    assert time.monotonic() - start < 10
    with pytest.raises(build.ImportFailed, match=name + r": MuJoCo was still .* after 2 s .*Time Limit"):
        build.import_loaded(job, clean_scene)
    assert gone(pid)
    assert counts() == before
    assert pid not in (os.getpid(), mujoco_load.helper().pid)  # a child of the helper, not the helper
    assert build.import_file(write(tmp_path, "ball.xml", ONE_BALL), clean_scene).counts["body"] == 1


def test_cancel_kills_the_probe_and_adds_nothing(clean_scene, tmp_path):
    path = write(tmp_path, "million.xml", MILLION)
    before = counts()
    job = build.start_load(path, threaded=True, limits_=mujoco_load.Limits(0, 0))
    pid = job.probe.pid
    for _ in range(5):
        assert not job.poll()
        time.sleep(0.1)
    assert "MuJoCo reading million.xml" in job.status
    job.cancel()
    assert job.poll() and gone(pid)
    with pytest.raises(build.ImportFailed, match="million.xml: cancelled"):
        build.import_loaded(job, clean_scene)
    assert counts() == before


def test_the_load_runs_on_a_worker_thread_when_asked(clean_scene, tmp_path):
    path = write(tmp_path, "ball.xml", ONE_BALL)
    job = build.start_load(path, threaded=True)
    while not job.poll():
        time.sleep(0.01)
    assert job.thread is not None and not job.thread.is_alive()
    assert build.import_loaded(job, clean_scene).counts["body"] == 1


def test_the_probe_without_fork_gives_the_same_answers(clean_scene, tmp_path, monkeypatch):
    """Where there is no fork (macOS, Windows) the probe is this file run as a script."""
    monkeypatch.setattr(mujoco_load, "USE_FORK", False)
    good = write(tmp_path, "ball.xml", ONE_BALL)
    assert build.import_file(good, clean_scene).counts["body"] == 1
    bad = write(tmp_path, "bad.xml", '<mujoco><worldbody><geom type="mesh" mesh="none"/></worldbody>'
                                     "</mujoco>")
    with pytest.raises(build.ImportFailed, match="bad.xml: MuJoCo cannot compile it: .*none"):
        build.import_file(bad, clean_scene)


@pytest.mark.skipif(not mujoco_load.USE_FORK, reason="Linux: the helper forks the probes")
def test_the_probe_helper_runs_each_probe_in_a_child_forked_ahead(clean_scene, tmp_path):
    """The helper is started at register; each probe is its child, waiting before the
    request came, and ends after answering (reaped by the helper: no zombie here)."""
    path = write(tmp_path, "ball.xml", ONE_BALL)
    helper = mujoco_load.helper()
    assert helper.pid in children(os.getpid())
    waiting = waiting_child(helper.pid)
    assert probe_pid_of(path) == waiting
    assert eventually(lambda: gone(waiting))
    next_one = waiting_child(helper.pid)
    assert probe_pid_of(path) == next_one
    assert mujoco_load.helper() is helper


@pytest.mark.skipif(not mujoco_load.USE_FORK, reason="Linux: the helper forks the probes")
@pytest.mark.parametrize("victim", ["helper", "waiting child"])
def test_a_killed_probe_helper_or_waiting_child_is_replaced(clean_scene, tmp_path, victim):
    path = write(tmp_path, "ball.xml", ONE_BALL)
    helper = mujoco_load.helper()
    waiting = waiting_child(helper.pid)
    os.kill(helper.pid if victim == "helper" else waiting, 9)
    if victim == "helper":  # (its waiting child goes with it)
        assert build.import_file(path, clean_scene).counts["body"] == 1
        # (a helper forked from a Blender of several GB takes a while to end after SIGKILL:
        # the import may have been probed by a direct fork meanwhile; once it has ended,
        # the next helper() is a new one)
        assert eventually(lambda: mujoco_load.helper() is not helper)
        assert eventually(lambda: gone(helper.pid))
    else:
        assert probe_pid_of(path) not in (waiting, helper.pid)
        assert mujoco_load.helper() is helper
    assert eventually(lambda: gone(waiting))


def test_an_import_while_the_helper_starts_is_probed_all_the_same(clean_scene, tmp_path):
    """A new helper takes a moment to start (importing mujoco); an import meanwhile is
    probed by a process forked from here (Linux) or waits for it, and leaves no process."""
    mujoco_load.stop_helper()
    mujoco_load.start_helper()
    path = write(tmp_path, "ball.xml", ONE_BALL)
    pid = probe_pid_of(path)
    assert pid not in (os.getpid(), mujoco_load.helper().pid)
    assert build.import_file(path, clean_scene).counts["body"] == 1
    mujoco_load.stop_helper()
    assert gone(pid)
    mujoco_load.start_helper()


def test_nothing_of_the_probe_helper_is_left_after_unregister(tmp_path):
    helper = mujoco_load.helper()
    if mujoco_load.USE_FORK:
        waiting_child(helper.pid)  # the child waiting for the next request
    processes = [helper.pid] + children(helper.pid)
    assert len(processes) == (2 if mujoco_load.USE_FORK else 1)
    disable_addon()
    try:
        assert all(gone(pid) for pid in processes)  # (reaped: a zombie is not gone)
        assert mujoco_load._helper is None
    finally:
        enable_addon()
    assert mujoco_load.helper() is not helper


def test_the_probe_helper_without_fork_is_stopped_by_the_time_limit_and_replaced(clean_scene, tmp_path,
                                                                                  monkeypatch):
    """Where there is no fork the helper loads each request itself: the time limit kills
    it, and the next import starts another."""
    monkeypatch.setattr(mujoco_load, "USE_FORK", False)
    path = write(tmp_path, "million.xml", MILLION)
    job = build.start_load(path, limits_=mujoco_load.Limits(memory_bytes=0, seconds=2.0))
    helper = mujoco_load.helper()
    assert job.probe.pid == helper.pid
    job.run()
    with pytest.raises(build.ImportFailed, match=r"million.xml: MuJoCo was still .* after 2 s"):
        build.import_loaded(job, clean_scene)
    assert gone(helper.pid)
    good = write(tmp_path, "ball.xml", ONE_BALL)
    assert build.import_file(good, clean_scene).counts["body"] == 1
    assert mujoco_load.helper() is not helper


def test_the_import_operator_reports_a_limit_as_a_message(clean_scene, tmp_path):
    prefs = bpy.context.preferences.addons[ADDON].preferences
    path = write(tmp_path, "million.xml", MILLION)
    prefs.load_seconds = 1.0
    try:
        with pytest.raises(RuntimeError, match=r"million.xml: MuJoCo was still .*Load Time Limit"):
            bpy.ops.import_scene.mjcf(filepath=path)
    finally:
        prefs.load_seconds = 300.0


# --------------------------------------------------------------------------- not files


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_a_device_or_pipe_is_refused_without_reading_it(clean_scene, tmp_path, target):
    if target == "fifo":
        target = os.path.join(str(tmp_path), "pipe.xml")
        os.mkfifo(target)
    start = time.monotonic()
    with pytest.raises(build.ImportFailed, match="is not a regular file"):
        build.import_file(target, clean_scene)
    assert time.monotonic() - start < 5


def test_an_empty_path_is_refused(clean_scene):
    with pytest.raises(build.ImportFailed, match="no file given"):
        build.import_file("", clean_scene)


# --------------------------------------------------------------------------- height fields


def test_a_height_field_too_large_to_show_sample_for_sample_is_shown_coarser(clean_scene, tmp_path):
    path = write(tmp_path, "terrain.xml", '<mujoco><asset><hfield name="terrain" nrow="1500" ncol="1400" '
                 'size="10 10 1 .5"/></asset><worldbody><geom type="hfield" hfield="terrain"/>'
                 "</worldbody></mujoco>")
    result = build.import_file(path, clean_scene)
    mesh = bpy.data.meshes[next(m.name for m in bpy.data.meshes if "terrain" in m.name)]
    assert len(mesh.vertices) < 1100 * 1100
    (warning,) = [w for w in result.warnings if "terrain" in w]
    assert "1500 x 1400" in warning and "MuJoCo" in warning


def test_heights_too_many_to_keep_in_the_blend_are_refused_saying_what_to_do(clean_scene, tmp_path):
    """20000 x 20000 heights in the file (MuJoCo fills zeros in for nrow / ncol alone) would
    need ~13 GB of Python floats to read; above 4096 x 4096 the import says so, at once."""
    path = write(tmp_path, "big.xml", '<mujoco><asset><hfield name="terrain" nrow="4097" ncol="4097" '
                 'size="10 10 1 .5"/></asset><worldbody><geom type="hfield" hfield="terrain"/>'
                 "</worldbody></mujoco>")
    before = counts()
    with pytest.raises(build.ImportFailed, match=r"big.xml: height field 'terrain' has 4097 x 4097 heights"
                                                 r".* at most 16,777,216 .*PNG or binary file"):
        build.import_file(path, clean_scene)
    assert counts() == before


def test_an_infinite_plane_is_shown_like_mujocos_infinite_plane(clean_scene, tmp_path):
    """size="inf inf" is MuJoCo's own (it draws it as its zero-size infinite plane): finite
    vertices and texture coordinates, and the export keeps "inf"."""
    path = write(tmp_path, "plane.xml", '<mujoco><worldbody><geom type="plane" size="inf inf 0.1"/>'
                 "</worldbody></mujoco>")
    result = build.import_file(path, clean_scene)
    mesh = next(o for o in result.collection.all_objects if o.type == "MESH").data
    uv = np.zeros(2 * len(mesh.uv_layers[0].data))
    mesh.uv_layers[0].data.foreach_get("uv", uv)
    co = np.zeros(3 * len(mesh.vertices))
    mesh.vertices.foreach_get("co", co)
    assert np.isfinite(uv).all() and np.isfinite(co).all() and np.abs(co).max() > 0


def test_a_character_reference_to_no_character_is_read_as_a_replacement(clean_scene, tmp_path):
    """MuJoCo turns &#xD800; (a lone UTF-16 surrogate) into bytes that are not UTF-8."""
    path = write(tmp_path, "ref.xml", '<mujoco><worldbody><body name="a&#xD800;"><geom size="1"/></body>'
                 '<body name="caf&#233;"><geom size="1"/></body></worldbody></mujoco>')
    result = build.import_file(path, clean_scene)
    names = {o.mujoco.name for o in result.collection.all_objects if o.mujoco.kind == "BODY"}
    assert names == {"a\ufffd", "café"}
    assert any("ref.xml: 1 character reference to no character (&#xD800;)" in w for w in result.warnings)


def test_the_probe_keeps_a_hard_address_space_limit(tmp_path):
    """Under `ulimit -v` (a hard limit, which no process may raise) imports still work."""
    script = ("import resource, sys; sys.path.insert(0, 'tests'); "
              "resource.setrlimit(resource.RLIMIT_AS, (12 << 30, 12 << 30)); "
              "import bpy, addon_loader; addon_loader.enable_addon(); "
              "print(bpy.ops.import_scene.mjcf(filepath='examples/desk_toys.xml'))")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert "{'FINISHED'}" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]

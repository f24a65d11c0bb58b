"""Models uploaded to, and imported into, a served Blender scene (bpy module, real sockets):
the upload's MJCF is loaded under the importer's guard on the bridge's thread, imported
into the scene on the main thread (played here by the test: bridge_host.watch, as a
window's timer) and served with the scene's other roots; a model MuJoCo refuses changes
nothing; import_xml imports a file of this machine as a long job followed by its status."""

import os
import sys
import time

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import ROOT
from helpers import CORPUS, free_port
from test_bridge_cameras import on_main_thread

sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))
from wire_client import WireClient, upload_model  # noqa: E402

from mjblend.importer import build  # noqa: E402
from mjblend.live import bridge_host, scene_session  # noqa: E402
from mjblend.scan import scene_scan  # noqa: E402

DESK_TOYS = os.path.join(ROOT, "examples", "desk_toys.xml")
CUBE = os.path.join(CORPUS, "mujoco_model", "model", "cube", "cube_3x3x3.xml")  # (meshes and textures)
CAR = os.path.join(CORPUS, "mujoco_model", "model", "car", "car.xml")
needs_corpus = pytest.mark.skipif(not os.path.exists(CUBE), reason=f"no corpus at {CORPUS}")


@pytest.fixture
def served(clean_scene, tmp_path):
    build.import_file(DESK_TOYS, clean_scene)
    request_port = free_port()
    served = bridge_host.start(clean_scene, request_port=request_port, state_port=free_port(),
                               camera_port=free_port())
    served.host._uploads = str(tmp_path / "uploads")
    client = WireClient(request_port, timeout_ms=60000)
    assert client.hello()["op"] == "hello_ok"
    client.host = served.host
    yield client
    client.close()
    bridge_host.stop()
    scene_session.end_all()


def load(mjb: bytes) -> mujoco.MjModel:
    return mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": mjb})


@needs_corpus
def test_an_uploaded_model_joins_the_scene_and_is_served(served, tmp_path):
    scene = bpy.context.scene
    roots_before = [root.name for root in scene_scan.model_roots(scene)]
    reply = on_main_thread(lambda: upload_model(served, CUBE, chunk_bytes=32 << 10, step_mode="stepped"))
    assert reply["op"] == "upload_model_commit_ok", reply
    root = bpy.data.objects[reply["model_root"]]
    # (the scene's options are the scene's: the cube's own timestep is not taken, and the reply says so)
    assert any("timestep" in warning for warning in reply["warnings"]), reply["warnings"]
    assert [r.name for r in scene_scan.model_roots(scene)] == roots_before + [root.name]
    # the upload's folder stays with the scene: its meshes and textures are those files
    assert os.path.dirname(reply["folder"]) == str(tmp_path / "uploads")
    assert sorted(os.listdir(reply["folder"])) == sorted(["model.xml", *os.listdir(os.path.join(
        os.path.dirname(CUBE), "assets"))])
    # the scene recompiled: sessions of the old model expire; the new one has both roots
    assert served.call("get_state")["code"] == "session_expired"
    hello = served.hello()
    prefixes = {e["prefix"] for e in hello["entities"] if e["kind"] == "articulation"}
    assert {"desk_toys", reply["blueprint_short_name"]} <= prefixes
    model = load(hello["mjb"])
    cube = mujoco.MjModel.from_xml_path(CUBE)
    assert model.nmesh >= cube.nmesh and model.ntex >= cube.ntex
    assert reply["mjb"] == hello["mjb"] and (reply["nq"], reply["nu"]) == (model.nq, model.nu)
    # stepped as MuJoCo steps the served model, the cube's motors driven by name
    data = mujoco.MjData(model)
    served.call("reset")
    entity = reply["blueprint_short_name"]
    controls = np.random.default_rng(5).uniform(-0.05, 0.05, (20, cube.nu))
    index = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, f"{entity}_" + mujoco.mj_id2name(
        cube, mujoco.mjtObj.mjOBJ_ACTUATOR, a)) for a in range(cube.nu)]
    for row in controls:
        step = served.call("step", n_steps=1, per_articulation={entity: {"ctrl": row.tolist()}})
        data.ctrl[index] = row
        mujoco.mj_step(model, data)
    assert step["op"] == "step_ok", step
    qpos = step["arts"][entity]["qpos"]  # (the cube's joints: one run of the served qpos)
    joint = f"{entity}_" + mujoco.mj_id2name(cube, mujoco.mjtObj.mjOBJ_JOINT, 0)
    first = model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint)]
    assert len(qpos) == cube.nq and np.array_equal(qpos, data.qpos[first:first + cube.nq])
    assert step["time"] == data.time
    # include_assets: the scene with the upload, its textures read from the kept folder
    shipped = on_main_thread(lambda: served.call("hello", include_assets=True))
    assert shipped["op"] == "hello_ok", shipped
    again = mujoco.MjModel.from_xml_string(shipped["mjcf_compiled"], shipped["vfs_assets"])
    assert (again.nq, again.ntex, again.nmesh) == (model.nq, model.ntex, model.nmesh)
    assert np.array_equal(again.tex_data, model.tex_data)


def test_a_model_mujoco_refuses_changes_nothing_in_the_scene(served, tmp_path):
    scene = bpy.context.scene
    objects = set(bpy.data.objects.keys())
    model = served.host.runner().session.model
    broken = tmp_path / "broken.xml"
    broken.write_text('<mujoco><worldbody><geom type="mesh" mesh="nothing"/></worldbody></mujoco>')
    reply = on_main_thread(lambda: upload_model(served, str(broken)))
    assert reply["code"] == "import_failed" and "nothing" in reply["message"], reply
    assert set(bpy.data.objects.keys()) == objects and len(scene_scan.model_roots(scene)) == 1
    assert served.host.runner().session.model is model
    assert os.listdir(tmp_path / "uploads") == []
    assert served.call("get_state")["op"] == "get_state_ok"  # (the session goes on)


def test_import_xml_is_a_long_job_followed_by_its_status(served):
    path = CAR if os.path.exists(CAR) else DESK_TOYS
    started = on_main_thread(lambda: served.call("import_xml", path=path))
    assert started["op"] == "op_started", started
    deadline = time.monotonic() + 60
    status = served.call("op_status", job_id=started["job_id"])  # (answered without the main thread)
    while status["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, status
        bridge_host.watch()  # (the main thread's look: it runs the job)
        time.sleep(0.005)
        status = served.call("op_status", job_id=started["job_id"])
    assert status["op"] == "op_status_ok" and status["state"] == "done", status
    result = status["result"]
    assert result["op"] == "import_xml_ok" and result["imported_now"] is True
    assert result["blueprint_class_path"] in bpy.data.objects
    assert len(scene_scan.model_roots(bpy.context.scene)) == 2
    hello = served.hello()
    assert result["blueprint_short_name"] in {e["prefix"] for e in hello["entities"]}
    # a file that is not there: refused at once, nothing started
    missing = on_main_thread(lambda: served.call("import_xml", path=path + ".missing"))
    assert missing["code"] == "import_failed"


def test_a_scene_that_does_not_compile_with_the_import_loses_it_again(served, tmp_path):
    """MuJoCo loads the uploaded file, but the scene does not compile with it (here: a geom
    of the scene was given a negative mass in Blender since its last compile): every
    datablock the import made is removed, the served model and its sessions unchanged."""
    scene = bpy.context.scene
    geom = next(o for o in scene.objects if o.mujoco.kind == "GEOM" and o.mujoco.geom.type == "SPHERE")
    geom.mujoco.geom.mass = -1.0  # (MuJoCo refuses a negative mass)
    blocks = {name: set(getattr(bpy.data, name).keys()) for name in build.DATA_COLLECTIONS}
    model = served.host.runner().session.model
    ball = tmp_path / "ball.xml"
    ball.write_text('<mujoco model="ball"><worldbody><body><freejoint/><geom size="0.1"/></body>'
                    '</worldbody></mujoco>')
    reply = on_main_thread(lambda: upload_model(served, str(ball)))
    assert reply["code"] == "import_failed" and "negative" in reply["message"], reply
    assert {name: set(getattr(bpy.data, name).keys()) for name in build.DATA_COLLECTIONS} == blocks
    assert served.host.runner().session.model is model and served.host.live.error == ""
    assert os.listdir(tmp_path / "uploads") == []
    assert served.call("get_state")["op"] == "get_state_ok"


def test_a_hostile_upload_is_stopped_by_the_imports_guard(served, tmp_path):
    """10^8 keyframes: MuJoCo would take hours and ~10 GB. The upload's load runs under
    the import's guard (a probe process, here with a 2 s time limit), on the bridge's
    thread: it is stopped, Blender's scene never sees it, the upload's folder goes."""
    from mjblend.importer import mujoco_load
    served.host.import_limits = mujoco_load.Limits(memory_bytes=0, seconds=2.0)
    objects = set(bpy.data.objects.keys())
    hostile = tmp_path / "keys.xml"
    hostile.write_text('<mujoco><size nkey="100000000"/><worldbody><body><freejoint/><geom size="0.1"/>'
                       '</body></worldbody></mujoco>')
    reply = on_main_thread(lambda: upload_model(served, str(hostile)))
    assert reply["code"] == "import_failed" and "Time Limit" in reply["message"], reply
    assert set(bpy.data.objects.keys()) == objects and os.listdir(tmp_path / "uploads") == []
    assert served.call("get_state")["op"] == "get_state_ok"

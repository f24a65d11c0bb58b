"""URLab's model upload against a real Bridge serving a model without Blender: a model
with mesh assets uploaded, committed and stepped bit for bit as MuJoCo steps the same
file; every hostile or broken upload refused with URLab's code and its folder gone."""

import os
import time

import mujoco
import numpy as np
import pytest
from bridge_fixtures import DESK_TOYS
from wire_client import flat_model, manifest, send_blob, sha256, upload_model

from mjblend.bridge.uploads import Limits

# a tetrahedron and a cube as OBJ files in an assets folder the MJCF names (meshdir)
TETRA = b"v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
CUBE = b"".join(f"v {x} {y} {z}\n".encode() for x in (-.05, .05) for y in (-.05, .05) for z in (-.05, .05)) \
    + b"f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n"
MESHES = """<mujoco model="mesh toys">
  <compiler meshdir="assets"/>
  <option timestep="0.002"/>
  <asset>
    <mesh name="tetra" file="tetra.obj"/>
    <mesh name="cube" file="cube.obj"/>
  </asset>
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <body name="piece" pos="0 0 0.3">
      <freejoint name="free"/>
      <geom type="mesh" mesh="tetra" density="500"/>
    </body>
    <body name="arm" pos="0.3 0 0.2">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom type="mesh" mesh="cube"/>
    </body>
  </worldbody>
  <actuator><motor name="motor" joint="hinge" gear="1"/></actuator>
</mujoco>
"""


@pytest.fixture
def mesh_model(tmp_path):
    folder = tmp_path / "model"
    (folder / "assets").mkdir(parents=True)
    (folder / "assets" / "tetra.obj").write_bytes(TETRA)
    (folder / "assets" / "cube.obj").write_bytes(CUBE)
    path = folder / "mesh_toys.xml"
    path.write_text(MESHES)
    return str(path)


@pytest.fixture
def served(serve, tmp_path):
    """DESK_TOYS served, uploads staged in tmp_path/uploads."""
    return serve(DESK_TOYS, host_options={"uploads": str(tmp_path / "uploads")})


def staged(served) -> list:
    """What is left in the uploads folder."""
    folder = served.host.uploads_dir()
    return os.listdir(folder) if os.path.isdir(folder) else []


def test_an_uploaded_model_is_served_and_steps_as_mujoco_steps_its_file(served, mesh_model):
    client = served.client()
    old_model = served.host.session.model
    reply = upload_model(client, mesh_model, chunk_bytes=100)  # (several chunks a mesh)
    assert reply["op"] == "upload_model_commit_ok", reply
    assert reply["imported"] is True and reply["blueprint_short_name"] == "mesh_toys"
    assert staged(served) == []  # (the model is served from memory: nothing stays on disk)
    assert served.host.session.model is not old_model
    # the sessions of the old model expired; the step mode the manifest asked for holds
    assert client.call("get_state")["code"] == "session_expired"
    hello = client.hello()
    assert "mesh_toys" in {e.get("prefix", e.get("name")) for e in hello["entities"]}, hello["entities"]
    served_model = load(hello["mjb"])
    assert served_model.nmesh == 2 and (reply["nq"], reply["nu"]) == (served_model.nq, served_model.nu)
    assert reply["mjb"] == hello["mjb"]
    reference = mujoco.MjModel.from_xml_path(mesh_model)  # the file itself, as MuJoCo loads it
    assert np.array_equal(reference.mesh_vert, served_model.mesh_vert)
    data = mujoco.MjData(reference)
    client.call("reset")
    controls = np.random.default_rng(3).uniform(-1, 1, 200)
    for value in controls:
        step = client.call("step", n_steps=1, per_articulation={"mesh_toys": {"ctrl": [value]}})
        data.ctrl[:] = value
        mujoco.mj_step(reference, data)
    assert step["op"] == "step_ok", step
    block = step["arts"]["mesh_toys"]
    assert np.array_equal(block["qpos"], data.qpos) and np.array_equal(block["qvel"], data.qvel)
    assert step["time"] == data.time
    # include_assets: the uploaded model ships as MJCF with its meshes, whose folder is gone
    shipped = client.call("hello", include_assets=True)
    assert shipped["op"] == "hello_ok", shipped
    assert set(shipped["vfs_assets"]) == {"tetra.obj", "cube.obj"}
    again = mujoco.MjModel.from_xml_string(shipped["mjcf_compiled"], shipped["vfs_assets"])
    assert np.array_equal(again.mesh_vert, served_model.mesh_vert)


def load(mjb: bytes) -> mujoco.MjModel:
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".mjb") as handle:
        handle.write(mjb)
        handle.flush()
        return mujoco.MjModel.from_binary_path(handle.name)


def test_a_bad_hash_is_refused_and_the_upload_discarded(served, mesh_model):
    client = served.client()
    xml, assets = flat_model(mesh_model)
    opened = manifest(client, xml, assets)
    upload_id = opened["upload_id"]
    assert opened["need_xml"] and sorted(opened["need_assets"]) == ["cube.obj", "tetra.obj"]
    assert staged(served) == [upload_id]
    assert send_blob(client, upload_id, "xml", "model.xml", xml)["complete"] is True
    reply = send_blob(client, upload_id, "asset", "cube.obj", CUBE.replace(b"0.05", b"0.06"))
    assert reply["code"] == "hash_mismatch"
    assert staged(served) == []
    assert client.call("upload_model_commit", upload_id=upload_id)["code"] == "unknown_upload"
    # a bad hash of the MJCF, and a manifest whose hash is not one
    opened = manifest(client, xml, assets)
    assert send_blob(client, opened["upload_id"], "xml", "model.xml", xml + b" ")["code"] == "hash_mismatch"
    assert manifest(client, xml, assets, xml_sha256="12ab")["code"] == "bad_request"
    assert staged(served) == []


def test_oversize_blobs_and_uploads_are_refused(served, mesh_model):
    client = served.client()
    xml, assets = flat_model(mesh_model)
    # URLab's own limits, declared (nothing of that size is sent or allocated)
    limits = Limits()
    big = {"name": "big.obj", "sha256": sha256(b""), "size": limits.asset_bytes + 1}
    assert client.call("upload_model_manifest", xml_sha256=sha256(xml), assets=[big])["code"] == \
        "payload_too_large"
    assert manifest(client, xml, assets, total_bytes=limits.total_bytes + 1)["code"] == "payload_too_large"
    many = [{"name": f"{n}.obj", "sha256": sha256(b""), "size": 0} for n in range(limits.assets + 1)]
    assert client.call("upload_model_manifest", xml_sha256=sha256(xml), assets=many)["code"] == "bad_request"
    opened = manifest(client, xml, assets)
    reply = client.call("upload_model_chunk", upload_id=opened["upload_id"], kind="xml", offset=0,
                        total=limits.asset_bytes + 1, data=b"<")
    assert reply["code"] == "payload_too_large"
    assert staged(served) == []
    # small limits: a blob, the sum of the declared sizes, the asset count, a chunk past its blob
    served.bridge.dispatcher.uploads.limits = Limits(asset_bytes=len(CUBE) - 1, total_bytes=1000, assets=1)
    assert manifest(client, xml, {"cube.obj": CUBE})["code"] == "payload_too_large"
    assert manifest(client, xml, assets)["code"] == "bad_request"  # (two assets)
    served.bridge.dispatcher.uploads.limits = Limits(total_bytes=len(xml) + len(TETRA) - 1)
    opened = manifest(client, xml, {"tetra.obj": TETRA}, total_bytes=0)  # (a client that lies)
    assert opened["op"] == "upload_model_manifest_ok"
    assert send_blob(client, opened["upload_id"], "xml", "model.xml", xml)["code"] == "payload_too_large"
    served.bridge.dispatcher.uploads.limits = Limits()
    opened = manifest(client, xml, assets)
    reply = client.call("upload_model_chunk", upload_id=opened["upload_id"], kind="asset", name="cube.obj",
                        offset=len(CUBE) - 2, total=len(CUBE), data=b"xyz")
    assert reply["code"] == "bad_request"
    assert staged(served) == []


@pytest.mark.parametrize("name", ["../escape.obj", "/etc/passwd", "sub/dir.obj", "..", ".", "C:evil.obj",
                                  "a\\b.obj", "nul\x00.obj", "", "x..y.obj"])
def test_names_that_leave_the_upload_folder_are_refused(served, name, tmp_path):
    client = served.client()
    xml = b"<mujoco/>"
    entry = {"name": name, "sha256": sha256(b"x"), "size": 1}
    reply = client.call("upload_model_manifest", xml_sha256=sha256(xml), assets=[entry])
    assert reply["code"] == "bad_request", reply
    assert staged(served) == [] and not (tmp_path / "escape.obj").exists()
    twice = [{"name": n, "sha256": sha256(b"x"), "size": 1} for n in ("mesh.obj", "MESH.obj")]
    assert client.call("upload_model_manifest", xml_sha256=sha256(xml), assets=twice)["code"] == "bad_request"
    # an undeclared name in a chunk is refused too (and ends the upload)
    opened = client.call("upload_model_manifest", xml_sha256=sha256(xml), assets=[])
    reply = client.call("upload_model_chunk", upload_id=opened["upload_id"], kind="asset", name=name,
                        offset=0, total=1, data=b"x")
    assert reply["code"] == "bad_request"
    assert staged(served) == []


def test_too_many_open_uploads_are_refused(served):
    client = served.client()
    served.bridge.dispatcher.uploads.limits = Limits(open_uploads=3)
    xml = b"<mujoco/>"
    ids = [client.call("upload_model_manifest", xml_sha256=sha256(xml))["upload_id"] for _ in range(3)]
    assert client.call("upload_model_manifest", xml_sha256=sha256(xml))["code"] == "bad_request"
    assert sorted(staged(served)) == sorted(ids)
    # a commit before every blob came ends the upload; a place is free again
    assert client.call("upload_model_commit", upload_id=ids[0])["code"] == "bad_request"
    assert client.call("upload_model_manifest", xml_sha256=sha256(xml))["op"] == "upload_model_manifest_ok"
    served.bridge.stop()  # (the bridge's stop discards what is open)
    assert staged(served) == []


def test_an_abandoned_upload_is_swept_after_its_time(served, mesh_model):
    client = served.client()
    served.bridge.dispatcher.uploads.limits = Limits(ttl=0.2)
    xml, assets = flat_model(mesh_model)
    opened = manifest(client, xml, assets)
    send_blob(client, opened["upload_id"], "xml", "model.xml", xml)
    assert staged(served) == [opened["upload_id"]]
    deadline = time.monotonic() + 10
    while staged(served) and time.monotonic() < deadline:  # (no client comes back: the sweeper)
        time.sleep(0.02)
    assert staged(served) == []
    reply = send_blob(client, opened["upload_id"], "asset", "cube.obj", CUBE)
    assert reply["code"] == "unknown_upload"


def test_a_model_mujoco_refuses_is_not_served(served, mesh_model, tmp_path):
    client = served.client()
    before = served.host.session.model
    broken = tmp_path / "model" / "broken.xml"
    broken.write_text(MESHES.replace('mesh="cube"', 'mesh="sphere"'))
    reply = upload_model(client, str(broken))
    assert reply["code"] == "import_failed" and "mesh 'sphere' not found" in reply["message"], reply
    assert served.host.session.model is before and staged(served) == []
    assert client.call("get_state")["op"] == "get_state_ok"  # (the session goes on)
    # an asset MuJoCo cannot read (a mesh of no faces it can use)
    (tmp_path / "model" / "assets" / "cube.obj").write_bytes(b"not a mesh\n")
    reply = upload_model(client, mesh_model)
    assert reply["code"] == "import_failed", reply
    assert served.host.session.model is before and staged(served) == []


def test_import_xml_serves_a_file_of_this_machine(served, mesh_model):
    client = served.client()
    reply = client.call("import_xml", path=mesh_model)
    assert reply["op"] == "import_xml_ok", reply
    assert (reply["blueprint_short_name"], reply["imported_now"]) == ("mesh_toys", True)
    assert served.host.session.model.nmesh == 2
    client.hello()
    assert client.call("import_xml", path=mesh_model + ".missing")["code"] == "import_failed"
    assert client.call("import_xml")["code"] == "missing_field"


def test_a_json_client_sends_chunks_as_base64(served, mesh_model):
    """URLab's JSON clients send a chunk's bytes as base64 text (under `data`, or
    `data__b64__` as URLab's server reads them)."""
    import base64
    dispatcher = served.bridge.dispatcher
    xml, assets = flat_model(mesh_model)
    opened = dispatcher.handle({"op": "upload_model_manifest", "xml_sha256": sha256(xml), "assets": [
        {"name": name, "sha256": sha256(data), "size": len(data)} for name, data in assets.items()]})
    upload_id = opened["upload_id"]
    half = len(xml) // 2
    for key, offset, part in (("data", 0, xml[:half]), ("data__b64__", half, xml[half:])):
        reply = dispatcher.handle({"op": "upload_model_chunk", "upload_id": upload_id, "kind": "xml",
                                   "offset": offset, "total": len(xml), key: base64.b64encode(part).decode()})
    assert reply["complete"] is True and reply["received"] == len(xml)
    reply = dispatcher.handle({"op": "upload_model_chunk", "upload_id": upload_id, "kind": "asset",
                               "name": "cube.obj", "offset": 0, "total": len(CUBE), "data": "not base64!"})
    assert reply["code"] == "bad_request" and staged(served) == []


def test_a_commit_under_another_clients_lease_keeps_the_holders_step_mode(served, mesh_model):
    """URLab's commit applies the manifest's step_mode; a server another client leased
    keeps its mode (only the holder changes it): the model is served, the reply says so."""
    holder, other = served.client(), served.client()
    assert holder.call("acquire_lease", ttl_s=60.0, owner="holder")["op"] == "acquire_lease_ok"
    reply = upload_model(other, mesh_model, step_mode="stepped")
    assert reply["op"] == "upload_model_commit_ok", reply
    assert any("not applied" in warning for warning in reply["warnings"]), reply["warnings"]
    assert served.bridge.dispatcher.mode == "live" and staged(served) == []


def test_a_recording_of_the_old_model_is_stopped_and_kept(served, mesh_model):
    client = served.client()
    client.call("set_mode", mode="direct")
    assert client.call("recording_start", name="before")["op"] == "recording_start_ok"
    client.call("step", n_steps=5)
    assert upload_model(client, mesh_model)["op"] == "upload_model_commit_ok"
    client.hello()
    assert client.call("replay_list_sessions")["sessions"] == ["before"]
    assert client.call("recording_start", name="after")["op"] == "recording_start_ok"  # (none running)

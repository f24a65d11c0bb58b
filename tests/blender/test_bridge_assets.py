"""URLab's `include_assets` for a served Blender scene (bpy module, real sockets): the
hello carries the exporter's MJCF of the served model and every asset file by bare
name, which a client on another MuJoCo version compiles instead of loading the `.mjb`.
An untouched import compiles to the served model bit for bit, entity prefixes
included; an asset gone from disk is answered with URLab's `path_not_readable`.

The MJCF is written on Blender's main thread while the bridge's thread waits: the
bpy module fires no timers, so the test's main thread does what a window's timer
does (bridge_host.watch) while a client thread says hello (`on_main_thread`)."""

import os
import shutil
import sys

import mujoco
import numpy as np
import pytest
from addon_loader import ROOT
from helpers import CORPUS, free_port
from test_bridge_cameras import on_main_thread

sys.path.insert(0, os.path.join(ROOT, "tests", "bridge"))
from wire_client import WireClient  # noqa: E402

from mjblend.importer import build  # noqa: E402
from mjblend.live import bridge_host, scene_session  # noqa: E402

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
DRONE = os.path.join(CORPUS, "menagerie", "skydio_x2", "scene.xml")  # an OBJ mesh and a PNG texture
needs_corpus = pytest.mark.skipif(not os.path.exists(DRONE), reason=f"no corpus at {CORPUS}")


# the asset files' paths the model keeps (and the buffer they take): URLab's protocol
# names every file by its bare name, so these differ by exactly that (`file_paths`)
PATH_FIELDS = ("paths", "npaths", "nbuffer")


def differences(served: mujoco.MjModel, loaded: mujoco.MjModel) -> list[str]:
    """What differs, bit for bit: every array and size of the model, and of its
    option, visual and statistic structs, but the files' paths (PATH_FIELDS) and the
    compiler's `signature`, which an mjb does not keep (MuJoCo 4.0.1 loads it as 0:
    `served_signature` checks it)."""
    found = []

    def compare(a, b, where):
        for name in dir(a):
            if name.startswith("_") or name in ("signature", *PATH_FIELDS) or name.endswith("_pathadr"):
                continue
            value = getattr(a, name, None)
            other = getattr(b, name, None)
            if isinstance(value, np.ndarray):
                if not np.array_equal(value, other, equal_nan=True):
                    found.append(where + name)
            elif isinstance(value, (int, float)) and not isinstance(value, bool) and value != other:
                found.append(f"{where}{name} {value} != {other}")
    compare(served, loaded, "")
    compare(served.opt, loaded.opt, "opt.")
    compare(served.stat, loaded.stat, "stat.")
    for group in ("global_", "quality", "headlight", "map", "scale", "rgba"):
        compare(getattr(served.vis, group), getattr(loaded.vis, group), f"vis.{group}.")
    return found


def file_paths(model: mujoco.MjModel) -> list[str]:
    """Each mesh's, height field's, skin's and texture's file, as the model keeps it."""
    paths = bytes(model.paths)
    out = []
    for kind in ("mesh", "hfield", "skin", "tex"):
        for start in getattr(model, f"{kind}_pathadr", []):
            if start >= 0:
                out.append(paths[start:paths.index(b"\0", start)].decode())
    return out


def served_signature() -> int:
    return bridge_host.current().host.live.runner.session.model.signature


def serve(scene, path):
    build.import_file(path, scene)
    request_port = free_port()
    bridge_host.start(scene, request_port=request_port, state_port=free_port(), camera_port=free_port())
    return WireClient(request_port)


def hello_with_assets(client):
    return on_main_thread(lambda: client.hello(include_assets=True))


@pytest.fixture
def stop_bridge():
    yield
    bridge_host.stop()
    scene_session.end_all()


@needs_corpus
@pytest.mark.parametrize("path", [HUMANOID, DRONE], ids=["humanoid", "skydio_x2"])
def test_an_untouched_import_ships_as_mjcf_that_compiles_to_the_served_model(clean_scene, stop_bridge, path):
    client = serve(clean_scene, path)
    try:
        reply = hello_with_assets(client)
    finally:
        client.close()
    assert reply["op"] == "hello_ok", reply
    served = mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": reply["mjb"]})
    assets = reply["vfs_assets"]
    assert all(name == os.path.basename(name) for name in assets)  # bare names, as URLab ships them
    text = reply["mjcf_compiled"]
    assert "meshdir" not in text and "texturedir" not in text
    # what URLab's client does when the mjb does not load (client.py _load_xml_with_assets)
    loaded = mujoco.MjModel.from_xml_string(text, assets)
    assert differences(served, loaded) == []
    assert loaded.signature == served_signature()
    assert file_paths(loaded) == [os.path.basename(p) for p in file_paths(served)]
    (prefix,) = [e["prefix"] for e in reply["entities"] if e["kind"] == "articulation"]
    bodies = [mujoco.mj_id2name(loaded, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(1, loaded.nbody)]
    assert bodies and all(name.startswith(prefix + "_") for name in bodies)
    if path == DRONE:  # the file's own mesh and texture, byte for byte
        folder = os.path.join(os.path.dirname(path), "assets")
        assert sorted(assets) == sorted(os.listdir(folder))
        for name, data in assets.items():
            with open(os.path.join(folder, name), "rb") as handle:
                assert data == handle.read()


@needs_corpus
def test_the_ship_follows_the_served_options(clean_scene, stop_bridge):
    """A client's set_sim_options is what the served model runs with: the MJCF has it."""
    client = serve(clean_scene, HUMANOID)
    try:
        client.hello()
        changed = client.call("set_sim_options", options={"timestep": 0.0025, "iterations": 7})
        assert changed["op"] == "set_sim_options_ok", changed
        reply = hello_with_assets(client)
    finally:
        client.close()
    served = mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": reply["mjb"]})
    loaded = mujoco.MjModel.from_xml_string(reply["mjcf_compiled"], reply["vfs_assets"])
    assert loaded.opt.timestep == 0.0025 and loaded.opt.iterations == 7
    assert differences(served, loaded) == []


@needs_corpus
def test_an_asset_gone_from_disk_is_answered_clearly(clean_scene, stop_bridge, tmp_path):
    folder = tmp_path / "skydio_x2"
    shutil.copytree(os.path.dirname(DRONE), folder)
    client = serve(clean_scene, str(folder / "scene.xml"))
    try:
        os.remove(folder / "assets" / "X2_lowpoly.obj")
        reply = hello_with_assets(client)
        assert reply["op"] == "error" and reply["code"] == "path_not_readable", reply
        assert "X2_lowpoly.obj" in reply["message"]
        assert client.hello()["op"] == "hello_ok"  # (the bridge serves on)
    finally:
        client.close()

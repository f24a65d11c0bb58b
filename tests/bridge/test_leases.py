"""Sharing one server among URLab clients (bridge/leases.py, bridge/registry.py), two
or three clients of the documented protocol on a real Bridge: the farm lease URLab's
pool takes (refused to a second client, released, expiring when idle, expiring
while a step is in flight), the registry entry URLab's pool discovers, and clients
fighting over an entity's controls."""

import datetime
import glob
import json
import os
import time

import mujoco
import numpy as np
import pytest
from bridge_fixtures import DESK_TOYS, Served

from mjblend.bridge import registry

OWNED = "desk_toys"  # the model root's entity: the `swing` actuator, and the free bodies under it


class Clock:
    """The leases' clock, set by the test (URLab's servers take a test clock the same way)."""

    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


def busy(served) -> bool:
    """What URLab's pool reads: hello's instance block, from a client of its own."""
    probe = served.client(hello=False)
    return probe.hello()["instance"]["busy"]


def test_a_lease_is_taken_refused_to_a_second_client_and_released(serve):
    served = serve(DESK_TOYS)
    first, second = served.client(), served.client()
    ops = {op["name"]: op for op in first.call("meta")["ops"]}
    assert ops["acquire_lease"]["category"] == ops["release_lease"]["category"] == "no_manager"
    assert ops["acquire_lease"]["namespace"] == "farm"
    assert busy(served) is False

    assert first.call("acquire_lease", ttl_s=0.0)["code"] == "bad_value"  # (refused: nothing taken)
    assert busy(served) is False
    lease = first.call("acquire_lease", ttl_s=60, owner="pool-a")
    assert lease["op"] == "acquire_lease_ok" and lease["ttl_s"] == 60 and lease["owner"] == "pool-a"
    assert len(lease["lease_id"]) == 36  # (a GUID with hyphens, as URLab's)
    assert busy(served) is True

    refused = second.call("acquire_lease", ttl_s=60)
    assert refused["op"] == "error" and refused["code"] == "busy"  # (URLabPool.lease moves on)
    assert refused["lease_id"] == lease["lease_id"]
    assert first.call("acquire_lease")["code"] == "busy"  # (one lease at a time, the holder's too)
    # a lease guards nothing but itself: the other client is served as before
    assert second.call("step", n_steps=1)["op"] == "step_ok"
    # release takes the lease's id
    assert second.call("release_lease")["code"] == "bad_request"
    assert second.call("release_lease", lease_id="not-it")["code"] == "bad_request"
    assert busy(served) is True
    assert first.call("release_lease", lease_id=lease["lease_id"]) == {"op": "release_lease_ok"}
    assert busy(served) is False
    assert first.call("release_lease", lease_id=lease["lease_id"])["code"] == "bad_request"

    again = second.call("acquire_lease", ttl_s=5)
    assert again["op"] == "acquire_lease_ok" and again["lease_id"] != lease["lease_id"]
    assert again["owner"] == second.session_id  # (no owner given: the session holds it)


def test_only_the_holder_changes_the_step_mode_while_leased(serve):
    """URLab's client sets its step mode when it connects and freerun when it closes: a
    pool client refused `busy` must not switch the holder's server under it."""
    served = serve(DESK_TOYS)
    holder, other = served.client(), served.client()
    holder.call("set_mode", mode="stepped")
    lease = holder.call("acquire_lease", ttl_s=60)
    refused = other.call("set_mode", mode="freerun")
    assert refused["code"] == "mode_locked_by_server"  # (URLab's client warns, and goes on)
    assert other.call("set_mode", mode="stepped")["op"] == "set_mode_ok"  # (no change: served)
    assert other.call("step", n_steps=1, mode="stepped")["op"] == "step_ok"  # (still stepped)
    assert holder.call("set_mode", mode="statepushed")["current_mode"] == "statepushed"
    holder.call("release_lease", lease_id=lease["lease_id"])
    assert other.call("set_mode", mode="freerun")["current_mode"] == "freerun"


def test_an_idle_lease_ends_after_its_ttl(serve):
    served = serve(DESK_TOYS)
    holder, other = served.client(), served.client()
    lease = holder.call("acquire_lease", ttl_s=0.3)
    assert lease["op"] == "acquire_lease_ok"
    time.sleep(0.4)  # (the holder sends nothing for longer than its ttl_s: real time)
    assert busy(served) is False
    assert holder.call("release_lease", lease_id=lease["lease_id"])["code"] == "bad_request"
    assert other.call("acquire_lease", ttl_s=60)["op"] == "acquire_lease_ok"


def test_the_holders_requests_renew_its_lease_and_polling_does_not(serve):
    served = serve(DESK_TOYS)
    clock = served.bridge.dispatcher.leases.clock = Clock(100.0)
    holder, other = served.client(), served.client()
    holder.call("set_mode", mode="direct")
    assert holder.call("acquire_lease", ttl_s=5)["op"] == "acquire_lease_ok"
    clock.now = 104.0
    assert holder.call("step", n_steps=1)["op"] == "step_ok"  # (activity: idle from 104 on)
    clock.now = 108.0
    assert busy(served) is True  # (past 100 + 5, but only 4 s idle)
    assert other.call("step", n_steps=1)["op"] == "step_ok"  # (another client's requests renew nothing)
    clock.now = 108.5
    holder.call("meta")  # (nor do discovery and status polls, the holder's included)
    assert holder.call("acquire_lease")["code"] == "busy"
    clock.now = 109.0
    assert busy(served) is True  # (5 s idle: not past its ttl_s)
    clock.now = 109.01
    assert busy(served) is False


def test_a_lease_that_expires_mid_step(serve):
    """The TTL runs out while the holder's step is in flight (the leases' clock moved on
    inside the step): the step finishes and is answered (mj_step bit for bit); the lease
    is gone after it, the holder's next step is served and does not bring it back, and
    another client may take the server."""
    served = serve(DESK_TOYS)
    dispatcher = served.bridge.dispatcher
    clock = dispatcher.leases.clock = Clock(100.0)
    holder, other = served.client(), served.client()
    model = mujoco.MjModel.from_xml_path(DESK_TOYS)
    data = mujoco.MjData(model)
    holder.call("set_mode", mode="direct")
    holder.call("reset")
    lease = holder.call("acquire_lease", ttl_s=5.0)
    clock.now = 104.0

    publish, during = dispatcher.on_state, []

    def slow_step(state):  # (called in the step, after its physics, before its reply)
        if not during:
            during.append(dispatcher.leases.lease)  # (held, renewed when the step arrived)
            clock.now = 110.0  # (6 s pass while the step runs: past the lease's ttl_s)
        publish(state)
    dispatcher.on_state = slow_step

    reply = holder.call("step", n_steps=20, per_articulation={OWNED: {"ctrl": [0.5]}})
    assert during[0] is not None and during[0].id == lease["lease_id"] and during[0].last == 104.0
    assert reply["op"] == "step_ok"
    data.ctrl[:] = 0.5
    for _ in range(20):
        mujoco.mj_step(model, data)
    assert reply["step"] == 20 and reply["time"] == data.time
    served_qpos = [reply["arts"][prefix]["qpos"] for prefix in ("desk_toys_box", "desk_toys_ball")]
    assert np.array_equal(np.concatenate(served_qpos), data.qpos[:14])  # (the two free bodies)
    # the holder's next request, at once: served (a lease guards no step), and it does not
    # bring the lease back (it had ended when the request arrived)
    assert holder.call("step", n_steps=1)["op"] == "step_ok"
    assert busy(served) is False
    assert holder.call("release_lease", lease_id=lease["lease_id"])["code"] == "bad_request"
    assert other.call("acquire_lease", ttl_s=60)["op"] == "acquire_lease_ok"


def read_like_urlabs_pool(directory: str) -> list[dict]:
    """The entries URLab's pool.read_registry keeps: `*.json` that parse, of a live
    process, written within 30 s."""
    found = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path, encoding="utf-8") as entry_file:
            entry = json.load(entry_file)
        try:
            os.kill(int(entry["pid"]), 0)
        except ProcessLookupError:
            continue
        if time.time() - os.path.getmtime(path) <= 30.0:
            found.append(dict(entry, path=path))
    return found


def wait_until(condition, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_registry_entry_urlabs_pool_discovers(tmp_path):
    served = Served(DESK_TOYS, registry_dir=str(tmp_path))
    try:
        entry_path = served.bridge.registry.path
        assert os.path.basename(entry_path) == f"mjblend-{served.request_port}_{os.getpid()}.json"
        [entry] = read_like_urlabs_pool(str(tmp_path))
        assert (entry["step_port"], entry["state_port"]) == (served.request_port, served.state_port)
        assert entry["pid"] == os.getpid() and entry["host"] == "127.0.0.1" and entry["index"] == 0
        assert entry["busy"] is False and entry["manager_present"] is True
        assert entry["instance_id"] == f"mjblend-{served.request_port}"
        assert entry["capabilities"] == ["render_sync", "stream_cameras", "model_upload"]
        datetime.datetime.fromisoformat(entry["registry_written_at"])
        client = served.client()
        assert client.hello()["instance"]["instance_id"] == entry["instance_id"]
        assert registry.REFRESH < 30.0  # (URLab's pool drops an entry older than 30 s)

        # taken: rewritten busy at once (URLabPool.discover then skips it)
        lease = client.call("acquire_lease", ttl_s=60)
        assert wait_until(lambda: read_like_urlabs_pool(str(tmp_path))[0]["busy"] is True)
        client.call("release_lease", lease_id=lease["lease_id"])
        assert wait_until(lambda: read_like_urlabs_pool(str(tmp_path))[0]["busy"] is False)

        # refreshed on its own, every `period` seconds
        served.bridge.registry.period = 0.05
        served.bridge.registry.wake()
        writes = served.bridge.registry.writes
        assert wait_until(lambda: served.bridge.registry.writes >= writes + 3)
        assert served.bridge.registry.problem == ""
    finally:
        served.close()
    assert os.listdir(tmp_path) == []  # (removed on stop, nothing half-written left)
    assert not any(t.name == "mjblend-registry" for t in __import__("threading").enumerate())


def test_the_registry_folder_is_urlabs(monkeypatch, tmp_path):
    monkeypatch.setenv("URLAB_REGISTRY_DIR", str(tmp_path / "farm"))
    assert registry.default_directory() == str(tmp_path / "farm")
    monkeypatch.delenv("URLAB_REGISTRY_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    if os.name != "nt":
        assert registry.default_directory() == str(tmp_path / "cache" / "URLab" / "registry")
    served = Served(DESK_TOYS, registry_dir=False)  # (none asked for: none written)
    try:
        assert served.bridge.registry is None and not os.path.exists(tmp_path / "cache")
    finally:
        served.close()


def state_of(client) -> dict:
    return client.call("get_state", observations="full")


def test_two_clients_fighting_over_control(serve):
    served = serve(DESK_TOYS)
    first, second = served.client(), served.client()
    first.call("set_mode", mode="direct")
    assert first.call("claim_control", articulation="nobody")["code"] == "unknown_articulation"
    assert first.call("claim_control", articulation=OWNED, ttl_s=-1.0)["code"] == "bad_value"
    claim = first.call("claim_control", articulation=OWNED)
    assert claim == {"op": "claim_control_ok", "articulation": OWNED, "owner": first.session_id, "ttl_s": 0.0}
    assert first.call("claim_control", articulation=OWNED)["op"] == "claim_control_ok"  # (its own again)

    refused = second.call("claim_control", articulation=OWNED)
    assert refused["code"] == "control_claimed" and refused["owner"] == first.session_id
    # the box is a free body under the claimed root: claimed with it
    assert second.call("claim_control", articulation="desk_toys_box")["code"] == "control_claimed"

    before = state_of(first)
    writes = [
        ("step", {"n_steps": 5, "per_articulation": {OWNED: {"ctrl": [0.9]}}}),
        ("step", {"n_steps": 5, "per_articulation": {OWNED: {"ctrl_map": {"swing": 0.9}}}}),
        ("step", {"n_steps": 5, "per_articulation": {"desk_toys_box": {
            "xfrc_applied": {"desk_toys_box": [0.0, 0.0, 50.0, 0.0, 0.0, 0.0]}}}}),
        ("set_qpos", {"target": "desk_toys_box", "qpos": [0.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0]}),
        ("set_mocap_pose", {"body": "hand", "pos": [0.3, 0.3, 0.9]}),  # (a body of the claimed root)
        ("configure_controller", {"articulation": OWNED, "params": {"kp": {"swing": 10.0}}}),
        ("set_twist", {"articulation": OWNED, "linear": [0.5, 0.0, 0.0]}),
        ("set_control_source", {"articulation": OWNED, "source": "ui"}),
        ("set_control_source", {"source": "ui"}),  # (every articulation's: the claimed one's too)
    ]
    controller = first.call("configure_controller", articulation=OWNED, params={})
    hand = first.call("read_mocap_pose", body="hand")
    for op, request in writes:
        reply = second.call(op, **request)
        assert reply["code"] == "not_control_owner" and reply["owner"] == first.session_id, (op, reply)
    after = state_of(first)
    assert after["step"] == before["step"] and after["time"] == before["time"]  # (nothing changed)
    for prefix in (OWNED, "desk_toys_box"):
        assert after["arts"][prefix] == before["arts"][prefix]
    assert first.call("read_mocap_pose", body="hand")["pos"] == hand["pos"]
    assert first.call("configure_controller", articulation=OWNED, params={}) == controller
    assert second.call("release_control", articulation=OWNED)["code"] == "not_control_owner"

    # observation is never gated; an unclaimed entity takes anyone's writes
    assert second.call("step", n_steps=2)["op"] == "step_ok"
    assert second.call("step", n_steps=1, per_articulation={OWNED: {}})["op"] == "step_ok"
    assert second.call("set_qpos", target="desk_toys_ball",
                       qpos=[0.3, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0])["code"] == "not_control_owner"  # (under it)
    # the owner's controls are applied
    owned = first.call("step", n_steps=1, per_articulation={OWNED: {"ctrl": [0.7]}})
    assert owned["op"] == "step_ok" and owned["arts"][OWNED]["ctrl"] == [0.7]

    # released by its owner: the other client's controls go through
    assert first.call("release_control", articulation=OWNED) == {"op": "release_control_ok",
                                                                 "articulation": OWNED}
    assert first.call("release_control", articulation=OWNED)["owner"] == "(unclaimed)"
    taken = second.call("step", n_steps=1, per_articulation={OWNED: {"ctrl": [-0.4]}})
    assert taken["op"] == "step_ok" and taken["arts"][OWNED]["ctrl"] == [-0.4]

    # force takes a claim from its owner
    assert second.call("claim_control", articulation=OWNED)["op"] == "claim_control_ok"
    assert first.call("claim_control", articulation=OWNED, force=True)["owner"] == first.session_id
    assert second.call("step", per_articulation={OWNED: {"ctrl": [0.1]}})["code"] == "not_control_owner"


def test_control_owner_names_the_owner_and_claims_expire(serve):
    served = serve(DESK_TOYS)
    clock = served.bridge.dispatcher.leases.clock = Clock(0.0)
    policy, other = served.client(), served.client()
    policy.call("set_mode", mode="direct")
    claim = policy.call("claim_control", articulation=OWNED, ttl_s=2.0, control_owner="policy")
    assert claim["owner"] == "policy" and claim["ttl_s"] == 2.0
    ctrl = {OWNED: {"ctrl": [0.2]}}
    # the owner is the name, not the session: the same client without it is another owner
    assert policy.call("step", per_articulation=ctrl)["code"] == "not_control_owner"
    assert other.call("step", per_articulation=ctrl, control_owner="policy")["op"] == "step_ok"

    clock.now = 1.5
    assert other.call("step", per_articulation=ctrl)["code"] == "not_control_owner"
    assert policy.call("step", per_articulation=ctrl, control_owner="policy")["op"] == "step_ok"  # (renews)
    clock.now = 3.0
    assert other.call("step", per_articulation=ctrl)["code"] == "not_control_owner"  # (1.5 s idle)
    clock.now = 3.6
    assert other.call("step", per_articulation=ctrl)["op"] == "step_ok"  # (2.1 s idle: it ended)
    assert other.call("claim_control", articulation=OWNED)["op"] == "claim_control_ok"


def test_a_puppet_step_is_refused_while_another_client_holds_a_claim(serve):
    served = serve(DESK_TOYS)
    owner, puppeteer = served.client(), served.client()
    model = mujoco.MjModel.from_xml_path(DESK_TOYS)
    puppeteer.call("set_mode", mode="puppet")
    owner.call("claim_control", articulation="desk_toys_ball")
    pose = model.qpos0.copy()
    pose[2] += 0.25
    before = state_of(owner)
    refused = puppeteer.call("step", qpos=pose.tolist())
    assert refused["code"] == "not_control_owner" and refused["owner"] == owner.session_id
    assert state_of(owner)["arts"] == before["arts"]
    pushed = owner.call("step", qpos=pose.tolist())
    assert pushed["op"] == "step_ok" and pushed["arts"]["desk_toys_box"]["qpos"][2] == pytest.approx(pose[2])

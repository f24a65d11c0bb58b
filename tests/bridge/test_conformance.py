"""Conformance with URLab's protocol, op by op, against a real Bridge over ZMQ.

data/urlab_ops.json is every op URLab's server knows (its newest dispatcher,
its editor's handlers, its client and its protocol reference; the file says
which version of each). For every op: never `unknown_op`; an op MJBlend serves
is listed by `meta`, answers `<op>_ok` with the reply fields URLab's server
sends and its newest client reads, and refuses a request without URLab's
required fields (`missing_field`); an op MJBlend does not serve is answered
`unsupported` with the reason `meta` gives for it. The state stream's message
is checked against what URLab's client and policy tools read."""

import hashlib
import json
import os
import time

import mujoco
from bridge_fixtures import DESK_TOYS

TABLE = json.load(open(os.path.join(os.path.dirname(__file__), "data", "urlab_ops.json")))
OPS = {op["name"]: op for op in TABLE["ops"]}


def cameras_of(hello: dict) -> list[str]:
    names = [name for entity in hello["entities"] for name in entity.get("camera_topics", {})]
    return names + list(hello.get("global_cameras", {}))


# What each op MJBlend serves is sent, in an order that makes each meaningful on
# examples/desk_toys.xml (a mocap hand, free bodies, a keyframe, a camera): fields
# beyond URLab's required ones, or made from earlier replies (`seen`).
SEQUENCE = [
    ("set_mode", lambda seen: {"mode": "direct"}),
    ("step", lambda seen: {"n_steps": 5}),
    ("forward", lambda seen: {}),
    ("reset", lambda seen: {"keyframe_name": "raised"}),
    ("set_paused", lambda seen: {"paused": True}),  # (Play would hand the simulation back: live mode)
    ("set_sim_speed", lambda seen: {"percent": 100.0}),
    ("set_qpos", lambda seen: {"target": "desk_toys_box",
                               "qpos": seen["forward"]["arts"]["desk_toys_box"]["qpos"]}),
    ("set_mocap_pose", lambda seen: {"body": "hand", "pos": [0.0, -0.2, 0.45]}),
    ("read_mocap_pose", lambda seen: {"body": "hand"}),
    ("get_contacts", lambda seen: {"max_contacts": 16}),
    ("list_keyframes", lambda seen: {}),
    ("set_sim_options", lambda seen: {"options": {"iterations": 50}}),
    ("configure_controller", lambda seen: {"articulation": "desk_toys", "params": {"kp": {"swing": 2.0}}}),
    ("set_twist", lambda seen: {"articulation": "desk_toys", "linear": [0.5, 0.0, 0.0]}),
    ("set_control_source", lambda seen: {"source": "zmq"}),
    ("set_camera_streaming", lambda seen: {"cameras": {cameras_of(seen["hello"])[0]: False}}),
    ("set_camera_delay", lambda seen: {"cameras": {cameras_of(seen["hello"])[0]: 0.0}}),
    ("recording_start", lambda seen: {"name": "conformance"}),
    ("step", lambda seen: {"n_steps": 3}),
    ("recording_stop", lambda seen: {}),
    ("recording_save", lambda seen: {"path": "conformance.npz"}),
    ("replay_load", lambda seen: {"path": "conformance.npz"}),
    ("replay_list_sessions", lambda seen: {}),
    ("replay_set_active", lambda seen: {"name": "conformance"}),
    ("replay_start", lambda seen: {}),
    ("replay_stop", lambda seen: {}),
    ("recording_clear", lambda seen: {}),
    ("draw_marker", lambda seen: {"location": [0.0, 0.0, 0.5], "color": [1.0, 0.0, 0.0], "ttl": -1.0,
                                  "label": "here"}),
    ("draw_line", lambda seen: {"from": [0.0, 0.0, 0.0], "to": [0.0, 0.0, 1.0], "color": [0.0, 1.0, 0.0]}),
    ("draw_arrow", lambda seen: {"from": [0.0, 0.0, 0.0], "to": [1.0, 0.0, 0.0], "color": [0.0, 0.0, 1.0],
                                 "ttl": 2.0}),
    ("draw_box", lambda seen: {"center": [0.0, 0.0, 0.4], "half_extents": [0.1, 0.2, 0.3],
                               "color": [1.0, 1.0, 0.0], "rotation_quat": [0.0, 0.0, 0.0, 1.0]}),
    ("draw_axes", lambda seen: {"location": [0.0, 0.0, 0.4], "rotation_euler": [0.0, 0.0, 90.0]}),
    ("set_overlay_text", lambda seen: {"text": "conformance"}),
    ("clear_markers", lambda seen: {}),
    ("acquire_lease", lambda seen: {"ttl_s": 60.0, "owner": "conformance"}),
    ("claim_control", lambda seen: {"articulation": "desk_toys_box", "ttl_s": 10.0}),
    ("release_control", lambda seen: {"articulation": "desk_toys_box"}),
    ("release_lease", lambda seen: {"lease_id": seen["acquire_lease"]["lease_id"]}),
    # the model replaced by an upload of the same file, then by import_xml (a hello after each)
    ("upload_model_manifest", lambda seen: {"xml_sha256": hashlib.sha256(DESK_TOYS_XML).hexdigest(),
                                            "assets": [], "total_bytes": len(DESK_TOYS_XML)}),
    ("upload_model_chunk", lambda seen: {"upload_id": seen["upload_model_manifest"]["upload_id"],
                                         "kind": "xml", "name": "model.xml", "offset": 0,
                                         "total": len(DESK_TOYS_XML), "data": DESK_TOYS_XML}),
    ("upload_model_commit", lambda seen: {"upload_id": seen["upload_model_manifest"]["upload_id"]}),
    ("hello", lambda seen: {}),
    ("import_xml", lambda seen: {"path": DESK_TOYS}),
    ("hello", lambda seen: {}),
]
DESK_TOYS_XML = open(DESK_TOYS, "rb").read()


def test_every_op_of_urlab_is_served_or_refused_with_a_reason(serve, tmp_path):
    served = serve(DESK_TOYS)
    served.host._recordings = str(tmp_path)
    client = served.client(hello=False)
    hello = client.hello()
    meta = client.call("meta")
    assert meta["op"] == "meta_ok"
    serving = {op["name"] for op in meta["ops"]}
    unsupported = meta["unsupported"]
    assert not serving & set(unsupported), "an op is both served and unsupported"
    assert sorted(unsupported) == meta["not_served"]
    categories = {op["name"]: op["category"] for op in meta["ops"] if op["name"] in OPS}
    assert categories == {name: OPS[name]["category"] for name in categories}  # (URLab's, for its clients)
    # the ports URLab's pool reads from hello's instance block (discover_static guessed them)
    instance = hello["instance"]
    assert (instance["step_port"], instance["state_port"]) == (served.request_port, served.state_port)
    assert instance["busy"] is False and "host" not in instance  # (no shared memory served here)

    problems = []
    for name, op in OPS.items():
        if name in serving:
            continue
        reply = client.call(name, **dict.fromkeys(op["required"], 1))
        reason = unsupported.get(name)
        if reply.get("code") != "unsupported":
            problems.append(f"{name}: answered {reply.get('op')} {reply.get('code')}, not unsupported")
        elif not reason or reason not in reply["message"]:
            problems.append(f"{name}: meta gives no reason for it, or the reply does not say it: {reply}")

    # served: each one's reply, in an order that makes sense on the scene
    seen = {"hello": hello, "meta": meta}
    for name, fields in SEQUENCE:
        reply = client.hello() if name == "hello" else client.call(name, **fields(seen))
        seen[name] = reply
    unsent = [name for name in serving & set(OPS) if name not in seen]
    assert not unsent, f"served ops the test does not send (add them to SEQUENCE): {unsent}"
    for name in sorted(serving & set(OPS)):
        reply, op = seen[name], OPS[name]
        if reply.get("op") != f"{name}_ok":
            problems.append(f"{name}: answered {reply.get('op')} {reply.get('code')}: {reply.get('message')}")
            continue
        missing = [key for key in dict.fromkeys(op["reply"] + op["client_reads"]) if key not in reply]
        if missing:
            problems.append(f"{name}: its reply lacks {missing}")
        if op["required"]:  # (URLab's required fields: a request without them is refused)
            refused = client.call(name)
            if refused.get("code") != "missing_field":
                problems.append(f"{name} without {op['required']}: {refused.get('op')} {refused.get('code')}")
    assert not problems, "\n".join(problems)
    assert not any(reply.get("code") == "unknown_op" for reply in seen.values())


def test_replies_carry_urlabs_field_names(serve, tmp_path):
    """The names URLab's client reads (issue 33): n_contacts, options (mirrored into
    client.model.opt), replay_load's total_frames."""
    served = serve(DESK_TOYS)
    served.host._recordings = str(tmp_path)
    client = served.client()
    client.call("set_mode", mode="direct")
    client.call("step", n_steps=400)  # (the box and ball come to rest on the table)
    contacts = client.call("get_contacts")
    assert contacts["n_contacts"] == len(contacts["contacts"]) > 0 and "count" not in contacts
    options = client.call("set_sim_options", options={"timestep": 0.001})
    assert options["options"]["timestep"] == 0.001 and "opt" not in options
    assert served.host.session.model.opt.timestep == 0.001
    # URLab's named flags and sleep tolerance, applied after the raw masks sent with them
    options = client.call("set_sim_options", options={"enable_sleep": True, "enable_multiccd": False,
                                                      "disableflags": 0, "sleep_tolerance": 1e-3})["options"]
    assert options["enable_sleep"] is True and options["enable_multiccd"] is False
    opt = served.host.session.model.opt
    assert opt.enableflags & mujoco.mjtEnableBit.mjENBL_SLEEP
    assert opt.disableflags == mujoco.mjtDisableBit.mjDSBL_MULTICCD and opt.sleep_tolerance == 1e-3
    assert options["disableflags"] == opt.disableflags and options["sleep_tolerance"] == 1e-3
    assert client.call("set_sim_options", options={"num_worker_threads": 4})["code"] == "unsupported"
    client.call("recording_start")
    client.call("step", n_steps=4)
    stopped = client.call("recording_stop")
    client.call("recording_save", path="four.npz")
    loaded = client.call("replay_load", path="four.npz")
    assert loaded["total_frames"] == stopped["frame_count"] == 5 and "frame_count" not in loaded


def test_state_stream_message_is_urlabs_state_full(serve):
    spec = TABLE["state_stream"]
    served = serve(DESK_TOYS)
    client = served.client()
    client.call("set_mode", mode="direct")
    subscriber = served.subscriber()
    time.sleep(0.3)  # (a SUB only receives what is published after it joined)
    client.call("step", n_steps=2)
    got = subscriber.receive(2000)
    assert got is not None, "no state message"
    topic, state = got
    assert topic == spec["topic"].encode() and state["op"] == spec["op"]
    assert all(key in state for key in spec["fields"]), set(spec["fields"]) - set(state)
    box = state["scene"]["desk_toys_box"]  # a free body: its pose and free joint's state
    assert all(key in box for key in spec["scene_free_base_fields"])
    assert len(box["qpos"]) == 7 and len(box["qvel"]) == 6
    assert box["qpos"] == state["arts"]["desk_toys_box"]["qpos"]

"""URLab's puppet path with the user's own simulation (URLab's client:
`attach_puppet_simulation(model, data)`, then a push of that data each step): the
client compares the server's model, from the hello's mjb, with the attached one
(`_check_puppet_drift`: nq / nv / nu must be equal; body, joint and actuator names,
joint types and qpos addresses should be). Reproduced here with our own code.

URLab's server names every element of an articulation `<actor name>_<name>`
(MjArticulation attaches its spec with that prefix), and the bridge names them
`<entity prefix>_<name>` the same way, so the file's own model differs from the
served one by exactly that prefix: its state vectors are the served model's (a push
lands where it should), and URLab's client warns about the names. The user's model
compiled with the hello's prefix (docs/index.md) has the served names: no warning."""

import mujoco
import numpy as np
from bridge_fixtures import humanoid_path

OBJ = mujoco.mjtObj
NAMED = {"bodies": (OBJ.mjOBJ_BODY, "nbody"), "joints": (OBJ.mjOBJ_JOINT, "njnt"),
         "actuators": (OBJ.mjOBJ_ACTUATOR, "nu")}


def layout(model: mujoco.MjModel) -> dict:
    """What a raw puppet state depends on, as URLab's client lists it."""
    out = {"nq": model.nq, "nv": model.nv, "nu": model.nu,
           "jnt_type": model.jnt_type.tolist(), "jnt_qposadr": model.jnt_qposadr.tolist()}
    for key, (kind, count) in NAMED.items():
        out[key] = [mujoco.mj_id2name(model, kind, i) or "" for i in range(getattr(model, count))]
    return out


def drift(server: mujoco.MjModel, local: mujoco.MjModel) -> tuple[list[str], list[str]]:
    """(fatal, differences) as URLab's client finds them: fatal raises whatever the
    client's puppet_drift_check; differences warn ('warn', its default) or raise ('error')."""
    ours, theirs = layout(local), layout(server)
    fatal = [key for key in ("nq", "nv", "nu") if ours[key] != theirs[key]]
    differences = [f"{key} missing server-side: {name}" for key in NAMED
                   for name in ours[key] if name and name not in set(theirs[key])]
    differences += [f"{key} ordering differs" for key in ("jnt_type", "jnt_qposadr")
                    if ours[key] != theirs[key]]
    return fatal, differences


def with_prefix(path: str, prefix: str) -> mujoco.MjModel:
    """The user's own model of `path`, its elements named as the bridge serves them
    (the recipe in docs/index.md: attached with `prefix + "_"`, the file's settings kept)."""
    spec = mujoco.MjSpec.from_file(path)
    root = mujoco.MjSpec()
    root.option, root.compiler, root.visual, root.stat = spec.option, spec.compiler, spec.visual, spec.stat
    for size in ("memory", "nstack", "njmax", "nconmax", "nkey"):
        setattr(root, size, getattr(spec, size))
    root.attach(spec, prefix=prefix + "_", frame=root.worldbody.add_frame())
    return root.compile()


def test_the_files_own_model_differs_from_the_served_one_by_the_entity_prefix_only(serve):
    path = humanoid_path()
    served = serve(path)
    hello = served.client(hello=False).hello()
    server = mujoco.MjModel.from_binary_path("served.mjb", {"served.mjb": hello["mjb"]})
    local = mujoco.MjModel.from_xml_path(path)
    (prefix,) = [e["prefix"] for e in hello["entities"] if e["kind"] == "articulation"]

    fatal, differences = drift(server, local)
    assert fatal == []  # a push is the served model's state vector
    assert differences and all("missing server-side" in d for d in differences)  # names only
    mine, theirs = layout(local), layout(server)
    for key in NAMED:  # each named element is the served one of the same id, prefixed
        assert [f"{prefix}_{name}" if name and name != "world" else name for name in mine[key]] == theirs[key]

    user = with_prefix(path, prefix)
    assert drift(server, user) == ([], [])
    assert np.array_equal(user.qpos0, local.qpos0) and np.array_equal(user.body_mass, local.body_mass)


def test_a_push_of_the_users_own_simulation_lands_on_the_served_state(serve):
    """What attach_puppet_simulation's step(0) sends: the user's qpos, qvel, ctrl, time
    after the user's own mj_step; the served simulation then holds exactly that state."""
    path = humanoid_path()
    served = serve(path)
    client = served.client()
    local = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(local)
    assert client.call("set_mode", mode="statepushed")["op"] == "set_mode_ok"
    data.ctrl[:] = 0.3
    for _ in range(3):
        for _ in range(10):
            mujoco.mj_step(local, data)
        reply = client.call("step", mode="statepushed", n_steps=0, qpos=data.qpos.tolist(),
                            qvel=data.qvel.tolist(), ctrl=data.ctrl.tolist(), time=data.time)
        assert reply["op"] == "step_ok", reply
        (art,) = reply["arts"].values()
        assert np.array_equal(art["qpos"], data.qpos) and reply["time"] == data.time
    session = served.host.session
    assert np.array_equal(session.data.qpos, data.qpos) and np.array_equal(session.data.qvel, data.qvel)

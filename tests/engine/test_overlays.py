"""engine/overlays.py: what each viewport overlay draws equals MuJoCo's own data,
for corpus models at rest on the floor and mid-simulation. The simulation runs in
the engine's Runner; the reference is a copy of its MjData stepped by plain
`mj_step` alongside, and MuJoCo's functions (mj_forward, mj_contactForce) on it."""

import copy
import os

import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.engine import commands as cmd, overlays, snapshot
from mjblend.engine.runner import Runner
from mjblend.engine.session import EngineSession

ALL = overlays.Options(contact_points=True, contact_forces=True, contact_frames=True, joints=True,
                       body_frames=True, com=True, tendons=True, actuators=True, equality=True)
MODELS = [
    "pip/gymnasium/envs/mujoco/assets/ant.xml",  # falls and rests on its legs: contacts at rest
    "mujoco_model/model/humanoid/humanoid.xml",
    "menagerie/agility_cassie/scene.xml",  # connect constraints
    "menagerie/iit_softfoot/scene.xml",  # tendons wrapping geoms, joint equalities
    "mujoco_model/model/replicate/newton_cradle.xml",  # site tendons
    "menagerie/robotiq_2f85/scene.xml",  # a tendon, connects, site actuation
    "pip/dm_control/suite/manipulator.xml",
]
MID, REST = 60, 1500  # steps: mid-fall, and settled

# Not in the corpus: a pulley (no segment across it), a weld, a connect between
# sites, a joint coupling and a site actuator.
SMALL = """
<mujoco>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <site name="anchor" pos="0 0 2"/>
    <body name="a" pos="0 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/><site name="sa"/>
      <body name="b" pos=".3 0 0"><joint name="hinge" axis="0 1 0" range="-1 1" limited="true"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/><site name="tip" pos=".3 0 0"/></body>
      <body name="c" pos="-.3 0 0">
        <joint name="slide" type="slide" axis="1 0 0" range="-.1 .2" limited="true"/>
        <geom size=".05"/><site name="sc"/></body>
    </body>
    <body name="d" pos="1 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/>
      <site name="sd" pos=".1 0 0"/></body>
  </worldbody>
  <tendon>
    <spatial name="pulley" limited="true" range="0 3">
      <site site="anchor"/><site site="sa"/><pulley divisor="2"/><site site="anchor"/><site site="tip"/>
    </spatial>
  </tendon>
  <equality>
    <weld body1="a" body2="d" relpose=".9 .1 0 1 0 0 0"/>
    <connect site1="sd" site2="sc"/>
    <joint joint1="hinge" joint2="slide" polycoef="0 .5 0 0 0"/>
  </equality>
  <actuator>
    <motor name="push" site="sd" gear="1 0 0 0 0 0" ctrlrange="-5 5"/>
    <motor name="turn" joint="hinge" forcerange="-2 2" forcelimited="true" gear="3"/>
  </actuator>
</mujoco>
"""


def _run(model, steps, ctrl=None):
    """(snapshot after `steps` steps of the engine's runner, MuJoCo's own MjData stepped alongside)."""
    runner = Runner(EngineSession(model), threaded=False)
    reference = copy.copy(runner.session.data)
    if ctrl is not None:
        for i, value in enumerate(ctrl):
            runner.send(cmd.SetControl(i, value))
        reference.ctrl[:] = ctrl
    runner.send(cmd.Step(steps))
    for _ in range(steps):
        mujoco.mj_step(model, reference)
    now = copy.copy(reference)
    mujoco.mj_forward(model, now)  # poses of the state the snapshot shows
    return runner.latest, reference, now


def _cases():
    return [pytest.param(path, steps, id=f"{os.path.basename(os.path.dirname(path))}-{steps}",
                         marks=needs_corpus) for path in MODELS for steps in (MID, REST)]


def _load(path):
    return mujoco.MjModel.from_xml_path(os.path.join(CORPUS, path))


def _check_all(model, shot, stepped, now):
    ncon = stepped.ncon
    assert len(shot.contacts) == ncon
    # contact points: data.contact of the last step
    included = stepped.contact.efc_address[:ncon] >= 0
    inside, outside = overlays.contact_points(shot)
    assert np.array_equal(inside, stepped.contact.pos[:ncon][included])
    assert np.array_equal(outside, stepped.contact.pos[:ncon][~included])
    # contact forces: mj_contactForce rotated to the world, into the body of higher id
    ids, forces = overlays.contact_forces_world(model, shot)
    expected, expected_ids = [], []
    for i in range(ncon):
        force = np.zeros(6)
        mujoco.mj_contactForce(model, stepped, i, force)
        if stepped.contact.efc_address[i] < 0 or np.linalg.norm(force[:3]) < mujoco.mjMINVAL:
            continue
        world = stepped.contact.frame[i].reshape(3, 3).T @ force[:3]
        g1, g2 = stepped.contact.geom[i]
        expected.append(-world if model.geom_bodyid[g1] > model.geom_bodyid[g2] else world)
        expected_ids.append(i)
    assert list(ids) == expected_ids
    scale = max(1.0, np.abs(expected).max()) if expected else 1.0
    np.testing.assert_allclose(forces, np.reshape(expected, (-1, 3)), rtol=0, atol=1e-12 * scale)
    start, end = overlays.contact_force_arrows(model, shot)
    np.testing.assert_allclose(end - start, forces * model.vis.map.force / model.stat.meanmass,
                               atol=1e-12 * scale)
    # contact frames: the frame's rows, half MuJoCo's frame length
    half = model.vis.scale.framelength * model.stat.meansize / 2
    for k, axis in enumerate(overlays.contact_frame_axes(model, shot)):
        rows = stepped.contact.frame[:ncon, 3 * k:3 * k + 3]
        np.testing.assert_allclose(axis[1::2] - axis[0::2], rows * half, atol=1e-12)
    # joint axes: from xanchor along xaxis
    joints, axes = overlays.joint_axes(model, shot)
    axial = [j for j in range(model.njnt) if model.jnt_type[j] in (overlays.HINGE, overlays.SLIDE)]
    assert list(joints) == axial
    assert np.array_equal(axes[0::2], now.xanchor[axial])
    length = model.vis.scale.jointlength * model.stat.meansize
    np.testing.assert_allclose((axes[1::2] - axes[0::2]) / length, now.xaxis[axial], atol=1e-12)
    # centres of mass: xipos of the bodies with mass, subtree_com of each tree
    bodies, trees = overlays.centres_of_mass(model, shot)
    assert np.array_equal(bodies, now.xipos[[b for b in range(1, model.nbody) if model.body_mass[b] > 0]])
    roots = [b for b in range(1, model.nbody) if model.body_parentid[b] == 0]
    assert np.array_equal(trees, now.subtree_com[roots])
    # body frames: xmat's columns from xpos
    frame = model.vis.scale.framelength * model.stat.meansize
    for k, axis in enumerate(overlays.body_frame_axes(model, shot)):
        assert np.array_equal(axis[0::2], now.xpos)
        np.testing.assert_allclose((axis[3::2] - axis[2::2]) / frame, now.xmat[1:, k::3], atol=1e-12)
    # tendon paths: consecutive wrap_xpos points, none across a pulley
    segments, wrap_obj = [], now.wrap_obj.reshape(-1)
    for t in range(model.ntendon):
        first = now.ten_wrapadr[t]
        for j in range(first, first + now.ten_wrapnum[t] - 1):
            if wrap_obj[j] != -2 and wrap_obj[j + 1] != -2:
                segments += [now.wrap_xpos.reshape(-1, 3)[j], now.wrap_xpos.reshape(-1, 3)[j + 1]]
    assert np.array_equal(overlays.tendon_paths(model, shot), np.reshape(segments, (-1, 3)))
    # equality: a connect's two points are what efc_pos keeps together
    drawn = overlays.equality_segments(model, shot).reshape(-1, 2, 3)
    rows = [e for e in range(model.neq) if now.eq_active[e] and model.eq_type[e] == overlays.EQ_CONNECT]
    rows += [e for e in range(model.neq) if now.eq_active[e] and model.eq_type[e] == overlays.EQ_WELD]
    for index, e in enumerate(rows):
        efc = np.flatnonzero((now.efc_type == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)) & (now.efc_id == e))
        np.testing.assert_allclose(drawn[index, 0] - drawn[index, 1], now.efc_pos[efc[:3]], atol=1e-12)
    # every layer of every overlay is finite
    for layer in overlays.layers(model, shot, ALL):
        assert np.isfinite(layer.lines).all() and np.isfinite(layer.points).all(), layer.name
    return ncon


@pytest.mark.parametrize("path, steps", _cases())
def test_overlays_equal_mujoco_on_corpus_models(path, steps):
    model = _load(path)
    shot, stepped, now = _run(model, steps)
    _check_all(model, shot, stepped, now)


@needs_corpus
def test_the_ant_at_rest_has_contacts_and_forces_that_hold_it():
    model = _load(MODELS[0])
    shot, stepped, _now = _run(model, REST)
    assert np.abs(shot.qvel).max() < 1e-2  # at rest
    _ids, forces = overlays.contact_forces_world(model, shot)
    assert len(forces) >= 4
    # the contact forces on the floor carry the ant's weight (world body id 0 < the ant's: into the ant)
    weight = model.body_subtreemass[0] * -model.opt.gravity[2]
    assert forces[:, 2].sum() == pytest.approx(weight, rel=0.02)


def test_pulley_weld_site_connect_joint_coupling_and_site_actuator():
    model = mujoco.MjModel.from_xml_string(SMALL)
    shot, stepped, now = _run(model, 40, ctrl=[3.0, 2.5])
    _check_all(model, shot, stepped, now)
    # the pulley splits the tendon: 3 segments of the 4 point pairs (none across it)
    assert len(overlays.tendon_paths(model, shot)) == 2 * 2
    # connects, then welds (each pair's difference is its efc_pos: checked above), then joint couplings
    segments = overlays.equality_segments(model, shot).reshape(-1, 2, 3)
    assert len(segments) == 3
    assert np.array_equal(segments[0], now.site_xpos[[model.site("sd").id, model.site("sc").id]])
    assert np.array_equal(segments[2], now.xanchor[[1, 2]])  # hinge's anchor to slide's (0: a free joint)
    # actuator arrows: the site's gear direction in the world, the joint's axis; lengths by force
    ids, arrows, sign = overlays.actuator_arrows(model, shot)
    assert list(ids) == [1, 0]  # joints first, then sites
    pairs = arrows.reshape(-1, 2, 3)
    length = model.vis.scale.actuatorlength * model.stat.meansize
    turn, push = now.actuator_force[1], now.actuator_force[0]
    assert turn == 2.0  # 2.5 clamped at its force range
    np.testing.assert_allclose(pairs[0, 1] - pairs[0, 0], now.xaxis[1] * length * np.clip(turn / 2.0, -1, 1),
                               atol=1e-12)
    site = model.site("sd").id
    direction = now.site_xmat[site].reshape(3, 3)[:, 0]
    np.testing.assert_allclose(pairs[1, 1] - pairs[1, 0], direction * length * np.sign(push), atol=1e-12)
    assert list(sign) == list(np.sign([turn, push]))


def test_joint_ranges_show_the_range_and_the_angle_now():
    model = mujoco.MjModel.from_xml_string(SMALL)
    shot, _stepped, now = _run(model, 80, ctrl=[0.0, 2.0])
    hinge, slide = 1, 2
    segments = overlays.joint_ranges(model, shot).reshape(-1, 2, 3)
    # the slide: the anchor's travel from range[0] to range[1], the anchor now on it
    q = now.qpos[model.jnt_qposadr[slide]]
    low, high = model.jnt_range[slide]
    np.testing.assert_allclose(segments[0], [now.xanchor[slide] + now.xaxis[slide] * (low - q),
                                             now.xanchor[slide] + now.xaxis[slide] * (high - q)], atol=1e-12)
    # the hinge: an arc of RANGE_SEGMENTS about its axis, radius half the joint length
    arc, spoke = segments[1:1 + overlays.RANGE_SEGMENTS], segments[-1]
    radius = 0.5 * model.vis.scale.jointlength * model.stat.meansize
    anchor, axis = now.xanchor[hinge], now.xaxis[hinge]
    offsets = arc.reshape(-1, 3) - anchor
    np.testing.assert_allclose(np.linalg.norm(offsets, axis=1), radius, rtol=1e-12)
    np.testing.assert_allclose(offsets @ axis, 0, atol=1e-12)
    # it spans the range, and the spoke sits at angle q past the arc's range[0] end
    start, finish, arm = offsets[0], offsets[-1], spoke[1] - spoke[0]
    q = now.qpos[model.jnt_qposadr[hinge]]
    low, high = model.jnt_range[hinge]

    def angle(a, b):
        return np.arctan2(np.cross(a, b) @ axis, a @ b)
    assert angle(start, finish) == pytest.approx(high - low, abs=1e-9)
    assert angle(start, arm) == pytest.approx(q - low, abs=1e-9)
    assert abs(q) > 0.05  # (the test means something: the hinge turned)


def test_labels_name_each_element_like_mujoco():
    model = mujoco.MjModel.from_xml_string(SMALL)
    shot, _stepped, now = _run(model, 5)
    bodies = overlays.labels(model, shot, "BODY")
    assert [name for name, _ in bodies] == ["a", "b", "c", "d"]
    assert np.array_equal([pos for _, pos in bodies], now.xpos[1:])
    joints = overlays.labels(model, shot, "JOINT")
    assert [name for name, _ in joints] == ["joint 0", "hinge", "slide", "joint 3"]  # MuJoCo's "<type> <id>"
    geoms = overlays.labels(model, shot, "GEOM", shown=np.arange(model.ngeom) > 0)
    assert [name for name, _ in geoms] == [f"geom {i}" for i in range(1, model.ngeom)]


def test_groups_choose_what_is_drawn():
    model = mujoco.MjModel.from_xml_string(SMALL.replace('name="slide" type="slide"',
                                                         'name="slide" group="4" type="slide"'))
    shot, _stepped, _now = _run(model, 5)
    shown, _axes = overlays.joint_axes(model, shot, overlays.ALL_GROUPS)
    assert list(shown) == [1, 2]
    hidden, _axes = overlays.joint_axes(model, shot, (True, True, True, False, False, False))
    assert list(hidden) == [1]
    assert not len(overlays.tendon_paths(model, shot, (False,) * 6))
    ids, _arrows, _sign = overlays.actuator_arrows(model, shot, (False,) * 6)
    assert not len(ids)


def test_inertia_boxes_are_mujocos_equivalent_boxes_in_the_inertial_frames():
    model = mujoco.MjModel.from_xml_string(SMALL)
    shot, _stepped, now = _run(model, 30, ctrl=[1.0, 1.0])
    edges, centres = overlays.inertia_boxes(model, shot)
    bodies = [b for b in range(1, model.nbody) if model.body_mass[b] > 0]
    assert np.array_equal(centres, now.xipos[bodies])
    for index, body in enumerate(bodies):
        mass, (ix, iy, iz) = model.body_mass[body], model.body_inertia[body]
        # the uniform box of that mass with that inertia: I_x = m (y^2 + z^2) / 3 for half sizes x, y, z
        half = np.sqrt(1.5 / mass * np.array([iy + iz - ix, ix + iz - iy, ix + iy - iz]))
        box = edges[24 * index:24 * (index + 1)].reshape(12, 2, 3)
        frame = now.ximat[body].reshape(3, 3)
        local = (box - now.xipos[body]) @ frame  # the edges in the inertial frame
        np.testing.assert_allclose(np.abs(local), np.broadcast_to(half, local.shape), rtol=1e-9)
        lengths = sorted(np.linalg.norm(box[:, 1] - box[:, 0], axis=1))
        np.testing.assert_allclose(lengths, sorted(np.repeat(2 * half, 4)), rtol=1e-9)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_snapshot_contact_forces_are_mj_contactforce_bit_for_bit(cone):
    """All contacts at once, as mj_contactForce gives each: condim 1, 3, 4 and 6."""
    boxes = "".join(f'<body pos="{i * .5} 0 .12"><freejoint/><geom type="box" size=".1 .1 .1" condim="{c}"/>'
                    '</body>' for i, c in enumerate((1, 3, 4, 6)))
    model = mujoco.MjModel.from_xml_string(
        f'<mujoco><option cone="{cone}"/><worldbody><geom type="plane" size="5 5 .1" condim="1"/>{boxes}'
        '</worldbody></mujoco>')
    data = mujoco.MjData(model)
    data.qvel[0::6] = 0.3  # sliding: friction forces too
    mujoco.mj_step(model, data, nstep=40)
    assert data.ncon >= 16 and set(data.contact.dim[:data.ncon]) == {1, 3, 4, 6}
    expected = np.zeros((data.ncon, 6))
    for i in range(data.ncon):
        mujoco.mj_contactForce(model, data, i, expected[i])
    assert np.abs(expected[:, 1:3]).max() > 1e-3
    assert np.array_equal(snapshot.contact_forces(model, data), expected)

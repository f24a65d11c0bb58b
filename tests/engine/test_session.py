"""engine/session.py and engine/frames.py's sync math: MuJoCo and numpy only."""

import mujoco
import numpy as np
import pytest

from mjblend.engine import frames
from mjblend.engine.session import EngineSession

PENDULUM = """
<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <body name="box" pos="0 0 1"><freejoint name="free"/><geom type="box" size=".1 .1 .1"/></body>
    <body name="arm" pos="1 0 1">
      <joint name="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
    </body>
    <body name="hand" mocap="true" pos="0 2 0"><geom size=".05" contype="0" conaffinity="0"/></body>
  </worldbody>
  <actuator><motor name="motor" joint="hinge" ctrlrange="-1 1"/>
            <general name="servo" joint="hinge" dyntype="filter" dynprm="0.1" gainprm="10"
                     biastype="affine" biasprm="0 -10 0"/></actuator>
  <keyframe><key name="tilted" qpos="0 0 2 1 0 0 0 0.5"/></keyframe>
</mujoco>
"""


def make(xml=PENDULUM):
    spec = mujoco.MjSpec.from_string(xml)
    model = spec.compile()
    return spec, model, _ids(spec)


def _ids(spec):
    ids = {("body", b.name): ("body", b.id) for b in spec.bodies if b.name}
    ids.update({("joint", j.name): ("joint", j.id) for j in spec.joints})
    ids.update({("actuator", a.name): ("actuator", a.id) for a in spec.actuators})
    return ids


def test_simulate_steps_exactly_like_mujoco():
    _spec, model, ids = make()
    session = EngineSession(model, ids)
    assert session.simulate(0.5) == 50
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=50)
    assert np.array_equal(session.data.qpos, data.qpos)
    assert session.data.time == data.time


def test_advance_follows_wall_time_and_speed():
    _spec, model, ids = make()
    session = EngineSession(model, ids)
    assert session.advance(10.0) == 0  # not playing
    session.play(10.0)
    session.advance(10.5)
    assert session.data.time == pytest.approx(0.5, abs=0.01)
    assert session.achieved == pytest.approx(1.0, rel=0.05)
    session.realtime = 2.0
    session.play(10.5)
    session.advance(11.0)
    assert session.data.time == pytest.approx(1.5, abs=0.01)
    session.pause()
    session.advance(20.0)
    assert session.data.time == pytest.approx(1.5, abs=0.01)


def test_falling_behind_slows_down_instead_of_blocking():
    _spec, model, ids = make()
    session = EngineSession(model, ids)
    session.play(0.0)
    session.advance(1000.0, budget=0.0)  # 1000 s owed, no time to step: one step, then give up
    assert session.behind
    assert session.data.time < 1.0
    before = session.data.time
    session.advance(1000.0 + 0.1, budget=1.0)  # re-anchored: owes only the last 0.1 s
    assert session.data.time - before == pytest.approx(0.1, abs=0.02)


def test_reset_to_qpos0_and_to_a_keyframe():
    _spec, model, ids = make()
    session = EngineSession(model, ids)
    session.simulate(0.3)
    session.reset(0)
    assert session.data.qpos[2] == 2 and session.data.qpos[7] == 0.5 and session.data.time == 0
    session.simulate(0.1)
    session.reset()  # the current keyframe again
    assert session.data.qpos[7] == 0.5
    session.reset(-1)
    assert np.array_equal(session.data.qpos, model.qpos0)
    with pytest.raises(ValueError, match="keyframe 3 does not exist"):
        session.reset(3)


def test_replace_carries_state_over_by_element():
    # a spacer joint first, deleted by the edit: every address shifts
    xml = PENDULUM.replace('<worldbody>', '<worldbody><body name="spacer"><joint name="spacer" '
                           'type="slide"/><geom size=".1"/></body>')
    spec, model, ids = make(xml.replace('<keyframe><key name="tilted" qpos="0 0 2 1 0 0 0 0.5"/>'
                                        '</keyframe>', ''))
    session = EngineSession(model, ids)
    session.data.ctrl[:] = [0.7, 0.3]
    session.data.mocap_pos[0] = [0, 3, 0]
    session.simulate(0.2)
    before = session.data
    spec.delete(spec.body("spacer"))
    new = spec.worldbody.add_body(name="new", pos=[5, 0, 1])
    new.add_freejoint(name="newfree")
    new.add_geom(size=[0.1, 0, 0])
    model2 = spec.compile()
    session.replace(model2, _ids(spec))
    after = session.data
    assert after.time == before.time
    old_q, new_q = model.joint("hinge").qposadr[0], model2.joint("hinge").qposadr[0]
    assert after.qpos[new_q] == before.qpos[old_q]
    free_old, free_new = model.joint("free").qposadr[0], model2.joint("free").qposadr[0]
    assert np.array_equal(after.qpos[free_new:free_new + 7], before.qpos[free_old:free_old + 7])
    assert free_new != free_old
    assert np.array_equal(after.qvel[:6], before.qvel[1:7])
    assert np.array_equal(after.qacc_warmstart[:6], before.qacc_warmstart[1:7])
    assert list(after.ctrl) == [0.7, 0.3]
    assert after.act[0] == before.act[0] != 0
    assert list(after.mocap_pos[0]) == [0, 3, 0]
    newfree = model2.joint("newfree").qposadr[0]
    assert list(after.qpos[newfree:newfree + 3]) == [5, 0, 1]  # a new element starts at qpos0


def test_divergence_pauses_with_a_message():
    _spec, model, ids = make("""<mujoco><option timestep="0.01"/><worldbody><body>
        <joint name="j" type="slide" stiffness="1e12"/><geom size=".1" mass="1e-6"/>
        </body></worldbody></mujoco>""")
    session = EngineSession(model, ids)
    session.data.qpos[0] = 1
    session.play(0.0)
    session.advance(5.0, budget=10)
    assert not session.playing
    assert "diverged" in session.message and "mjWARN_BAD" in session.message
    assert session.data.time < 5.0


def test_warnings_are_named():
    _spec, model, ids = make("""<mujoco><size memory="4K"/><worldbody><geom type="plane" size="5 5 .1"/>
        <body pos="0 0 .05"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
        <body pos="0 .05 .05"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
        </worldbody></mujoco>""")
    session = EngineSession(model, ids)
    session.simulate(0.01)
    assert any("mjWARN_CONTACTFULL" in text or "mjWARN_CNSTRFULL" in text for text in session.warnings())


def test_local_poses_match_mujoco():
    _spec, model, _ids_ = make("""<mujoco><worldbody><body name="a" pos="1 2 3" euler="10 20 30">
        <joint type="ball"/><geom size=".1"/>
        <body name="b" pos=".3 -.2 .5" euler="-40 5 60"><joint axis="1 1 0"/><geom size=".1"/></body>
        </body></worldbody></mujoco>""")
    data = mujoco.MjData(model)
    data.qpos[:] = [0.9, 0.1, -0.3, 0.2, 0.7]
    mujoco.mj_kinematics(model, data)
    pos, quat = frames.float32_locals(data.xpos, data.xquat, model.body_parentid,
                                      frames.depth_levels(model.body_parentid))
    for body, parent in ((1, 0), (2, 1)):
        expect_pos, expect_quat = np.zeros(3), np.zeros(4)
        neg_quat, neg_pos = np.zeros(4), np.zeros(3)
        mujoco.mju_negPose(neg_pos, neg_quat, data.xpos[parent], data.xquat[parent])
        mujoco.mju_mulPose(expect_pos, expect_quat, neg_pos, neg_quat, data.xpos[body], data.xquat[body])
        # the first level exactly; deeper ones relative to the float32 parent Blender will hold
        tolerance = 1e-12 if parent == 0 else 1e-6
        assert np.allclose(pos[body], expect_pos, atol=tolerance)
        assert np.allclose(quat[body], expect_quat, atol=tolerance)


# ----------------------------------------------------------- what the user does

CONTROLLED = """
<mujoco>
  <worldbody>
    <body name="arm">
      <joint name="hinge" axis="0 1 0"/><geom type="capsule" size="0.1" fromto="0 0 0 0.5 0 0"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hinge" ctrllimited="true" ctrlrange="-1 2"/>
    <motor joint="hinge"/>
  </actuator>
</mujoco>
"""


def test_controls_are_set_clamped_and_zeroed():
    session = EngineSession(mujoco.MjModel.from_xml_string(CONTROLLED))
    assert session.set_control(0, 5.0) == 2.0 and session.data.ctrl[0] == 2.0
    assert session.set_control(0, -5.0) == -1.0
    assert session.set_control(1, 50.0) == 50.0  # not ctrllimited
    session.zero_controls()
    assert list(session.data.ctrl) == [0.0, 0.0]


def test_a_new_speed_paces_from_now():
    session = EngineSession(mujoco.MjModel.from_xml_string(CONTROLLED))
    session.play(now=0.0)
    session.advance(now=0.5)
    before = session.data.time
    session.set_speed(2.0, now=10.0)  # no catching up on the 9.5 s in between
    assert session.realtime == 2.0
    session.advance(now=10.1)
    assert session.data.time - before == pytest.approx(0.2, abs=2 * session.model.opt.timestep)


def test_grabbing_a_body_lets_go_of_the_last_and_the_message_is_taken_once():
    from mjblend.engine import perturb

    session = EngineSession(mujoco.MjModel.from_xml_string(CONTROLLED))
    mujoco.mj_forward(session.model, session.data)
    first = perturb.Grab(session.model, session.data, 1, np.array([0.5, 0.0, 0.0]))
    session.grab_body(first)
    session.step(50)  # the arm falls a little; the spring pulls it back
    assert session.data.xfrc_applied[1].any()
    second = perturb.Grab(session.model, session.data, 1, np.array([0.2, 0.0, 0.0]))
    session.grab_body(second)
    assert session.grab is second and not session.data.xfrc_applied[1].any()  # the first let go
    session.message = "diverged"
    assert session.take_message() == "diverged" and session.take_message() == ""

"""Copy Pose (mujoco.copy_pose: the state as simulate's `<key>` on the clipboard and as a
keyframe) and Print Model / Print Data (mujoco.print_model / print_data: MuJoCo's
mj_printModel / mj_printData into text blocks), against MuJoCo itself: the key text
parsed by MuJoCo (MjSpec) gives the state, and the text blocks are MuJoCo's own prints of
the same model and state. Real bpy module, real MuJoCo."""

import bpy
import mujoco
import numpy as np
import pytest

from mjblend.authoring import keyframes, printing
from mjblend.importer import build
from mjblend.live import scene_session

MODEL = """
<mujoco>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" axis="0 1 0" damping=".05"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
      <body name="hand" pos=".5 0 0">
        <joint name="reach" type="slide" axis="1 0 0" range="-.1 .1" damping="2"/>
        <geom type="sphere" size=".05"/>
      </body>
    </body>
    <body name="target" mocap="true" pos=".3 .2 .1" quat="0.9 0 0.3 0.1">
      <geom type="box" size=".02 .02 .02" contype="0" conaffinity="0"/>
    </body>
    <body name="ball" pos="1 0 .3">
      <freejoint/>
      <geom type="sphere" size=".1"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="shoulder" joint="shoulder" ctrlrange="-1 1"/>
    <position name="reach" joint="reach" kp="50" timeconst=".05"/>
  </actuator>
</mujoco>
"""


@pytest.fixture
def arm(clean_scene, tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(MODEL)
    build.import_file(str(path), clean_scene)
    yield str(path)
    scene_session.end_all()


def parsed_key(path, text):
    """The <key> `text` inside the model at `path`, compiled by MuJoCo: its key 0."""
    spec = mujoco.MjSpec.from_file(path)
    xml = spec.to_xml().replace("</mujoco>", f"<keyframe>{text}</keyframe></mujoco>")
    return mujoco.MjModel.from_xml_string(xml)


def simulated(path, steps=120):
    running = scene_session.start_simulation(bpy.context.scene)
    running.set_control(0, 0.7)
    running.set_control(1, 0.05)
    running.step(steps)
    return running


def wanted(shot, field):
    """`field` of the snapshot as MuJoCo compiles it into a key (mocap quaternions normalized)."""
    values = np.ravel(getattr(shot, field)).astype(float)
    if field == "mocap_quat":
        for quat in values.reshape(-1, 4):
            mujoco.mju_normalize4(quat)
    return values


FIELDS = (("time", "time"), ("qpos", "qpos"), ("qvel", "qvel"), ("act", "act"), ("ctrl", "ctrl"),
          ("mpos", "mocap_pos"), ("mquat", "mocap_quat"))


def test_copy_pose_puts_simulates_key_on_the_clipboard_and_stores_it(arm):
    shot = simulated(arm).latest
    assert shot.act.size and shot.mocap_pos.size  # (every optional attribute present)
    before = {o.name for o in bpy.context.scene.objects if o.mujoco.kind == "KEY"}
    assert bpy.ops.mujoco.copy_pose(full_precision=True) == {"FINISHED"}
    text = keyframes.key_text(shot, True)
    # (the bpy module has no system clipboard: it reads back "" there; Blender itself, the text)
    assert bpy.context.window_manager.clipboard in ("", text)
    key = parsed_key(arm, text)
    for attr, field in FIELDS:  # full precision: every value exactly
        assert np.array_equal(np.ravel(getattr(key, "key_" + attr)[0]), wanted(shot, field)), attr
    stored = [o for o in bpy.context.scene.objects if o.mujoco.kind == "KEY" and o.name not in before]
    assert len(stored) == 1
    running = scene_session.simulation(bpy.context.scene)
    running.check_edits()  # (the stored keyframe recompiles into the running model)
    model = running.model
    assert model.nkey == 1
    for attr, field in FIELDS:
        assert np.array_equal(np.ravel(getattr(model, "key_" + attr)[0]), wanted(shot, field)), attr


def test_the_key_text_is_simulates_layout_with_printfs_g(arm):
    shot = simulated(arm).latest
    text = keyframes.key_text(shot)
    # simulate's CopyKey, written out: "%g" of each value, space separated, one attribute a line
    def g(values):
        return " ".join("%g" % v for v in np.ravel(values))
    expected = (f'<key\n  time="{"%g" % shot.time}"\n  qpos="{g(shot.qpos)}"\n  qvel="{g(shot.qvel)}"\n'
                f'  act="{g(shot.act)}"\n  ctrl="{g(shot.ctrl)}"\n  mpos="{g(shot.mocap_pos)}"\n'
                f'  mquat="{g(shot.mocap_quat)}"\n/>')
    assert text == expected
    key = parsed_key(arm, text)
    for attr, field in FIELDS:  # 6 significant digits: MuJoCo reads back float("%g")
        wanted = np.array([float("%g" % v) for v in np.ravel(getattr(shot, field))])
        if attr == "mquat":  # (MuJoCo's compiler normalizes a key's mocap quaternions)
            for quat in wanted.reshape(-1, 4):
                mujoco.mju_normalize4(quat)
        assert np.array_equal(np.ravel(getattr(key, "key_" + attr)[0]), wanted), attr


def test_copy_pose_without_a_simulation_is_the_models_reference_pose(arm):
    assert bpy.ops.mujoco.copy_pose(store=False) == {"FINISHED"}
    model = mujoco.MjModel.from_xml_path(arm)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    key = parsed_key(arm, keyframes.key_text(keyframes.current_state(bpy.context), True))
    assert np.array_equal(key.key_qpos[0], data.qpos)
    assert np.array_equal(key.key_mpos[0], data.mocap_pos.ravel())
    assert not any(o.mujoco.kind == "KEY" for o in bpy.context.scene.objects)


def test_print_model_and_data_are_mujocos_own_prints_of_the_running_model_and_state(arm):
    running = simulated(arm)
    assert bpy.ops.mujoco.print_model() == {"FINISHED"}
    assert bpy.ops.mujoco.print_data() == {"FINISHED"}
    model, data = running.model, running.session.data  # (inline: this thread is the runner's)
    assert bpy.data.texts[printing.MODEL_TEXT].as_string() == \
        printing.printed(lambda path: mujoco.mj_printModel(model, path))
    printed_data = bpy.data.texts[printing.DATA_TEXT].as_string()
    assert printed_data == printing.printed(lambda path: mujoco.mj_printData(model, data, path))
    assert "QPOS" in printed_data and len(printed_data) > 1000
    # the printed state is the simulation's: MuJoCo's own loop to the same state prints the same
    by_hand = mujoco.MjData(model)
    mujoco.mj_forward(model, by_hand)
    by_hand.ctrl[:] = (0.7, 0.05)
    mujoco.mj_step(model, by_hand, nstep=120)
    reference = printing.printed(lambda path: mujoco.mj_printData(model, by_hand, path))
    for name in ("QPOS", "QVEL", "ACT", "CTRL", "QACC_WARMSTART"):
        assert _section(printed_data, name) == _section(reference, name), name


def test_print_data_of_a_threaded_runner_is_printed_by_its_thread(arm):
    running = scene_session.start_simulation(bpy.context.scene, threaded=True)
    running.step(50, wait=None)
    text = printing.data_text(bpy.context)
    runner = running.runner
    assert runner.threaded and runner.stop(5.0)  # (its thread ended: its MjData may be read here now)
    session = runner.session
    assert text == printing.printed(lambda path: mujoco.mj_printData(session.model, session.data, path))
    assert session.data.time > 0


def test_print_without_a_simulation_is_the_checked_models_reference_pose(arm):
    assert bpy.ops.mujoco.print_data() == {"FINISHED"}
    model = mujoco.MjModel.from_xml_path(arm)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    assert _section(bpy.data.texts[printing.DATA_TEXT].as_string(), "QPOS") == \
        _section(printing.printed(lambda path: mujoco.mj_printData(model, data, path)), "QPOS")


def _section(text, name):
    """The lines of one array of mj_printData's text (its name's line up to a blank one)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == name)
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].strip())
    return lines[start:end]

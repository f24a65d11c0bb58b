"""engine/trajectory.py: trajectory files read, resampled, replayed and saved,
compared with MuJoCo itself (mujoco.rollout, mj_getState, mj_integratePos,
mj_kinematics). No bpy."""

import os

import mujoco
import numpy as np
import pytest
from helpers import CORPUS, corpus_params
from mujoco import rollout

from mjblend.engine import trajectory
from mjblend.engine.recording import STATE, state_slices
from mjblend.engine.trajectory import TrajectoryError

S = mujoco.mjtState
FULLPHYSICS = int(S.mjSTATE_FULLPHYSICS)
INTEGRATION = int(S.mjSTATE_INTEGRATION)
PHYSICS = int(S.mjSTATE_PHYSICS)
QPOS = int(S.mjSTATE_QPOS)
TIME_QPOS = int(S.mjSTATE_TIME | S.mjSTATE_QPOS)

# every joint type, an actuator with activation, a mocap body and sensors
MODEL = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body name="box" pos="0 0 1"><freejoint name="free"/><geom type="box" size=".1 .2 .3"/></body>
    <body name="pendulum" pos="1 0 2">
      <joint name="ball" type="ball" damping=".01"/>
      <geom type="capsule" fromto="0 0 0 .3 .1 -.5" size=".05"/>
      <body pos=".3 .1 -.5">
        <joint name="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .4 0 0" size=".04"/>
        <body pos=".4 0 0">
          <joint name="slide" type="slide" axis="1 0 0" range="-.2 .2"/>
          <geom size=".06"/>
        </body>
      </body>
    </body>
    <body name="hand" mocap="true" pos="0 2 0"><geom size=".05" contype="0" conaffinity="0"/></body>
  </worldbody>
  <actuator>
    <motor name="motor" joint="hinge"/>
    <general name="servo" joint="slide" dyntype="filter" dynprm="0.1" gainprm="10" biastype="affine"
             biasprm="0 -10 0"/>
  </actuator>
  <sensor><jointpos joint="hinge"/><framepos name="boxpos" objtype="body" objname="box"/></sensor>
</mujoco>
"""

SLIDER = """
<mujoco><worldbody><body><joint name="x" type="slide"/><geom size=".1"/></body></worldbody></mujoco>
"""

HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_string(MODEL)


def initial_state(model, spec=FULLPHYSICS):
    data = mujoco.MjData(model)
    data.qvel[:6] = [0.3, -0.2, 1.0, 2.0, -1.0, 3.0]  # the box tumbles
    data.qvel[6:9] = [1.0, 2.0, -0.5]  # the ball joint turns
    data.qvel[9] = 1.5
    state = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state, spec)
    return state


def rolled_out(model, nstep=100, nbatch=1):
    """mujoco.rollout's states (nbatch, nstep, FULLPHYSICS width) with a control signal."""
    controls = np.sin(np.linspace(0, 6, nstep))[None, :, None] * np.ones((nbatch, nstep, model.nu))
    starts = np.tile(initial_state(model), (nbatch, 1))
    starts[:, 1 + 0] += np.arange(nbatch)  # each rollout starts elsewhere
    state, _ = rollout.rollout(model, mujoco.MjData(model), starts, controls, nstep=nstep)
    return state


def stepped_states(model, spec, steps=40):
    """mj_getState(spec) after each of `steps` mj_step calls, with ctrl and a moving mocap body."""
    data = mujoco.MjData(model)
    mujoco.mj_setState(model, data, initial_state(model), FULLPHYSICS)
    rows = np.empty((steps, mujoco.mj_stateSize(model, spec)))
    for k in range(steps):
        data.ctrl[:] = [np.sin(k / 5), 0.1 * k]
        data.mocap_pos[0] = [0.01 * k, 2, 0.5]
        mujoco.mj_step(model, data)
        mujoco.mj_getState(model, data, rows[k], spec)
    return rows


def refused(path, model, *words, batch=None):
    """read must refuse `path` with a message naming the file and saying `words`."""
    with pytest.raises(TrajectoryError) as caught:
        trajectory.read(path, model, batch=batch)
    message = str(caught.value)
    assert os.path.basename(str(path)) in message
    for word in words:
        assert word in message, message
    assert "Error" not in message
    return message


def lerp(array, i, alpha):
    return (1 - alpha) * array[i] + alpha * array[i + 1]


def write_csv(path, header, rows):
    with open(path, "w") as fh:
        if header:
            fh.write(",".join(header) + "\n")
        for row in rows:
            fh.write(",".join(repr(float(v)) for v in row) + "\n")
    return path


# ------------------------------------------------------------------------------------------------- reading


def test_rollout_states_read_from_npz_and_npy_give_rollouts_qpos_exactly(model, tmp_path):
    state = rolled_out(model)
    slices = state_slices(model, FULLPHYSICS)
    np.savez(tmp_path / "run.npz", state=state)
    np.save(tmp_path / "run.npy", state)
    for name in ("run.npz", "run.npy"):
        read = trajectory.read(tmp_path / name, model)
        assert np.array_equal(read.qpos, state[0][:, slices["qpos"]])
        assert np.array_equal(read.qvel, state[0][:, slices["qvel"]])
        assert np.array_equal(read.act, state[0][:, slices["act"]])
        assert np.array_equal(read.time, state[0][:, 0])
        assert read.time[0] == model.opt.timestep  # rollout's first row: after the first step
        assert "mujoco.rollout" in read.source and name in read.source
        assert any("after the first step" in note for note in read.notes)
    # a 2-D (T, nstate) array too
    np.save(tmp_path / "one.npy", state[0])
    assert np.array_equal(trajectory.read(tmp_path / "one.npy", model).qpos, state[0][:, slices["qpos"]])


def test_a_batch_of_rollouts_needs_batch(model, tmp_path):
    state = rolled_out(model, nstep=20, nbatch=3)
    np.savez(tmp_path / "batch.npz", state=state)
    message = refused(tmp_path / "batch.npz", model, "3 rollouts", "batch 0 to 2")
    assert "(3, 20," in message
    second = trajectory.read(tmp_path / "batch.npz", model, batch=1)
    assert np.array_equal(second.qpos, state[1][:, 1:1 + model.nq])
    assert "rollout 1 of 3" in second.source
    refused(tmp_path / "batch.npz", model, "no rollout 3", batch=3)


@pytest.mark.parametrize("spec", [FULLPHYSICS, INTEGRATION, PHYSICS, QPOS, TIME_QPOS],
                         ids=["FULLPHYSICS", "INTEGRATION", "PHYSICS", "QPOS", "TIME_QPOS"])
def test_each_state_spec_is_recognised_by_its_width(model, tmp_path, spec):
    rows = stepped_states(model, spec)
    slices = state_slices(model, spec)
    np.savez(tmp_path / "states.npz", state=rows)
    read = trajectory.read(tmp_path / "states.npz", model)
    assert np.array_equal(read.qpos, rows[:, slices["qpos"]])
    for part in ("qvel", "act", "ctrl"):
        expected = rows[:, slices[part]] if part in slices else None
        got = getattr(read, part)
        assert (got is None) == (expected is None or expected.size == 0), part
        if got is not None:
            assert np.array_equal(got, expected)
    if "time" in slices:
        assert np.array_equal(read.time, rows[:, 0])
    else:  # timestep spacing from 0, said
        assert np.array_equal(read.time, np.arange(len(rows)) * model.opt.timestep)
        assert any("no time" in note for note in read.notes)
    if spec == INTEGRATION:  # mocap too
        assert np.array_equal(read.mocap_pos[:, 0], rows[:, slices["mocap_pos"]])
        assert np.array_equal(read.mocap_quat[:, 0], rows[:, slices["mocap_quat"]])


def test_a_state_spec_saved_with_the_rows_is_used(model, tmp_path):
    spec = int(S.mjSTATE_QPOS | S.mjSTATE_QVEL | S.mjSTATE_CTRL | S.mjSTATE_MOCAP_POS)
    rows = stepped_states(model, spec)
    slices = state_slices(model, spec)
    times = 0.5 + 0.01 * np.arange(len(rows))
    np.savez(tmp_path / "spec.npz", state=rows, state_spec=spec, time=times)
    read = trajectory.read(tmp_path / "spec.npz", model)
    assert np.array_equal(read.qpos, rows[:, slices["qpos"]])
    assert np.array_equal(read.ctrl, rows[:, slices["ctrl"]])
    assert np.array_equal(read.mocap_pos.reshape(len(rows), -1), rows[:, slices["mocap_pos"]])
    assert np.array_equal(read.time, times)  # the file's time (the spec has none)
    assert "mjSTATE_QPOS|mjSTATE_QVEL|mjSTATE_CTRL|mjSTATE_MOCAP_POS" in read.source
    # a spec that does not fit the width, and one with no qpos
    np.savez(tmp_path / "wrong.npz", state=rows, state_spec=FULLPHYSICS)
    refused(tmp_path / "wrong.npz", model, f"{rows.shape[1]} values per row", "mjSTATE_FULLPHYSICS")
    np.savez(tmp_path / "noqpos.npz", state=rows[:, :model.nv], spec=int(S.mjSTATE_QVEL))
    refused(tmp_path / "noqpos.npz", model, "no qpos")


def test_an_ambiguous_width_asks_for_state_spec(tmp_path):
    slider = mujoco.MjModel.from_xml_string(SLIDER)  # PHYSICS (qpos, qvel) and time + qpos are both 2 wide
    assert mujoco.mj_stateSize(slider, PHYSICS) == mujoco.mj_stateSize(slider, TIME_QPOS) == 2
    np.save(tmp_path / "two.npy", np.ones((5, 2)))
    refused(tmp_path / "two.npy", slider, "state_spec", "mjSTATE_PHYSICS", "time + qpos")
    np.savez(tmp_path / "two.npz", state=np.ones((5, 2)), state_spec=PHYSICS)
    assert trajectory.read(tmp_path / "two.npz", slider).qvel.shape == (5, 1)


def test_qpos_with_time_from_npz_npy_and_csv(model, tmp_path):
    rows = stepped_states(model, TIME_QPOS)
    time, qpos = rows[:, 0], rows[:, 1:]
    np.savez(tmp_path / "walk.npz", t=time, qpos=qpos)
    np.save(tmp_path / "walk.npy", qpos)
    write_csv(tmp_path / "walk.csv", None, rows)
    write_csv(tmp_path / "named.csv", ["T"] + [f"j{i}" for i in range(model.nq)], rows)
    for name in ("walk.npz", "walk.csv", "named.csv"):
        read = trajectory.read(tmp_path / name, model)
        assert np.array_equal(read.qpos, qpos) and np.array_equal(read.time, time), name
        assert read.source == f"time + qpos from {name}"
    bare = trajectory.read(tmp_path / "walk.npy", model)
    assert np.array_equal(bare.qpos, qpos) and bare.source == "qpos from walk.npy"
    assert bare.notes == ("no time given: samples taken every timestep 0.005 s from t = 0",)


def test_csv_columns_split_by_their_prefix(model, tmp_path):
    rows = stepped_states(model, int(S.mjSTATE_TIME | S.mjSTATE_QPOS | S.mjSTATE_QVEL | S.mjSTATE_CTRL))
    header = (["time"] + [f"qpos_{i}" for i in range(model.nq)] + [f"qvel_{i}" for i in range(model.nv)]
              + ["ctrl:motor", "ctrl:servo"])
    write_csv(tmp_path / "split.csv", header, rows)
    read = trajectory.read(tmp_path / "split.csv", model)
    assert np.array_equal(read.qpos, rows[:, 1:1 + model.nq])
    assert np.array_equal(read.qvel, rows[:, 1 + model.nq:1 + model.nq + model.nv])
    assert np.array_equal(read.ctrl, rows[:, -2:])
    write_csv(tmp_path / "short.csv", header[:-1], rows[:, :-1])
    refused(tmp_path / "short.csv", model, "1 ctrl columns", "2 ctrl values")


# ------------------------------------------------------------------------------------------------- refusals


def test_wrong_widths_are_refused_saying_what_each_width_means(model, tmp_path):
    nq = model.nq
    np.save(tmp_path / "wide.npy", np.zeros((4, nq + 2)))
    refused(tmp_path / "wide.npy", model, f"{nq + 2} values per row", f"nq = {nq}", f"{nq} (qpos)",
            f"{nq + 1} (time + qpos)", "mjSTATE_FULLPHYSICS")
    write_csv(tmp_path / "wide.csv", None, np.zeros((4, nq + 2)))
    refused(tmp_path / "wide.csv", model, f"has {nq + 2} columns", f"nq = {nq}", f"time + qpos {nq + 1}")
    write_csv(tmp_path / "named.csv", ["time"] + [f"j{i}" for i in range(nq + 1)], np.zeros((4, nq + 2)))
    refused(tmp_path / "named.csv", model, f"has {nq + 1} qpos columns", f"nq = {nq}")
    np.savez(tmp_path / "narrow.npz", qpos=np.zeros((4, nq - 1)), time=np.arange(4.0))
    refused(tmp_path / "narrow.npz", model, f"{nq - 1} qpos values per row", f"nq = {nq}")
    np.savez(tmp_path / "qvel.npz", qpos=np.zeros((4, nq)), qvel=np.zeros((4, 3)))
    refused(tmp_path / "qvel.npz", model, "'qvel' has shape (4, 3)")


def test_nan_and_infinity_are_refused_with_their_place(model, tmp_path):
    rows = stepped_states(model, TIME_QPOS, steps=6)
    bad = rows.copy()
    bad[3, 5] = np.nan
    write_csv(tmp_path / "nan.csv", ["time"] + [f"j{i}" for i in range(model.nq)], bad)
    refused(tmp_path / "nan.csv", model, "NaN", "line 5", "column 6 (j4)")
    qpos = rows[:, 1:].copy()
    qpos[2, 7] = np.inf
    np.savez(tmp_path / "inf.npz", qpos=qpos, time=rows[:, 0])
    refused(tmp_path / "inf.npz", model, "infinite", "row 2, column 7 of qpos")
    time = rows[:, 0].copy()
    time[4] = -np.inf
    np.savez(tmp_path / "inftime.npz", qpos=rows[:, 1:], time=time)
    refused(tmp_path / "inftime.npz", model, "time value is infinite", "row 4")


def test_time_must_increase(model, tmp_path):
    rows = stepped_states(model, TIME_QPOS, steps=6)
    rows[3, 0] = rows[2, 0]
    write_csv(tmp_path / "stuck.csv", None, rows)
    refused(tmp_path / "stuck.csv", model, "time does not increase", "line 4")
    np.save(tmp_path / "stuck.npy", rows)
    refused(tmp_path / "stuck.npy", model, "time does not increase", "row 3")


def test_empty_unknown_missing_and_unreadable_files(model, tmp_path):
    (tmp_path / "empty.csv").write_text("")
    refused(tmp_path / "empty.csv", model, "empty")
    (tmp_path / "header.csv").write_text("time,a,b\n")
    refused(tmp_path / "header.csv", model, "no rows")
    np.save(tmp_path / "empty.npy", np.zeros((0, model.nq)))
    refused(tmp_path / "empty.npy", model, "empty")
    np.savez(tmp_path / "empty.npz", qpos=np.zeros((0, model.nq)), time=np.zeros(0))
    refused(tmp_path / "empty.npz", model, "empty")
    (tmp_path / "walk.txt").write_text("1,2,3\n")
    refused(tmp_path / "walk.txt", model, ".npz, .npy or .csv")
    refused(tmp_path / "absent.npz", model, "no such file")
    (tmp_path / "fake.npz").write_text("not a zip")
    refused(tmp_path / "fake.npz", model, "not a NumPy .npz archive")
    (tmp_path / "fake.npy").write_bytes(b"\x00" * 20)
    refused(tmp_path / "fake.npy", model, "not a NumPy .npy array")
    np.savez(tmp_path / "other.npz", positions=np.zeros((3, model.nq)))
    refused(tmp_path / "other.npz", model, "neither 'qpos' nor 'state'", "'positions'")
    np.savez(tmp_path / "objects.npz", qpos=np.array([[1, "a"]], dtype=object))
    refused(tmp_path / "objects.npz", model, "Python objects")
    (tmp_path / "words.csv").write_text("time,a\n0,1\n0.1,abc\n")
    refused(tmp_path / "words.csv", model, "line 3", "'abc' is not a number")
    (tmp_path / "ragged.csv").write_text("1,2\n3\n")
    refused(tmp_path / "ragged.csv", model, "line 2 has 1 values")


def test_quaternions_zero_refused_non_unit_normalised(model, tmp_path):
    rows = stepped_states(model, TIME_QPOS, steps=6)
    qpos = rows[:, 1:].copy()
    qpos[2, 3:7] *= 2.0  # the free joint's quaternion, twice as long
    np.savez(tmp_path / "long.npz", qpos=qpos, time=rows[:, 0])
    read = trajectory.read(tmp_path / "long.npz", model)
    assert np.allclose(read.qpos[2], rows[2, 1:], rtol=0, atol=1e-15)
    assert np.array_equal(np.delete(read.qpos, 2, axis=0), np.delete(rows[:, 1:], 2, axis=0))
    assert any("1 quaternion(s)" in note and "normalised" in note for note in read.notes)
    qpos[4, 7:11] = 0.0  # the ball joint's
    np.savez(tmp_path / "zero.npz", qpos=qpos, time=rows[:, 0])
    refused(tmp_path / "zero.npz", model, "quaternion of joint 'ball' is zero", "row 4, column 7")


# ------------------------------------------------------------------------------------------------ resampling


def test_resampling_at_the_datas_own_rate_is_exact(model, tmp_path):
    np.save(tmp_path / "run.npy", rolled_out(model))
    read = trajectory.read(tmp_path / "run.npy", model)
    frames = trajectory.resample(read, model, 1 / model.opt.timestep)
    assert len(frames) == len(read)
    assert np.array_equal(frames.qpos, read.qpos) and np.array_equal(frames.qvel, read.qvel)
    assert np.array_equal(frames.act, read.act)
    assert np.allclose(frames.time, read.time, rtol=0, atol=1e-12)


def test_resampling_interpolates_the_way_mujoco_integrates(model, tmp_path):
    rows = stepped_states(model, INTEGRATION, steps=60)
    np.savez(tmp_path / "run.npz", state=rows)
    read = trajectory.read(tmp_path / "run.npz", model)
    fps = 47.0
    frames = trajectory.resample(read, model, fps)
    t0, t_end = read.time[0], read.time[-1]
    assert len(frames) == int(np.floor((t_end - t0) * fps + 1e-9)) + 1
    assert np.array_equal(frames.time, t0 + np.arange(len(frames)) / fps)
    velocity = np.empty(model.nv)
    for k, t in enumerate(frames.time):
        i = min(np.searchsorted(read.time, t, side="right") - 1, len(read) - 2)
        alpha = (t - read.time[i]) / (read.time[i + 1] - read.time[i])
        if alpha < 1e-9:
            assert np.array_equal(frames.qpos[k], read.qpos[i])
            continue
        mujoco.mj_differentiatePos(model, velocity, 1.0, read.qpos[i], read.qpos[i + 1])
        expected = read.qpos[i].copy()
        mujoco.mj_integratePos(model, expected, velocity * alpha, 1.0)
        assert np.array_equal(frames.qpos[k], expected)
        # hinge and slide: linear
        assert np.allclose(frames.qpos[k, 11:], lerp(read.qpos, i, alpha)[11:])
        assert np.allclose(frames.ctrl[k], lerp(read.ctrl, i, alpha))
        assert np.allclose(frames.mocap_pos[k], lerp(read.mocap_pos, i, alpha))
    for quat in (frames.qpos[:, 3:7], frames.qpos[:, 7:11], frames.mocap_quat[:, 0]):
        assert np.allclose(np.linalg.norm(quat, axis=1), 1.0, rtol=0, atol=1e-12)
    # the first frame is the first sample
    assert np.array_equal(frames.qpos[0], read.qpos[0])


def test_mocap_quaternions_are_slerped(model):
    half = np.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0])  # 90 degrees about x
    quats = np.array([[[1.0, 0, 0, 0]], [half]])
    read = trajectory.Trajectory(time=np.array([0.0, 1.0]), qpos=np.tile(model.qpos0, (2, 1)),
                                 mocap_quat=quats)
    frames = trajectory.resample(read, model, 2.0)
    assert np.allclose(frames.mocap_quat[1, 0], [np.cos(np.pi / 8), np.sin(np.pi / 8), 0, 0])
    assert np.array_equal(frames.mocap_quat[2], quats[1])


# ------------------------------------------------------------------------------------- kinematics and saving


def test_to_recording_poses_are_mujocos_kinematics(model, tmp_path):
    rows = stepped_states(model, INTEGRATION, steps=30)
    np.savez(tmp_path / "run.npz", state=rows)
    frames = trajectory.resample(trajectory.read(tmp_path / "run.npz", model), model, 60.0)
    recording = trajectory.to_recording(model, frames, 60.0, frame_start=5)
    assert len(recording) == len(frames) and recording.frame_start == 5
    assert np.array_equal(recording.qpos, frames.qpos) and np.array_equal(recording.time, frames.time)
    data = mujoco.MjData(model)
    for k in range(len(frames)):
        data.qpos[:] = frames.qpos[k]
        data.mocap_pos[:] = frames.mocap_pos[k]
        data.mocap_quat[:] = frames.mocap_quat[k]
        mujoco.mj_kinematics(model, data)
        assert np.array_equal(recording.xpos[k], data.xpos)
        assert np.array_equal(recording.xquat[k], data.xquat)
    assert recording.xpos[-1, model.nbody - 1, 0] != 0  # the mocap body moved with the file's mocap_pos


def test_saved_npz_and_csv_read_back_bit_for_bit(model, tmp_path):
    rows = stepped_states(model, INTEGRATION, steps=30)
    np.savez(tmp_path / "run.npz", state=rows)
    read = trajectory.read(tmp_path / "run.npz", model)
    recording = trajectory.to_recording(model, trajectory.resample(read, model, 30.0), 30.0, frame_start=1)
    trajectory.save_npz(tmp_path / "out.npz", recording, model)
    trajectory.save_csv(tmp_path / "out.csv", recording, model)
    for name in ("out.npz", "out.csv"):
        back = trajectory.read(tmp_path / name, model)
        assert np.array_equal(back.time, recording.time), name
        assert np.array_equal(back.qpos, recording.qpos), name
        for part in ("qvel", "act", "ctrl"):
            assert np.array_equal(getattr(back, part), recording.part(part)), (name, part)
        assert np.array_equal(back.mocap_pos.reshape(len(back), -1), recording.part("mocap_pos")), name
        assert np.array_equal(back.mocap_quat.reshape(len(back), -1), recording.part("mocap_quat")), name
        assert back.notes == () or all("sensor" in note for note in back.notes), back.notes
    with np.load(tmp_path / "out.npz") as saved:
        assert np.array_equal(saved["frame"], np.arange(1, len(recording) + 1))
        assert saved["state_spec"] == STATE and np.array_equal(saved["state"], recording.state)
        assert np.array_equal(saved["sensordata"], recording.sensordata)
        assert float(saved["fps"]) == 30.0
        assert list(saved["qpos_names"][:8]) == [f"qpos:free[{i}]" for i in range(7)] + ["qpos:ball[0]"]
    header = (tmp_path / "out.csv").read_text().splitlines()[0].split(",")
    assert header[:3] == ["time", "frame", "qpos:free[0]"]
    for name in ("qpos:hinge", "qpos:slide", "qvel:ball[2]", "act:servo", "ctrl:motor", "mocap_pos:hand[0]",
                 "sensor[0]", "sensor:boxpos[2]"):
        assert name in header, name


@pytest.mark.skipif(not os.path.exists(HUMANOID), reason=f"no corpus humanoid at {HUMANOID}")
def test_humanoid_rollout_imported_gives_mujocos_poses(tmp_path):
    humanoid = mujoco.MjModel.from_xml_path(HUMANOID)
    data = mujoco.MjData(humanoid)
    mujoco.mj_resetDataKeyframe(humanoid, data, 0)
    start = np.empty(mujoco.mj_stateSize(humanoid, FULLPHYSICS))
    mujoco.mj_getState(humanoid, data, start, FULLPHYSICS)
    state, _ = rollout.rollout(humanoid, data, start, nstep=100)
    np.savez(tmp_path / "humanoid.npz", state=state)
    read = trajectory.read(tmp_path / "humanoid.npz", humanoid)
    assert np.array_equal(read.qpos, state[0][:, 1:1 + humanoid.nq])
    fps = 1 / humanoid.opt.timestep
    recording = trajectory.to_recording(humanoid, trajectory.resample(read, humanoid, fps), fps)
    check = mujoco.MjData(humanoid)
    for k in range(len(recording)):
        check.qpos[:] = state[0, k, 1:1 + humanoid.nq]
        mujoco.mj_kinematics(humanoid, check)
        assert np.array_equal(recording.xpos[k], check.xpos)


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_rollout_imported_replays_and_saves_exactly(path, tmp_path):
    """Each corpus model: rollout's states read, put on 60 fps frames, replayed (poses are
    MuJoCo's kinematics of each frame's qpos) and saved as CSV that reads back bit for bit."""
    model = mujoco.MjModel.from_xml_path(os.path.join(CORPUS, path))
    data = mujoco.MjData(model)
    if model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    start = np.empty(mujoco.mj_stateSize(model, FULLPHYSICS))
    mujoco.mj_getState(model, data, start, FULLPHYSICS)
    state, _ = rollout.rollout(model, data, start, nstep=50)
    np.save(tmp_path / "run.npy", state)
    read = trajectory.read(tmp_path / "run.npy", model)
    assert np.array_equal(read.qpos, state[0][:, 1:1 + model.nq])
    recording = trajectory.to_recording(model, trajectory.resample(read, model, 60.0), 60.0)
    check = mujoco.MjData(model)
    for k in range(len(recording)):
        check.qpos[:] = recording.qpos[k]
        mujoco.mj_kinematics(model, check)
        assert np.array_equal(recording.xpos[k], check.xpos)
    trajectory.save_csv(tmp_path / "out.csv", recording, model)
    back = trajectory.read(tmp_path / "out.csv", model)
    assert np.array_equal(back.qpos, recording.qpos) and np.array_equal(back.time, recording.time)

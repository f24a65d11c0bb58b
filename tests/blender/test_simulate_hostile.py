"""Hostile input to the live simulation in the bpy module (issue 16): Simulate and
Step refuse what cannot be stepped (or would take more steps than the step limit)
with a message, a long Simulate is cancelled at a step boundary, objects deleted
under a live simulation end in a recompile or a message (never a traceback), and
memory stays flat over many steps and recompiles."""

import math
import os
import threading
import time
from types import SimpleNamespace

import bpy
import mujoco
import numpy as np
import pytest
from addon_loader import ADDON, ROOT, disable_addon, enable_addon
from helpers import CORPUS, needs_corpus

from mjblend.importer import build
from mjblend.live import scene_session, simulation
from mjblend.operators.simulate import MUJOCO_OT_play, MUJOCO_OT_simulate
from mjblend.scene.transforms import transform

DESK = os.path.join(ROOT, "examples", "desk_toys.xml")
HUMANOID = os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml")
LIMIT_HINT = "raise it in Edit > Preferences > Add-ons > MJBlend > Step Limit"
STOPPED = "The simulation was stopped before its 500,000 steps were done"

TWO_BALLS = """<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="5 5 .1"/>
  <body name="one" pos="0 0 1"><freejoint/><geom name="one" size=".1"/></body>
  <body name="two" pos="1 0 1"><freejoint/><geom name="two" size=".1"/></body>
  </worldbody></mujoco>"""


def write(tmp_path, xml, name="model.xml") -> str:
    path = tmp_path / name
    path.write_text(xml)
    return str(path)


def ball_xml(timestep) -> str:
    return (f'<mujoco><option timestep="{timestep}"/><worldbody><body name="b" pos="0 0 1"><freejoint/>'
            '<geom size=".1"/></body></worldbody></mujoco>')


def physics_threads():
    return [t for t in threading.enumerate() if t.name.startswith("MJBlend physics") and t.is_alive()]


def element(kind, name):
    return next(o for o in bpy.context.scene.objects
                if o.mujoco.kind == kind.upper() and o.mujoco.name == name)


def refused(operator, **kwargs) -> str:
    """The error an operator reports (Blender raises it as a RuntimeError in scripts)."""
    with pytest.raises(RuntimeError) as error:
        operator(**kwargs)
    message = str(error.value)
    assert "Traceback" not in message and "Error:" in message, message
    return message


def simulates(seconds=0.2):
    """Blender works: the scene's model simulates `seconds`."""
    assert bpy.ops.mujoco.simulate(duration=seconds) == {"FINISHED"}
    shot = scene_session.simulation(bpy.context.scene).latest
    assert shot.time == pytest.approx(seconds) and shot.message == ""


@pytest.fixture
def desk(clean_scene):
    build.import_file(DESK, clean_scene)
    yield clean_scene
    scene_session.end_all()
    simulation.THREADED = None


@pytest.fixture
def prefs():
    preferences = bpy.context.preferences.addons[ADDON].preferences
    limit = preferences.step_limit
    yield preferences
    preferences.step_limit = limit


@pytest.fixture(params=[False, True], ids=["inline", "threaded"])
def threaded(request):
    simulation.THREADED = request.param
    yield request.param
    scene_session.end_all()
    simulation.THREADED = None
    assert physics_threads() == []


# ------------------------------------------------------ refused before a step


def test_a_tiny_timestep_is_refused_at_once_naming_the_numbers(clean_scene, tmp_path):
    build.import_file(write(tmp_path, ball_xml("1e-300")), clean_scene)
    started = time.perf_counter()
    for call in (bpy.ops.mujoco.simulate, lambda **k: bpy.ops.mujoco.simulate("INVOKE_DEFAULT", **k)):
        message = refused(call, duration=1.0)
        assert ("Simulating 1 s with a timestep of 1e-300 s takes 1e+300 steps, more than the step limit "
                f"of 10,000,000: {LIMIT_HINT}") in message
    assert time.perf_counter() - started < 5  # (it used to never return)
    running = scene_session.simulation(clean_scene)
    assert running.latest.steps == 0
    assert bpy.ops.mujoco.step(count=5) == {"FINISHED"} and running.latest.steps == 5
    scene_session.end_all()


@pytest.mark.parametrize("timestep", ["0", "-0.01", "inf"])
def test_a_timestep_mujoco_cannot_step_with_is_refused_by_simulate_step_and_play(clean_scene, tmp_path,
                                                                                 timestep):
    build.import_file(write(tmp_path, ball_xml(timestep)), clean_scene)
    shown = {"0": "0", "-0.01": "-0.01", "inf": "inf"}[timestep]
    for operator, kwargs in ((bpy.ops.mujoco.simulate, {"duration": 1.0}), (bpy.ops.mujoco.step, {}),
                             (bpy.ops.mujoco.play, {})):
        message = refused(operator, **kwargs)
        assert f"The model's timestep is {shown} s: MuJoCo needs a positive, finite timestep" in message
    running = scene_session.simulation(clean_scene)
    assert running.latest.steps == 0 and not running.playing
    scene_session.end_all()


def test_a_nan_timestep_from_the_option_override_is_refused(desk):
    settings = desk.mujoco_simulation
    settings.override.timestep = math.nan
    settings.override.use_timestep = True
    try:
        message = refused(bpy.ops.mujoco.simulate, duration=1.0)
        assert "The model's timestep is not a number (NaN): MuJoCo needs a positive timestep" in message
        assert "not a number (NaN)" in refused(bpy.ops.mujoco.step)
    finally:
        settings.override.use_timestep = False
    scene_session.end_all()
    simulates()


def test_a_duration_that_cannot_be_simulated_is_refused(desk):
    assert "The duration to simulate is not a number (NaN)" in refused(bpy.ops.mujoco.simulate,
                                                                         duration=math.nan)
    # (Blender clamps an infinite duration to the largest float32)
    message = refused(bpy.ops.mujoco.simulate, duration=math.inf)
    assert "Simulating 3.40282e+38 s with a timestep of 0.002 s takes 1.7e+41 steps" in message
    running = scene_session.simulation(desk)
    with pytest.raises(simulation.SimulationError, match=r"is negative \(-1 s\)"):
        running.simulate(-1.0)
    assert running.latest.steps == 0
    simulates()


def test_the_step_limit_is_the_preference(desk, prefs):
    prefs.step_limit = 100
    message = refused(bpy.ops.mujoco.simulate, duration=1.0)
    assert f"Simulating 1 s with a timestep of 0.002 s takes 500 steps, more than the step limit of 100: " \
           f"{LIMIT_HINT}" in message
    message = refused(bpy.ops.mujoco.step, count=101)
    assert f"Stepping 101 steps is more than the step limit of 100: {LIMIT_HINT}" in message
    running = scene_session.simulation(desk)
    assert running.latest.steps == 0
    assert bpy.ops.mujoco.step(count=100) == {"FINISHED"} and running.latest.steps == 100
    assert bpy.ops.mujoco.simulate(duration=0.2) == {"FINISHED"} and running.latest.steps == 200


# -------------------------------------------------------- cancel a long run


def modal_simulate(running, duration):
    """mujoco.simulate's modal() state after its invoke (tier 2 has no window: the GUI
    tier runs the real invoke): the Step sent, reports and progress collected."""
    command = running.start_steps(running.steps_for(duration))
    op = SimpleNamespace(_live=running, _count=command.count, cancelled=False, _playing=running.playing,
                         duration=duration, reports=[], statuses=[])
    op._seq = running.runner.send(command)
    op.report = lambda kind, text: op.reports.append((kind.pop(), text))
    op._status = lambda _context, _shot, done: op.statuses.append(done)
    op.end_wait = lambda _context: op.statuses.append("end")
    op.finished = lambda *args: MUJOCO_OT_simulate.finished(op, *args)
    op._done = lambda *args: MUJOCO_OT_simulate._done(op, *args)
    return op


TIMER = SimpleNamespace(type="TIMER", value="NOTHING")
ESC = SimpleNamespace(type="ESC", value="PRESS")


def run_modal(op, until=None, seconds=30):
    """Timer events until the operator ends (or `until()`); its last answer."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        result = MUJOCO_OT_simulate.modal(op, bpy.context, TIMER)
        if result != {"PASS_THROUGH"} or (until is not None and until()):
            return result
        time.sleep(0.02)
    raise AssertionError("the modal simulate did not end")


def test_esc_cancels_a_long_simulate_at_a_step_boundary(desk):
    simulation.THREADED = True
    running = scene_session.start_simulation(desk)
    op = modal_simulate(running, 1000.0)  # 500,000 steps
    run_modal(op, until=lambda: running.latest.progress[0] > 500)
    assert op.statuses[-1] > 0 and running.latest.applied < op._seq  # progress shown while it runs
    assert MUJOCO_OT_simulate.modal(op, bpy.context, ESC) == {"RUNNING_MODAL"}
    assert run_modal(op, seconds=5) == {"CANCELLED"} and op.statuses[-1] == "end"
    shot = running.latest
    done = shot.progress[0]
    assert 500 < done < 500_000 and shot.steps == done and not running.playing
    assert op.reports == [("WARNING", f"Simulation cancelled after {done:,} of 500,000 steps: "
                                      f"t = {shot.time:.4f} s (the state shown)")]
    # the state is MuJoCo's after that many steps, and the objects show it
    model = mujoco.MjModel.from_xml_path(DESK)
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=done)
    mujoco.mj_kinematics(model, data)
    assert np.array_equal(shot.qpos, data.qpos) and shot.time == data.time
    bpy.context.view_layer.update()
    box = element("body", "box")
    assert np.allclose(np.array(box.matrix_world)[:3, 3], data.xpos[model.body("box").id], atol=1e-5)
    # and it goes on from there
    op = modal_simulate(running, 0.1)
    assert run_modal(op) == {"FINISHED"}
    assert op.reports == [("INFO", f"Simulated 50 steps: t = {running.latest.time:.4f} s")]
    assert running.latest.steps == done + 50


def test_a_modal_simulate_ends_with_a_message_when_its_simulation_is_stopped(desk):
    simulation.THREADED = True
    running = scene_session.start_simulation(desk)
    op = modal_simulate(running, 1000.0)
    run_modal(op, until=lambda: running.latest.progress[0] > 0)
    bpy.ops.mujoco.stop()
    assert physics_threads() == []
    assert MUJOCO_OT_simulate.modal(op, bpy.context, TIMER) == {"CANCELLED"}
    assert op.reports == [("WARNING", STOPPED)]
    simulates()


def test_invoke_without_a_window_simulates_at_once(desk):
    simulation.THREADED = True  # (even with a physics thread: the bpy module has no window)
    assert bpy.ops.mujoco.simulate("INVOKE_DEFAULT", duration=0.5) == {"FINISHED"}
    running = scene_session.simulation(desk)
    assert running.latest.steps == 250 and running.latest.time == pytest.approx(0.5)


# ------------------------------------------------- objects deleted under it


def test_deleting_a_body_the_model_cannot_lose_stops_it_saying_why(desk, threaded):
    authored = {o.name: transform(o) for o in desk.objects}
    assert bpy.ops.mujoco.simulate(duration=0.2) == {"FINISHED"}
    bpy.data.objects.remove(element("body", "box"))  # its keyframe "raised" then has too many values
    message = refused(bpy.ops.mujoco.simulate, duration=0.2)
    assert "The simulation stopped: 'box' was deleted and the scene without it does not simulate: " \
           "MuJoCo cannot compile the scene" in message and "keyframe 'raised'" in message
    assert scene_session.simulation(desk) is None and physics_threads() == []
    assert {o.name: transform(o) for o in desk.objects} == \
        {name: t for name, t in authored.items() if name in desk.objects}  # back as authored
    assert "keyframe 'raised'" in refused(bpy.ops.mujoco.simulate, duration=0.2)  # (it says so again)
    bpy.ops.wm.read_homefile(use_empty=True)
    build.import_file(DESK, bpy.context.scene)
    simulates()


def test_deleting_objects_the_model_can_lose_recompiles_without_them(clean_scene, tmp_path, threaded):
    build.import_file(write(tmp_path, TWO_BALLS), clean_scene)
    assert bpy.ops.mujoco.simulate(duration=0.2) == {"FINISHED"}
    running = scene_session.simulation(clean_scene)
    one = element("body", "one")
    for obj in [element("body", "two"), *element("body", "two").children_recursive]:
        bpy.data.objects.remove(obj)
    assert bpy.ops.mujoco.simulate(duration=0.2) == {"FINISHED"}
    assert scene_session.simulation(clean_scene) is running and running.error == ""
    assert running.model.nbody == 2 and running.latest.time == pytest.approx(0.4)
    # ball "one" went on from its state: MuJoCo's run of it alone, 200 steps
    model = mujoco.MjModel.from_xml_string(TWO_BALLS)
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=200)
    assert np.array_equal(running.latest.qpos, data.qpos[:7])
    bpy.context.view_layer.update()
    assert one.matrix_world.translation.z == pytest.approx(data.qpos[2], abs=1e-6)


def test_deleting_everything_while_playing_ends_on_the_next_tick_with_a_message(desk, threaded):
    bpy.ops.mujoco.play()
    bpy.ops.mujoco.simulate(duration=0.1)
    running = scene_session.simulation(desk)
    for obj in list(desk.objects):
        bpy.data.objects.remove(obj)
    bpy.context.view_layer.update()  # (the depsgraph handler: panels no longer see them)
    assert running.binding.by_id == {}
    op = SimpleNamespace(_live=running, _timer=None, reports=[], _finish=lambda _context: {"FINISHED"})
    op.report = lambda kind, text: op.reports.append((kind.pop(), text))
    time.sleep(0.05)
    assert MUJOCO_OT_play.modal(op, bpy.context, TIMER) == {"FINISHED"}  # the play operator's tick
    (kind, text), = op.reports
    assert kind == "ERROR" and text.startswith("The simulation stopped: 'desk_toys', ") and \
        "were deleted and the scene without them does not simulate: Nothing to simulate" in text
    assert scene_session.simulation(desk) is None and physics_threads() == []
    build.import_file(DESK, desk)
    simulates()


def test_deleting_a_body_before_a_tick_never_reaches_a_deleted_object(desk, threaded):
    """Deleted and another object added in the same moment: the object count is
    unchanged, so no structure check is due; the display meets the deleted object."""
    bpy.ops.mujoco.play()
    bpy.ops.mujoco.simulate(duration=0.1)
    running = scene_session.simulation(desk)
    running._next_structure_check = math.inf  # (no periodic check either)
    bpy.data.objects.remove(element("body", "ball"))  # (the ball's geom and joint stay, unparented)
    desk.collection.objects.link(bpy.data.objects.new("newcomer", None))
    time.sleep(0.05)
    with pytest.raises(simulation.SimulationEnded, match="'ball' was deleted"):
        for _ in range(20):
            running.tick(time.perf_counter())
            time.sleep(0.02)
    assert scene_session.simulation(desk) is None and physics_threads() == []


def test_simulate_then_reload_disable_or_delete_the_scene_and_blender_works(desk, tmp_path, threaded):
    path = str(tmp_path / "desk.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)

    def long_simulate():
        running = scene_session.start_simulation(bpy.context.scene)
        op = modal_simulate(running, 1000.0) if threaded else None
        if op is None:
            running.simulate(0.2)
        return op

    def ended(op):
        assert physics_threads() == [] and scene_session.all_simulations() == []
        if op is not None:
            assert MUJOCO_OT_simulate.modal(op, bpy.context, TIMER) == {"CANCELLED"}
            assert op.reports == [("WARNING", STOPPED)]

    op = long_simulate()
    bpy.ops.wm.read_homefile(use_empty=True)
    ended(op)
    build.import_file(DESK, bpy.context.scene)
    simulates()

    op = long_simulate()
    bpy.ops.wm.open_mainfile(filepath=path)
    ended(op)
    simulates()

    op = long_simulate()
    disable_addon()
    try:
        ended(op)
    finally:
        enable_addon()
    simulates()

    op = long_simulate()
    scene = bpy.context.scene
    bpy.ops.scene.new(type="EMPTY")
    bpy.data.scenes.remove(scene)  # (its session notices when next asked: the modal operator asks)
    if op is not None:
        assert MUJOCO_OT_simulate.modal(op, bpy.context, TIMER) == {"CANCELLED"}
    for live in scene_session.all_simulations():
        assert not scene_session.is_current(live)
    assert physics_threads() == [] and scene_session.all_simulations() == []
    build.import_file(DESK, bpy.context.scene)
    simulates()


# ------------------------------------------------------------------- memory


def resident_megabytes() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@needs_corpus
def test_memory_stays_flat_over_many_steps_and_recompiles(clean_scene, capsys):
    build.import_file(HUMANOID, clean_scene)
    torso = element("geom", "torso")

    def recompiles(count):
        running = scene_session.simulation(clean_scene)
        for i in range(count):
            torso.mujoco.geom.mass = 8 + (i % 7) * 0.1  # an edit: the next simulate recompiles
            bpy.ops.mujoco.simulate(duration=0.0)
        assert running.latest.model is running.model and scene_session.simulation(clean_scene) is running

    def steps(count):
        for _ in range(count // 10_000):
            bpy.ops.mujoco.simulate(duration=10_000 * 0.005)

    steps(10_000)  # warm-up: caches, allocator arenas, the history's ring
    recompiles(200)
    before = resident_megabytes()
    steps(100_000)
    after_steps = resident_megabytes()
    recompiles(1000)
    after = resident_megabytes()
    running = scene_session.simulation(clean_scene)
    assert running.latest.steps == 110_000
    with capsys.disabled():
        print(f"\nresident memory: {before:.1f} MB, after 1e5 steps {after_steps:.1f} MB, after 1000 "
              f"recompiles {after:.1f} MB ({100 * (after - before) / before:+.2f}%)")
    assert after < 1.05 * before, f"{before:.1f} MB -> {after:.1f} MB"


def test_a_nan_timestep_in_the_model_is_refused_naming_the_model(clean_scene, tmp_path):
    """The scan refuses a NaN setting (as the export does); Play names the model as Export does."""
    root = build.import_file(write(tmp_path, ball_xml("0.002"), name="ballmodel.xml"), clean_scene).root
    root.mujoco.model.option.timestep = float("nan")
    message = refused(bpy.ops.mujoco.play)
    assert message.startswith(f"Error: {root.name}: ") and "timestep" in message, message
    assert bpy.context.view_layer.objects.active == root


@pytest.mark.parametrize("operator", ["play", "simulate", "bake", "bridge_start"])
def test_a_refusal_selects_the_objects_at_fault_in_place_of_the_selection(clean_scene, tmp_path, operator):
    """Operators report an MJBlendError one way (scene/errors.py, report_error): the message,
    and the objects at fault selected instead of what was, the first one active."""
    build.import_file(write(tmp_path, TWO_BALLS), clean_scene)
    one, two, geom = element("body", "one"), element("body", "two"), element("geom", "one")
    geom.location.x = 0.05  # moved: placed from its matrix,
    one.scale = (1, 0, 1)  # which its body's zero scale leaves no inverse of
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == two)  # what the user had selected
    bpy.context.view_layer.objects.active = two
    message = refused(getattr(bpy.ops.mujoco, operator))
    assert f"{geom.name}: the scale of its parent {one.name}" in message, message
    assert set(bpy.context.selected_objects) == {geom, one}
    assert bpy.context.view_layer.objects.active == geom

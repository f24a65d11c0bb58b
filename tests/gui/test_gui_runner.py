"""The runner in Blender's real user interface (issue 15): the Fast display plays in
real time behind hidden objects and is pulled with a real Ctrl + drag; a model whose
step is much slower than real time leaves the UI responsive to a click on Pause.

Each script runs once per module (a fixture); the tests read its report.
"""

import numpy as np
import pytest
from gui_blender import assert_real_screenshot, leftover_processes, run_reporting_script

SMALL_SCREEN = "1280x800x24"  # fewer pixels for Blender's software OpenGL (slow_model.py)


def run_once(tmp_path_factory, script, screen=None):
    """Run tests/gui/`script` in the real user interface: (process, report, folder)."""
    def env(folder):
        return {"MJBLEND_SCREENSHOT": str(folder / "shot1.png"),
                "MJBLEND_SCREENSHOT2": str(folder / "shot2.png")}
    return run_reporting_script(tmp_path_factory, script, env=env, **({"screen": screen} if screen else {}))


def pixels(picture) -> np.ndarray:
    """(height, width, 3) floats of a screenshot, read with Blender's image loader."""
    import bpy

    image = bpy.data.images.load(str(picture))
    try:
        return np.array(image.pixels[:]).reshape(image.size[1], image.size[0], image.channels)[:, :, :3]
    finally:
        bpy.data.images.remove(image)


def check_clean_end(proc, folder):
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "Segmentation fault" not in proc.stderr + proc.stdout


# ------------------------------------------------------------------- Fast display


@pytest.fixture(scope="module")
def fast(tmp_path_factory):
    return run_once(tmp_path_factory, "fast_display.py")


@pytest.mark.gui
def test_fast_display_plays_in_real_time_behind_hidden_objects(fast):
    proc, report, folder = fast
    check_clean_end(proc, folder)
    assert_real_screenshot(folder / "shot1.png")  # (of the viewport while it played)
    assert report["threads_before"] == [] and report["threads_playing"] == ["MJBlend physics (Scene)"]
    assert report["fast_now"] and report["instancer_in_data"], report
    assert report["instancer"] == "Scene (fast display)"
    # every object that moves with a body is hidden (viewport and render); the instancer
    # draws the geoms
    assert {"box", "box geom", "box joint", "pendulum", "pendulum geom", "bob", "swing"} == \
        set(report["moving"])
    assert report["not_hidden"] == [] and report["sources_hidden"]
    assert {"box geom", "pendulum geom", "bob"} <= set(report["sources"])
    # and none of them moved while it showed the simulation: the box object stays in the
    # air where it was authored while the simulated box lies on the floor
    assert report["moved_while_fast"] == []
    samples = np.array(report["samples"], dtype=float)  # wall, simulated, box z, box object z, fast
    assert len(samples) >= 10 and samples[:, 4].all()
    assert np.all(samples[:, 3] == np.float32(0.6)) and np.all(samples[-5:, 2] < 0.11)
    wall, simulated = samples[-1, :2]
    assert wall > 2.0 and abs(simulated - wall) < 0.2 * wall, \
        f"{simulated:.2f} s simulated in {wall:.2f} s of wall time"
    assert 0.8 < report["achieved"] < 1.2
    wall, simulated = report["realtime_total"]  # through the drag and the double-click
    assert abs(simulated - wall) < 0.2 * wall, f"{simulated:.2f} s simulated in {wall:.2f} s of wall time"


@pytest.mark.gui
def test_fast_display_draws_the_simulation(fast):
    _proc, report, folder = fast
    (t1, angle1), (t2, angle2) = report["screenshots"]
    assert t2 > t1 and abs(angle2 - angle1) > 0.2, report["screenshots"]  # the pendulum swung between
    first, second = folder / "shot1.png", folder / "shot2.png"
    changed = (np.abs(pixels(first) - pixels(second)).max(axis=-1) > 0.1).sum()
    assert changed > 300, f"{changed} pixels differ: the instancer drew nothing that moves"


@pytest.mark.gui
def test_ctrl_drag_pulls_a_body_drawn_by_the_instancer(fast):
    _proc, report, _folder = fast
    # the drag starts on the fallen box, drawn only by the instancer, 0.5 m below its
    # hidden object (authored in the air): the pick hits the instance
    assert report["box_start"][2] < 0.11 and report["box_object_z"] == pytest.approx(0.6)
    invokes = report["invokes"]  # [press position, result, picked object]
    assert invokes and invokes[0][1:] == [["RUNNING_MODAL"], "box geom"], invokes
    assert report["grabbed_box"] and report["fast_during_drag"]
    assert report["box_during"] < report["box_start"][0] - 0.3, report  # it followed the cursor (-X)
    assert report["released_box"]


@pytest.mark.gui
def test_double_click_makes_the_instanced_body_active(fast):
    _proc, report, _folder = fast
    assert report["double_click_active"] == "box"


@pytest.mark.gui
def test_double_click_selects_the_instanced_body(fast):
    _proc, report, _folder = fast
    assert report["box_selected_paused"]


@pytest.mark.gui
def test_pause_shows_the_state_on_the_objects(fast):
    _proc, report, _folder = fast
    assert report["paused"] and not report["fast_after_pause"] and report["shown_after_pause"] == []
    errors = report["paused_pose_errors"]  # body object vs the snapshot: (position, rotation)
    assert set(errors) == {"box", "pendulum"}
    assert all(position < 1e-5 and rotation < 1e-5 for position, rotation in errors.values()), errors
    assert report["box_object_z_paused"] < 0.11
    assert report["paused_advance"] == 0


@pytest.mark.gui
def test_reset_while_paused_leaves_no_stale_instance(fast):
    _proc, report, _folder = fast
    assert report["box_object_z_reset"] == pytest.approx(0.6)  # the objects show the reset state
    assert report["ghosts_paused"] == [], f"{report['instances_paused']} instances, off their objects: " \
        f"{report['ghosts_paused']}"


@pytest.mark.gui
def test_stop_puts_back_every_authored_transform(fast):
    _proc, report, _folder = fast
    assert report["restored"], report["not_restored"]
    assert report["box_authored"][2] == pytest.approx(0.6)
    before, after = report["counts"]
    assert before == after and report["fast_blocks_after_stop"] == []
    assert report["threads_after_stop"] == [] and not report["live_after_stop"]


# -------------------------------------------------- a model slower than real time


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    return run_once(tmp_path_factory, "slow_model.py", screen=SMALL_SCREEN)


@pytest.mark.gui
def test_a_model_slower_than_real_time_plays_on_its_thread(slow):
    proc, report, folder = slow
    check_clean_end(proc, folder)
    timestep, step = report["timestep"], report["step_seconds"]
    assert step > 10 * timestep, f"one step takes {step * 1e3:.1f} ms: not clearly slower than real time"
    assert report["play_latency"] is not None, "the click on the header's Play button started nothing"
    assert report["threads_playing"] == ["MJBlend physics (Scene)"]
    played = report["played"]
    assert played["playing"] and played["behind"] and played["message"] == ""
    assert played["steps"] > 0 and played["achieved"] < 0.5, played
    # the modal operator's timer kept ticking, each tick showing a new snapshot
    ticks, wall = report["ticks"], played["wall"]
    assert ticks >= 2 * wall and report["ticks_shown"] >= wall, report
    assert report["tick_gap_max"] < 1.0, report
    assert report["header_playing"] == ["PAUSE"]


@pytest.mark.gui
def test_a_click_on_pause_is_handled_within_half_a_second(slow):
    _proc, report, _folder = slow
    frame = report["frame_seconds"]  # Blender's own cost of one frame here, nothing simulated
    assert report["pauses"] == 1 and not report["runner_playing_after"]
    here = f"(Blender draws a frame in {frame:.2f} s here)"
    latency = report["pause_latency"]
    assert latency is not None and latency < 0.5, f"Pause ran {latency} s after the click {here}"
    flip = report["header_flip_latency"]
    assert flip is not None and flip < 0.5, f"the button showed Play {flip} s after the click {here}"
    assert report["snapshot_pause_latency"] is not None
    assert report["threads_after_stop"] == [] and not report["live_after_stop"]

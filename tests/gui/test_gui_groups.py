"""The group and overlay keys pressed for real over the 3D viewport in Debian's
Blender 5.2 (tests/gui/groups_keys.py): Blender's number key (bound by the user:
Blender 5.2 binds none in Object Mode) acts in a scene without a MuJoCo model; with
one, 3 shows and hides geom group 3 (set by a default class), Shift+5 site group 5,
the collections stay; the overlay keys switch their overlays; the preferences' key
listing draws every item."""

import pytest
from gui_blender import leftover_processes, run_reporting_script


@pytest.fixture(scope="module")
def pressed(tmp_path_factory):
    return run_reporting_script(tmp_path_factory, "groups_keys.py")


@pytest.mark.gui
def test_number_keys_are_blenders_without_a_model(pressed):
    proc, report, folder = pressed
    assert leftover_processes(folder) == []
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert report["mode"] == "OBJECT"
    # what 1 runs in the 3D view's "Object Mode", in order: the add-on's item first
    assert report["ones"] == ["mujoco.toggle_group", "object.hide_collection"]
    assert report["second_before"] is False
    assert report["second_after_1_without_model"] is True  # object.hide_collection: collection 1 only


@pytest.mark.gui
def test_number_keys_show_and_hide_groups_with_a_model(pressed):
    _proc, report, _folder = pressed
    assert report["imported"] == {"visual": [False, False], "hull": [True, True], "mark": [True, True]}
    presses = {i: entry for i, entry in enumerate(report["presses"])}
    on, off = [False, False], [True, True]
    key, hull, mark, visual, geoms, sites, second = presses[0]
    assert (key, hull, mark, visual, geoms[3], second) == ("3", on, off, on, True, False)
    key, hull, mark, visual, geoms, sites, second = presses[1]
    assert (key, hull, geoms[3], second) == ("3", off, False, False)
    key, hull, mark, visual, geoms, sites, second = presses[2]
    assert (key, hull, mark, sites[5], geoms[5], second) == ("shift+5", off, on, True, False, False)
    key, hull, mark, visual, geoms, sites, second = presses[3]
    assert (key, geoms[1], visual, second) == ("1", False, on, False)  # (no geom of group 1)
    key, hull, mark, visual, geoms, sites, second = presses[4]
    assert (key, geoms[1], second) == ("1", True, False)
    key, hull, mark, visual, geoms, sites, second = presses[5]
    assert (key, geoms[0], visual, second) == ("0", False, off, False)


@pytest.mark.gui
def test_number_keys_while_the_fast_display_plays(pressed):
    _proc, report, _folder = pressed
    (key, fast, time, drawn, visible), (key2, fast2, time2, drawn2, visible2) = report["fast"]
    assert fast and fast2 and 0 < time < time2  # playing all along
    # (geom group 0 was switched off above, site group 5 on)
    assert drawn == ["hull", "mark"] and not visible  # drawn by the instancer, its object hidden behind it
    assert drawn2 == ["mark"]
    assert report["stopped"] == {"visual": [True, True], "hull": [False, False], "mark": [False, False]}
    assert report["left"] == []


@pytest.mark.gui
def test_overlay_keys_switch_their_overlays(pressed):
    _proc, report, _folder = pressed
    assert report["overlays"] == [["shift+alt+c", True, False, "NONE", False],
                                  ["ctrl+shift+alt+e", True, True, "NONE", False],
                                  ["shift+alt+l", True, True, "BODY", False],
                                  ["shift+alt+i", True, True, "BODY", True]]


@pytest.mark.gui
def test_the_key_listing_draws_every_item(pressed):
    _proc, report, _folder = pressed
    assert sorted(map(str, report["listed"])) == sorted(map(str, report["items"]))
    assert len(report["items"]) == 28

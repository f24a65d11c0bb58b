"""URLab's debug drawing without Blender (issue 33): the marker store the viewport's
overlay draws (bridge/debug_markers.py) and the debug ops over real sockets.
Each shape's segments, ttl lifetimes on an injected clock, the cap, malformed
markers each refused with its code (nothing added), a storm of 10^5 markers."""

import math

import numpy as np
import pytest
from bridge_fixtures import DESK_TOYS

from mjblend.bridge import debug_markers as dm
from mjblend.bridge.wire import ProtocolError


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def shape(op, **request):
    return dm.SHAPES[op]({"op": op, **request})


# ------------------------------------------------------------------ shapes


def test_marker_is_a_five_centimetre_sphere_with_its_label_at_the_location():
    made = shape("draw_marker", location=[1.0, -2.0, 0.5], color=[1.0, 0.5, 0.0], label="goal", tag="t")
    distances = np.linalg.norm(made.lines - np.array([1.0, -2.0, 0.5]), axis=1)
    np.testing.assert_allclose(distances, dm.MARKER_RADIUS, rtol=1e-5)
    assert len(made.lines) == 2 * 3 * dm.CIRCLE_SEGMENTS  # three circles of 16 segments
    np.testing.assert_array_equal(made.anchor, (1.0, -2.0, 0.5))
    assert made.label == "goal" and made.tag == "t" and made.ttl == 0.0
    np.testing.assert_array_equal(np.unique(made.colors, axis=0), [[1.0, 0.5, 0.0, 1.0]])


def test_line_arrow_box_and_axes_segments():
    line = shape("draw_line", **{"from": [0, 0, 0], "to": [1, 2, 3]}, color=[0, 1, 0], thickness=3.0)
    np.testing.assert_array_equal(line.lines, [[0, 0, 0], [1, 2, 3]])
    assert line.thickness == 3.0

    arrow = shape("draw_arrow", **{"from": [0, 0, 0], "to": [2, 0, 0]}, color=[0, 0, 1])
    np.testing.assert_array_equal(arrow.lines[:2], [[0, 0, 0], [2, 0, 0]])
    heads = arrow.lines[2:].reshape(-1, 2, 3)
    assert len(heads) == 4 and np.all(heads[:, 0] == (2, 0, 0))
    np.testing.assert_allclose(heads[:, 1, 0], 2 - dm.ARROW_HEAD * 2)  # head: 20 % of the length back
    sized = shape("draw_arrow", **{"from": [0, 0, 0], "to": [2, 0, 0]}, color=[0, 0, 1], arrow_size=0.5)
    np.testing.assert_allclose(sized.lines[3:, 0][::2], 1.5)

    # a box turned 90 degrees about z (xyzw): its x half extent lies along y
    s = math.sqrt(0.5)
    box = shape("draw_box", center=[1, 1, 1], half_extents=[0.3, 0.1, 0.2], color=[1, 1, 0],
                rotation_quat=[0, 0, s, s])
    assert len(box.lines) == 24  # twelve edges
    corners = np.unique(np.round(box.lines, 6), axis=0)
    np.testing.assert_allclose(corners.min(axis=0), (0.9, 0.7, 0.8), atol=1e-6)
    np.testing.assert_allclose(corners.max(axis=0), (1.1, 1.3, 1.2), atol=1e-6)

    axes = shape("draw_axes", location=[0, 0, 1], scale=0.5)
    tips = axes.lines[1::10][:3]  # each arrow: shaft (2 ends) + 4 head lines = 10 points
    np.testing.assert_allclose(tips, [[0.5, 0, 1], [0, 0.5, 1], [0, 0, 1.5]])
    np.testing.assert_array_equal(axes.colors[0], dm.AXIS_COLORS[0])
    np.testing.assert_array_equal(axes.colors[10], dm.AXIS_COLORS[1])
    np.testing.assert_array_equal(axes.colors[20], dm.AXIS_COLORS[2])


def test_colour_is_clamped_and_may_carry_alpha():
    assert dm.color({"color": [2.0, -1.0, 0.5]}) == (1.0, 0.0, 0.5, 1.0)
    assert dm.color({"color": [0.1, 0.2, 0.3, 0.4]}) == pytest.approx((0.1, 0.2, 0.3, 0.4))


def test_euler_is_urlabs_rotator_in_mujocos_world():
    """(roll, pitch, yaw) degrees as URLab's Unreal rotator: yaw turns right (x towards
    MuJoCo's -y), pitch looks up (x towards +z); quat_euler reads it back."""
    turn = dm.quat_matrix(dm.euler_quat([0.0, 0.0, 90.0]))
    np.testing.assert_allclose(turn[:, 0], (0, -1, 0), atol=1e-12)
    turn = dm.quat_matrix(dm.euler_quat([0.0, 30.0, 0.0]))
    np.testing.assert_allclose(turn[:, 0], (math.cos(math.radians(30)), 0, math.sin(math.radians(30))),
                               atol=1e-12)
    for euler in ([10.0, -20.0, 30.0], [-45.0, 60.0, -170.0]):
        np.testing.assert_allclose(dm.quat_euler(dm.euler_quat(euler)), euler, atol=1e-9)
    # xyzw on the wire, wxyz inside
    np.testing.assert_allclose(dm.quat_xyzw([0, 0, 0, 2]), (1, 0, 0, 0))


# ------------------------------------------------------------- lifetimes


def test_ttl_seconds_one_frame_and_until_cleared():
    clock = Clock()
    store = dm.MarkerStore(clock=clock)
    timed = store.add(shape("draw_marker", location=[0, 0, 0], color=[1, 0, 0], ttl=2.0))
    store.add(shape("draw_marker", location=[1, 0, 0], color=[1, 0, 0], ttl=0.0))
    store.add(shape("draw_marker", location=[2, 0, 0], color=[1, 0, 0], ttl=-1.0, tag="keep"))
    assert timed == 1 and len(store) == 3
    clock.now += 1.0  # a ttl-0 marker waits for the frame that draws it, however late
    first = store.frame()
    assert len(first.markers) == 3
    assert first.next_expiry == pytest.approx(clock.now + dm.ONE_FRAME)  # (a redraw is due then)
    clock.now += dm.ONE_FRAME
    second = store.frame()
    assert [m.anchor[0] for m in second.markers] == [0.0, 2.0] and second.version > first.version
    clock.now = 100.0 + 2.0 - 1e-9
    assert len(store.frame().markers) == 2
    clock.now = 102.0
    assert [m.anchor[0] for m in store.frame().markers] == [2.0]
    clock.now += 1e6  # persistent: until cleared
    assert len(store.frame().markers) == 1
    assert store.clear("other") == 0 and len(store) == 1
    assert store.clear("keep") == 1 and len(store) == 0


def test_unchanged_store_keeps_its_version_and_text_counts_as_a_change():
    store = dm.MarkerStore(clock=Clock())
    version = store.frame().version
    assert store.frame().version == version
    store.set_text("hello")
    assert store.frame().text == "hello" and store.frame().version == version + 1
    store.set_text("hello")
    assert store.frame().version == version + 1


# ------------------------------------------------------------------ the cap


def test_cap_drops_the_oldest_transient_marker_and_refuses_beyond_persistent_ones():
    store = dm.MarkerStore(cap=10, clock=Clock())
    for i in range(6):
        store.add(shape("draw_marker", location=[i, 0, 0], color=[1, 1, 1], ttl=-1.0))
    for i in range(6, 12):
        store.add(shape("draw_marker", location=[i, 0, 0], color=[1, 1, 1], ttl=5.0))
    assert len(store) == 10 and store.evicted == 2
    assert sorted(m.anchor[0] for m in store.frame().markers) == [0, 1, 2, 3, 4, 5, 8, 9, 10, 11]
    for i in range(12, 16):  # persistent ones push out the transient ones ...
        store.add(shape("draw_marker", location=[i, 0, 0], color=[1, 1, 1], ttl=-1.0))
    assert len(store) == 10 and store.evicted == 6
    version = store.version
    with pytest.raises(ProtocolError) as refused:  # ... but never another persistent one
        store.add(shape("draw_marker", location=[0, 0, 0], color=[1, 1, 1], ttl=-1.0))
    assert refused.value.code == "marker_limit"
    assert len(store) == 10 and store.version == version  # (nothing changed)
    store.clear()
    store.add(shape("draw_marker", location=[0, 0, 0], color=[1, 1, 1], ttl=-1.0))
    assert len(store) == 1


def test_storm_of_a_hundred_thousand_markers_stays_capped():
    clock = Clock()
    store = dm.MarkerStore(clock=clock)
    requests = [{"op": "draw_line", "from": [i * 1e-3, 0.0, 0.0], "to": [0.0, 0.0, 1.0], "color": [1, 0, 0],
                 "ttl": (0.0, 0.5, 3.0)[i % 3]} for i in range(100_000)]
    for i, request in enumerate(requests):
        store.add(dm.SHAPES["draw_line"](request))
        if i % 1000 == 0:
            clock.now += 0.01
            store.frame()
        assert len(store) <= dm.CAP
    assert len(store) == dm.CAP and store.added == 100_000
    frame = store.frame()
    assert len(frame.markers) == dm.CAP
    # the newest are the ones kept
    np.testing.assert_allclose(frame.markers[-1].lines[0, 0], 99.999)
    clock.now += 3.1  # every one was transient: all gone after the longest ttl
    assert len(store.frame().markers) == 0 and len(store) == 0


# ---------------------------------------------------------- over the wire

MALFORMED = [
    ("draw_marker", {"color": [1, 0, 0]}, "missing_field"),
    ("draw_marker", {"location": [1, 2], "color": [1, 0, 0]}, "dim_mismatch"),
    ("draw_marker", {"location": [1, 2, float("nan")], "color": [1, 0, 0]}, "bad_value"),
    ("draw_marker", {"location": "here", "color": [1, 0, 0]}, "bad_value"),
    ("draw_marker", {"location": [0, 0, 0], "color": [1, 0]}, "dim_mismatch"),
    ("draw_marker", {"location": [0, 0, 0], "color": "red"}, "bad_value"),
    ("draw_marker", {"location": [0, 0, 0], "color": [1, 0, 0], "ttl": "forever"}, "bad_value"),
    ("draw_marker", {"location": [0, 0, 0], "color": [1, 0, 0], "label": "x" * 1000}, "bad_value"),
    ("draw_marker", {"location": [True, 0, 0], "color": [1, 0, 0]}, "bad_value"),
    ("draw_line", {"from": [0, 0, 0], "color": [1, 0, 0]}, "missing_field"),
    ("draw_line", {"from": [0, 0, 0], "to": [1, 1, 1], "color": [1, 0, 0], "thickness": 0}, "bad_value"),
    ("draw_arrow", {"from": [0, 0, 0], "to": [1, 1, float("inf")], "color": [1, 0, 0]}, "bad_value"),
    ("draw_box", {"center": [0, 0, 0], "half_extents": [1, 1, 1], "color": [1, 0, 0],
                  "rotation_quat": [0, 0, 0, 0]}, "bad_value"),
    ("draw_box", {"center": [0, 0, 0], "half_extents": [1, 1, 1], "color": [1, 0, 0],
                  "rotation_quat": [0, 0, 1]}, "dim_mismatch"),
    ("draw_axes", {"location": [0, 0, 0], "scale": "big"}, "bad_value"),
    ("draw_axes", {"location": [0, 0, 0], "rotation_euler": [0, 0]}, "dim_mismatch"),
    ("set_overlay_text", {}, "missing_field"),
    ("set_overlay_text", {"text": 5}, "bad_value"),
]


def test_debug_ops_over_the_wire_and_malformed_markers_refused(serve):
    served = serve(DESK_TOYS)
    client = served.client()
    store = served.bridge.dispatcher.debug.markers
    reply = client.call("draw_marker", location=[0.0, 0.0, 0.5], color=[1.0, 0.0, 0.0], ttl=-1.0, label="a")
    assert reply == {"op": "draw_marker_ok", "markers": 1}
    assert client.call("draw_axes", location=[0.0, 0.0, 0.0], ttl=-1.0)["op"] == "draw_axes_ok"
    before = (len(store), store.version)
    for op, fields, code in MALFORMED:
        reply = client.call(op, **fields)
        assert (reply["op"], reply.get("code")) == ("error", code), (op, fields, reply)
    assert (len(store), store.version) == before  # a refused request changes nothing
    assert client.call("set_overlay_text", text="hello", anchor="top_left")["op"] == "set_overlay_text_ok"
    assert store.text == "hello"
    assert client.call("clear_markers")["cleared"] == 2 and len(store) == 0
    # viewport ops need Blender's 3D view: a bare model answers unsupported, with why
    meta = client.call("meta")
    assert "get_camera" in meta["unsupported"] and "draw_marker" not in meta["unsupported"]
    refused = client.call("get_camera")
    assert refused["code"] == "unsupported" and "3D view" in refused["message"]


def test_screenshot_png_holds_the_pixels():
    """bridge/debug_ops.png_bytes: a valid PNG (chunks, CRCs) whose pixels read back."""
    import struct
    import zlib

    from mjblend.bridge.debug_ops import png_bytes

    rgba = np.random.default_rng(3).integers(0, 256, (7, 5, 4), dtype=np.uint8)
    png = png_bytes(rgba)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks = 8, {}
    while at < len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        kind, data = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        assert struct.unpack(">I", png[at + 8 + length:at + 12 + length])[0] == zlib.crc32(kind + data)
        chunks[kind] = data
        at += 12 + length
    assert struct.unpack(">IIBBBBB", chunks[b"IHDR"]) == (5, 7, 8, 6, 0, 0, 0)
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(7, 1 + 5 * 4)
    assert not rows[:, 0].any()  # (no filter)
    np.testing.assert_array_equal(rows[:, 1:].reshape(7, 5, 4), rgba)

"""engine/overlays.py labels and frames: every label kind (mjtLabel) and frame kind
(mjtFrame) equals what MuJoCo's own renderer puts in its scene. The oracle is
`mjv_updateScene` on the runner's MjData (no GPU): the labelled mjvGeoms' text and
position, and the frame axes (MuJoCo's three red/green/blue cylinders: their middle
and half length), float32 for float32, as multisets."""

import collections
import os

import mujoco
import numpy as np
import pytest
from helpers import CORPUS, needs_corpus

from mjblend.engine import commands as cmd, overlays
from mjblend.engine.runner import Runner
from mjblend.engine.session import EngineSession

MODELS = [
    "mujoco_model/model/humanoid/humanoid.xml",  # cameras, lights, contacts, islands
    "menagerie/agility_cassie/scene.xml",  # connect constraints, hidden geom groups, a site
    "mujoco_model/model/flex/pinch.xml",  # a flex, flex contacts
    "pip/dm_control/locomotion/walkers/assets/rodent.xml",  # a skin, tendons
    "menagerie/robotiq_2f85/scene.xml",  # tendons, a tendon actuator, connects
]
STEPS = 200
SHOWN = np.array([True, True, True, False, False, False])  # MuJoCo's default groups
VIS = mujoco.mjtVisFlag
# the flags MuJoCo needs to draw (and so to label) joints, cameras, lights, actuators,
# constraints, contacts and the selection point
FLAGS = (VIS.mjVIS_JOINT, VIS.mjVIS_CAMERA, VIS.mjVIS_LIGHT, VIS.mjVIS_ACTUATOR, VIS.mjVIS_CONSTRAINT,
         VIS.mjVIS_CONTACTPOINT, VIS.mjVIS_CONTACTFORCE, VIS.mjVIS_SELECT)
AXIS_RGBA = np.array([(0.9, 0, 0, 1), (0, 0.9, 0, 1), (0, 0, 0.9, 1)], np.float32)

# Not in the corpus: a slider-crank, a site actuator, a disabled actuator group, an invisible
# geom and site, named and unnamed lights, a weld.
SMALL = """
<mujoco>
  <option actuatorgroupdisable="2"/>
  <worldbody>
    <light name="lamp" pos="0 0 3" dir="0 .6 -.8"/><light pos="1 0 2" dir="1 0 -1"/>
    <geom type="plane" size="3 3 .1"/>
    <site name="crank" pos="0 .2 1"/><geom size=".1" pos="2 0 1" rgba="1 0 0 0" contype="0" conaffinity="0"/>
    <body name="a" pos="0 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/>
      <site name="slider" pos="0 0 .1" zaxis="0 1 0"/><site name="ghost" rgba="0 0 0 0"/>
      <camera name="eye" pos="0 -1 0" xyaxes="1 0 0 0 0 1"/>
      <body name="b" pos=".3 0 0"><joint name="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/></body>
    </body>
    <body name="d" pos="1 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
  </worldbody>
  <equality><weld body1="a" body2="d" relpose=".9 .1 0 1 0 0 0"/></equality>
  <actuator>
    <general name="crank" cranksite="crank" slidersite="slider" cranklength=".5"/>
    <motor site="slider" gear="1 0 0 0 0 0"/>
    <motor name="off" joint="hinge" group="2"/>
  </actuator>
</mujoco>
"""


def _masks(model) -> dict:
    """The element ids of MuJoCo's default groups, by label/frame kind."""
    def of(groups):
        return SHOWN[np.clip(groups, 0, 5)]
    return {"GEOM": of(model.geom_group), "SITE": of(model.site_group), "JOINT": of(model.jnt_group),
            "TENDON": of(model.tendon_group), "ACTUATOR": of(model.actuator_group),
            "FLEX": of(model.flex_group[:model.nflex]), "SKIN": of(model.skin_group[:model.nskin])}


def _scene(model, data, label=0, frame=0, selection=(-1, (0, 0, 0))) -> mujoco.MjvScene:
    option = mujoco.MjvOption()
    option.label, option.frame = label, frame
    for flag in FLAGS:
        option.flags[flag] = 1
    perturb = mujoco.MjvPerturb()
    perturb.select, perturb.localpos[:] = selection[0], selection[1]
    scene = mujoco.MjvScene(model, maxgeom=50000)
    mujoco.mjv_updateScene(model, data, option, perturb, mujoco.MjvCamera(), mujoco.mjtCatBit.mjCAT_ALL,
                           scene)
    assert scene.ngeom < scene.maxgeom  # (nothing left out)
    return scene


def _run(model):
    runner = Runner(EngineSession(model), threaded=False)
    runner.send(cmd.Step(STEPS))
    return runner.latest, runner.session.data  # (the runner is paused: its data is the snapshot's state)


def _check(model, counts):
    shot, data = _run(model)
    masks = _masks(model)
    selection = (min(2, model.nbody - 1), (0.01, -0.02, 0.03))
    for k, kind in enumerate(overlays.LABEL_KINDS[1:], start=1):
        scene = _scene(model, data, label=k, selection=selection)
        theirs = collections.Counter((g.label, tuple(g.pos)) for g in scene.geoms[:scene.ngeom] if g.label)
        ours = collections.Counter((text, tuple(np.float32(pos))) for text, pos in
                                   overlays.labels(model, shot, kind, masks.get(kind), selection))
        assert ours == theirs, (kind, list((ours - theirs).items())[:3], list((theirs - ours).items())[:3])
        counts[kind] += len(ours)
    for k, kind in enumerate(overlays.FRAME_KINDS[1:], start=1):
        scene = _scene(model, data, frame=k)
        theirs = collections.Counter(
            (int(np.argmax(g.rgba[:3])), tuple(g.pos), float(g.size[2])) for g in scene.geoms[:scene.ngeom]
            if g.type == mujoco.mjtGeom.mjGEOM_CYLINDER and g.category == mujoco.mjtCatBit.mjCAT_DECOR
            and (AXIS_RGBA == g.rgba).all(axis=1).any())
        ours = collections.Counter()
        for axis, segments in enumerate(overlays.frame_axes(model, shot, kind, masks.get(kind))):
            for start, end in zip(segments[0::2], segments[1::2], strict=True):
                # what mjv_connector makes of a cylinder from start to end
                half = np.float32(np.linalg.norm(end - start)) * np.float32(0.5)
                ours[(axis, tuple(np.float32(0.5 * (start + end))), float(half))] += 1
        assert ours == theirs, (kind, list((ours - theirs).items())[:3], list((theirs - ours).items())[:3])
        counts[f"frame {kind}"] += len(ours)


@needs_corpus
def test_every_label_and_frame_kind_is_mujocos_on_corpus_models():
    counts = collections.Counter()
    for path in MODELS:
        _check(mujoco.MjModel.from_xml_path(os.path.join(CORPUS, path)), counts)
    _check(mujoco.MjModel.from_xml_string(SMALL), counts)
    # every kind was met somewhere (the comparisons above are not of empty lists)
    empty = [kind for kind in overlays.LABEL_KINDS[1:] if not counts[kind]]
    empty += [kind for kind in overlays.FRAME_KINDS[1:] if not counts[f"frame {kind}"]]
    assert not empty, counts


def test_the_small_model_labels_what_mujoco_draws():
    model = mujoco.MjModel.from_xml_string(SMALL)
    shot, _data = _run(model)
    actuators = [text for text, _pos in overlays.labels(model, shot, "ACTUATOR")]
    assert actuators == ["crank", "actuator 1"]  # "off" is in a disabled group (disableactuator)
    lights = [text for text, _pos in overlays.labels(model, shot, "LIGHT")]
    assert lights == ["lamp", "light 1"]
    sites = [text for text, _pos in overlays.labels(model, shot, "SITE")]
    assert sites == ["crank", "slider"]  # the invisible one has none
    point = overlays.labels(model, shot, "SELPNT", selection=(1, (0.0, 0.0, 0.1)))
    assert len(point) == 1 and point[0][0].endswith("(local 0.000 0.000 0.100)")
    with pytest.raises(ValueError, match="no MuJoCo label kind"):
        overlays.labels(model, shot, "ELBOW")

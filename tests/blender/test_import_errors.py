"""Bad input gives one clear message and leaves the scene exactly as it was.

The broken files are made here, in a temporary folder, from corpus files.
"""

import os
import re
import shutil

import bpy
import pytest
from helpers import CORPUS

CARTPOLE = "pip/dm_control/suite/cartpole.xml"
PANDA_DIR = "menagerie/franka_emika_panda"
HFIELD = "menagerie/google_barkour_vb/scene_hfield_mjx.xml"
DATA = ("objects", "meshes", "materials", "images", "collections", "worlds", "curves",
        "cameras", "lights", "node_groups", "textures", "actions", "scenes")

pytestmark = pytest.mark.skipif(not os.path.isdir(CORPUS), reason=f"no corpus at {CORPUS}")


def corpus_text(path):
    with open(os.path.join(CORPUS, path), encoding="utf-8") as fh:
        return fh.read()


def write(folder, name, content):
    path = os.path.join(folder, name)
    mode = "wb" if isinstance(content, bytes) else "w"
    with open(path, mode) as fh:
        fh.write(content)
    return path


def substitute(text, pattern, replacement):
    new = re.sub(pattern, replacement, text, count=1)
    assert new != text, pattern
    return new


def copy_model_dir(tmp, corpus_dir, drop=None):
    """A copy of a corpus model folder, optionally without the files matching `drop`."""
    target = os.path.join(tmp, os.path.basename(corpus_dir))
    shutil.copytree(os.path.join(CORPUS, corpus_dir), target)
    if drop:
        for folder, _, files in os.walk(target):
            for name in files:
                if re.search(drop, name):
                    os.remove(os.path.join(folder, name))
    return target


def broken_files(tmp):
    """(case name, path, words the message must contain) -- at least 30 cases."""
    cart = corpus_text(CARTPOLE)
    # cartpole includes ./common/*.xml: bring them, so only the planted fault fails
    shutil.copytree(os.path.join(CORPUS, os.path.dirname(CARTPOLE), "common"),
                    os.path.join(tmp, "common"))
    cases = []

    def add(name, content, *words, filename=None):
        path = write(tmp, filename or f"{name}.xml", content)
        cases.append((name, path, words))

    add("empty", "")
    add("whitespace", "   \n\n")
    add("html", "<!DOCTYPE html><html><head><title>404</title></head><body>Not found</body></html>")
    add("svg", '<svg xmlns="http://www.w3.org/2000/svg"><rect width="1"/></svg>')
    add("garbage", bytes(range(256)) * 8)
    with open(os.path.join(CORPUS, "menagerie/google_barkour_vb/assets/hfield.png"), "rb") as fh:
        add("binary_png", fh.read())
    for fraction in (0.1, 0.33, 0.5, 0.75, 0.95):
        add(f"truncated_{int(fraction * 100)}", cart[: int(len(cart) * fraction)])
    add("unclosed_tag", cart.replace("</mujoco>", ""))
    add("bad_pos", substitute(cart, r'pos="[^"]*"', 'pos="a b c"'), "pos", "line")
    add("bad_size", substitute(cart, r'size="[^"]*"', 'size="big"'), "size")
    add("bad_type", substitute(cart, r'type="[^"]*"', 'type="teapot"'), "teapot")
    add("bad_bool", substitute(cart, r'<joint ', '<joint limited="maybe" '), "maybe")
    add("unknown_attribute", substitute(cart, r"<body ", '<body colour="red" '), "colour")
    add("unknown_element", substitute(cart, r"<worldbody>", "<worldbody><teapot/>"), "teapot")
    add("zero_quat", substitute(cart, r"<worldbody>",
                                '<worldbody><body quat="0 0 0 0"><geom size="1"/></body>'), "quaternion")
    add("negative_mass", substitute(cart, r"<worldbody>",
                                    '<worldbody><body><geom size="1" mass="-1"/></body>'), "negative")
    add("utf16", cart.encode("utf-16"), "UTF-8")
    add("missing_joint", substitute(cart, r"<actuator>", '<actuator><motor joint="no_such_joint"/>'),
        "no_such_joint")
    add("duplicate_name", substitute(cart, r"<worldbody>",
                                     '<worldbody><body name="dup"/><body name="dup"/>'))
    add("zero_size", substitute(cart, r"<worldbody>", '<worldbody><geom type="box" size="0 0 0"/>'))
    add("joint_in_world", substitute(cart, r"<worldbody>", '<worldbody><joint name="jw"/>'))
    add("missing_include", substitute(cart, r"<worldbody>", '<include file="nowhere.xml"/><worldbody>'),
        "nowhere.xml")
    write(tmp, "loop_b.xml", '<mujoco><include file="loop_a.xml"/></mujoco>')
    add("include_loop", '<mujoco><include file="loop_b.xml"/></mujoco>', "already included",
        filename="loop_a.xml")
    add("self_include", '<mujoco><include file="self_include.xml"/></mujoco>')
    add("missing_mesh", '<mujoco><asset><mesh name="m" file="nowhere.stl"/></asset>'
        '<worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>', "nowhere.stl")
    add("missing_texture", '<mujoco><asset><texture name="t" type="2d" file="nowhere.png"/>'
        '<material name="m" texture="t"/></asset>'
        '<worldbody><geom size="1" material="m"/></worldbody></mujoco>', "nowhere.png")
    write(tmp, "corrupt.stl", b"solid junk\nthis is not an stl\n" * 3)
    add("corrupt_mesh", '<mujoco><asset><mesh name="m" file="corrupt.stl"/></asset>'
        '<worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>')
    write(tmp, "corrupt.png", b"\x89PNG\r\n\x1a\nnot really a png")
    add("corrupt_png", '<mujoco><asset><hfield name="h" file="corrupt.png" size="1 1 1 1"/></asset>'
        '<worldbody><geom type="hfield" hfield="h"/></worldbody></mujoco>')
    add("bad_urdf", '<robot name="r"><link name="a"/><joint name="j" type="revolute">'
        '<parent link="a"/><child link="missing"/></joint></robot>', filename="bad_urdf.urdf")
    # a real model whose meshes are missing
    panda = copy_model_dir(tmp, PANDA_DIR, drop=r"\.(obj|stl)$")
    cases.append(("panda_without_meshes", os.path.join(panda, "scene.xml"), ()))
    cases.append(("no_such_file", os.path.join(tmp, "does_not_exist.xml"), ("no such file",)))
    cases.append(("a_directory", tmp + os.sep, ()))
    return cases


def snapshot():
    return {name: sorted(b.name for b in getattr(bpy.data, name)) for name in DATA}


def test_the_unbroken_base_imports(clean_scene, tmp_path):
    broken_files(str(tmp_path))  # copies common/ next to it
    path = write(str(tmp_path), "cartpole.xml", corpus_text(CARTPOLE))
    assert bpy.ops.import_scene.mjcf(filepath=path) == {"FINISHED"}


def test_broken_inputs_fail_cleanly(clean_scene, tmp_path):
    cases = broken_files(str(tmp_path))
    assert len(cases) >= 30
    # Something already in the scene must survive every failed import untouched.
    bpy.ops.mesh.primitive_cube_add()
    before = snapshot()
    failures = []
    for name, path, words in cases:
        try:
            result = bpy.ops.import_scene.mjcf(filepath=path)
            failures.append(f"{name}: imported ({result}) instead of failing")
            continue
        except RuntimeError as error:  # bpy raises the operator's ERROR report
            message = str(error)
        label = os.path.basename(path.rstrip(os.sep)) or path
        if label not in message and path not in message:
            failures.append(f"{name}: message does not name the file: {message}")
        if "Traceback" in message:
            failures.append(f"{name}: traceback in the message: {message}")
        for word in words:
            if word not in message:
                failures.append(f"{name}: message lacks {word!r}: {message}")
        if snapshot() != before:
            failures.append(f"{name}: bpy.data changed")
            bpy.ops.wm.read_homefile(use_empty=True)
            bpy.ops.mesh.primitive_cube_add()
            before = snapshot()
    assert not failures, "\n".join(failures)

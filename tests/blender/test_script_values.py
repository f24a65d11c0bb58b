"""Scripts see the same values whatever MJBlend stores (issue 35's "tests over every kind").

tests/blender/data/script_values.json holds, for every element kind and every attribute a
script can set, what MJBlend with storage format 1 (commit a7505ab, bpy 4.2 module)
answered when a script set it on a fresh element (Add), an imported element and a class,
and what an element inheriting it from that class shows: through RNA
(`obj.mujoco.<kind>.<prop>`), `spec_io.read_value` and the scan's spec (what an export
writes). tests/script_values.py sets and reads; tools/make_script_values.py recorded it.
"""

import json
import os

import bpy
from script_values import record

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def test_every_kind_reads_back_what_a_script_set_as_before():
    recorded = json.load(open(os.path.join(DATA, "script_values.json"), encoding="utf-8"))
    found = record(bpy)
    assert sorted(set(recorded) ^ set(found)) == []  # the same attributes set and read
    differing = [f"{key}[{i}]: {answer} != {recorded[key][i]}"
                 for key, answers in found.items() for i, answer in enumerate(answers)
                 if answer != recorded[key][i]]
    assert differing == []
    # (it exercises what it says: float32 vs double, a vector's one component, inheritance)
    assert recorded["imported/geom/friction"][1]["read"] == [0.12345679, 0.12345679, 2.5]
    assert recorded["inherits/geom/margin"][0]["spec"] == 0.1

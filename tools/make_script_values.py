"""Re-make tests/blender/data/script_values.json: what a script sees when it sets an
attribute of every kind on a fresh element, an imported one and a class (the oracle
of tests/blender/test_script_values.py; tests/script_values.py says what is set).

Recorded with storage format 1 (commit a7505ab) in the bpy 4.2 module:

    /work/main/.venv-bpy-4.2.23/bin/python tools/make_script_values.py

Re-making it on a later tree records THAT tree's answers: only do so when a change
of what scripts see is intended, and say so.
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from addon_loader import enable_addon

    import bpy

    enable_addon()
    from script_values import record

    answers = record(bpy)
    path = os.path.join(ROOT, "tests", "blender", "data", "script_values.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(answers, f, indent=0, sort_keys=True)
        f.write("\n")
    print("recorded", len(answers), "attributes with bpy", bpy.app.version_string, "->", path)
    sys.stdout.flush()
    os._exit(0)  # (the bpy 4.2 module may crash at exit: tests/blender/conftest.py)


if __name__ == "__main__":
    main()

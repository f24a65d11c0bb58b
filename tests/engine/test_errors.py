"""Every exception class the package defines derives from MJBlendError
(engine/errors.py): each failure carries its message and the objects at fault the
same way, and an operator reports it the one way (scene/errors.py, report_error).

Read from the source (no import: tier 1 has no bpy): a class is an exception when
a base, followed through the package's own classes, is a builtin exception or a
name ending in Error or Exception (mujoco.FatalError, zmq.ZMQError, ...).
"""

import ast
import builtins
import os

from addon_loader import ROOT

BASE = "MJBlendError"
# Exceptions that are deliberately no failure of MJBlend (file:class -> why)
NOT_FAILURES = {
    "batch/ray_pool.py:_Stopped": "control flow: a Ray actor unwinds a policy call the driver gave up",
}
BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}
NOT_THE_PACKAGE = {"tests", "tools", "bench", "docs", "examples", "wheels", "dist", "__pycache__"}


def package_classes(root):
    """(file, line, class name, base names) of every class of the package; a dotted
    base (`simulation.SimulationError`) by its last name."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in NOT_THE_PACKAGE]
        for name in filenames:
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
                if isinstance(node, ast.ClassDef):
                    bases = [ast.unparse(base).split(".")[-1] for base in node.bases]
                    yield rel, node.lineno, node.name, bases


def violations(root):
    """'file:line: Class(bases)' for each exception class that is no MJBlendError."""
    classes = list(package_classes(root))
    bases_of = {}  # a class name -> its bases (a name defined twice: both definitions')
    for _rel, _line, name, bases in classes:
        bases_of.setdefault(name, set()).update(bases)

    def ancestors(bases):
        seen, todo = set(), list(bases)
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(bases_of.get(name, ()))
        return seen

    found = []
    for rel, line, name, bases in classes:
        above = ancestors(bases)
        is_exception = any(n in BUILTIN_EXCEPTIONS or n.endswith(("Error", "Exception")) for n in above)
        if (is_exception and BASE not in above and name != BASE
                and f"{rel.replace(os.sep, '/')}:{name}" not in NOT_FAILURES):
            found.append(f"{rel}:{line}: {name}({', '.join(bases)})")
    return found


def test_every_exception_of_the_package_is_an_mjblend_error():
    assert {name for _rel, _line, name, _bases in package_classes(ROOT)} >= {
        BASE, "BridgeError", "ProtocolError", "BatchError", "SimulationError"}  # it reads the tree
    assert violations(ROOT) == []


def test_the_rule_catches_an_exception_that_is_no_mjblend_error(tmp_path):
    files = {
        "engine/errors.py": "class MJBlendError(Exception):\n    pass\n",
        "engine/session.py": "class TooManySteps(ValueError):\n    pass\n\n\n"
                             "class Refused(MJBlendError, ValueError):\n    pass\n",  # allowed
        "bridge/wire.py": "class ProtocolError(Exception):\n    pass\n\n\n"
                          "class Framing(ProtocolError):\n    pass\n\n\n"
                          "class Message:\n    pass\n",  # not an exception
        "live/scene_session.py": "class SimulationError(errors.MJBlendError):\n    pass\n\n\n"
                                 "class SimulationEnded(SimulationError):\n    pass\n\n\n"  # allowed
                                 "class Crashed(mujoco.FatalError):\n    pass\n",
        "batch/ray_pool.py": "class _Stopped(Exception):\n    pass\n",  # allowed: NOT_FAILURES
        "tests/test_x.py": "class Skip(Exception):\n    pass\n",  # not the package
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert sorted(violations(tmp_path)) == [
        "bridge/wire.py:1: ProtocolError(Exception)",
        "bridge/wire.py:5: Framing(ProtocolError)",
        "engine/session.py:1: TooManySteps(ValueError)",
        "live/scene_session.py:9: Crashed(FatalError)",
    ]

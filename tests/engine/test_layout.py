"""The dependency rule of ARCHITECTURE.md's layout, read from the imports.

- engine/, bridge/, batch/ never import Blender (bpy and its modules);
- components/ imports Blender only in its property groups (the modules
  BLENDER_ALLOWED_IN_COMPONENTS names);
- every property group (what a .blend saves) is defined in components/;
- a stage imports only itself and the stages below it (STAGES, bottom first),
  and never what NEVER_IMPORTS names (the scan knows nothing of the bridge: its
  entity prefixes are handed to it);
- nothing imports ui/ or operators/ but app/;
- a scene's unsaved state is kept by its SceneSession (live/scene_session.py):
  the Blender-side stages hold no module-level registry (an empty dict, list,
  set, ... filled at run time) but the few RUNTIME_REGISTRIES, each with its reason.

Every `import` and `from ... import` in the package is checked, wherever it
stands (module level or inside a function).
"""

import ast
import os
import re

from addon_loader import ROOT


BLENDER_MODULES = {"bpy", "bpy_extras", "mathutils", "gpu", "gpu_extras", "bmesh", "addon_utils", "bl_math",
                   "idprop", "blf", "aud", "freestyle", "bl_ui", "bl_operators"}
# Bottom first: a stage may import the stages before it, never those after it.
STAGES = ["blender_compat", "engine", "bridge", "batch", "components", "scene", "geometry", "importer",
          "scan", "exporter", "sync", "live", "authoring", "ui", "operators", "app"]
BLENDER_FREE = {"engine", "bridge", "batch"}
ONLY_APP_IMPORTS = {"ui", "operators"}
BLENDER_ALLOWED_IN_COMPONENTS = {"components/properties.py", "components/scene_settings.py",
                                 "components/overlay_settings.py", "components/plot_settings.py",
                                 "components/camera_preview_settings.py",
                                 "components/inherit.py"}  # (what an unset attribute reads: bpy.data's roots)
# beside the engine, the bpy-free packages use only the engine
BPY_FREE_MAY_IMPORT = {"engine": {"engine"}, "bridge": {"engine", "bridge"}, "batch": {"engine", "batch"}}
NEVER_IMPORTS = {"scan": {"bridge"}}  # lower stages a stage must not import all the same
# The stages that live with Blender's scenes, and the module-level containers they may
# fill at run time: none of them is per-scene state.
STATEFUL_STAGES = {"scene", "geometry", "importer", "scan", "exporter", "sync", "live", "authoring", "ui",
                   "operators", "app"}
RUNTIME_REGISTRIES = {
    "live/scene_session.py:_SESSIONS": "the one registry: scene -> its SceneSession",
    "importer/build.py:_KIND_VALUES": "MuJoCo's enum values by class: the same for every scene",
    "importer/build.py:_BUILTIN": "MuJoCo's built-in defaults per kind: the same for every scene",
    "geometry/materials.py:_saved_groups": "the session's saved copies of the shared node groups (files)",
    "ui/keymaps.py:_registered": "the keymap items the add-on added (removed on disable)",
    "ui/plots/draw.py:_handles": "the draw handlers the add-on added (removed on disable)",
    "ui/overlays/draw.py:_handles": "the draw handlers the add-on added (removed on disable)",
    "ui/overlays/labels.py:_atlases": "GPU textures of label texts, shared by every scene",
    "ui/plots/draw.py:_glyphs": "GPU textures of the viewport corner's glyphs, one per text size",
    "operators/plots.py:_items": "enum item strings Blender keeps pointers to",
    "components/camera_preview_settings.py:_items": "enum item strings Blender keeps pointers to",
    "ui/camera_preview/draw.py:_handles": "the draw handlers the add-on added (removed on disable)",
    "ui/overlays/debug_draw.py:_handles": "the draw handlers the add-on added (removed on disable)",
    "ui/overlays/screenshot.py:_handles": "the draw handlers the add-on added (removed on disable)",
}
EMPTY_CONTAINERS = {"dict", "list", "set", "WeakKeyDictionary", "WeakValueDictionary", "OrderedDict",
                    "defaultdict", "deque"}


def stage_of(relpath):
    first = relpath.split(os.sep)[0]
    return first[:-3] if first.endswith(".py") else first


def package_files(root):
    """(path relative to root, syntax tree) of every package file."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in {
            "tests", "tools", "bench", "docs", "examples", "wheels", "dist", "__pycache__"}]
        for name in filenames:
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.sep not in rel and name != "blender_compat.py":
                continue  # __init__.py of the add-on: registration only
            yield rel, ast.parse(open(path, encoding="utf-8").read(), path)


def package_imports(root):
    """(file, line, imported stage or None, top-level module) for every import of every package file."""
    for rel, tree in package_files(root):
        package = rel[:-3].split(os.sep)[:-1]  # the folders the file is in
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield rel, node.lineno, None, alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    yield rel, node.lineno, None, node.module.split(".")[0]
                    continue
                base = package[:len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
                if target:
                    yield rel, node.lineno, target[0], None
                else:  # "from .. import x": x is a stage (or blender_compat)
                    for alias in node.names:
                        yield rel, node.lineno, alias.name, None


def violations(root):
    found = []
    for rel, line, stage, module in package_imports(root):
        own = stage_of(rel)
        where = f"{rel}:{line}"
        if module in BLENDER_MODULES:
            if own in BLENDER_FREE:
                found.append(f"{where}: {own}/ imports {module} (it must run without Blender)")
            elif own == "components" and rel not in BLENDER_ALLOWED_IN_COMPONENTS:
                found.append(f"{where}: components/ imports {module} outside its property groups")
        if stage is None or stage == own:
            continue
        if stage not in STAGES:
            found.append(f"{where}: imports {stage}, a package the layout does not name")
            continue
        if stage in ONLY_APP_IMPORTS and own != "app":
            found.append(f"{where}: {own}/ imports {stage}/ (only app/ may)")
        elif own in BPY_FREE_MAY_IMPORT and stage not in BPY_FREE_MAY_IMPORT[own]:
            allowed = sorted(BPY_FREE_MAY_IMPORT[own])
            found.append(f"{where}: {own}/ imports {stage}/ (it may use only {allowed})")
        elif own in STAGES and STAGES.index(stage) > STAGES.index(own):
            found.append(f"{where}: {own}/ imports {stage}/, a later stage")
        elif stage in NEVER_IMPORTS.get(own, ()):
            found.append(f"{where}: {own}/ imports {stage}/ (it must not)")
    return found


def _empty_container(value) -> bool:
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, (ast.List, ast.Set)):
        return not value.elts
    return isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in EMPTY_CONTAINERS


def module_registries(root):
    """Module-level containers made empty (and so filled at run time) in the stages that
    live with Blender's scenes, beyond RUNTIME_REGISTRIES: per-scene state belongs to
    the scene's SceneSession, which ends it with the scene."""
    found = []
    for rel, tree in package_files(root):
        if stage_of(rel) not in STATEFUL_STAGES:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                    and _empty_container(node.value):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                key = f"{rel}:{ast.unparse(target)}"
                if key not in RUNTIME_REGISTRIES:
                    found.append(f"{rel}:{node.lineno}: module-level registry {ast.unparse(target)}")
    return found


def property_group_defined(node):
    """The name of the property group `node` defines (a class deriving from
    bpy.types.PropertyGroup, or one made with type(name, (PropertyGroup,), ...)), else None."""
    if isinstance(node, ast.ClassDef):
        name, bases = node.name, node.bases
    elif (isinstance(node, ast.Call) and ast.unparse(node.func) == "type" and len(node.args) == 3
          and isinstance(node.args[1], ast.Tuple)):
        name, bases = ast.unparse(node.args[0]), node.args[1].elts
    else:
        return None
    return name if any(ast.unparse(base).split(".")[-1] == "PropertyGroup" for base in bases) else None


def property_groups_outside_components(root):
    """Property groups defined outside components/: a .blend saves their values, so
    they are the data model and stay with it."""
    found = []
    for rel, tree in package_files(root):
        if stage_of(rel) != "components":
            for node in ast.walk(tree):
                name = property_group_defined(node)
                if name is not None:
                    found.append(f"{rel}:{node.lineno}: property group {name} outside components/")
    return found


def engine_field_writes(root):
    """Assignments outside engine/ to a field of an engine session (`...session.x = `,
    `...session.data.ctrl[i] = `): a physics thread could not queue them."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in {"tests", "tools", "bench"}]
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if not name.endswith(".py") or stage_of(rel) in BLENDER_FREE:
                continue
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
                for target in targets:
                    text = ast.unparse(target)
                    if re.search(r"\bsession\.\w", text):
                        found.append(f"{rel}:{node.lineno}: {text} = ...")
    return found


def test_only_the_engine_writes_engine_state():
    assert engine_field_writes(ROOT) == []


def test_an_engine_field_write_is_caught(tmp_path):
    (tmp_path / "ui").mkdir()
    (tmp_path / "ui" / "panel.py").write_text(
        "def f(running, i):\n    running.session.data.ctrl[i] = 1\n    running.session.realtime += 1\n"
        "    running.session.set_control(i, 1)\n    running.session = None\n")
    assert engine_field_writes(tmp_path) == ["ui/panel.py:2: running.session.data.ctrl[i] = ...",
                                             "ui/panel.py:3: running.session.realtime = ..."]


def write_files(root, files):
    """A package tree for a rule to read: {path relative to root: text}."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_package_follows_the_dependency_rule():
    stages = {stage for _rel, _line, stage, _module in package_imports(ROOT)}
    assert {"components", "engine", "scan", "live", "geometry", "importer"} <= stages  # it reads the tree
    assert violations(ROOT) == []


def test_the_rule_catches_each_kind_of_violation(tmp_path):
    files = {
        "engine/runner.py": "import numpy\nimport bpy\n",
        "components/values.py": "from mathutils import Vector\n",
        "components/properties.py": "import bpy\n",  # allowed
        "scan/scene_scan.py": "from ..live import scene_session\nfrom ..geometry import mujoco_meshes\n",
        "live/scene_session.py": "def later():\n    from ..ui import panels\n",
        "bridge/server.py": "from ..scan import scene_scan\nfrom ..engine import runner\n",
        "scan/compile_spec.py": "from ..bridge.host import prefix_of\nfrom ..engine import arena\n",
        "app/registration.py": "from ..ui import panels\nfrom ..operators import io\n",  # allowed
    }
    write_files(tmp_path, files)
    assert set(violations(tmp_path)) == {
        "engine/runner.py:2: engine/ imports bpy (it must run without Blender)",
        "components/values.py:1: components/ imports mathutils outside its property groups",
        "scan/scene_scan.py:1: scan/ imports live/, a later stage",
        "live/scene_session.py:2: live/ imports ui/ (only app/ may)",
        "bridge/server.py:1: bridge/ imports scan/ (it may use only ['bridge', 'engine'])",
        "scan/compile_spec.py:1: scan/ imports bridge/ (it must not)",
    }


def test_no_module_level_registry_of_scene_state():
    assert module_registries(ROOT) == []
    stale = [key for key in RUNTIME_REGISTRIES if not os.path.exists(os.path.join(ROOT, key.split(":")[0]))]
    assert stale == []


def test_a_module_level_registry_is_caught(tmp_path):
    write_files(tmp_path, {
        "live/previews.py": "import weakref\n\n_PREVIEWS: dict = {}\n_seen = weakref.WeakKeyDictionary()\n"
                            "NAMES = {'a': 1}\n\n\ndef f():\n    cache = {}\n",
        "ui/overlays/layers.py": "_cache = dict()\n",
        "engine/runner.py": "_ROUNDS: list = []\n",  # bpy-free stages keep no scene state
        "live/scene_session.py": "_SESSIONS: dict = {}\n",  # allowed
    })
    assert set(module_registries(tmp_path)) == {
        "live/previews.py:3: module-level registry _PREVIEWS",
        "live/previews.py:4: module-level registry _seen",
        "ui/overlays/layers.py:1: module-level registry _cache",
    }


def test_saved_property_groups_are_in_components():
    assert property_groups_outside_components(ROOT) == []


def test_a_property_group_outside_components_is_caught(tmp_path):
    files = {
        "live/settings.py": "import bpy\n\n\nclass MJBLEND_PG_speed(bpy.types.PropertyGroup):\n    pass\n",
        "ui/plots.py": "from bpy.types import Operator, PropertyGroup\n\n\nclass A(Operator):\n    pass\n\n\n"
                       "Plots = type('MJBLEND_PG_plots', (PropertyGroup,), {})\n"
                       "Other = type('x', (A,), {})\n",
        "components/scene_settings.py": "import bpy\n\n\nclass MJBLEND_PG_bake(bpy.types.PropertyGroup):\n"
                                        "    pass\n",  # allowed
    }
    write_files(tmp_path, files)
    assert set(property_groups_outside_components(tmp_path)) == {
        "live/settings.py:4: property group MJBLEND_PG_speed outside components/",
        "ui/plots.py:8: property group 'MJBLEND_PG_plots' outside components/",
    }
    assert violations(tmp_path) == []  # components/scene_settings.py may import bpy

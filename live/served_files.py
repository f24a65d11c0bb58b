"""URLab's `include_assets` for a served scene: the MJCF of the model the bridge serves
and every asset file by bare name, so a client whose MuJoCo cannot load the `.mjb`
(another version) compiles the same model from XML.

Made when a client asks, in two parts: on Blender's main thread (a job of
bridge/main_thread.py the bridge's thread waits on) the names are checked and the
very SceneSpec the served model was compiled from (`LiveSimulation.served_specs`: the
entity prefixes included) is copied, with the options the model runs with now (the
scene's overrides, a client's set_sim_options) and the arena it was given; then, on
the bridge's thread, the exporter writes that copy (meshes made in Blender as STL /
OBJ, the other files copied: numpy and MuJoCo only, no Blender data) and MuJoCo's
XML writer compiles it, which is most of the cost (measured for the docs: the corpus
Franka Panda, 67 meshes, ~0.7 s of ~0.8 s), so Blender's frames do not wait for it.
Nothing is kept: a client asks once, and keeping it would cost every recompile an
export.
"""

from __future__ import annotations

import shutil
import tempfile

import mujoco

from ..bridge.main_thread import run_call
from ..bridge.wire import ProtocolError
from ..exporter import checks, mjcf_writer
from ..exporter.target import ExportFailed
from ..scan.compile_spec import SceneSpec

# mjOption's fields: the spec's and the model's are two Python types of one struct
OPTION_FIELDS = tuple(name for name in dir(mujoco.MjSpec().option) if not name.startswith("_"))


def served_files(live, model: mujoco.MjModel, main_thread) -> tuple[str, dict[str, bytes]]:
    """(A bridge thread) (MJCF text, {bare file name: bytes}) that compile to `model`,
    the model `live`'s runner serves. ProtocolError: `not_ready` when the simulation
    has recompiled since (the client asks again), `path_not_readable` when an asset
    file is gone from disk, `unsupported` when MJCF cannot keep the scene."""
    built = run_call(main_thread, lambda: served_spec(live, model), "include_assets")
    staging = tempfile.mkdtemp(prefix="mjblend_assets_")
    try:
        return mjcf_writer.flat_files(built, staging)
    except ExportFailed as error:
        missing = "does not exist" in str(error) or "not a regular file" in str(error)
        raise ProtocolError("path_not_readable" if missing else "unsupported",
                            f"the served scene cannot be shipped as MJCF: {error}") from None
    except OSError as error:
        raise ProtocolError("path_not_readable",
                            f"the served scene's asset {error.filename or ''} cannot be read: "
                            f"{error.strerror or error}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def served_spec(live, model: mujoco.MjModel) -> SceneSpec:
    """(Main thread) A copy of the SceneSpec `model` was compiled from, as it runs,
    that the exporter writes without Blender (no scanners: its names were checked
    here; no painted textures: a simulation's scan takes none)."""
    built = next((b for compiled, b in live.served_specs if compiled is model), None)
    if built is None:
        raise ProtocolError("not_ready", "the served model is being replaced (the scene recompiled after an "
                            "edit): say hello again")
    try:
        checks.check_names(built)
    except ExportFailed as error:
        raise ProtocolError("unsupported", f"the served scene cannot be shipped as MJCF: {error}") from None
    spec = built.spec.copy()
    for name in OPTION_FIELDS:  # as it runs: the scene's overrides, a client's set_sim_options
        setattr(spec.option, name, getattr(model.opt, name))
    # the arena it runs with, MuJoCo's estimate or more (engine/arena.py grows it where a
    # first step needs it): named, as another MuJoCo version may estimate otherwise
    spec.memory = model.narena
    return SceneSpec(spec, [], set(built.blender_meshes))

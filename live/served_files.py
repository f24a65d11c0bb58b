"""URLab's `include_assets` for a served scene: the MJCF of the model the bridge serves
and every asset file by bare name, so a client whose MuJoCo cannot load the `.mjb`
(another version) compiles the same model from XML.

Made on Blender's main thread when a client asks (the bridge's thread waits on
bridge/main_thread.py): the exporter writes the very SceneSpec the served model was
compiled from (`LiveSimulation.served_specs`: the entity prefixes included), with the
options the model runs with now (the scene's overrides, a client's set_sim_options)
and the arena it was given. Nothing is kept: a client asks once, a recompile would
make a kept copy stale, and keeping it would cost every recompile an export.
"""

from __future__ import annotations

import shutil
import tempfile

import mujoco

from ..bridge.wire import ProtocolError
from ..exporter import mjcf_writer
from ..exporter.target import ExportFailed
from ..scan.compile_spec import SceneSpec

# mjOption's fields: the spec's and the model's are two Python types of one struct
OPTION_FIELDS = tuple(name for name in dir(mujoco.MjSpec().option) if not name.startswith("_"))


def served_files(live, model: mujoco.MjModel) -> tuple[str, dict[str, bytes]]:
    """(Main thread) (MJCF text, {bare file name: bytes}) that compile to `model`, the
    model `live`'s runner serves. ProtocolError: `not_ready` when the simulation has
    recompiled since (the client asks again), `path_not_readable` when an asset file
    is gone from disk, `unsupported` when MJCF cannot keep the scene."""
    built = next((b for compiled, b in live.served_specs if compiled is model), None)
    if built is None:
        raise ProtocolError("not_ready", "the served model is being replaced (the scene recompiled after an "
                            "edit): say hello again")
    copy = SceneSpec(built.spec.copy(), built.scanners, set(built.blender_meshes),
                     dict(built.blender_textures))
    for name in OPTION_FIELDS:  # as it runs: the scene's overrides, a client's set_sim_options
        setattr(copy.spec.option, name, getattr(model.opt, name))
    # the arena it runs with, MuJoCo's estimate or more (engine/arena.py grows it where a
    # first step needs it): named, as another MuJoCo version may estimate otherwise
    copy.spec.memory = model.narena
    staging = tempfile.mkdtemp(prefix="mjblend_assets_")
    try:
        return mjcf_writer.flat_files(copy, staging)
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


"""Application handlers, registered and removed in pairs."""

import bpy
from bpy.app.handlers import persistent

from ..components import changes, storage_format
from ..components.stored_keys import PACK_ON_SAVE
from ..live import bridge_host, randomization_preview, scene_session
from ..sync import instancer
from ..ui.overlays import draw as overlay_draw
from ..authoring import validation


@persistent
def pack_generated_images(*_args):
    """Images an import filled with MuJoCo's pixels live only in memory until they
    are packed; packing (a PNG encode) waits for the first save."""
    for image in bpy.data.images:
        if image.get(PACK_ON_SAVE):
            if image.packed_file is None:
                image.pack()
            del image[PACK_ON_SAVE]


@persistent
def note_moved_and_reshaped(_scene, depsgraph):
    """Transforms and mesh edits do not go through MJBlend's properties: the
    depsgraph reports them, and the next scan updates just those elements."""
    if changes.is_quiet():  # (a simulation's own writes, evaluated at once: not edits)
        return
    scene_session.forget_deleted_objects()  # (before any panel draws a deleted object)
    edited = False
    for update in depsgraph.updates:
        if update.is_updated_transform or update.is_updated_geometry:
            changes.moved(update.id.original)
            edited = True
    if edited and not scene_session.all_live():  # (a running simulation reports its own errors)
        validation.schedule()


@persistent
def end_simulations(*_args):
    """File load, undo and redo replace the objects a simulation is bound to: end
    it first, putting back the authored poses (so undo never records simulated ones)."""
    scene_session.drop_all(restore=True)


@persistent
def end_previews(*_args):
    """File load, undo and redo replace the objects a randomization preview draws: it
    ends first, its instancer removed and the objects shown as they were."""
    randomization_preview.stop_all()


@persistent
def suspend_previews(*_args):
    """A .blend holds no preview: its instancer goes before the save, back after it."""
    for preview in randomization_preview.all_previews():
        preview.suspend()


@persistent
def resume_previews(*_args):
    for preview in randomization_preview.all_previews():
        preview.resume()


@persistent
def stop_bridge(*_args):
    """A file load replaces the scene the bridge serves: it stops (sockets closed)."""
    bridge_host.stop()


@persistent
def forget_scene_sessions(*_args):
    """Undo, redo and file load put back values without the edits reporting them:
    every scene session (scans, held poses, validation) is dropped as one, and the
    next scan starts anew; so are the overlays' cached frames (they hold snapshots)."""
    scene_session.drop_all(restore=False)
    overlay_draw.forget()


@persistent
def sweep_fast_displays(*_args):
    """Undo, redo and load can bring back a Fast display saved in an undo step (or
    a file) with no simulation behind it: removed, its objects shown again."""
    instancer.sweep()


@persistent
def save_authored_poses(*_args):
    """A .blend holds the authored poses, never simulated ones."""
    for running in scene_session.all_live():
        running.restore()


@persistent
def resume_simulated_poses(*_args):
    for running in scene_session.all_live():
        if running.session is not None:
            running.reapply()


def _model_roots():
    return [o for o in bpy.data.objects if o.mujoco.kind == "MODEL"]


@persistent
def stamp_storage_format(*_args):
    """A saved model records the storage format it was saved in (components/stored_keys.py)."""
    for root in _model_roots():
        storage_format.stamp(root)


@persistent
def migrate_stored_data(*_args):
    """Models saved by an older MJBlend come up to today's storage format on load;
    one saved by a newer MJBlend is named in the console (it is left as it is)."""
    for problem in storage_format.migrate(_model_roots()):
        print(f"MJBlend: {problem}")


HANDLERS = ((bpy.app.handlers.save_pre, stamp_storage_format),
            (bpy.app.handlers.save_pre, pack_generated_images),
            (bpy.app.handlers.save_pre, save_authored_poses),
            (bpy.app.handlers.save_post, resume_simulated_poses),
            (bpy.app.handlers.save_pre, suspend_previews),
            (bpy.app.handlers.save_post, resume_previews),
            (bpy.app.handlers.load_pre, end_previews),
            (bpy.app.handlers.undo_pre, end_previews),
            (bpy.app.handlers.redo_pre, end_previews),
            (bpy.app.handlers.load_pre, stop_bridge),
            (bpy.app.handlers.load_pre, end_simulations),
            (bpy.app.handlers.undo_pre, end_simulations),
            (bpy.app.handlers.redo_pre, end_simulations),
            (bpy.app.handlers.load_post, migrate_stored_data),
            (bpy.app.handlers.load_post, forget_scene_sessions),
            (bpy.app.handlers.undo_post, forget_scene_sessions),
            (bpy.app.handlers.redo_post, forget_scene_sessions),
            (bpy.app.handlers.load_post, sweep_fast_displays),
            (bpy.app.handlers.undo_post, sweep_fast_displays),
            (bpy.app.handlers.redo_post, sweep_fast_displays),
            (bpy.app.handlers.depsgraph_update_post, note_moved_and_reshaped))


def register():
    for handlers, function in HANDLERS:
        if function not in handlers:
            handlers.append(function)


def unregister():
    bridge_host.stop()
    scene_session.drop_all(restore=True)
    for handlers, function in HANDLERS:
        if function in handlers:
            handlers.remove(function)

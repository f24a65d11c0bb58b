"""Application handlers, registered and removed in pairs: what Blender demands of
the add-on around saves, loads, undo and redo (every scene session's parts go
through live/scene_session.py's one lifecycle), and the edits the depsgraph reports."""

import bpy
from bpy.app.handlers import persistent

from ..components import changes, inherit, storage_format
from ..components.stored_keys import PACK_ON_SAVE, SIGNATURE
from ..authoring import validation
from ..engine import png
from ..geometry import materials
from ..live import bridge_host, scene_session
from ..sync import instancer


@persistent
def pack_generated_images(*_args):
    """Images an import made hold MuJoCo's pixels as an uncompressed PNG (packed at
    memory speed); the first save compresses it (or packs what was painted into it)."""
    for image in bpy.data.images:
        if image.get(PACK_ON_SAVE):
            packed = image.packed_file
            if packed is None or image.is_dirty:
                image.pack()  # (a dirty image: Blender packs its pixels as they are now)
            else:
                old = packed.data
                try:
                    data = png.recompress(old)
                except ValueError:  # (not the PNG the import packed: the user replaced it)
                    del image[PACK_ON_SAVE]
                    continue
                image.pack(data=data, data_len=len(data))  # (frees `packed`: not read after)
                if image.mujoco.texture.get(SIGNATURE) == materials.packed_signature(old):
                    image.mujoco.texture[SIGNATURE] = materials.packed_signature(data)
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
    if edited and not scene_session.all_simulations():  # (a running simulation reports its own errors)
        validation.schedule()


@persistent
def end_sessions(*_args):
    """File load, undo and redo replace the objects a scene session's parts are bound
    to: each ends first (a bridge stops, a preview's instancer goes, a simulation ends
    with the authored poses back, so undo never records simulated ones)."""
    scene_session.end_all(restore=True)


@persistent
def forget_sessions(*_args):
    """Undo, redo and file load put back values without the edits reporting them: every
    scene session (scans, held poses, validation, drawing caches) is forgotten, and the
    next scan starts anew. A Fast display saved in an undo step (or a file) with no
    simulation behind it is removed, its objects shown again."""
    inherit.forget()  # (classes may hold other values now)
    scene_session.end_all(restore=False)
    instancer.sweep()


@persistent
def suspend_sessions(*_args):
    """A .blend holds the authored poses and no preview: each session's parts step aside
    for the save..."""
    scene_session.suspend_all()


@persistent
def resume_sessions(*_args):
    """... and come back after it."""
    scene_session.resume_all()


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
    storage_format.migrate_loose(bpy.data)


HANDLERS = ((bpy.app.handlers.save_pre, stamp_storage_format),
            (bpy.app.handlers.save_pre, pack_generated_images),
            (bpy.app.handlers.save_pre, suspend_sessions),
            (bpy.app.handlers.save_post, resume_sessions),
            (bpy.app.handlers.load_pre, end_sessions),
            (bpy.app.handlers.undo_pre, end_sessions),
            (bpy.app.handlers.redo_pre, end_sessions),
            (bpy.app.handlers.load_post, migrate_stored_data),
            (bpy.app.handlers.load_post, forget_sessions),
            (bpy.app.handlers.undo_post, forget_sessions),
            (bpy.app.handlers.redo_post, forget_sessions),
            (bpy.app.handlers.depsgraph_update_post, note_moved_and_reshaped))


def register():
    for handlers, function in HANDLERS:
        if function not in handlers:
            handlers.append(function)


def unregister():
    scene_session.end_all(restore=True)
    bridge_host.unregister()
    for handlers, function in HANDLERS:
        if function in handlers:
            handlers.remove(function)

"""Application handlers, registered and removed in pairs."""

import bpy
from bpy.app.handlers import persistent

from ..importer.materials import PACK_ON_SAVE


@persistent
def pack_generated_images(*_args):
    """Images an import filled with MuJoCo's pixels live only in memory until they
    are packed; packing (a PNG encode) waits for the first save."""
    for image in bpy.data.images:
        if image.get(PACK_ON_SAVE):
            if image.packed_file is None:
                image.pack()
            del image[PACK_ON_SAVE]


HANDLERS = ((bpy.app.handlers.save_pre, pack_generated_images),)


def register():
    for handlers, function in HANDLERS:
        if function not in handlers:
            handlers.append(function)


def unregister():
    for handlers, function in HANDLERS:
        if function in handlers:
            handlers.remove(function)

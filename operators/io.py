"""File > Import > MuJoCo (.xml, .urdf): a thin operator over importer.build."""

from __future__ import annotations

import os

import bpy
from bpy.props import CollectionProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from ..importer import build


class IMPORT_SCENE_OT_mjcf(bpy.types.Operator, ImportHelper):
    """Import a MuJoCo model (MJCF or URDF); MuJoCo itself reads and checks the file"""

    bl_idname = "import_scene.mjcf"
    bl_label = "Import MuJoCo (MJCF/URDF)"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ".xml"
    filter_glob: StringProperty(default="*.xml;*.mjcf;*.urdf", options={"HIDDEN"})
    # Several files at once from the browser, or dropped on the viewport.
    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})

    def paths(self) -> list[str]:
        if self.files and self.directory:
            return [os.path.join(self.directory, f.name) for f in self.files if f.name]
        return [self.filepath]

    def invoke(self, context, event):
        if self.files and self.directory:  # dropped on the viewport: no file browser
            return self.execute(context)
        return ImportHelper.invoke(self, context, event)

    def execute(self, context):
        wm = context.window_manager
        imported = []
        for path in self.paths():
            wm.progress_begin(0, 100)
            try:
                result = build.import_file(path, context.scene,
                                           progress=lambda f: wm.progress_update(int(100 * f)))
            except build.ImportFailed as error:
                self.report({"ERROR"}, str(error))
                continue
            finally:
                wm.progress_end()
            for warning in result.warnings:
                self.report({"WARNING"}, f"MuJoCo: {warning}")
            self.report({"INFO"}, result.summary())
            imported.append(result.root)
        if not imported:
            return {"CANCELLED"}
        context.view_layer.update()  # let the view layer see the new collections
        for obj in context.view_layer.objects:
            obj.select_set(False)
        for root in imported:
            root.select_set(True)
            context.view_layer.objects.active = root
        return {"FINISHED"}


CLASSES = (IMPORT_SCENE_OT_mjcf,)

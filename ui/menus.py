"""Menu entries and file handlers that expose the operators."""

import bpy

IMPORT_OPERATOR = "import_scene.mjcf"  # operators/io.py
EXPORT_OPERATOR = "export_scene.mjcf"
TRAJECTORY_OPERATOR = "mujoco.import_trajectory"  # operators/timeline.py


def import_menu(self, _context):
    self.layout.operator(IMPORT_OPERATOR, text="MuJoCo (.xml, .urdf)")
    self.layout.operator(TRAJECTORY_OPERATOR, text="MuJoCo Trajectory (.npz, .csv)")


def export_menu(self, _context):
    self.layout.operator(EXPORT_OPERATOR, text="MuJoCo (.xml)")


class MJBLEND_FH_mjcf(bpy.types.FileHandler):  # drop a file on the 3D viewport
    bl_idname = "MJBLEND_FH_mjcf"
    bl_label = "MuJoCo model"
    bl_import_operator = IMPORT_OPERATOR
    bl_file_extensions = ".xml;.mjcf;.urdf"

    @classmethod
    def poll_drop(cls, context):
        return context.area is not None and context.area.type == "VIEW_3D"


CLASSES = (MJBLEND_FH_mjcf,)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.TOPBAR_MT_file_import.append(import_menu)
    bpy.types.TOPBAR_MT_file_export.append(export_menu)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(export_menu)
    bpy.types.TOPBAR_MT_file_import.remove(import_menu)
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

"""Add > MuJoCo (Shift+A in the 3D viewport) and the MuJoCo entries of the
object context menu and Object menu (conversions)."""

from __future__ import annotations

import bpy

from ..authoring import authoring

JOINTS = ("HINGE", "SLIDE", "BALL", "FREE")
GEOMS = ("BOX", "SPHERE", "CAPSULE", "CYLINDER", "ELLIPSOID", "PLANE")
SITES = ("SPHERE", "CAPSULE", "CYLINDER", "ELLIPSOID", "BOX")
LIGHTS = ("SPOT", "DIRECTIONAL", "POINT")
# MuJoCo's sensors, grouped as its documentation groups them
SENSORS = {
    "Site": ("TOUCH", "ACCELEROMETER", "VELOCIMETER", "GYRO", "FORCE", "TORQUE", "MAGNETOMETER",
             "RANGEFINDER", "CAMPROJECTION"),
    "Joint": ("JOINTPOS", "JOINTVEL", "JOINTACTFRC", "BALLQUAT", "BALLANGVEL", "JOINTLIMITPOS",
              "JOINTLIMITVEL", "JOINTLIMITFRC"),
    "Tendon": ("TENDONPOS", "TENDONVEL", "TENDONACTFRC", "TENDONLIMITPOS", "TENDONLIMITVEL",
               "TENDONLIMITFRC"),
    "Actuator": ("ACTUATORPOS", "ACTUATORVEL", "ACTUATORFRC"),
    "Frame": ("FRAMEPOS", "FRAMEQUAT", "FRAMEXAXIS", "FRAMEYAXIS", "FRAMEZAXIS", "FRAMELINVEL",
              "FRAMEANGVEL", "FRAMELINACC", "FRAMEANGACC"),
    "Subtree": ("SUBTREECOM", "SUBTREELINVEL", "SUBTREEANGMOM"),
    "Collision": ("INSIDESITE", "GEOMDIST", "GEOMNORMAL", "GEOMFROMTO", "CONTACT"),
    "Global": ("E_POTENTIAL", "E_KINETIC", "CLOCK"),
}


def _element(layout, kind, subtype="", text=None, icon="NONE"):
    op = layout.operator("mujoco.add_element", text=text or (subtype or kind).replace("_", " ").title(),
                         icon=icon)
    op.kind, op.subtype = kind.upper(), subtype


def _submenu(idname, label, draw):
    return type(idname, (bpy.types.Menu,), {"bl_idname": idname, "bl_label": label,
                                            "draw": lambda self, context: draw(self.layout, context)})


def _draw_main(layout, context):
    layout.operator("mujoco.add_model", text="Model", icon="WORLD")
    layout.separator()
    _element(layout, "body", icon="EMPTY_AXIS")
    _element(layout, "frame", icon="OBJECT_ORIGIN")
    layout.menu("MJBLEND_MT_add_joint", icon="CON_PIVOT")
    layout.menu("MJBLEND_MT_add_geom", icon="MESH_CUBE")
    layout.menu("MJBLEND_MT_add_site", icon="DOT")
    _element(layout, "camera", icon="OUTLINER_OB_CAMERA")
    layout.menu("MJBLEND_MT_add_light", icon="OUTLINER_OB_LIGHT")
    layout.separator()
    layout.menu("MJBLEND_MT_add_actuator", icon="FORCE_FORCE")
    layout.menu("MJBLEND_MT_add_sensor", icon="PROPERTIES")
    layout.menu("MJBLEND_MT_add_equality", icon="CONSTRAINT")


def _draw_sensors(layout, _context):
    for group, types in SENSORS.items():
        layout.label(text=group)
        for sensor in types:
            layout.operator("mujoco.add_sensor", text=sensor.replace("_", " ").title()).sensor_type = sensor


MENUS = (
    _submenu("MJBLEND_MT_add", "MuJoCo", _draw_main),
    _submenu("MJBLEND_MT_add_joint", "Joint",
             lambda layout, _c: [_element(layout, "joint", t) for t in JOINTS]),
    _submenu("MJBLEND_MT_add_geom", "Geom",
             lambda layout, _c: [_element(layout, "geom", t) for t in GEOMS]),
    _submenu("MJBLEND_MT_add_site", "Site",
             lambda layout, _c: [_element(layout, "site", t) for t in SITES]),
    _submenu("MJBLEND_MT_add_light", "Light",
             lambda layout, _c: [_element(layout, "light", t) for t in LIGHTS]),
    _submenu("MJBLEND_MT_add_actuator", "Actuator",
             lambda layout, _c: [setattr(layout.operator("mujoco.add_actuator", text=p.title()), "preset",
                                         p.upper()) for p in authoring.ACTUATORS]),
    _submenu("MJBLEND_MT_add_sensor", "Sensor", _draw_sensors),
    _submenu("MJBLEND_MT_add_equality", "Equality",
             lambda layout, _c: [setattr(layout.operator("mujoco.add_equality", text=t.title()), "eq_type", t)
                                 for t in ("CONNECT", "WELD", "JOINT", "TENDON")]),
)


def _draw_convert(layout, _context):
    layout.operator("mujoco.make_body")
    layout.operator("mujoco.make_free")
    layout.operator("mujoco.geom_from_mesh")
    layout.operator("mujoco.apply_scale")


CONVERT = _submenu("MJBLEND_MT_convert", "MuJoCo", _draw_convert)


def add_menu(self, _context):
    self.layout.menu("MJBLEND_MT_add", icon="PHYSICS")


def convert_menu(self, _context):
    self.layout.separator()
    self.layout.menu("MJBLEND_MT_convert", icon="PHYSICS")


HOOKS = ((bpy.types.VIEW3D_MT_add, add_menu), (bpy.types.VIEW3D_MT_object_context_menu, convert_menu),
         (bpy.types.VIEW3D_MT_object, convert_menu))


def register():
    for menu in MENUS + (CONVERT,):
        bpy.utils.register_class(menu)
    for menu, draw in HOOKS:
        menu.append(draw)


def unregister():
    for menu, draw in HOOKS:
        menu.remove(draw)
    for menu in reversed(MENUS + (CONVERT,)):
        bpy.utils.unregister_class(menu)

"""The switches of the viewport's MuJoCo overlays and of MuJoCo's element groups,
kept per scene (saved in the .blend, like MuJoCo's `mjvOption`).

Overlays draw from the running simulation's snapshot (playing or paused); with
no simulation only the inertia boxes draw, from the last checked model. Groups
0-5 of geoms, sites, flexes and skins show or hide their objects (in the viewport and in
renders, sync/groups.py), joint groups their joint objects where the Joints
overlay is on (the Body Frames overlay shows MJCF frame empties); joint, tendon
and actuator groups choose what the overlays draw. MuJoCo's default shows groups
0, 1 and 2, and no joints or frames.
"""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, BoolVectorProperty, EnumProperty, PointerProperty

from . import scene_settings
from .kinds import GROUP_KINDS  # the elements MuJoCo groups, in the switches' order

NGROUP = 6  # MuJoCo's mjNGROUP
DEFAULT_SHOWN = (True, True, True, False, False, False)  # MuJoCo's mjv_defaultOption

# (property, label, description): every overlay switch, in the popover's order
OVERLAYS = (
    ("contact_points", "Contact Points", "A dot at every active contact (light blue: within the margin, "
     "left out of the solver's constraints)"),
    ("contact_forces", "Contact Forces", "An arrow for each contact's force (mj_contactForce), as long as "
     "MuJoCo's visual/map force / stat.meanmass makes it, pointing into the body of higher id"),
    ("contact_frames", "Contact Frames", "Each contact's frame: normal (red) and tangents (green, blue)"),
    ("joints", "Joints", "Each hinge or slide joint's axis at its anchor, and its range (an arc or a "
     "segment) when it is limited; ball and free joints as a mark at the anchor"),
    ("body_frames", "Body Frames", "Each body's frame: x red, y green, z blue"),
    ("com", "Centres of Mass", "Each body's centre of mass (small) and each kinematic tree's "
     "subtree centre of mass (large)"),
    ("tendons", "Tendons", "Each spatial tendon's path through its sites and wrapping geoms"),
    ("actuators", "Actuator Forces", "An arrow along each actuated joint (or site) for the "
     "actuator's force, scaled to its force range; a tendon actuator's path, coloured by sign"),
    ("equality", "Equality Constraints", "A line between the two points (connect) or frames (weld) a "
     "constraint holds together, and between coupled joints"),
    ("perturbation", "Perturbation", "The mouse spring: a line from the grabbed point to where it pulls"),
)
# MuJoCo's label kinds in mjtLabel order (an item's stored value is its position: new kinds
# are appended, so saved files keep their meaning)
LABELS = (("NONE", "None", "No labels"), ("BODY", "Bodies", "Each body's name at its frame"),
          ("JOINT", "Joints", "Each joint's name at its anchor"),
          ("GEOM", "Geoms", "Each geom's name at its centre"),
          ("SITE", "Sites", "Each site's name at its centre"),
          ("CAMERA", "Cameras", "Each camera's name at its position"),
          ("LIGHT", "Lights", "Each light's name where MuJoCo draws it (set back along its direction)"),
          ("TENDON", "Tendons", "Each spatial tendon's name at the middle of its first segment"),
          ("ACTUATOR", "Actuators", "Each enabled actuator's name at its joint's anchor, site, or its "
           "tendon's first segment"),
          ("CONSTRAINT", "Constraints", "Each active connect or weld constraint's name at both its points"),
          ("FLEX", "Flexes", "Each flex's name at its first vertex"),
          ("SKIN", "Skins", "Each skin's name at its first bone's body"),
          ("SELECTION", "Selection", "The name of the selected body (the active object's) at its frame"),
          ("SELPNT", "Selection Point", "The world and body-frame coordinates of the selected "
           "point (the grabbed point, else the active body's origin)"),
          ("CONTACTPOINT", "Contact Points", "The two geoms (or flex elements) of each contact"),
          ("CONTACTFORCE", "Contact Forces", "The size of each contact's force"),
          ("ISLAND", "Islands", "Each body's constraint island (of the last step)"))
# MuJoCo's frame kinds in mjtFrame order
FRAMES = (("NONE", "None", "No frames"), ("BODY", "Bodies", "Each body's frame (the world's: World)"),
          ("GEOM", "Geoms", "Each geom's frame"), ("SITE", "Sites", "Each site's frame"),
          ("CAMERA", "Cameras", "Each camera's frame (it looks along -z)"),
          ("LIGHT", "Lights", "Each light's frame (z along its direction)"),
          ("CONTACT", "Contacts", "Each contact's frame: normal (red) and tangents, half length"),
          ("WORLD", "World", "The world's frame, twice as long"))
OBJECT_GROUP_KINDS = ("geom", "site", "flex", "skin")  # kinds whose groups show or hide objects


def _groups_changed(kind: str):
    def changed(self, _context):
        scene_settings.reactions().groups_changed(self, kind)
    return changed


def _group_property(kind: str, objects: bool) -> BoolVectorProperty:
    shown = (f"Show the {kind}s of each group 0-5 (their objects, in the viewport and in renders)"
             if objects else f"Draw the {kind}s of each group 0-5 in the overlays")
    return BoolVectorProperty(name=f"{kind.title()} Groups", size=NGROUP, default=DEFAULT_SHOWN,
                              description=shown, update=_groups_changed(kind))


# overlays that also show their helper objects: joint objects, MJCF frame empties (sync/groups.py)
HELPER_KINDS = {"joints": "joint", "body_frames": "frame"}


def _overlay_property(name: str, label: str, text: str) -> BoolProperty:
    helper = HELPER_KINDS.get(name)
    if helper is None:
        return BoolProperty(name=label, description=text, default=(name == "perturbation"))
    return BoolProperty(name=label, description=text + f" (and shows the {helper} objects)",
                        default=False, update=_groups_changed(helper))


def _overlay_group() -> type:
    annotations = {name: _overlay_property(name, label, text) for name, label, text in OVERLAYS}
    annotations["labels"] = EnumProperty(name="Labels", items=LABELS, default="NONE",
                                         description="Names drawn next to the elements")
    annotations["frame"] = EnumProperty(name="Frames", items=FRAMES, default="NONE",
                                        description="MuJoCo's frames drawn: x red, y green, z blue")
    for kind in GROUP_KINDS:
        annotations[f"{kind}_groups"] = _group_property(kind, objects=kind in OBJECT_GROUP_KINDS)
    return type("MJBLEND_PG_overlays", (bpy.types.PropertyGroup,), {"__annotations__": annotations})


MJBLEND_PG_overlays = _overlay_group()


def get(scene):
    return scene.mujoco_overlays


def register():
    bpy.utils.register_class(MJBLEND_PG_overlays)
    bpy.types.Scene.mujoco_overlays = PointerProperty(type=MJBLEND_PG_overlays)


def unregister():
    del bpy.types.Scene.mujoco_overlays
    bpy.utils.unregister_class(MJBLEND_PG_overlays)

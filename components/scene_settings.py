"""The Scene's saved settings: the simulation's (`scene.mujoco_simulation`, with
its option overrides), the randomization preview's (`scene.mujoco_preview`) and
the bake's record (`scene.mujoco_bake`), the camera dataset's (`scene.mujoco_dataset`)
and the bridge's cameras (`scene.mujoco_bridge`); the overlays' switches and the plots'
channels have modules of their own (overlay_settings.py, plot_settings.py).

Some edits must do more than keep their value: a new Speed goes to the running
simulation, a group switch shows or hides objects, a plot setting redraws the
viewport. What does that lies in stages above components/ (live/, sync/), which
import this module, never the reverse; so these groups reach them through one
object, the `Reactions` connected here: live/simulation_settings.py connects its
own when the add-on registers (`connect`). Until then, and in a Python that only
loads components/, an edit only keeps its value.
"""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty, StringProperty

from .properties import attribute_property
from .schema import KINDS

PREVIEW_MAX_COUNT = 64  # environments a randomization preview may show


class Reactions:
    """What an edit of a saved scene setting does beyond keeping its value: nothing,
    here. live/simulation_settings.py's subclass tells the running simulation and
    the viewport; each method is given the edited settings group (its `id_data`
    is the scene)."""

    def speed_changed(self, simulation) -> None:
        """`realtime` changed."""

    def fast_forward_changed(self, simulation) -> None:
        """`fast_forward` changed."""

    def display_changed(self, simulation) -> None:
        """`display` changed."""

    def override_changed(self, override) -> None:
        """An option override's switch or value changed."""

    def history_shown(self, simulation) -> int:
        """The `history` slider's value: which kept state shows (0: the latest)."""
        return 0

    def show_history(self, simulation, index: int) -> None:
        """The `history` slider was moved to `index`."""

    def groups_changed(self, overlays, kind: str) -> None:
        """A `<kind>_groups` switch of the overlays changed, or the Joints ("joint") or
        Body Frames ("frame") overlay, which also show their helper objects."""

    def plots_changed(self, edited) -> None:
        """A plot setting changed (`edited`: the plots' group, or one of its channels)."""

    def camera_preview_changed(self, settings) -> None:
        """A camera preview setting changed (camera_preview_settings.py)."""

    def noise_changed(self, simulation) -> None:
        """`noise_scale`, `noise_rate` or `noise_seed` changed."""

    def camera_names(self, scene) -> list | None:
        """The cameras of the scene's running model (None: it does not simulate)."""
        return None

    def follow_file_changed(self, simulation) -> None:
        """`follow_file` switched."""


_reactions = Reactions()


def connect(reactions: Reactions) -> None:
    """Edits of the scene settings react with `reactions` from now on."""
    global _reactions
    _reactions = reactions


def disconnect() -> None:
    connect(Reactions())


def reactions() -> Reactions:
    """The connected reactions (the overlay and plot settings' updates call them)."""
    return _reactions


# ------------------------------------------------------------ simulation


def _speed_changed(self, _context):
    _reactions.speed_changed(self)


def _fast_forward_changed(self, _context):
    _reactions.fast_forward_changed(self)


def _display_changed(self, _context):
    _reactions.display_changed(self)


def _noise_changed(self, _context):
    _reactions.noise_changed(self)


def _follow_file_changed(self, _context):
    _reactions.follow_file_changed(self)


def _history_get(self):
    return _reactions.history_shown(self)


def _history_set(self, value):
    _reactions.show_history(self, value)


def _override_changed(self, _context):
    _reactions.override_changed(self)


def _override_group() -> type:
    """One switch and one value per <option> attribute: switched-on values replace
    the compiled model's option after every compile (the MJCF is untouched)."""
    annotations = {}
    for attr in KINDS["option"].attrs:
        annotations["use_" + attr.prop] = BoolProperty(
            name=f"Override {attr.label}", update=_override_changed,
            description=f"Replace the model's {attr.name} while simulating")
        annotations[attr.prop] = attribute_property(attr, update=_override_changed)
    return type("MJBLEND_PG_option_override", (bpy.types.PropertyGroup,), {"__annotations__": annotations})


OptionOverride = _override_group()


class MJBLEND_PG_simulation(bpy.types.PropertyGroup):
    realtime: FloatProperty(
        name="Speed", default=1.0, min=0.01, max=100.0, soft_max=4.0, update=_speed_changed,
        description="Simulated seconds per wall-clock second (1 = real time)")
    fast_forward: BoolProperty(
        name="Fast-Forward", default=False, update=_fast_forward_changed,
        description="Step as fast as the machine can, the viewport showing the latest state")
    display: EnumProperty(
        name="Display", default="AUTO", update=_display_changed,
        items=(("AUTO", "Auto", "Objects for robots of tens of bodies; Fast when moving every "
                "object would not fit a 60 Hz frame"),
               ("OBJECTS", "Objects", "Every simulated body's object moves (what scripts and "
                "drivers see)"),
               ("FAST", "Fast", "One instancer draws the moving geoms; the objects stay where "
                "they were authored, hidden while playing, and show the state when paused")),
        description="How the viewport shows a playing simulation")
    history: IntProperty(
        name="History", get=_history_get, set=_history_set, min=0,
        description="Step back through the kept states (pauses; playing continues from the "
                    "state shown)")
    keyframe: IntProperty(
        name="Keyframe", default=-1, min=-1,
        description="Start and reset from this keyframe (-1: the model's reference pose qpos0)")
    override: PointerProperty(type=OptionOverride, name="Option overrides")
    show_inertia: BoolProperty(
        name="Inertia", default=False,
        description="Draw each body's equivalent inertia box and centre of mass (from the last "
                    "compile of the model)")
    active_key: IntProperty(options={"HIDDEN"})
    # MuJoCo simulate's control noise (its "Noise scale" / "Noise rate" sliders, same ranges)
    noise_scale: FloatProperty(
        name="Noise Scale", default=0.0, min=0.0, max=1.0, update=_noise_changed,
        description="Control noise as MuJoCo's simulate adds it before every step: its standard "
                    "deviation, in half ctrlranges (1 for an actuator without a ctrlrange); 0: none")
    noise_rate: FloatProperty(
        name="Noise Rate", default=0.0, min=0.0, max=4.0, unit="TIME_ABSOLUTE", update=_noise_changed,
        description="How slowly the noisy controls drift back to their midpoint (seconds: the noise's "
                    "time constant, simulate's Noise rate); 0: white noise around the midpoint")
    noise_seed: IntProperty(
        name="Noise Seed", default=0, min=0, update=_noise_changed,
        description="Seed of the noise's random draws: the same seed repeats a run from a reset")
    # Follow File (issue 34, live/file_watch.py)
    follow_file: BoolProperty(
        name="Follow File", default=False, update=_follow_file_changed,
        description="Reload the model in place whenever its file, a file it includes or one of its "
                    "mesh or texture files changes on disk (a running simulation goes on)")


# ------------------------------------------------------------ randomization preview


class MJBLEND_PG_randomization_preview(bpy.types.PropertyGroup):
    count: IntProperty(
        name="Environments", default=4, min=1, max=PREVIEW_MAX_COUNT,
        description="How many randomized environments the preview shows side by side")
    spacing: FloatProperty(
        name="Spacing", default=0.0, min=0.0, soft_max=20.0, unit="LENGTH",
        description="Distance between neighbouring environments (0: automatic, from the model's extent)")


# ------------------------------------------------------------ bake


class MJBLEND_PG_bake(bpy.types.PropertyGroup):
    """Which frames of the scene are baked, and from what (read-only in the UI;
    sync/timeline.py writes it)."""

    recording: PointerProperty(type=bpy.types.Action, name="Recording",
                               description="The Action holding the bake's recorded states")
    frame_start: IntProperty(name="First Frame")
    frame_end: IntProperty(name="Last Frame")
    fps: FloatProperty(name="Frame Rate", description="Scene frames per simulated second when baked")
    source: StringProperty(name="Source", description="What was baked")


# ------------------------------------------------------------ camera dataset


DATASET_KINDS = (("rgb", "RGB", "Colour, PNG"),
                 ("depth", "Depth", "Metres along the view axis, float32 .npy"),
                 ("segmentation", "Segmentation", "Element ids, 16-bit PNG, with the id -> element table"))
DATASET_RENDERERS = (
    ("MUJOCO", "MuJoCo", "mujoco.Renderer from each frame's state: what a policy trained in MuJoCo sees"),
    ("BLENDER", "Blender", "Blender's engine through the scene's materials and lights, posed at the frame"))
# Blender's render engines a MuJoCo camera can be drawn with (live/blender_camera.py)
BLENDER_ENGINES = (("BLENDER_WORKBENCH", "Workbench", ""), ("BLENDER_EEVEE", "EEVEE", ""),
                   ("CYCLES", "Cycles", ""))
DATASET_RANDOMIZE = (("NONE", "None", "The scene's own look"),
                     ("FRAME", "Per Frame", "A new draw every frame"),
                     ("DATASET", "Per Dataset", "One draw for the whole dataset (an episode)"))


class MJBLEND_PG_dataset(bpy.types.PropertyGroup):
    """What Render Camera Dataset (operators/dataset.py) makes of the bake by default."""

    directory: StringProperty(
        name="Folder", subtype="DIR_PATH", default="",
        description="The folder the dataset is written to (empty, or an earlier dataset, which is replaced; "
                    "// is the .blend's folder)")
    cameras: StringProperty(
        name="Cameras", default="",
        description="MuJoCo cameras to render, comma-separated names (empty: every camera)")
    kinds: EnumProperty(name="Images", items=DATASET_KINDS, options={"ENUM_FLAG"},
                        default={"rgb", "depth", "segmentation"}, description="Images per frame and camera")
    renderer: EnumProperty(name="Renderer", default="MUJOCO", items=DATASET_RENDERERS,
                           description="Which renderer draws the frames")
    engine: EnumProperty(name="Engine", default="BLENDER_WORKBENCH", items=BLENDER_ENGINES,
                         description="Blender's render engine (renderer Blender)")
    samples: IntProperty(name="Samples", default=0, min=0,
                         description="Cycles / EEVEE samples per pixel (0: the scene's)")
    width: IntProperty(name="Width", default=0, min=0,
                       description="Image width (0: each camera's resolution)")
    height: IntProperty(name="Height", default=0, min=0,
                        description="Image height (0: each camera's resolution)")
    randomize: EnumProperty(
        name="Randomize", default="NONE", items=DATASET_RANDOMIZE,
        description="Visual randomization: materials' colours and roughness, lights' strength and direction")
    seed: IntProperty(name="Seed", default=0, min=0,
                      description="The randomization's seed (same seed, same draws)")
    textures: StringProperty(
        name="Textures", subtype="DIR_PATH", default="",
        description="A folder of images (.png, .jpg): randomization also draws one per material "
                    "(empty: no textures)")


# ------------------------------------------------------------ bridge


class MJBLEND_PG_bridge(bpy.types.PropertyGroup):
    """How the bridge serves the scene's cameras when a client names no renderer
    (live/bridge_host.py reads it on the main thread)."""

    camera_renderer: EnumProperty(
        name="Camera Renderer", default="MUJOCO",
        items=(("MUJOCO", "MuJoCo", "mujoco.Renderer on a thread of the bridge's own: what a policy trained "
                "in MuJoCo sees, without slowing Blender"),
               ("BLENDER", "Blender", "Blender's engine through the scene's materials and lights, on "
                "Blender's main thread (seconds a frame for Cycles; the UI keeps at least half its time)")),
        description="Which renderer draws the cameras a client streams or includes in a step, unless it asks "
                    "for one")
    camera_engine: EnumProperty(
        name="Engine", default="BLENDER_WORKBENCH", items=BLENDER_ENGINES,
        description="Blender's render engine for the bridge's cameras")
    camera_samples: IntProperty(
        name="Samples", default=0, min=0,
        description="Cycles / EEVEE samples per pixel for the bridge's cameras (0: MJBlend's default, 16)")


CLASSES = (OptionOverride, MJBLEND_PG_simulation, MJBLEND_PG_randomization_preview, MJBLEND_PG_bake,
           MJBLEND_PG_dataset, MJBLEND_PG_bridge)
SCENE_PROPERTIES = {"mujoco_simulation": MJBLEND_PG_simulation,
                    "mujoco_preview": MJBLEND_PG_randomization_preview, "mujoco_bake": MJBLEND_PG_bake,
                    "mujoco_dataset": MJBLEND_PG_dataset, "mujoco_bridge": MJBLEND_PG_bridge}


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    for name, group in SCENE_PROPERTIES.items():
        setattr(bpy.types.Scene, name, PointerProperty(type=group))


def unregister():
    for name in SCENE_PROPERTIES:
        delattr(bpy.types.Scene, name)
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

"""The MuJoCo tab of the 3D viewport's sidebar: play controls, status, actuator
controls, joint and sensor readouts, option overrides; and a play button in the
viewport header."""

from __future__ import annotations

import math
import textwrap

import bpy
import mujoco

from ..components.schema import KINDS
from ..live import bridge_host, randomization_preview, scene_session
from ..scene import preferences
from ..authoring import validation
from ..sync import timeline
from .camera_preview import panel as camera_panel
from .plots import panel as plots_panel

MAX_ROWS = 64


def _running(context):
    return scene_session.simulation(context.scene)


def draw_transport(layout, context) -> None:
    running = _running(context)
    row = layout.row(align=True)
    if running and running.playing:
        row.operator("mujoco.pause", text="Pause", icon="PAUSE")
    else:
        row.operator("mujoco.play", text="Play", icon="PLAY")
    row.prop(context.scene.mujoco_simulation, "fast_forward", text="", icon="FF")
    row.operator("mujoco.step", text="", icon="FRAME_NEXT")
    row.operator("mujoco.reset", text="", icon="FILE_REFRESH")
    sub = row.row(align=True)
    sub.enabled = running is not None
    sub.operator("mujoco.stop", text="", icon="SNAP_FACE")  # a square: stop


class _SidebarPanel:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "MuJoCo"


class MJBLEND_PT_simulation(_SidebarPanel, bpy.types.Panel):
    bl_idname = "MJBLEND_PT_simulation"
    bl_label = "Simulation"

    def draw(self, context):
        layout = self.layout
        settings = context.scene.mujoco_simulation
        draw_transport(layout, context)
        col = layout.column()
        col.prop(settings, "realtime")
        col.prop(settings, "keyframe")
        col.prop(settings, "display")
        noise = layout.column(align=True, heading="Control Noise")  # (simulate's Physics section)
        noise.prop(settings, "noise_scale", text="Scale")
        noise.prop(settings, "noise_rate", text="Rate")
        noise.prop(settings, "noise_seed", text="Seed")
        row = layout.row(align=True)  # (simulate's File section: Print model / Print data)
        row.operator("mujoco.print_model", icon="TEXT")
        row.operator("mujoco.print_data", icon="TEXT")
        running = _running(context)
        if running is None:
            layout.label(text="Stopped: objects are as authored")
            return
        shot = running.latest
        box = layout.box()
        box.label(text=f"Time  {shot.time:.3f} s")
        if running.playing:
            pace = "as fast as it can" if shot.fast_forward else f"{shot.achieved:.2f}x real time"
            box.label(text=f"playing, {pace}" if shot.playing else "playing")
        else:
            box.label(text="paused")
        if running.display.fast_now:
            box.label(text="Fast display: the objects show the state when paused", icon="MOD_INSTANCE")
        if shot.behind:
            box.label(text=f"Cannot keep up with {shot.speed:g}x: slowed down", icon="ERROR")
        if shot.message:
            for line in textwrap.wrap(shot.message, 48):
                box.label(text=line, icon="ERROR")
        kept, shown = shot.history
        if kept > 1:
            row = layout.row(align=True)
            row.operator("mujoco.history_step", text="", icon="TRIA_LEFT").offset = -1
            row.prop(settings, "history", text=f"History ({kept})")
            row.operator("mujoco.history_step", text="", icon="TRIA_RIGHT").offset = 1
        if running.error:
            err = layout.box()
            err.alert = True
            err.label(text="Edit not applied, last good model runs:", icon="ERROR")
            for line in textwrap.wrap(running.error, 48):
                err.label(text=line)
            for name in running.error_objects:
                err.operator("mujoco.select_object", text=f"Select {name}").name = name
        for text in shot.warnings + tuple(running.warnings):
            layout.label(text=text, icon="INFO")


class _Readout(_SidebarPanel):
    """A sub-panel of the running simulation, shown when the model has `count` > 0:
    one row per element of `kind` (at most MAX_ROWS), named after its object."""

    bl_parent_id = "MJBLEND_PT_simulation"
    count = ""  # an MjModel size: nu, njnt, nsensor
    kind = ""  # the element kind of the rows

    @classmethod
    def poll(cls, context):
        running = _running(context)
        return running is not None and getattr(running.latest.model, cls.count) > 0

    def draw(self, context):
        running = _running(context)
        shot = running.latest
        model, data = shot.model, shot
        col = self.layout.column(align=True)
        self.draw_header_rows(col)
        for index in range(min(getattr(model, self.count), MAX_ROWS)):
            obj = running.binding.by_id.get((self.kind, index))
            name = (obj.mujoco.name or obj.name) if obj else f"{self.kind} {index}"
            self.draw_row(col, model, data, index, obj, name)

    def draw_header_rows(self, col) -> None:
        """Anything above the rows (none by default)."""

    def draw_row(self, col, model, data, index, obj, name) -> None:
        """One element's row; `data`: the latest snapshot (its qpos, sensordata, ...)."""
        raise NotImplementedError


class MJBLEND_PT_controls(_Readout, bpy.types.Panel):
    bl_idname = "MJBLEND_PT_controls"
    bl_label = "Controls"
    count, kind = "nu", "actuator"

    def draw_header_rows(self, col):
        col.operator("mujoco.zero_controls")

    def draw_row(self, col, model, data, index, obj, name):
        if obj is None:
            return  # no object to hold the slider
        # as simulate: no row for an actuator group hidden, a greyed one for a disabled group
        group = int(model.actuator_group[index])
        if 0 <= group < 6 and not bpy.context.scene.mujoco_overlays.actuator_groups[group]:
            return
        row = col.row(align=True)
        row.enabled = not (0 <= group < 31 and model.opt.disableactuator >> group & 1)
        row.prop(obj, "mujoco_ctrl", text=name)
        if model.actuator_ctrllimited[index]:
            low, high = model.actuator_ctrlrange[index]
            row.label(text=f"[{low:g}, {high:g}]")


_HINGE, _SLIDE, _FREE = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE),
                         int(mujoco.mjtJoint.mjJNT_FREE))


class MJBLEND_PT_joints(_Readout, bpy.types.Panel):
    bl_idname = "MJBLEND_PT_joints"
    bl_label = "Joints"
    bl_options = {"DEFAULT_CLOSED"}
    count, kind = "njnt", "joint"

    def draw_header_rows(self, col):
        running = _running(bpy.context)
        if running is not None and running.playing:
            col.label(text="Pause to set joint positions", icon="INFO")

    def draw_row(self, col, model, data, index, obj, name):
        adr, kind = model.jnt_qposadr[index], int(model.jnt_type[index])
        if kind in (_HINGE, _SLIDE):
            # simulate's Joint section: a slider per hinge and slide joint of a shown joint group
            group = int(model.jnt_group[index])
            if 0 <= group < 6 and not bpy.context.scene.mujoco_overlays.joint_groups[group]:
                return
            value = data.qpos[adr]
            unit = f"rad ({math.degrees(value):.1f} deg)" if kind == _HINGE else "m"
            if obj is None:
                col.label(text=f"{name}: {value:.4f} {unit}")
                return
            row = col.row(align=True)
            row.enabled = not _running(bpy.context).playing  # (set while paused, as in simulate)
            row.prop(obj, "mujoco_qpos", text=name)
            # (short: the sidebar is narrow) a hinge's angle in degrees, the range in the slider's unit
            shown = f"{math.degrees(value):.1f}\u00b0" if kind == _HINGE else "m"
            if model.jnt_limited[index]:
                low, high = model.jnt_range[index]
                shown += f" [{low:.3g}, {high:.3g}]"
            row.label(text=shown)
        else:  # free: position and quaternion; ball: quaternion
            width = 7 if kind == _FREE else 4
            col.label(text=f"{name}: " + " ".join(f"{v:.3f}" for v in data.qpos[adr:adr + width]))


class MJBLEND_PT_sensors(_Readout, bpy.types.Panel):
    bl_idname = "MJBLEND_PT_sensors"
    bl_label = "Sensors"
    bl_options = {"DEFAULT_CLOSED"}
    count, kind = "nsensor", "sensor"

    def draw_row(self, col, model, data, index, obj, name):
        adr, dim = model.sensor_adr[index], model.sensor_dim[index]
        values = " ".join(f"{v:.4g}" for v in data.sensordata[adr:adr + min(dim, 6)])
        col.label(text=f"{name}: {values}{' ...' if dim > 6 else ''}")


class MJBLEND_PT_overrides(_SidebarPanel, bpy.types.Panel):
    bl_idname = "MJBLEND_PT_overrides"
    bl_label = "Option Overrides"
    bl_parent_id = "MJBLEND_PT_simulation"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        override = context.scene.mujoco_simulation.override
        col = self.layout.column()
        for attr in KINDS["option"].attrs:
            row = col.row(align=True)
            row.prop(override, "use_" + attr.prop, text="")
            sub = row.row(align=True)
            sub.active = getattr(override, "use_" + attr.prop)
            sub.prop(override, attr.prop)


def draw_header_button(self, context):
    running = _running(context)
    if running and running.playing:
        self.layout.operator("mujoco.pause", text="", icon="PAUSE")
    else:
        self.layout.operator("mujoco.play", text="", icon="PLAY")


class MJBLEND_PT_model(_SidebarPanel, bpy.types.Panel):
    """Does the model compile (checked in the background of edits), keyframes, inertia"""

    bl_idname = "MJBLEND_PT_model"
    bl_label = "Model"

    def draw(self, context):
        layout = self.layout
        outcome = validation.result(context.scene)
        running = _running(context)
        row = layout.row(align=True)
        if running is not None:
            row.label(text="Simulating" if not running.error else "Last edit rejected", icon="PLAY")
        elif outcome is None:
            row.label(text="Not checked yet", icon="QUESTION")
        elif outcome.ok:
            row.label(text="Compiles", icon="CHECKMARK")
        else:
            row.alert = True
            row.label(text="Does not compile", icon="ERROR")
        row.operator("mujoco.validate", text="", icon="FILE_REFRESH")
        if running is None and outcome is not None and not outcome.ok:
            box = layout.box()
            for line in textwrap.wrap(outcome.message, 48):
                box.label(text=line)
            for name in outcome.objects:
                box.operator("mujoco.select_object", text=f"Select {name}").name = name
        layout.prop(context.scene.mujoco_simulation, "show_inertia")
        _draw_reload(layout, context)  # (issue 34: Reload, Follow File)


def _draw_reload(layout, context):
    """Reload from File and Follow File, and the last refused reload's message."""
    row = layout.row(align=True)
    row.operator("mujoco.reload", icon="FILE_REFRESH")
    row.prop(context.scene.mujoco_simulation, "follow_file", text="Follow", toggle=True, icon="FILE_TICK")
    session = scene_session.existing(context.scene)
    watch = session.file_watch if session is not None else None
    if watch is not None and watch.error:
        box = layout.box()
        box.alert = True
        box.label(text="Reload refused: the last good model stays", icon="ERROR")
        for line in textwrap.wrap(watch.error, 48)[:8]:
            box.label(text=line)


class MJBLEND_UL_keyframes(bpy.types.UIList):
    bl_idname = "MJBLEND_UL_keyframes"

    def draw_item(self, _context, layout, _data, item, _icon, _active_data, _active_prop, _index=0):
        row = layout.row(align=True)
        row.prop(item.mujoco, "name", text="", emboss=False, icon="KEYFRAME")
        row.operator("mujoco.key_load", text="", icon="IMPORT").name = item.name
        row.operator("mujoco.key_delete", text="", icon="X").name = item.name

    def filter_items(self, _context, data, propname):
        objects = getattr(data, propname)
        flags = [self.bitflag_filter_item if o.mujoco.kind == "KEY" else 0 for o in objects]
        return flags, []


class MJBLEND_PT_keyframes(_SidebarPanel, bpy.types.Panel):
    bl_idname = "MJBLEND_PT_keyframes"
    bl_label = "Keyframes"
    bl_parent_id = "MJBLEND_PT_model"

    @classmethod
    def poll(cls, context):
        return any(o.mujoco.kind == "MODEL" for o in context.scene.objects)

    def draw(self, context):
        layout = self.layout
        row = layout.row(align=True)
        row.operator("mujoco.key_store", icon="ADD")
        row.operator("mujoco.copy_pose", icon="COPYDOWN")  # (Shift-click: full precision)
        layout.template_list("MJBLEND_UL_keyframes", "", context.scene, "objects",
                             context.scene.mujoco_simulation, "active_key", rows=3)


class MJBLEND_PT_timeline(_SidebarPanel, bpy.types.Panel):
    """Bake the simulation into the timeline, record while playing, import a trajectory."""

    bl_idname = "MJBLEND_PT_timeline"
    bl_label = "Timeline"

    def draw(self, context):
        layout = self.layout
        scene = context.scene
        bake = scene.mujoco_bake
        box = layout.box()
        if timeline.is_baked(scene):
            seconds = (bake.frame_end - bake.frame_start) / bake.fps if bake.fps else 0.0
            box.label(text=f"Baked: frames {bake.frame_start}-{bake.frame_end}", icon="KEYTYPE_KEYFRAME_VEC")
            box.label(text=f"{seconds:.3f} s at {bake.fps:g} fps, {bake.source}")
            if round(bake.fps, 6) != round(scene.render.fps / scene.render.fps_base, 6):
                box.label(text="The scene's frame rate changed since: bake again", icon="ERROR")
        else:
            box.label(text="Nothing baked", icon="KEYTYPE_BREAKDOWN_VEC")
        col = layout.column(align=True)
        row = col.row(align=True)
        row.prop(scene, "frame_start", text="Start")
        row.prop(scene, "frame_end", text="End")
        col.operator("mujoco.bake", icon="REC")
        row = layout.row(align=True)
        running = _running(context)
        if running is not None and running.recorder is not None:
            row.operator("mujoco.record_keep", icon="CHECKMARK")
            layout.label(text=f"Recording: {running.recorder.count:,} frames from frame "
                              f"{running.recorder.frame_start}", icon="RADIOBUT_ON")
        else:
            row.operator("mujoco.record_start", text="Record While Simulating", icon="RADIOBUT_ON")
        row = layout.row(align=True)
        row.operator("mujoco.clear_bake", icon="X")
        row.operator("mujoco.save_recording", text="Save", icon="EXPORT")
        layout.operator("mujoco.import_trajectory", text="Import Trajectory", icon="IMPORT")


class MJBLEND_PT_camera_dataset(_SidebarPanel, bpy.types.Panel):
    """Render the bake from MuJoCo cameras into a dataset folder (operators/dataset.py)."""

    bl_idname = "MJBLEND_PT_camera_dataset"
    bl_label = "Camera Dataset"
    bl_parent_id = "MJBLEND_PT_timeline"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        settings = context.scene.mujoco_dataset
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.prop(settings, "directory")
        layout.prop(settings, "cameras")
        layout.row().prop(settings, "kinds", expand=True)
        layout.prop(settings, "renderer")
        if settings.renderer == "BLENDER":
            layout.prop(settings, "engine")
            layout.prop(settings, "samples")
        col = layout.column(align=True)
        col.prop(settings, "width", text="Size")
        col.prop(settings, "height", text=" ")
        layout.prop(settings, "randomize")
        if settings.randomize != "NONE":
            layout.prop(settings, "seed")
            layout.prop(settings, "textures")
        layout.operator("mujoco.render_dataset", icon="RENDER_ANIMATION")


class MJBLEND_PT_bridge(_SidebarPanel, bpy.types.Panel):
    """Serve the simulation over the network (URLab's protocol): where, and what clients do."""

    bl_idname = "MJBLEND_PT_bridge"
    bl_label = "Bridge"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        info = bridge_host.status()
        prefs = preferences.settings(context)
        if info is None:
            layout.operator("mujoco.bridge_start", icon="URL")
        else:
            layout.operator("mujoco.bridge_stop", icon="CANCEL")
        col = layout.column()
        col.enabled = info is None  # (a running bridge keeps the address it was started with)
        if hasattr(prefs, "bl_rna"):  # (the add-on's preferences: stored with Blender's)
            col.label(text="Address")
            col.prop(prefs, "bridge_address", text="")
            sub = col.column(align=True)
            sub.prop(prefs, "bridge_request_port")
            sub.prop(prefs, "bridge_state_port")
            col.prop(prefs, "bridge_transport", text="")
        cameras = context.scene.mujoco_bridge
        col = layout.column()
        col.prop(cameras, "camera_renderer", text="Cameras")
        if cameras.camera_renderer == "BLENDER":
            col.prop(cameras, "camera_engine")
            if cameras.camera_engine != "BLENDER_WORKBENCH":
                col.prop(cameras, "camera_samples")
        address = info["address"] if info else prefs.bridge_address
        if not bridge_host.is_local(address):
            warning = layout.column(align=True)
            warning.alert = True
            warning.label(text=f"{address} is not loopback:", icon="ERROR")
            warning.label(text="other computers can connect")
        if info is None:
            layout.label(text="Not serving")
            return
        box = layout.box()
        box.label(text=f"Serving {info['scene']}", icon="URL")
        box.label(text="over ZMQ + shared memory" if info["shm"] else "over ZMQ")
        box.label(text=f"Mode: {info['mode']}")
        if not info.get("simulating", True):
            box.label(text="Stopped by a client (Play resumes)", icon="PAUSE")
        box.label(text=f"Sessions: {info['sessions']}")
        box.label(text=f"Requests: {info['requests']:,}")
        if info["errors"]:
            box.label(text=f"Errors: {info['errors']:,}")
        if info["last_op"]:
            box.label(text=f"Last op: {info['last_op']}")
        if info["last_error"]:
            err = box.column(align=True)
            err.alert = True
            for line in textwrap.wrap(f"Last error: {info['last_error']}", 34)[:5]:
                err.label(text=line)
        box.label(text=f"Snapshots streamed: {info['published']:,}")
        box.label(text=f"Snapshots dropped: {info['dropped']:,}")
        if info.get("leased"):
            box.label(text="Leased by a client (URLab's pool)", icon="LOCKED")
        if info.get("markers") or info.get("markers_evicted"):
            evicted = info.get("markers_evicted")
            evicted = f", {evicted:,} dropped at the cap" if evicted else ""
            box.label(text=f"Debug markers: {info['markers']:,}{evicted}")
        if info.get("camera_problem"):
            err = box.column(align=True)
            err.alert = True
            for line in textwrap.wrap(f"Camera: {info['camera_problem']}", 34)[:4]:
                err.label(text=line)


class MJBLEND_PT_randomization_preview(_SidebarPanel, bpy.types.Panel):
    """Randomized environments of the model side by side, stepping live with the same
    controls: what the randomization does, before training with it."""

    bl_idname = "MJBLEND_PT_randomization_preview"
    bl_label = "Randomization Preview"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        settings = context.scene.mujoco_preview
        preview = randomization_preview.get(context.scene)
        col = layout.column()
        col.enabled = preview is None  # (a running preview keeps what it started with)
        col.prop(settings, "count")
        col.prop(settings, "spacing", text="Spacing (0: auto)")
        roots = [o for o in context.scene.objects if o.mujoco.kind == "MODEL"]
        if roots:  # (the randomization's own seed: the preview draws what training's first draws)
            col.prop(roots[0].mujoco.model, "randomize_seed", text="Seed")
        row = layout.row(align=True)
        if preview is None:
            row.operator("mujoco.randomization_preview_start", icon="PLAY")
            return
        row.operator("mujoco.randomization_preview_stop", text="Stop", icon="SNAP_FACE")
        row.operator("mujoco.randomization_preview_reset", icon="FILE_REFRESH")
        box = layout.box()
        box.label(text=f"{preview.count} environments, {preview.spacing:.3g} m", icon="MOD_ARRAY")
        box.label(text=f"Time  {preview.time:.3f} s")
        if not preview.randomization:
            box.label(text="No randomization: every environment alike", icon="INFO")
        if preview.model.nu:
            col = layout.column(align=True)
            col.label(text="Controls (all environments)")
            for index in range(min(preview.model.nu, MAX_ROWS)):
                obj = preview.actuator_objects.get(index)
                if obj is not None:
                    col.prop(obj, "mujoco_ctrl", text=obj.mujoco.name or obj.name)


# (the order of the tab's panels; the Bridge panel last: tests/gui/bridge_window.py finds it there)
CLASSES = (MJBLEND_PT_simulation, MJBLEND_PT_controls, MJBLEND_PT_joints, MJBLEND_PT_sensors,
           MJBLEND_PT_overrides, MJBLEND_PT_timeline, MJBLEND_PT_camera_dataset, MJBLEND_PT_model,
           MJBLEND_UL_keyframes, MJBLEND_PT_keyframes, *plots_panel.CLASSES, *camera_panel.CLASSES,
           MJBLEND_PT_randomization_preview, MJBLEND_PT_bridge)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.VIEW3D_HT_header.append(draw_header_button)


def unregister():
    bpy.types.VIEW3D_HT_header.remove(draw_header_button)
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

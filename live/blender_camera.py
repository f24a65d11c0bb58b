"""Blender's renderer for MuJoCo cameras: a camera's RGB, depth and segmentation as
Blender draws the scene (Workbench, EEVEE or Cycles, through the scene's own
materials and lights), in the same `engine.cameras.Frame` as MuJoCo's renderer gives.

    frame = blender_camera.render(scene, "front", ("rgb", "depth", "segmentation"))

Main thread only (bpy.ops.render.render). The scene is rendered as it is posed now (a
live simulation's Objects display, a baked frame): the caller poses it.

How, and why so:

- Each render happens in a temporary copy of the scene (`Scene.copy()`: its
  collections linked, its settings copied) through a temporary camera standing where
  the MuJoCo camera's object stands, whose projection is MuJoCo's K for that camera
  (vertical sensor fit, lens, shift and pixel aspect: `_intrinsics`), clipped at
  MuJoCo's near and far planes. The user's scene, camera and settings are never
  touched; only object data the copy shares is set for a render and put back (each
  geom's `pass_index` for Cycles, object colours for the raster below).
- Depth is Blender's Depth pass, the distance along the view axis (the same as
  MuJoCo's; measured for Workbench and Cycles against mujoco.Renderer in
  tests/blender/test_blender_camera.py). Where nothing is drawn it is what
  mujoco.Renderer has there (`background_depth`, about the far plane).
- Segmentation maps each pixel to (MuJoCo id, mjtObj) of the geom or site (or flex,
  skin) object drawn there, (-1, -1) where nothing MuJoCo knows is. Cycles has an
  Object Index pass: each object's pass index is its slot in the table for the render.
  Workbench and EEVEE have none (and EEVEE's Depth pass accumulates its jittered
  samples): their depth and segmentation come from one more render by Workbench,
  flat, unantialiased, every object in the colour that codes its slot, in a scene
  copy of its own (an antialiased Workbench render leaves its last jitter offset to
  the next render of the same scene: depth off by up to 2 %, measured).
- The ids are the compiled model's: the live simulation's where one runs (its
  binding and its compile's scanners), else a fresh scan and compile of the scene
  (scan/compile_spec.py); never the scene session's scan cache, from which a running
  simulation reads its edits.
- Pixels come back through files: Render Result pixels cannot be read from Python
  and Blender's Python has no OpenImageIO or OpenEXR module, so the result is saved
  (`save_render`) as a multilayer OpenEXR (uncompressed 32-bit float, read by the
  small reader below: single- and multi-part, as 5.0 writes one part per pass) and,
  for RGB, as an 8-bit PNG through the scene's own colour management, as Blender
  saves a render. The files live in a temporary folder removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import tempfile
import time
import zlib

import bpy
import mujoco
import numpy as np
from mathutils import Matrix

from .. import blender_compat as compat
from ..engine import cameras
from ..scan import compile_spec, scene_scan
from ..sync import timeline
from . import scene_session

ENGINES = ("BLENDER_WORKBENCH", "BLENDER_EEVEE", "CYCLES")
MAX_SIZE = 8192  # the largest width or height rendered (Blender's own limit is 65536)
CYCLES_SAMPLES = 16  # Cycles' samples unless told (denoising off, CPU): cheap ground truth
EEVEE_SAMPLES = 16
SENSOR = 36.0  # mm, the temporary camera's sensor height (lens follows from fy)
_DRAWN = {"MESH", "CURVE", "SURFACE", "META", "FONT", "CURVES", "POINTCLOUD", "VOLUME", "GPENCIL",
          "GREASEPENCIL"}  # object types a render draws
# the kinds MuJoCo's segmentation names, with their mjtObj
_SEGMENTED = {"geom": int(mujoco.mjtObj.mjOBJ_GEOM), "site": int(mujoco.mjtObj.mjOBJ_SITE),
              "flex": int(mujoco.mjtObj.mjOBJ_FLEX), "skin": int(mujoco.mjtObj.mjOBJ_SKIN)}


class BlenderRenderError(cameras.CameraError):
    """Blender cannot render this camera here (an engine missing or failing)."""


def render(scene, camera, kinds=("rgb",), width=None, height=None, engine="BLENDER_WORKBENCH",
           samples=None) -> cameras.Frame:
    """One Frame of MuJoCo camera `camera` (its name as compiled, or its Blender object)
    of `scene` as posed now, rendered by Blender's `engine` at (width, height), the
    camera's MuJoCo resolution by default. `samples`: EEVEE's / Cycles' (defaults
    EEVEE_SAMPLES, CYCLES_SAMPLES)."""
    kinds = tuple(kinds)
    bad = [k for k in kinds if k not in cameras.KINDS]
    if bad or not kinds:
        raise cameras.CameraError(f"Unknown image kind {bad or kinds!r} (kinds: {', '.join(cameras.KINDS)})")
    model, by_id, world, sim_time = _compiled(scene)
    cam = _camera(model, by_id, camera)
    width, height = int(width or cam.width), int(height or cam.height)
    if not (1 <= width <= MAX_SIZE and 1 <= height <= MAX_SIZE):
        raise cameras.CameraError(f"Camera '{cam.name}': {width} x {height} pixels is beyond what MJBlend "
                                  f"renders with Blender (1 to {MAX_SIZE} a side)")
    engine = _engine_id(engine)
    source = by_id.get(("camera", cam.id))
    if source is None:
        raise cameras.CameraError(f"Camera '{cam.name}' has no Blender object in scene '{scene.name}'")
    table = [(kind, i, obj) for (kind, i), obj in sorted(by_id.items(), key=lambda item: item[0])
             if kind in _SEGMENTED and obj.type == "MESH"]
    if len(table) >= 32767:
        raise cameras.CameraError(f"{len(table)} geoms and sites are more than Blender renders apart "
                                  f"(32766: an object's pass index)")
    images = {}
    folder = tempfile.mkdtemp(prefix="mjblend-camera-")
    kept_index = [(obj, obj.pass_index) for _k, _i, obj in table]
    try:
        # Workbench and EEVEE: depth and segmentation from a flat Workbench raster, in a
        # scene copy of its own (a Workbench render with antialiasing leaves its last
        # jitter offset to the next render of the same scene: depth off by up to 2 %)
        if engine != "CYCLES" and ("depth" in kinds or "segmentation" in kinds):
            with _render_copy(scene, source, cam, width, height) as (copy, view_layer):
                _settings(copy, view_layer, "BLENDER_WORKBENCH", None, width, height, ("depth",))
                images.update(_raster_render(copy, view_layer, table, folder, kinds, cam))
        passes = engine == "CYCLES" and ("depth" in kinds or "segmentation" in kinds)
        if "rgb" in kinds or passes:
            with _render_copy(scene, source, cam, width, height) as (copy, view_layer):
                _settings(copy, view_layer, engine, samples, width, height, kinds if passes else ())
                if passes and "segmentation" in kinds:
                    for slot, (_kind, _i, obj) in enumerate(table):
                        obj.pass_index = slot + 1
                _render(copy, view_layer, engine)
                if passes:
                    images.update(_cycles_passes(copy, view_layer, table, folder, kinds, cam))
                if "rgb" in kinds:
                    path = os.path.join(folder, "rgb.png")
                    _save(copy, path)
                    images["rgb"] = _read_png(path)
    finally:
        for obj, index in kept_index:
            if obj.pass_index != index:
                obj.pass_index = index
        shutil.rmtree(folder, ignore_errors=True)
    cam_xpos, cam_xmat = _camera_poses(model, by_id, world)
    return cameras.Frame(camera=cam, frame_id=_next_frame(), sim_time=sim_time, width=width, height=height,
                         rgb=images.get("rgb"), depth=images.get("depth"),
                         segmentation=images.get("segmentation"), K=cam.K(width, height),
                         cam_xpos=cam_xpos, cam_xmat=cam_xmat)


def seconds_per_frame(scene, camera, engine="BLENDER_WORKBENCH", samples=None, kinds=cameras.KINDS,
                      width=640, height=480, repeat=2) -> float:
    """The best of `repeat` renders' wall times, in seconds (after one warm-up render)."""
    render(scene, camera, kinds, width, height, engine, samples)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        render(scene, camera, kinds, width, height, engine, samples)
        times.append(time.perf_counter() - start)
    return min(times)


_frames = 0


def _next_frame() -> int:
    global _frames
    _frames += 1
    return _frames


# ------------------------------------------------------------------ the model


def _compiled(scene):
    """(model, {(kind, id): object}, MuJoCo's world in Blender's, sim_time) of the
    scene: the live simulation's binding where one runs, else a fresh compile."""
    live = scene_session.simulation(scene)
    if live is not None and live.binding is not None:
        binding, latest = live.binding, live.latest
        return (binding.model, {**_ids(live.scanners), **binding.by_id}, binding.world,
                float(latest.time) if latest is not None else 0.0)
    roots = scene_scan.model_roots(scene)
    if not roots:
        raise cameras.CameraError(f"Scene '{scene.name}' has no MuJoCo model (File > Import > MuJoCo, "
                                  f"or add a model root)")
    try:
        built = compile_spec.build_spec(roots, [])
        model, _data = compile_spec.compiled(built.spec, scene.objects, built.scanners)
    except compile_spec.CompileError as error:
        raise cameras.CameraError(f"Scene '{scene.name}' does not compile: {error}") from None
    by_id = _ids(built.scanners)
    if len(roots) == 1:  # as live/binding.py places MuJoCo's world
        loc, rot, _scale = roots[0].matrix_world.decompose()
        world = Matrix.LocRotScale(loc, rot, None)
    else:
        world = Matrix.Identity(4)
    baked = timeline.recorded_state(scene, model, scene.frame_current)
    sim_time = float(baked[0]) if baked is not None else 0.0  # (mjSTATE_TIME comes first)
    return model, by_id, world, sim_time


def _ids(scanners) -> dict:
    """(kind, MuJoCo id) -> object, of every scanned element of a compile."""
    return {(kind, element.id): block for scanner in scanners
            for block, kind, element in scanner.elements.values() if element.id >= 0}


def _camera(model, by_id, camera) -> cameras.Camera:
    if isinstance(camera, bpy.types.Object):
        for (kind, i), obj in by_id.items():
            if kind == "camera" and obj == camera:
                return cameras.camera(model, i)
        names = [cameras.camera(model, i).name for i in range(model.ncam)]
        raise cameras.CameraError(f"Object '{camera.name}' is not a MuJoCo camera of the scene's model "
                                  f"(its cameras: {', '.join(names) or 'none'})")
    return cameras.camera(model, camera)


def _engine_id(engine: str) -> str:
    """Blender's identifier of `engine` on this release (EEVEE by either name)."""
    if engine in ("BLENDER_EEVEE", "BLENDER_EEVEE_NEXT"):
        return compat.EEVEE
    if engine not in ENGINES:
        raise BlenderRenderError(f"Render engine {engine!r} is not one MJBlend renders cameras with "
                                 f"({', '.join(ENGINES)})")
    return engine


# ------------------------------------------------------------------ the setup


def _render_layer(copy):
    """The copy's view layer that renders (the first one that is used)."""
    layers = [layer for layer in copy.view_layers if layer.use]
    layer = layers[0] if layers else copy.view_layers[0]
    for other in copy.view_layers:
        other.use = other == layer
    return layer


@contextlib.contextmanager
def _render_copy(scene, source, cam: cameras.Camera, width: int, height: int):
    """(copy, its view layer that renders): a copy of `scene` (`Scene.copy()` links its
    collections, copies its settings) seen through a temporary camera with MuJoCo's
    intrinsics where `source` stands; both removed afterwards."""
    copy = scene.copy()
    camera = None
    try:
        copy.name = f"MJBlend camera {cam.name}"
        view_layer = _render_layer(copy)
        camera = _temporary_camera(copy, source, cam, width, height)
        yield copy, view_layer
    finally:
        bpy.data.scenes.remove(copy)
        if camera is not None:
            data = camera.data
            bpy.data.objects.remove(camera)
            bpy.data.cameras.remove(data)


def _temporary_camera(copy, source, cam: cameras.Camera, width: int, height: int):
    data = bpy.data.cameras.new(f"MJBlend camera {cam.name}")
    _intrinsics(data, cam, width, height, copy.render)
    obj = bpy.data.objects.new(data.name, data)
    copy.collection.objects.link(obj)
    loc, rot, _scale = _posed_matrix(source).decompose()
    obj.matrix_world = Matrix.LocRotScale(loc, rot, None)
    copy.camera = obj
    return obj


def _posed_matrix(obj) -> Matrix:
    """`obj`'s world matrix from its and its parents' transforms as they are now (an
    object's matrix_world waits for the next depsgraph evaluation after a pose is set)."""
    matrix = obj.matrix_basis.copy()
    while obj.parent is not None:
        matrix = obj.matrix_parent_inverse @ matrix
        obj = obj.parent
        matrix = obj.matrix_basis @ matrix
    return matrix


def _intrinsics(data, cam: cameras.Camera, width: int, height: int, render_settings) -> None:
    """Blender camera data whose projection at (width, height) is MuJoCo's K exactly.

    Blender's view plane (BKE_camera_params_compute_viewplane), vertical sensor fit,
    pixel aspect (ax, ay): fy = H lens / sensor, fx = fy ay / ax; the principal point
    (continuous, from the top left) at (W / 2 - shift_x ay / ax H, H / 2 + shift_y H);
    OpenCV's pixel centres are half a pixel in from those edges."""
    K = cam.K(width, height)
    fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    ratio = fx / fy  # = ay / ax
    if ratio >= 1:
        render_settings.pixel_aspect_x, render_settings.pixel_aspect_y = 1.0, ratio
    else:
        render_settings.pixel_aspect_x, render_settings.pixel_aspect_y = 1.0 / ratio, 1.0
    data.sensor_fit = "VERTICAL"
    if cam.orthographic:
        data.type = "ORTHO"
        data.ortho_scale = height / fy  # K maps metres: the view's height in metres
    else:
        data.sensor_height = SENSOR
        data.lens = fy * SENSOR / height
    data.shift_x = (width / 2 - 0.5 - cx) / (ratio * height)
    data.shift_y = (cy + 0.5 - height / 2) / height
    data.clip_start = cam.near
    data.clip_end = cam.far


def _settings(copy, view_layer, engine, samples, width, height, kinds) -> None:
    render_settings = copy.render
    try:
        render_settings.engine = engine
    except TypeError:  # (an engine not registered here: Cycles' add-on off)
        raise BlenderRenderError(f"Render engine {engine!r} is not available in this Blender "
                                 f"(for Cycles: enable its add-on)") from None
    render_settings.resolution_x, render_settings.resolution_y = width, height
    render_settings.resolution_percentage = 100
    render_settings.use_border = False
    render_settings.use_crop_to_border = False
    render_settings.film_transparent = False
    render_settings.use_compositing = False  # the passes as rendered
    render_settings.use_sequencer = False
    render_settings.use_persistent_data = False
    render_settings.use_multiview = False
    render_settings.use_motion_blur = False
    view_layer.use_pass_z = "depth" in kinds
    view_layer.use_pass_object_index = "segmentation" in kinds
    if engine == "CYCLES":
        cycles = copy.cycles
        cycles.samples = samples or CYCLES_SAMPLES
        cycles.use_adaptive_sampling = False
        cycles.use_denoising = False
        cycles.device = "CPU"
        cycles.time_limit = 0.0
    elif engine.startswith("BLENDER_EEVEE"):
        eevee = copy.eevee
        eevee.taa_render_samples = samples or EEVEE_SAMPLES


def _cycles_passes(copy, view_layer, table, folder, kinds, cam) -> dict:
    """Depth and segmentation from Cycles' own Depth and Object Index passes (neither is
    filtered: each pixel's is its first sample's)."""
    path = os.path.join(folder, "passes.exr")
    _save(copy, path)
    channels = read_exr(path)
    prefix = f"{view_layer.name}."
    images = {}
    if "depth" in kinds:
        images["depth"] = _depth(channels[prefix + "Depth.Z"], None, cam)
    if "segmentation" in kinds:
        # (the file names the pass "Object Index" on 5.0, "IndexOB" before)
        index = channels.get(prefix + "Object Index.X", channels.get(prefix + "IndexOB.X"))
        images["segmentation"] = _segmentation(index, table)
    return images


def _raster_render(copy, view_layer, table, folder, kinds, cam) -> dict:
    """Depth and segmentation for Workbench and EEVEE, neither of which has an object
    index pass (and EEVEE's Depth pass accumulates its jittered samples): one more
    render by Workbench, flat, one sample a pixel (no antialiasing), each geom object in
    the colour that codes its slot ((slot % 256) / 255, (slot // 256) / 255, 0), every
    other object black (slot 0: nothing), its Depth pass and colours read back from a
    float OpenEXR (Workbench's half floats keep k / 255 well within 1 / 510). Object
    colours are put back afterwards."""
    render_settings = copy.render
    render_settings.film_transparent = True
    copy.display.render_aa = "OFF"
    shading = copy.display.shading
    shading.light = "FLAT"
    shading.color_type = "OBJECT"
    for flag in ("show_object_outline", "show_cavity", "show_shadows", "show_specular_highlight",
                 "use_dof", "show_xray"):
        setattr(shading, flag, False)
    slot_of = {obj.as_pointer(): slot + 1 for slot, (_k, _i, obj) in enumerate(table)}
    kept = [(obj, tuple(obj.color)) for obj in copy.objects if obj.type in _DRAWN]
    try:
        for obj, _colour in kept:
            slot = slot_of.get(obj.as_pointer(), 0)
            obj.color = ((slot % 256) / 255, (slot // 256) / 255, 0.0, 1.0)
        _render(copy, view_layer, "BLENDER_WORKBENCH")
        path = os.path.join(folder, "raster.exr")
        _save(copy, path)
    finally:
        for obj, colour in kept:
            if tuple(obj.color) != colour:
                obj.color = colour
    channels = read_exr(path)
    prefix = f"{view_layer.name}."
    drawn = channels[prefix + "Combined.A"] >= 0.5
    images = {}
    if "depth" in kinds:
        images["depth"] = _depth(channels[prefix + "Depth.Z"], drawn, cam)
    if "segmentation" in kinds:
        low, high = (np.rint(channels[prefix + f"Combined.{c}"] * 255) for c in "RG")
        slots = low + 256 * high
        slots[~drawn] = 0
        images["segmentation"] = _segmentation(slots, table)
    return images


def _save(copy, path: str) -> None:
    """The render result saved: a multilayer OpenEXR (every pass, 32-bit float,
    uncompressed) for a .exr path, else an 8-bit RGB PNG through the scene's colour
    management (as Blender saves a render)."""
    # (5.0's multi-part OpenEXR writer refuses a pixel aspect other than 1: "Conflicting
    # attributes found for header :: pixelAspectRatio"; the pixels are rendered already)
    copy.render.pixel_aspect_x = copy.render.pixel_aspect_y = 1.0
    settings = copy.render.image_settings
    if path.endswith(".exr"):
        if compat.IMAGE_MEDIA_TYPE:
            settings.media_type = "MULTI_LAYER_IMAGE"
        settings.file_format = "OPEN_EXR_MULTILAYER"
        settings.color_depth = "32"
        settings.exr_codec = "NONE"
    else:
        if compat.IMAGE_MEDIA_TYPE:
            settings.media_type = "IMAGE"
        settings.file_format = "PNG"
        settings.color_mode = "RGB"
        settings.color_depth = "8"
        settings.compression = 0
    bpy.data.images["Render Result"].save_render(path, scene=copy)


def _render(copy, view_layer, engine) -> None:
    try:
        bpy.ops.render.render(scene=copy.name, layer=view_layer.name)
    except RuntimeError as error:
        raise BlenderRenderError(f"Blender's {engine} cannot render here: {error}") from None


def _camera_poses(model, by_id, world) -> tuple:
    """(cam_xpos, cam_xmat) of every MuJoCo camera as its object stands now, in
    MuJoCo's world (Blender's camera looks along -z with y up, as MuJoCo's); zeros
    for a camera without an object."""
    to_mujoco = world.inverted()
    cam_xpos, cam_xmat = np.zeros((model.ncam, 3)), np.zeros((model.ncam, 9))
    for i in range(model.ncam):
        obj = by_id.get(("camera", i))
        if obj is not None:
            loc, rot, _scale = (to_mujoco @ _posed_matrix(obj)).decompose()
            cam_xpos[i] = tuple(loc)
            cam_xmat[i] = np.array(rot.to_matrix()).ravel()
    return cam_xpos, cam_xmat


# ------------------------------------------------------------------ the pixels


def _depth(z: np.ndarray, drawn, cam: cameras.Camera) -> np.ndarray:
    """Metres along the view axis (Blender's Depth pass is that, in every engine), the
    pixels where nothing is drawn as mujoco.Renderer has them."""
    depth = z.astype(np.float32)
    nothing = ~((depth > 0) & (depth < cam.far))
    if drawn is not None:
        nothing |= ~drawn
    depth[nothing] = background_depth(cam)
    return depth


def background_depth(cam: cameras.Camera) -> np.float32:
    """The depth mujoco.Renderer gives where nothing is drawn: its conversion of a
    cleared (reversed-Z) depth buffer, in its own float32 / float64 steps (about the
    far plane; rendering/classic/renderer.py)."""
    zfar, znear = np.float32(cam.far), np.float32(cam.near)
    if cam.orthographic:
        return np.float32(zfar)
    c_coef = -(zfar + znear) / (zfar - znear)
    d_coef = -(np.float32(2) * zfar * znear) / (zfar - znear)
    c_coef = np.float32(-0.5) * c_coef - np.float32(0.5)
    d_coef = np.float32(-0.5) * d_coef
    return np.float32(d_coef / (np.float64(0.0) + c_coef))


def _segmentation(index: np.ndarray, table) -> np.ndarray:
    lookup = np.full((len(table) + 1, 2), -1, dtype=np.int32)
    for slot, (kind, i, _obj) in enumerate(table):
        lookup[slot + 1] = (i, _SEGMENTED[kind])
    slots = np.rint(index).astype(np.int64)
    slots[(slots < 0) | (slots > len(table))] = 0
    return lookup[slots]


def _read_png(path: str) -> np.ndarray:
    image = bpy.data.images.load(path, check_existing=False)
    try:
        width, height = image.size
        channels = image.channels
        pixels = np.empty(width * height * channels, dtype=np.float32)
        image.pixels.foreach_get(pixels)
    finally:
        bpy.data.images.remove(image)
    pixels = pixels.reshape(height, width, channels)[::-1, :, :3]  # Blender's rows go up
    return np.rint(pixels * 255).astype(np.uint8)


_PIXEL_TYPES = {0: np.dtype("<u4"), 1: np.dtype("<f2"), 2: np.dtype("<f4")}
_LINES = {0: 1, 2: 1, 3: 16}  # compression -> scan lines per block: none, ZIPS, ZIP


def read_exr(path: str) -> dict:
    """Channel name -> (H, W) float32, row 0 at the top, of a scan-line OpenEXR file,
    single- or multi-part (Blender 5 writes a part per pass), uncompressed or ZIP /
    ZIPS-compressed: what `save_render` writes here. A part's channels are named
    "<part name>.<channel>" where the channel's own name does not start so already."""
    with open(path, "rb") as f:
        data = f.read()
    if struct.unpack_from("<i", data, 0)[0] != 20000630:
        raise BlenderRenderError(f"{path} is not an OpenEXR file")
    flags = struct.unpack_from("<i", data, 4)[0]
    if flags & 0x200 or flags & 0x800:
        raise BlenderRenderError(f"{path}: a tiled or deep OpenEXR file, which MJBlend does not read")
    multipart = bool(flags & 0x1000)
    pos, headers = 8, []
    while True:
        header, pos = _exr_header(data, pos)
        headers.append(header)
        if not multipart or data[pos] == 0:
            break
    pos += 1 if multipart else 0
    tables = []
    for header in headers:
        lines = _exr_lines(path, header)
        xmin, ymin, xmax, ymax = struct.unpack("<4i", header["dataWindow"])
        blocks = -(-(ymax - ymin + 1) // lines)
        tables.append(struct.unpack_from(f"<{blocks}Q", data, pos))
        pos += 8 * blocks
    out = {}
    for part, (header, offsets) in enumerate(zip(headers, tables, strict=True)):
        out.update(_exr_part(data, header, offsets, multipart, part))
    return out


def _exr_header(data: bytes, pos: int):
    header = {}
    while data[pos] != 0:
        end = data.index(b"\0", pos)
        name = data[pos:end].decode()
        end_type = data.index(b"\0", end + 1)
        size = struct.unpack_from("<i", data, end_type + 1)[0]
        header[name] = data[end_type + 5:end_type + 5 + size]
        pos = end_type + 5 + size
    return header, pos + 1


def _exr_lines(path, header) -> int:
    compression = header["compression"][0]
    if compression not in _LINES:
        raise BlenderRenderError(f"{path}: OpenEXR compression {compression} is not read by MJBlend")
    return _LINES[compression]


def _exr_part(data, header, offsets, multipart: bool, part: int) -> dict:
    prefix = header["name"].rstrip(b"\0").decode() + "." if "name" in header else ""
    channels, chlist, at = [], header["channels"], 0
    while chlist[at] != 0:
        end = chlist.index(b"\0", at)
        name = chlist[at:end].decode()
        channels.append((name, _PIXEL_TYPES[struct.unpack_from("<i", chlist, end + 1)[0]]))
        at = end + 1 + 16
    xmin, ymin, xmax, ymax = struct.unpack("<4i", header["dataWindow"])
    width, height = xmax - xmin + 1, ymax - ymin + 1
    compression = header["compression"][0]
    lines = _LINES[compression]
    out = {name: np.empty((height, width), dtype=np.float32) for name, _t in channels}
    row_bytes = width * sum(t.itemsize for _n, t in channels)
    for offset in offsets:
        if multipart:
            offset += 4  # (the part number)
        y, size = struct.unpack_from("<ii", data, offset)
        chunk = data[offset + 8:offset + 8 + size]
        rows = min(lines, ymax + 1 - y)
        if compression != 0 and size < rows * row_bytes:
            chunk = _unzip(chunk)
        at = 0
        for row in range(rows):
            for name, pixel in channels:
                out[name][y - ymin + row] = np.frombuffer(chunk, pixel, width, at)
                at += width * pixel.itemsize
    return {(name if not prefix or name.startswith(prefix) else prefix + name): image
            for name, image in out.items()}


def _unzip(chunk: bytes) -> bytes:
    """OpenEXR's ZIP: zlib, then a byte predictor, then two interleaved halves."""
    raw = np.frombuffer(zlib.decompress(chunk), dtype=np.uint8)
    # the predictor: t[i] = t[i - 1] + raw[i] - 128 (mod 256)
    steps = np.cumsum(raw[1:].astype(np.int64) - 128)
    t = (np.concatenate([[raw[0]], raw[0] + steps]) % 256).astype(np.uint8)
    half = (len(t) + 1) // 2
    out = np.empty_like(t)
    out[0::2] = t[:half]
    out[1::2] = t[half:]
    return out.tobytes()

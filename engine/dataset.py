"""Camera datasets: a recorded simulation (a bake's states) rendered from a set of
cameras into a folder a training pipeline reads, bpy-free.

The folder (`Dataset.open`; its layout is documented in docs/index.md, "Camera datasets"):

    manifest.json            what the dataset is: model sizes, cameras, renderer, seed,
                             kinds, conventions, the frames written, complete true/false
    segmentation.json        id -> element (type, MuJoCo id, name, body) of the PNG ids
    states.npz               per frame: frame, time, state (mj_getState FULLPHYSICS),
                             integration_state (mjSTATE_INTEGRATION, what the bake keeps),
                             sensordata
    frames/000001.json       per frame: time, each camera's K (OpenCV), extrinsics and
                             files, and the randomization drawn for it
    <camera>/rgb/000001.png  (H, W, 3) uint8
    <camera>/depth/000001.npy  (H, W) float32 metres along the view axis
    <camera>/segmentation/000001.png  (H, W) uint16 ids of segmentation.json (0: nothing)

manifest.json is written first with "complete": false and rewritten with true only
after the last frame: a dataset cut short (Esc, an error, a killed process) stays
on disk, marked incomplete, with the frames it has listed.

Renderers are objects with `render(frame, state, camera, kinds, width, height) ->
cameras.Frame`, `apply(draw)` (a randomization draw, None: the original look) and
`close()`: `MujocoFrames` here (mujoco.Renderer on a private copy of the model, its
look randomized on that copy), `live.camera_dataset.BlenderFrames` in Blender.

Visual randomization (`Randomizer`): per frame or once per dataset, seeded
(numpy's default Generator): each material's colour and roughness, each light's
strength (a factor) and direction (a rotation: a uniform axis, an angle up to
`max_tilt` degrees), drawn in a fixed order of the names, so the same seed and the
same names give the same draws; each frame's draw is in its frames/ file.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
from dataclasses import asdict, dataclass, field

import mujoco
import numpy as np

from . import cameras, png
from .errors import MJBlendError

FORMAT = "mjblend-camera-dataset"
VERSION = 1
FULL = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
INTEGRATION = int(mujoco.mjtState.mjSTATE_INTEGRATION)
RENDERERS = ("mujoco", "blender")
RANDOMIZE = ("none", "frame", "dataset")
MAX_IDS = 65535  # a uint16 PNG; 0 is "nothing"
CONVENTIONS = {
    "K": "OpenCV: pixels, row 0 at the top, the centre of pixel (row i, column j) at (u, v) = (j, i)",
    "camera_from_world_cv": "OpenCV extrinsic [R | t], 4 x 4: x_cam = R x_world + t, camera x right, y down, "
    "looking along +z",
    "world_from_camera_mujoco": "MuJoCo's camera frame in the world, 4 x 4 (cam_xpos, cam_xmat): "
    "x right, y up, looking along -z",
    "depth": "float32 metres along the view axis (OpenCV's Z), as mujoco.Renderer gives it",
    "segmentation": "uint16 ids of segmentation.json, 0 where nothing is drawn",
    "units": "metres, radians, seconds; world z up (MuJoCo's)",
}


class DatasetError(MJBlendError, ValueError):
    """A dataset that cannot be made: no cameras, an unknown renderer, a folder in use."""


@dataclass(frozen=True)
class Settings:
    """What a dataset is made of; every field goes into manifest.json."""

    cameras: tuple  # camera names (the compiled model's)
    kinds: tuple = cameras.KINDS
    renderer: str = "mujoco"  # RENDERERS
    engine: str = "BLENDER_WORKBENCH"  # the Blender renderer's engine (WORKBENCH, EEVEE, CYCLES)
    samples: int | None = None  # Cycles / EEVEE samples (None: the scene's)
    width: int | None = None  # None: each camera's own resolution
    height: int | None = None
    randomize: str = "none"  # RANDOMIZE
    seed: int = 0
    colors: bool = True  # what randomization draws
    roughness: bool = True
    lights: bool = True
    light_strength: tuple = (0.5, 1.5)  # factor range
    max_tilt: float = 30.0  # degrees a light's direction turns at most
    textures: str | None = None  # a folder of images (.png, .jpg): one drawn per material
    frames: tuple | None = None  # scene frames to render (None: every recorded frame)

    def check(self, cameras_named: bool = True) -> None:
        """DatasetError unless these settings can make a dataset (`cameras_named`
        False: no camera named yet is fine, the caller fills in every camera)."""
        if cameras_named and not self.cameras:
            raise DatasetError("A dataset needs at least one camera")
        if self.renderer not in RENDERERS:
            raise DatasetError(f"Unknown renderer {self.renderer!r} (renderers: {', '.join(RENDERERS)})")
        if self.randomize not in RANDOMIZE:
            raise DatasetError(f"Unknown randomization {self.randomize!r} (one of {', '.join(RANDOMIZE)})")
        bad = [k for k in self.kinds if k not in cameras.KINDS]
        if bad or not self.kinds:
            raise DatasetError(
                f"Unknown image kind {bad or self.kinds!r} (kinds: {', '.join(cameras.KINDS)})"
            )
        if self.textures is not None and not texture_files(self.textures):
            raise DatasetError(f"No images (.png, .jpg, .jpeg) in the texture folder {self.textures}")
        low, high = self.light_strength
        if not 0 <= low <= high:
            raise DatasetError(f"Light strength range {self.light_strength} is not low <= high, both >= 0")


TEXTURE_FILES = (".png", ".jpg", ".jpeg")


def texture_files(folder: str) -> list:
    """The images of a texture folder, sorted by name (the draws' order)."""
    try:
        names = os.listdir(folder)
    except OSError as error:
        raise DatasetError(f"Cannot read the texture folder {folder}: {error.strerror or error}") from None
    return sorted(n for n in names
                  if n.lower().endswith(TEXTURE_FILES) and os.path.isfile(os.path.join(folder, n)))


@dataclass
class Frames:
    """The recorded simulation a dataset renders: one row per scene frame."""

    frame_start: int
    fps: float
    time: np.ndarray  # (F,)
    state: np.ndarray  # (F, mj_stateSize(model, mjSTATE_INTEGRATION))
    sensordata: np.ndarray  # (F, nsensordata)

    @classmethod
    def of_recording(cls, recording) -> Frames:
        """From an engine.recording.Recording (a bake's)."""
        return cls(
            recording.frame_start, recording.fps, recording.time, recording.state, recording.sensordata
        )

    def rows(self, frames) -> list:
        """(scene frame, row) of each frame asked for (None: all); DatasetError outside."""
        count = len(self.time)
        wanted = range(self.frame_start, self.frame_start + count) if frames is None else frames
        out = []
        for frame in wanted:
            row = int(frame) - self.frame_start
            if not 0 <= row < count:
                raise DatasetError(
                    f"Frame {frame} is not recorded (the bake has frames {self.frame_start}-"
                    f"{self.frame_start + count - 1})"
                )
            out.append((int(frame), row))
        return out


# ----------------------------------------------------------------- segmentation


class SegmentationTable:
    """(mjtObj type, id) pairs -> the dataset's uint16 ids: geom g is g + 1, any other
    element drawn (a site, a flex, a skin, a tendon) the next id from ngeom + 1 on, in
    the order first seen."""

    def __init__(self, model: mujoco.MjModel):
        if model.ngeom >= MAX_IDS:
            raise DatasetError(f"{model.ngeom:,} geoms do not fit a 16-bit segmentation image")
        self.model = model
        self.extra: dict = {}  # (type, id) -> dataset id, beyond the geoms

    def encode(self, segmentation: np.ndarray) -> np.ndarray:
        """(H, W, 2) int32 (id, type) -> (H, W) uint16."""
        ids, types = segmentation[..., 0], segmentation[..., 1]
        out = np.zeros(ids.shape, np.uint16)
        geom = types == int(mujoco.mjtObj.mjOBJ_GEOM)
        out[geom] = ids[geom] + 1
        other = ~geom & (ids >= 0)
        if other.any():
            pairs, inverse = np.unique(np.stack((types[other], ids[other]), -1), axis=0, return_inverse=True)
            values = np.array([self._extra_id(int(t), int(i)) for t, i in pairs], np.uint16)
            out[other] = values[inverse.ravel()]
        return out

    def _extra_id(self, objtype: int, objid: int) -> int:
        key = (objtype, objid)
        if key not in self.extra:
            value = self.model.ngeom + 1 + len(self.extra)
            if value > MAX_IDS:
                raise DatasetError("More elements are drawn than a 16-bit segmentation image holds")
            self.extra[key] = value
        return self.extra[key]

    def table(self) -> dict:
        """id (a string, for JSON) -> {type, id, name, body}; "0" is nothing."""
        model = self.model
        out = {"0": {"type": "none", "id": -1, "name": "", "body": ""}}
        for g in range(model.ngeom):
            out[str(g + 1)] = _element(model, int(mujoco.mjtObj.mjOBJ_GEOM), g)
        for (objtype, objid), value in sorted(self.extra.items(), key=lambda item: item[1]):
            out[str(value)] = _element(model, objtype, objid)
        return out


def _element(model, objtype: int, objid: int) -> dict:
    kind = mujoco.mjtObj(objtype)
    name = mujoco.mj_id2name(model, kind, objid) or ""
    body = {mujoco.mjtObj.mjOBJ_GEOM: model.geom_bodyid, mujoco.mjtObj.mjOBJ_SITE: model.site_bodyid}.get(
        kind
    )
    body_name = (
        "" if body is None else mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(body[objid])) or ""
    )
    return {"type": kind.name[len("mjOBJ_") :].lower(), "id": objid, "name": name, "body": body_name}


# ---------------------------------------------------------------- randomization


class Randomizer:
    """Seeded draws of a look (see the module's docstring): `draw()` gives, for the
    materials and lights named, {"materials": {name: {"rgb", "roughness", "texture"}},
    "lights": {name: {"strength", "axis", "angle"}}} (angle in radians; "texture" a
    file name of the texture folder, drawn only when there is one)."""

    def __init__(self, settings: Settings, materials, lights):
        self.settings = settings
        self.materials = list(materials)
        self.lights = list(lights)
        self.textures = texture_files(settings.textures) if settings.textures else []
        self.rng = np.random.default_rng(settings.seed)
        self._once = None

    def for_frame(self) -> dict | None:
        """The draw for the next frame (None: no randomization)."""
        mode = self.settings.randomize
        if mode == "none":
            return None
        if mode == "dataset":
            if self._once is None:
                self._once = self.draw()
            return self._once
        return self.draw()

    def draw(self) -> dict:
        s, rng = self.settings, self.rng
        materials = {}
        for name in self.materials:
            entry = {}
            if s.colors:
                entry["rgb"] = [float(v) for v in rng.uniform(0.0, 1.0, 3)]
            if s.roughness:
                entry["roughness"] = float(rng.uniform(0.0, 1.0))
            if self.textures:
                entry["texture"] = self.textures[int(rng.integers(len(self.textures)))]
            materials[name] = entry
        lights = {}
        if s.lights:
            for name in self.lights:
                axis = rng.normal(size=3)
                axis /= np.linalg.norm(axis) or 1.0
                lights[name] = {
                    "strength": float(rng.uniform(*s.light_strength)),
                    "axis": [float(v) for v in axis],
                    "angle": float(rng.uniform(0.0, math.radians(s.max_tilt))),
                }
        return {"materials": materials, "lights": lights}


def rotation(axis, angle: float) -> np.ndarray:
    """3 x 3 rotation by `angle` radians about the unit `axis` (Rodrigues)."""
    x, y, z = axis
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


class ModelLook:
    """A model's look randomized in place (the model must be a private copy): materials
    are "material/<name>" (mat_rgba, mat_shininess = 1 - roughness) and "geom/<name>"
    for each geom without a material (geom_rgba; no roughness: MuJoCo's geoms have none);
    lights are "light/<name>" (light_diffuse and light_specular times the strength,
    light_dir turned) and "headlight" (its diffuse times the strength). A drawn texture
    replaces the pixels of a material's own 2D colour texture (resized, nearest pixel):
    a material without one has no texture coordinates to show another with.
    `apply` returns the texture ids whose pixels changed (to upload to a GL context)."""

    def __init__(self, model: mujoco.MjModel, textures: str | None = None, load=None):
        """`textures`: the texture folder; `load(path)` -> (H, W, 3 or 4) uint8, row 0
        at the top (default: PNGs MJBlend wrote, engine/png.py)."""
        self.model = model
        self.folder = textures
        self.load = load or _read_image
        self._images: dict = {}  # file name -> pixels
        self._textured: set = set()  # texture ids holding a drawn image now
        self.original_textures = model.tex_data.copy() if textures else None
        self.original = {
            key: getattr(model, key).copy()
            for key in (
                "geom_rgba",
                "mat_rgba",
                "mat_shininess",
                "light_diffuse",
                "light_specular",
                "light_dir",
            )
        }
        self.headlight = np.array(model.vis.headlight.diffuse)
        self._materials = {}  # name -> (array name, index)
        for i in range(model.nmat):
            self._materials[f"material/{_name(model, mujoco.mjtObj.mjOBJ_MATERIAL, i)}"] = ("mat", i)
        for g in range(model.ngeom):
            if model.geom_matid[g] < 0:
                self._materials[f"geom/{_name(model, mujoco.mjtObj.mjOBJ_GEOM, g)}"] = ("geom", g)
        self._lights = {f"light/{_name(model, mujoco.mjtObj.mjOBJ_LIGHT, i)}": i for i in range(model.nlight)}

    def materials(self) -> list:
        return list(self._materials)

    def lights(self) -> list:
        return [*self._lights, "headlight"]

    def apply(self, draw: dict | None) -> set:
        model = self.model
        for key, value in self.original.items():
            getattr(model, key)[:] = value
        model.vis.headlight.diffuse[:] = self.headlight
        changed = set(self._textured)
        for tex in self._textured:
            adr, size = self._texture_span(tex)
            model.tex_data[adr:adr + size] = self.original_textures[adr:adr + size]
        self._textured = set()
        if draw is None:
            return changed
        for name, entry in draw["materials"].items():
            kind, index = self._materials[name]
            rgba = model.mat_rgba if kind == "mat" else model.geom_rgba
            if "rgb" in entry:
                rgba[index, :3] = entry["rgb"]
            if "roughness" in entry and kind == "mat":
                model.mat_shininess[index] = 1.0 - entry["roughness"]
            tex = self._colour_texture(index) if kind == "mat" and "texture" in entry else -1
            if tex >= 0:
                self._put_texture(tex, entry["texture"])
                changed.add(tex)
        for name, entry in draw["lights"].items():
            if name == "headlight":
                model.vis.headlight.diffuse[:] = np.clip(self.headlight * entry["strength"], 0, 1)
                continue
            i = self._lights[name]
            model.light_diffuse[i] = self.original["light_diffuse"][i] * entry["strength"]
            model.light_specular[i] = self.original["light_specular"][i] * entry["strength"]
            model.light_dir[i] = rotation(entry["axis"], entry["angle"]) @ self.original["light_dir"][i]
        return changed

    def _colour_texture(self, mat: int) -> int:
        """The material's 2D colour texture id, or -1."""
        for role in (mujoco.mjtTextureRole.mjTEXROLE_RGB, mujoco.mjtTextureRole.mjTEXROLE_RGBA):
            tex = int(self.model.mat_texid[mat][int(role)])
            if tex >= 0 and int(self.model.tex_type[tex]) == int(mujoco.mjtTexture.mjTEXTURE_2D):
                return tex
        return -1

    def _texture_span(self, tex: int) -> tuple:
        m = self.model
        return int(m.tex_adr[tex]), int(m.tex_height[tex] * m.tex_width[tex] * m.tex_nchannel[tex])

    def _put_texture(self, tex: int, file_name: str) -> None:
        if file_name not in self._images:
            image = np.asarray(self.load(os.path.join(self.folder, file_name)), np.uint8)
            if image.ndim == 2:
                image = np.repeat(image[..., None], 3, axis=2)
            self._images[file_name] = image
        image = self._images[file_name]
        m = self.model
        height, width, channels = int(m.tex_height[tex]), int(m.tex_width[tex]), int(m.tex_nchannel[tex])
        rows = np.arange(height) * image.shape[0] // height
        cols = np.arange(width) * image.shape[1] // width
        resized = image[rows][:, cols]
        out = np.full((height, width, channels), 255, np.uint8)
        out[..., :min(channels, 3)] = resized[..., :min(channels, 3)]
        if channels == 4 and resized.shape[2] == 4:
            out[..., 3] = resized[..., 3]
        adr, size = self._texture_span(tex)
        m.tex_data[adr:adr + size] = out.ravel()
        self._textured.add(tex)


def _read_image(path: str) -> np.ndarray:
    if not path.lower().endswith(".png"):
        raise DatasetError(f"{path}: outside Blender only PNG textures MJBlend wrote are read")
    return png.read(path)


def _name(model, kind, index: int) -> str:
    return mujoco.mj_id2name(model, kind, index) or f"#{index}"


class MujocoFrames:
    """Frames from MuJoCo's renderer (engine.cameras.CameraRenderer) on a private copy
    of the model, whose look a randomization changes; nothing else is touched."""

    name = "mujoco"

    def __init__(self, model: mujoco.MjModel, max_geom: int = 10000, textures: str | None = None, load=None):
        """`textures`, `load`: see ModelLook."""
        self.model = copy.deepcopy(model)
        self.look = ModelLook(self.model, textures, load)
        # (on a thread of its own: a dataset made in Blender's window renders from its main
        # thread, where MuJoCo's renderer cannot start beside Blender's OpenGL context)
        self.renderer = cameras.RenderThread(self.model, max_geom)

    def materials(self) -> list:
        return self.look.materials()

    def lights(self) -> list:
        return self.look.lights()

    def apply(self, draw: dict | None) -> None:
        changed = self.look.apply(draw)
        if changed:  # the renderers made already hold the old pixels on the GPU
            self.renderer.upload_textures(sorted(changed))

    def render(self, frame: int, state: np.ndarray, cam, kinds, width, height) -> cameras.Frame:
        return self.renderer.render(state, cam, kinds, width, height, spec=INTEGRATION)

    def describe(self) -> dict:
        return {"name": "mujoco", "mujoco": mujoco.__version__, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "")}

    def close(self) -> None:
        self.renderer.close()


# ----------------------------------------------------------------------- writing


@dataclass
class Dataset:
    """A dataset being written (see the module's docstring): `open`, `add` each frame,
    `close(complete)`."""

    folder: str
    model: mujoco.MjModel
    manifest: dict
    segmentation: SegmentationTable
    written: list = field(default_factory=list)  # (frame, time, full state, integration state, sensordata)
    _data: mujoco.MjData | None = None  # (the full state is read back through it)

    @classmethod
    def open(
        cls, folder: str, model, settings: Settings, frames: Frames, renderer: dict, extra: dict
    ) -> Dataset:
        """A new dataset in `folder` (made if missing; it must be empty or hold an earlier
        MJBlend dataset, which is replaced); manifest.json says "complete": false."""
        folder = os.path.abspath(folder)
        _clear(folder)
        os.makedirs(os.path.join(folder, "frames"), exist_ok=True)
        described = [cameras.camera(model, name) for name in settings.cameras]
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "complete": False,
            "message": "",
            "settings": {
                **asdict(settings),
                "frames": None if settings.frames is None else list(settings.frames),
            },
            "renderer": renderer,
            "seed": settings.seed,
            "randomize": settings.randomize,
            "kinds": list(settings.kinds),
            "model": {
                "nq": model.nq,
                "nv": model.nv,
                "na": model.na,
                "nu": model.nu,
                "nbody": model.nbody,
                "ngeom": model.ngeom,
                "nsensordata": model.nsensordata,
                "timestep": float(model.opt.timestep),
                "full_state_size": mujoco.mj_stateSize(model, FULL),
                "integration_state_size": mujoco.mj_stateSize(model, INTEGRATION),
                "sensors": [_name(model, mujoco.mjtObj.mjOBJ_SENSOR, i) for i in range(model.nsensor)],
                "sensor_adr": model.sensor_adr.tolist(),
                "sensor_dim": model.sensor_dim.tolist(),
            },
            "state": {
                "full": "mj_getState(mjSTATE_FULLPHYSICS): time, qpos, qvel, act, history, plugin state",
                "full_spec": FULL,
                "integration": "mj_getState(mjSTATE_INTEGRATION), what the bake keeps (also ctrl, "
                "mocap, eq_active, ...)",
                "integration_spec": INTEGRATION,
            },
            "fps": frames.fps,
            "frame_start": frames.frame_start,
            "cameras": [
                {
                    "name": c.name,
                    "id": c.id,
                    "width": settings.width or c.width,
                    "height": settings.height or c.height,
                    "fovy": c.fovy,
                    "orthographic": c.orthographic,
                    "near": c.near,
                    "far": c.far,
                    "K": c.K(settings.width or c.width, settings.height or c.height).tolist(),
                }
                for c in described
            ],
            "conventions": CONVENTIONS,
            "frames": [],
            **extra,
        }
        dataset = cls(folder, model, manifest, SegmentationTable(model))
        for c in described:
            for kind in settings.kinds:
                os.makedirs(os.path.join(folder, c.name, kind), exist_ok=True)
        dataset._write_json("manifest.json", manifest)
        return dataset

    def add(
        self,
        frame: int,
        time: float,
        state: np.ndarray,
        sensordata: np.ndarray,
        images: list,
        draw: dict | None,
    ) -> None:
        """Frame `frame`'s files: each camera's images (cameras.Frame list), its JSON."""
        full = np.empty(mujoco.mj_stateSize(self.model, FULL))
        if self._data is None:
            self._data = mujoco.MjData(self.model)
        data = self._data
        mujoco.mj_setState(self.model, data, state, INTEGRATION)
        mujoco.mj_getState(self.model, data, full, FULL)
        stem = f"{frame:06d}"
        entry = {"frame": frame, "time": float(time), "cameras": {}, "randomization": draw}
        for image in images:
            name = image.camera.name
            files = {}
            if image.rgb is not None:
                files["rgb"] = f"{name}/rgb/{stem}.png"
                png.write(os.path.join(self.folder, files["rgb"]), image.rgb)
            if image.depth is not None:
                files["depth"] = f"{name}/depth/{stem}.npy"
                np.save(os.path.join(self.folder, files["depth"]), image.depth.astype(np.float32))
            if image.segmentation is not None:
                files["segmentation"] = f"{name}/segmentation/{stem}.png"
                png.write(
                    os.path.join(self.folder, files["segmentation"]),
                    self.segmentation.encode(image.segmentation),
                )
            entry["cameras"][name] = {
                "width": image.width,
                "height": image.height,
                "K": image.K.tolist(),
                "camera_from_world_cv": image.camera_from_world_cv.tolist(),
                "world_from_camera_mujoco": image.world_from_camera.tolist(),
                "files": files,
            }
        self._write_json(f"frames/{stem}.json", entry)
        self.written.append((frame, float(time), full, np.array(state, float), np.array(sensordata, float)))

    def close(self, complete: bool, message: str = "") -> None:
        """states.npz, segmentation.json and the manifest of what was written."""
        written = self.written
        n_full = mujoco.mj_stateSize(self.model, FULL)
        n_int = mujoco.mj_stateSize(self.model, INTEGRATION)
        np.savez(
            os.path.join(self.folder, "states.npz"),
            frame=np.array([w[0] for w in written], np.int64),
            time=np.array([w[1] for w in written]),
            state=np.array([w[2] for w in written]).reshape(len(written), n_full),
            integration_state=np.array([w[3] for w in written]).reshape(len(written), n_int),
            sensordata=np.array([w[4] for w in written]).reshape(len(written), self.model.nsensordata),
        )
        self._write_json("segmentation.json", self.segmentation.table())
        self.manifest.update(complete=bool(complete), message=message, frames=[w[0] for w in written])
        self._write_json("manifest.json", self.manifest)

    def _write_json(self, relative: str, value) -> None:
        path = os.path.join(self.folder, relative)
        with open(path + ".part", "w", encoding="utf-8") as out:
            json.dump(value, out, indent=1)
        os.replace(path + ".part", path)  # (a reader never sees half a file)


def _clear(folder: str) -> None:
    """An empty folder to write into: missing, empty, or an earlier dataset (removed)."""
    if not os.path.exists(folder):
        return
    if not os.path.isdir(folder):
        raise DatasetError(f"{folder} is a file, not a folder")
    entries = os.listdir(folder)
    if not entries:
        return
    manifest = os.path.join(folder, "manifest.json")
    try:
        with open(manifest, encoding="utf-8") as source:
            earlier = json.load(source)
    except (OSError, ValueError):
        earlier = None
    if not isinstance(earlier, dict) or earlier.get("format") != FORMAT:
        raise DatasetError(
            f"{folder} is neither empty nor an MJBlend camera dataset: choose an empty folder "
            "(nothing was written)"
        )
    ours = {
        "manifest.json",
        "segmentation.json",
        "states.npz",
        "frames",
        *(c.get("name") for c in earlier.get("cameras", [])),
    }
    strangers = [e for e in entries if e not in ours and not e.endswith(".part")]
    if strangers:
        raise DatasetError(
            f"{folder} holds an earlier dataset and other files ({', '.join(sorted(strangers)[:5])}): "
            "choose an empty folder (nothing was written)"
        )
    for entry in entries:
        path = os.path.join(folder, entry)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


# ------------------------------------------------------------------------ the job


class Job:
    """A dataset made a frame at a time (`step`), so a window can show progress and
    Esc can stop it between frames (`cancel`); `run` makes all of it."""

    def __init__(
        self, folder: str, model, frames: Frames, settings: Settings, renderer, extra: dict | None = None
    ):
        settings.check()
        for name in settings.cameras:
            cam = cameras.camera(model, name)  # (CameraError names the cameras there are)
            if settings.renderer == "mujoco":
                cameras.check_size(model, cam, settings.width or cam.width, settings.height or cam.height)
        self.settings = settings
        self.frames = frames
        self.rows = frames.rows(settings.frames)
        self.renderer = renderer
        self.randomizer = Randomizer(settings, renderer.materials(), renderer.lights())
        self.kinds = tuple(k for k in cameras.KINDS if k in settings.kinds)  # (one order: rgb, depth, seg)
        self.dataset = Dataset.open(folder, model, settings, frames, renderer.describe(), extra or {})
        self.done = 0
        self.finished = False

    @property
    def total(self) -> int:
        return len(self.rows)

    def step(self) -> bool:
        """Render and write the next frame; False when none is left (the dataset closed)."""
        if self.finished:
            return False
        if self.done == len(self.rows):
            self.close(True)
            return False
        frame, row = self.rows[self.done]
        draw = self.randomizer.for_frame()
        state = self.frames.state[row]
        try:
            self.renderer.apply(draw)
            images = [
                self.renderer.render(
                    frame, state, name, self.kinds, self.settings.width, self.settings.height
                )
                for name in self.settings.cameras
            ]
            self.dataset.add(frame, self.frames.time[row], state, self.frames.sensordata[row], images, draw)
        except BaseException as error:
            self.close(False, f"stopped at frame {frame}: {error}")
            raise
        self.done += 1
        return True

    def run(self, progress=None) -> None:
        """Every frame; `progress(done, total)` after each."""
        while self.step():
            if progress is not None:
                progress(self.done, self.total)

    def cancel(self, message: str = "cancelled") -> None:
        self.close(False, f"{message} after {self.done} of {self.total} frames")

    def close(self, complete: bool, message: str = "") -> None:
        if self.finished:
            return
        self.finished = True
        try:
            self.renderer.apply(None)
        finally:
            try:
                self.renderer.close()
            finally:
                self.dataset.close(complete, message)

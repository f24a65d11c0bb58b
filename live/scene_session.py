"""Everything unsaved about a scene, owned by one `SceneSession` per scene.

A .blend holds only what can be saved. What MJBlend knows about a scene beside
that lives here, outside bpy data, in one object per scene (as MolecularNodes'
session): the scan cache, the authored poses held while a simulation moves
objects, the last validation, the live simulation (live/simulation.py), the
randomization preview (live/randomization_preview.py), the camera preview
(live/camera_preview.py), the bridge serving the scene (live/bridge_host.py),
the viewport's drawing caches (ui/overlays), the 3D view following the
simulation (live/view_follow.py) and the screenshots waiting for a draw
(live/viewport.py).

Each part has one way to go: `suspend` / `resume` around a save (the file gets
the authored poses and no instancer), `end` on file load, undo, redo, scene
deletion and add-on disable (threads joined, sockets closed, instancers
removed). app/handlers.py calls these for every scene at once:

    scene_session.of(scene)            # the scene's session, made on first use
    scene_session.simulation(scene)    # its live simulation, or None
    scene_session.start_simulation(scene, prefs)   # ... compiled and started if none
"""

from __future__ import annotations

from ..scan import scene_scan
from ..scene import preferences
from ..scene.transforms import HeldPose
from . import viewport
from .simulation import LiveSimulation, SimulationError


class SceneSession:
    """Everything unsaved MJBlend knows about one scene (never in bpy data)."""

    def __init__(self, scene):
        self.scene = scene
        self.key = scene.as_pointer()  # (kept: a deleted scene can no longer say it)
        self.held: dict[int, HeldPose] = {}  # objects a simulation moves -> authored pose
        self.scans = scene_scan.ScanCache(self.held)  # the scan reads the held poses
        self.validation = None  # authoring.validation.Result of the last check
        self.simulation: LiveSimulation | None = None
        self.preview = None  # live.randomization_preview.RandomizationPreview, while one runs
        self.bridge = None  # live.bridge_host.Served, while a bridge serves this scene
        self.camera_preview = None  # live.camera_preview.CameraPreview, while a camera preview runs
        self.file_watch = None  # live.file_watch.FileWatch, while Follow File is on
        # the viewport's caches of what it drew (ui/overlays: layers.py and draw.py)
        self.overlay_layers = None
        self.overlay_batches = None
        self.follow = None  # live.view_follow.Follow, while a 3D view tracks a body or looks through a camera
        self.captures: list = []  # live.viewport.Capture: screenshots waiting for their view's next draw

    # ---------------------------------------------------------- simulation

    def start_simulation(self, prefs: preferences.Settings | None = None, **options) -> LiveSimulation:
        """The scene's simulation, compiled and started now if there is none
        (`options`: LiveSimulation's). SimulationError (saying why) if it cannot."""
        if self.simulation is None:
            if self.preview is not None:  # (both would show the same objects moving)
                raise SimulationError("The randomization preview is running: stop it (Sidebar > MuJoCo > "
                                      "Randomization Preview) before simulating the scene")
            self.simulation = LiveSimulation(self, prefs or preferences.DEFAULTS, **options)
            if self.scene.mujoco_camera_preview.enabled:
                from . import camera_preview  # (it imports this module)
                camera_preview.wake()
        return self.simulation

    def end_simulation(self, live: LiveSimulation, restore: bool = True) -> bool:
        """End `live` (a bridge serving it stops first, while its runner still answers
        any request in flight): its physics thread joined, no instancer left; with
        `restore`, objects back at their authored poses. The rest of the session stays
        (its scans and validation are still good). False if the thread would not end."""
        if self.bridge is not None and self.bridge.host.live is live:
            self.end_bridge()
        if self.camera_preview is not None and self.camera_preview.live is live:
            self.end_camera_preview()  # (its render thread reads the runner's snapshots)
        ended = live.end(restore)
        if self.simulation is live:
            self.simulation = None
        return ended

    # ------------------------------------------------------- other parts

    def end_bridge(self) -> bool:
        """Stop the bridge serving this scene, if one does (every socket closed, every
        thread joined; the simulation goes on). True if one was running."""
        served, self.bridge = self.bridge, None
        if served is None:
            return False
        served.bridge.stop()
        return True

    def end_preview(self) -> bool:
        """End the randomization preview (its instancer removed); False if none ran."""
        preview, self.preview = self.preview, None
        if preview is None:
            return False
        preview.close()
        return True

    def end_camera_preview(self) -> bool:
        """End the camera preview: its render thread joined (its GL context freed), its
        image removed. False if none ran."""
        preview, self.camera_preview = self.camera_preview, None
        if preview is None:
            return False
        preview.close()
        return True

    # ----------------------------------------------------------- lifecycle

    def suspend(self) -> None:
        """Before a save: the authored poses back and no instancer, so the file holds
        neither simulated poses nor a preview."""
        if self.simulation is not None:
            self.simulation.restore()
        if self.preview is not None:
            self.preview.suspend()

    def resume(self) -> None:
        """After a save: as it was before `suspend`."""
        if self.simulation is not None and self.simulation.session is not None:
            self.simulation.reapply()
        if self.preview is not None:
            self.preview.resume()

    def end(self, restore: bool) -> None:
        """Every part ended (with `restore`, the authored poses back) and the session
        forgotten: the next use of the scene starts anew."""
        self.end_bridge()
        self.end_preview()
        try:
            self.end_camera_preview()
        except ReferenceError:  # (its image went with the file)
            self.camera_preview = None
        if self.simulation is not None:
            self.end_simulation(self.simulation, restore)
        self.held.clear()
        self.file_watch = None
        self.overlay_layers = self.overlay_batches = None
        self.follow = None  # (the view stays where it is: its area may be gone with the file)
        viewport.release_captures(self.captures)
        if _SESSIONS.get(self.key) is self:
            del _SESSIONS[self.key]


_SESSIONS: dict[int, SceneSession] = {}  # scene.as_pointer() -> its session: the only registry


def of(scene) -> SceneSession:
    """The scene's session, made on first use."""
    owner = existing(scene)
    if owner is None:
        owner = _SESSIONS[scene.as_pointer()] = SceneSession(scene)
    return owner


def simulation(scene) -> LiveSimulation | None:
    """The scene's live simulation, or None."""
    owner = existing(scene)
    return owner.simulation if owner is not None else None


def start_simulation(scene, prefs: preferences.Settings | None = None, **options) -> LiveSimulation:
    """The scene's live simulation, compiled and started now if there is none."""
    return of(scene).start_simulation(prefs, **options)


def end_simulation(live: LiveSimulation, restore: bool = True) -> bool:
    """End `live` (see SceneSession.end_simulation)."""
    return live.owner.end_simulation(live, restore)


def is_current(live: LiveSimulation) -> bool:
    """Is `live` still its scene's simulation? (False once ended, replaced, or its
    scene deleted: then the scene's whole session ends.)"""
    try:
        return live.runner is not None and simulation(live.scene) is live
    except ReferenceError:  # the scene was deleted
        live.owner.end(restore=True)
        return False


def existing(scene) -> SceneSession | None:
    """The scene's session if it has one, without making one (None for a new scene at
    a reused address: the old one's session ends)."""
    owner = _SESSIONS.get(scene.as_pointer())
    if owner is not None and owner.scene != scene:  # the old scene is gone
        owner.end(restore=False)
        return None
    return owner


def all_sessions() -> list[SceneSession]:
    return list(_SESSIONS.values())


def all_simulations() -> list[LiveSimulation]:
    return [owner.simulation for owner in _SESSIONS.values() if owner.simulation is not None]


def suspend_all() -> None:
    for owner in all_sessions():
        owner.suspend()


def resume_all() -> None:
    for owner in all_sessions():
        owner.resume()


def end_all(restore: bool = True) -> None:
    """Every scene session ended as one (file load, undo, redo, add-on disable)."""
    for owner in all_sessions():
        owner.end(restore)


def forget_deleted_objects() -> None:
    """(After each depsgraph update) A simulation whose scene has fewer objects than at its
    last structure check forgets its deleted ones at once (`forget_deleted`): panels
    draw before its next tick recompiles without them."""
    for live in all_simulations():
        live.forget_deleted()

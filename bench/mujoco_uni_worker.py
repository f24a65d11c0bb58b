"""MuJoCoUni's BatchEnvPool in its own process, for bench/batch_bench.py.

mujoco-uni-runtime 0.5.0 runs on MuJoCo 3.5-3.11 (its wheel: 3.11.0 exactly),
MJBlend on MuJoCo 4, and one process holds one MuJoCo. So the bench starts
this script with the environment `make mujoco-uni-env` makes
(.venv-mujoco-uni/bin/python) and sends it one JSON object per line on stdin;
it answers one per line on stdout. Arrays travel as .npy files the bench
writes (their paths in the request). The worker times each call itself, so a
figure holds no pipe or JSON time.

The models are made here by `load_model` (MjSpec edits that MuJoCo 3.11 and 4
both take), which the bench imports too: both processes compile the same
files with the same edits.

Requests ({"op": ...}): hello; pool (key, model, nbatch, nthread,
per_env_models); time (key, call, arrays and options: one timed call); close
(key). Each answer is {"ok": ...} or {"error": "..."}.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time

import mujoco
import mujoco.rollout
import numpy as np

CORPUS = os.environ.get("MJBLEND_CORPUS", os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "shared", "corpus"))
MENAGERIE = os.path.join(CORPUS, "menagerie")
# MuJoCoUni's own benchmark (unilabsim/mujoco_uni_bench) steps Go1, Allegro,
# Franka (its panda.xml plus a site "end_effector" 0.1 m down the hand) and the
# CMU humanoid, and samples a height field under a body; these are the corpus's
# nearest: Barkour stands in for Go1 (a quadruped, given a plane to walk on, or
# its own height-field scene), the classic humanoid for the CMU one.
MODELS = {
    "humanoid": os.path.join(CORPUS, "mujoco_model", "model", "humanoid", "humanoid.xml"),
    "barkour": os.path.join(MENAGERIE, "google_barkour_vb", "barkour_vb_mjx.xml"),
    "franka": os.path.join(MENAGERIE, "franka_emika_panda", "panda.xml"),
    "allegro": os.path.join(MENAGERIE, "wonik_allegro", "right_hand.xml"),
    "barkour_hfield": os.path.join(MENAGERIE, "google_barkour_vb", "scene_hfield_mjx.xml"),
}
SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS


def load_model(name: str) -> mujoco.MjModel:
    """The bench's model `name`, visual-only assets dropped (as MuJoCoUni's bench does)."""
    spec = mujoco.MjSpec.from_file(MODELS[name])
    spec.compiler.discardvisual = True
    if name == "barkour":  # a floor (the height-field scene is barkour_hfield)
        spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05])
    if name == "franka":
        spec.body("hand").add_site(name="end_effector", pos=[0, 0, 0.1], size=[0.01, 0, 0])
    return spec.compile()


def policy_weights(model: mujoco.MjModel) -> np.ndarray:
    """The weights of the bench's per-step policy, ctrl = tanh(state @ W) (both processes
    make the same W)."""
    nstate = mujoco.mj_stateSize(model, SPEC)
    return np.random.default_rng(2).normal(0, 0.1, (nstate, model.nu))


class Worker:
    def __init__(self):
        from mujoco_uni.batch_env import BatchEnvPool  # only here: the bench imports this module
        self.BatchEnvPool = BatchEnvPool
        self.models: dict[str, mujoco.MjModel] = {}
        self.pools: dict[str, object] = {}
        self.arrays: dict[str, np.ndarray] = {}

    def model(self, name):
        if name not in self.models:
            self.models[name] = load_model(name)
        return self.models[name]

    def array(self, path):
        if path not in self.arrays:
            self.arrays[path] = np.load(path)
        return self.arrays[path]

    def hello(self, request):
        import mujoco_uni
        return {"mujoco": mujoco.__version__, "mujoco_uni": mujoco_uni.__version__,
                "python": sys.version.split()[0], "numpy": np.__version__}

    def pool(self, request):
        model = self.model(request["model"])
        nbatch = request["nbatch"]
        source = [copy.copy(model) for _ in range(nbatch)] if request.get("per_env_models") else model
        self.pools[request["key"]] = {"pool": self.BatchEnvPool(source, nbatch=nbatch,
                                                                 nthread=request["nthread"]),
                                      "model": model, "nthread": request["nthread"]}
        return True

    def close(self, request):
        entry = self.pools.pop(request["key"], None)
        if entry:
            entry["pool"].close()
            if "rollout" in entry:
                entry["rollout"][0].close()
        self.arrays.clear()
        return True

    def time(self, request):
        """One timed call; the answer: {"seconds", "shape" of the result}."""
        entry = self.pools[request["key"]]
        pool, model = entry["pool"], entry["model"]
        run = getattr(self, "call_" + request["call"])(pool, model, entry, request)
        start = time.perf_counter()
        out = run()
        seconds = time.perf_counter() - start
        first = out[0] if isinstance(out, tuple) else out
        if not np.isfinite(first).all():
            raise ValueError(f"{request['call']}: non-finite results")
        return {"seconds": seconds, "shape": list(first.shape)}

    # -- the calls: each returns the function to time ---------------------------------------------
    def call_step(self, pool, model, entry, request):
        states, nstep = self.array(request["states"]), request["nstep"]
        control = self.array(request["control"]) if request.get("control") else None
        return lambda: pool.step(states, nstep=nstep, control=control)

    def call_rollout(self, pool, model, entry, request):
        """mujoco.rollout on this process's MuJoCo: the same-version baseline."""
        if "rollout" not in entry:
            nthread = entry["nthread"]
            entry["rollout"] = (mujoco.rollout.Rollout(nthread=nthread if nthread > 1 else 0),
                                [mujoco.MjData(model) for _ in range(max(1, nthread))])
        rollout, datas = entry["rollout"]
        states, control = self.array(request["states"]), self.array(request["control"])
        return lambda: rollout.rollout(model, datas, states, control)[0]

    def call_policy(self, pool, model, entry, request):
        states, nstep = self.array(request["states"]), request["nstep"]
        weights = policy_weights(model)

        def policy(step, state, sensordata):
            return np.ascontiguousarray(np.tanh(state @ weights))
        return lambda: pool.step(states, nstep=nstep, control_callback=policy, callback_sensordata=False)

    def call_reset(self, pool, model, entry, request):
        """Environments `ids` back to the initial state; with `mass`, each draws the
        body's mass (uniform 0.8-1.2 of nominal): MuJoCoUni's randomization dict."""
        ids = self.array(request["ids"]).astype(np.int32)
        rows = self.array(request["rows"])
        body, rng = request.get("mass_body"), np.random.default_rng(0)

        def reset():
            if body is None:
                return pool.reset(ids, rows)
            masses = np.tile(model.body_mass, (len(ids), 1))
            masses[:, body] *= rng.uniform(0.8, 1.2, len(ids))
            return pool.reset(ids, rows, randomization={"body_mass": masses})
        return reset

    def call_jacobian(self, pool, model, entry, request):
        states, sites = self.array(request["states"]), request["sites"]
        return lambda: pool.compute_site_jacobians(states, sites)[0]

    def call_heightfield(self, pool, model, entry, request):
        states, offsets = self.array(request["states"]), self.array(request["offsets"])
        return lambda: pool.sample_hfield_height(states, request["geom"], offsets, request["body"],
                                                 alignment=request.get("alignment", "body"))


def main():
    worker = Worker()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = {"ok": getattr(worker, request["op"])(request)}
        except Exception as error:  # every failure goes back to the bench, which says it
            answer = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

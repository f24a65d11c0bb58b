"""One batch of fuzz cases in a child process (started by fuzz_runner, capped by it).

    python fuzz_worker.py oracle|import <job.json> <progress.jsonl>

job.json holds the cases (each with "path") and settings. Before each case the
worker appends {"start": index} to the progress file, after it {"result": ...};
so when the process dies or is killed for its time, the runner knows which case
it was on. "oracle" asks MuJoCo alone whether the file loads; "import" runs
File > Import through the add-on in the bpy module and records what it did.
"""

import ctypes
import json
import os
import resource
import sys
import time

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBC = ctypes.CDLL(None)


def emit(progress, record):
    progress.write(json.dumps(record) + "\n")
    progress.flush()


# ---------------------------------------------------------------- oracle: MuJoCo alone

def oracle_case(case, job):
    """Does MuJoCo load it: parse, compile, MjData, mj_forward. When the first step
    asks for more arena, the model is compiled again with more (as much as the cap
    allows), as a viewer sizing memory from the model would."""
    import mujoco

    started = time.monotonic()
    limit = int(job["memory_gigabytes"] * 2**30 / 2)
    try:
        spec = mujoco.MjSpec.from_file(case["path"])
        model = spec.compile()
        memory = None
        while True:
            data = mujoco.MjData(model)
            try:
                mujoco.mj_forward(model, data)
                break
            except Exception as error:  # mju_error: the arena
                if "increase <size memory" not in str(error) or model.narena * 4 > limit:
                    raise
                memory = model.narena * 4
                del data
                spec.memory = memory
                model = spec.compile()
        verdict, detail = "loads", "" if memory is None else f"with <size memory> raised to {memory}"
    except MemoryError as error:
        verdict, detail = "beyond caps", f"memory: {error}"
    except Exception as error:
        text = " ".join(str(error).split())
        if any(word in text for word in ("allocate", "bad_alloc", "out of memory")):
            verdict, detail = "beyond caps", f"memory: {text}"
        else:
            verdict, detail = "rejects", text
    return {"verdict": verdict, "detail": detail[:2000], "seconds": time.monotonic() - started}


# ---------------------------------------------------------------- import through the add-on

class Capture:
    """File descriptors 1 and 2 into a file for the duration (C and Python output alike)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        LIBC.fflush(None)
        self.saved = (os.dup(1), os.dup(2))
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        LIBC.fflush(None)
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        with open(self.path, encoding="utf-8", errors="replace") as fh:
            self.text = fh.read()
        return False


def datablocks(bpy):
    """Every ID datablock, by collection: (name, session uid)."""
    out = {}
    for attr in dir(bpy.data):
        collection = getattr(bpy.data, attr, None)
        if isinstance(collection, bpy.types.bpy_prop_collection) and attr not in ("window_managers",):
            out[attr] = {(b.name, getattr(b, "session_uid", 0)) for b in collection
                         if isinstance(b, bpy.types.ID)}
    return out


def difference(before, after):
    new, gone = [], []
    for attr in sorted(set(before) | set(after)):
        b, a = before.get(attr, set()), after.get(attr, set())
        new += [f"{attr}[{n!r}]" for n, _ in sorted(a - b)]
        gone += [f"{attr}[{n!r}]" for n, _ in sorted(b - a)]
    return new, gone


def run_operator(bpy, op, **kwargs):
    """(status, error message or None)."""
    try:
        result = op(**kwargs)
        return sorted(result)[0] if result else "NONE", None
    except RuntimeError as error:  # the operator's ERROR report (or a Python error inside it)
        return "ERROR", str(error)
    except Exception as error:  # noqa: BLE001  (recorded and judged by the runner)
        import traceback
        return "EXCEPTION", "".join(traceback.format_exception(error))


class Importer:
    def __init__(self, job):
        sys.path.insert(0, TESTS)
        import addon_loader
        import bpy

        self.bpy = bpy
        self.job = job
        self.addon = addon_loader.ADDON
        addon_loader.enable_addon()
        self.reset()

    def reset(self):
        bpy = self.bpy
        bpy.ops.wm.read_homefile(use_empty=True)
        bpy.ops.mesh.primitive_cube_add()  # something that must survive every failed import
        prefs = bpy.context.preferences.addons[self.addon].preferences
        # The import's own limits, below the runner's caps, so a refusal can be the importer's.
        for name, value in self.job["preferences"].items():
            if hasattr(prefs, name):
                setattr(prefs, name, value)

    def case(self, case, index):
        bpy = self.bpy
        out = os.path.join(self.job["output_dir"], f"case{index:04d}")
        os.makedirs(out, exist_ok=True)
        before = datablocks(bpy)
        started = time.monotonic()
        with Capture(os.path.join(out, "import.log")) as capture:
            status, message = run_operator(bpy, bpy.ops.import_scene.mjcf, filepath=case["path"])
        record = {"status": status, "message": message, "output": capture.text[-20000:],
                  "seconds": time.monotonic() - started}
        after = datablocks(bpy)
        record["new"], record["gone"] = difference(before, after)
        record["imported"] = status == "FINISHED"
        if record["imported"] and self.job["export"]:
            target = os.path.join(out, "exported.xml")
            with Capture(os.path.join(out, "export.log")) as capture:
                status, message = run_operator(bpy, bpy.ops.export_scene.mjcf, filepath=target)
            record["export"] = {"status": status, "message": message, "output": capture.text[-20000:]}
        if after != before:
            self.reset()
        return record


def main(mode, job_path, progress_path):
    with open(job_path, encoding="utf-8") as fh:
        job = json.load(fh)
    if mode == "oracle":
        import mujoco  # noqa: F401  (the cap counts from here, as the importer's probe does)
    importer = Importer(job) if mode == "import" else None
    # The memory cap: MuJoCo's allocations fail past it (and so would Blender's). A soft
    # limit only: the importer's probe process sets its own (lower or higher) cap.
    with open("/proc/self/statm") as fh:
        have = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (have + job["address_space_bytes"], resource.RLIM_INFINITY))
    with open(progress_path, "a", encoding="utf-8") as progress:
        emit(progress, {"ready": True})
        for index, case in job["cases"]:
            emit(progress, {"start": index})
            record = oracle_case(case, job) if mode == "oracle" else importer.case(case, index)
            emit(progress, {"result": index, **record})
            if mode == "oracle" and record["verdict"] == "beyond caps":
                # MuJoCo after a failed allocation is not to be trusted (a NaN model loaded
                # next has been seen to spin forever): the rest go to a fresh process.
                break
    sys.stdout.flush()
    LIBC.fflush(None)
    os._exit(0)  # bpy's own teardown is not under test here


if __name__ == "__main__":
    main(*sys.argv[1:4])

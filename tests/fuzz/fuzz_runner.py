"""Runs fuzz cases in capped child processes and judges what happened.

Each case goes first to MuJoCo alone (the oracle: does it load?), then to
File > Import in the bpy module with the add-on. Both run in batches, one child
process per batch (fuzz_worker.py), a few batches at once; the child's address
space is capped (RLIMIT_AS) and every case has a time cap, watched from here:
a case over its time gets the child killed, a child that dies names the case it
was on (its progress file), and the rest of the batch goes on in a new child. A
case that killed its batch is run again alone, to tell a crash of its own from
one that needed the cases before it.

Reproduce one file with the same caps and checks:

    .venv/bin/python tests/fuzz/fuzz_runner.py path/to/case.xml [...]
"""

from __future__ import annotations

import builtins
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "fuzz_worker.py")


def env_number(name, default):
    value = os.environ.get(name)
    return type(default)(value) if value else default


class Settings:
    """The caps and sizes; each can be changed from the environment."""

    def __init__(self):
        self.jobs = env_number("MJBLEND_FUZZ_JOBS", 3)  # child processes at once
        self.batch = env_number("MJBLEND_FUZZ_BATCH", 40)  # cases per child process
        self.oracle_seconds = env_number("MJBLEND_FUZZ_ORACLE_SECONDS", 6.0)  # MuJoCo's load, per case
        self.case_seconds = env_number("MJBLEND_FUZZ_CASE_SECONDS", 60.0)  # one import (+ export), per case
        self.memory_gigabytes = env_number("MJBLEND_FUZZ_MEMORY_GB", 4.0)  # MuJoCo's child's address space
        self.startup_seconds = 60.0
        self.export = env_number("MJBLEND_FUZZ_EXPORT", 1) != 0

    def job(self, mode, cases, output_dir):
        # Each child's cap counts from what it holds before the first case (MuJoCo's module;
        # Blender with the add-on). The import's load runs in this process after its probe:
        # it gets twice what MuJoCo alone had (the rodent's 3.4 GB arena takes 6.6 GB of
        # address space there), plus 1 GB for the Blender data it makes.
        memory = 2 * self.memory_gigabytes + 1 if mode == "import" else self.memory_gigabytes
        return {"cases": cases, "output_dir": output_dir, "export": self.export,
                "memory_gigabytes": memory, "address_space_bytes": int(memory * 2**30),
                # The import's own limits (the add-on's preferences), inside the caps here: the
                # import may take twice what MuJoCo alone was given, and the memory MuJoCo had.
                "preferences": {"load_seconds": 2 * self.oracle_seconds,
                                "load_memory_gigabytes": self.memory_gigabytes}}


def run_batch(mode, cases, settings, workdir, label):
    """{index: record} for [(index, case)]; records of cases that killed or hung the child
    are {"died": exit status, "log": ...} or {"hang": seconds}."""
    limit = settings.oracle_seconds if mode == "oracle" else settings.case_seconds
    records = {}
    pending = list(cases)
    attempt = 0
    while pending:
        attempt += 1
        tag = f"{label}-{attempt}"
        job_path = os.path.join(workdir, f"{mode}-{tag}.json")
        progress_path = os.path.join(workdir, f"{mode}-{tag}.progress")
        log_path = os.path.join(workdir, f"{mode}-{tag}.log")
        with open(job_path, "w", encoding="utf-8") as fh:
            json.dump(settings.job(mode, pending, os.path.join(workdir, "out")), fh)
        scratch = os.path.join(workdir, "tmp")  # the child's temporary files stay in the work folder
        os.makedirs(scratch, exist_ok=True)
        with open(log_path, "wb") as log:
            child = subprocess.Popen([sys.executable, WORKER, mode, job_path, progress_path],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True, cwd=workdir,
                                     env={**os.environ, "TMPDIR": scratch})
        current, since, hung, seen = None, time.monotonic(), None, 0
        ready = False
        while True:
            exited = child.poll() is not None
            if os.path.exists(progress_path):
                with open(progress_path, encoding="utf-8") as fh:
                    lines = fh.read().split("\n")
                for line in lines[seen:-1]:  # the last one may be half written
                    entry = json.loads(line)
                    if "ready" in entry:
                        ready, since = True, time.monotonic()
                    elif "start" in entry:
                        current, since = entry["start"], time.monotonic()
                    else:
                        index = entry.pop("result")
                        records[index] = entry
                        current = None
                seen = max(seen, len(lines) - 1)
            if exited:
                break
            waited = time.monotonic() - since
            if (current is not None and waited > limit) or (not ready and waited > settings.startup_seconds):
                hung = waited
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                continue  # read what it wrote last, then leave
            time.sleep(0.05)
        status = child.returncode
        done = {index for index, _ in pending if index in records}
        if current is None and not done and status != 0:
            raise RuntimeError(f"the {mode} worker failed before any case (exit {status}); see {log_path}")
        if current is not None:
            with open(log_path, encoding="utf-8", errors="replace") as fh:
                log_tail = fh.read()[-4000:]
            if hung is not None:
                records[current] = {"hang": round(hung, 1), "log": log_tail}
            else:
                records[current] = {"died": status, "log": log_tail}
            done.add(current)
        elif status != 0 and hung is None:
            raise RuntimeError(f"the {mode} worker exited {status} between cases; see {log_path}")
        pending = [(i, c) for i, c in pending if i not in done]
    return records


def chunks(mode, indexed_cases, settings, workdir):
    os.makedirs(workdir, exist_ok=True)
    return [(mode, indexed_cases[i:i + settings.batch], workdir, f"b{i // settings.batch}")
            for i in range(0, len(indexed_cases), settings.batch)]


def run_all(tasks, settings):
    """[(mode, cases, workdir, label)] on `settings.jobs` child processes at once:
    {mode: {index: record}}."""
    records = {}
    with ThreadPoolExecutor(max(1, settings.jobs)) as pool:
        futures = [(mode, pool.submit(run_batch, mode, cases, settings, workdir, label))
                   for mode, cases, workdir, label in tasks]
        for mode, future in futures:
            records.setdefault(mode, {}).update(future.result())
    return records


def oracle_verdicts(records, settings):
    for index, record in records.items():
        if "hang" in record:
            records[index] = {"verdict": "beyond caps",
                              "detail": f"time: MuJoCo took over {settings.oracle_seconds} s"}
        elif "died" in record:
            records[index] = {"verdict": "crashes",
                              "detail": f"MuJoCo's process died ({describe_exit(record['died'])})"}
    return records


# ---------------------------------------------------------------- judging

EXCEPTION_NAMES = sorted(
    {name for name, value in vars(builtins).items()
     if isinstance(value, type) and issubclass(value, BaseException) and not issubclass(value, Warning)
     and name not in ("BaseException",)}
    | {"FatalError", "UnexpectedError", "ReferenceError", "RecursionError"})
EXCEPTION_NAME = re.compile(r"\b(" + "|".join(EXCEPTION_NAMES) + r")\b")


def describe_exit(status):
    if status is not None and status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"signal {-status}"
    return f"exit status {status}"


def leaks(text):
    """What in a message or console output is a Python error rather than words for a user."""
    found = []
    if text and "Traceback" in text:
        found.append("traceback")
    names = sorted(set(EXCEPTION_NAME.findall(text or "")))
    if names:
        found.append("exception name " + ", ".join(names))
    return found


def judge(case, oracle, record):
    """[(cause, detail)]: the ways this case broke the tier's rules (empty: it held)."""
    failures = []
    if "died" in record:
        alone = record.get("alone", {})
        how = describe_exit(record["died"])
        if "died" in alone:
            failures.append(("crash", f"Blender's process died ({how}); again when run alone"))
        else:
            failures.append(("crash", f"Blender's process died ({how}) after earlier cases of its batch; "
                                      "alone it did not"))
        return failures
    if "hang" in record:
        return [("hang", f"no result after {record['hang']} s")]
    message = record.get("message") or ""
    text = message + "\n" + record.get("output", "")
    for leak in leaks(text):
        failures.append(("traceback" if leak == "traceback" else "exception name in a report", leak))
    if record["status"] == "EXCEPTION":
        failures.append(("exception from the operator call", message[-1000:]))
    if not record["imported"]:
        if record["new"] or record["gone"]:
            failures.append(("leftover datablock",
                             f"new {record['new'][:10]}, removed {record['gone'][:10]}"))
        if not message.strip():
            failures.append(("no message", f"status {record['status']} and no error report"))
        elif os.path.basename(case["path"]) not in message:
            failures.append(("message does not name the file", message[:300]))
        if oracle["verdict"] == "loads" and not case.get("allow_refusal"):
            failures.append(("MuJoCo loads it, the import refuses", message[:500]))
    export = record.get("export")
    if export:
        for leak in leaks((export.get("message") or "") + "\n" + export.get("output", "")):
            failures.append(("export: " + ("traceback" if leak == "traceback" else "exception name"), leak))
        if export["status"] == "EXCEPTION":
            failures.append(("export: exception from the operator call", export["message"][-1000:]))
        elif export["status"] not in ("FINISHED", "ERROR"):
            failures.append(("export: no result and no message", export["status"]))
        elif export["status"] == "ERROR" and not export["message"].strip():
            failures.append(("export: no message", ""))
    return failures


def notes(case, oracle, record):
    """What is worth saying but breaks no rule."""
    out = []
    if case.get("allow_refusal") and not record.get("imported", True) and oracle["verdict"] == "loads":
        out.append(f"refused ({case['allow_refusal']}): {(record.get('message') or '')[:200]}")
    if record.get("imported") and oracle["verdict"] != "loads":
        out.append(f"imported although MuJoCo alone {oracle['verdict']}: {oracle['detail'][:200]}")
    return out


def describe(case, oracle, record, cause, detail):
    message = record.get("message") or ""
    return (f"{cause}: {case['id']}  [kind {case['kind']}, seed {case['seed']}]\n"
            f"    what:    {case['note'][:300]}\n"
            f"    file:    {case['path']}\n"
            f"    MuJoCo:  {oracle['verdict']} {oracle['detail'][:300]}\n"
            f"    import:  {record.get('status', '-')} {' '.join(message.split())[:400]}\n"
            f"    detail:  {' '.join(str(detail).split())[:600]}\n"
            f"    again:   .venv/bin/python tests/fuzz/fuzz_runner.py '{case['path']}'")


def campaign(cases, settings, workdir):
    """MuJoCo alone and the import for every case, side by side: (oracle records, import
    records) by case index, and the wall time."""
    indexed = list(enumerate(cases))
    started = time.monotonic()
    imports = chunks("import", indexed, settings, os.path.join(workdir, "import"))
    oracles = chunks("oracle", indexed, settings, os.path.join(workdir, "oracle"))
    # the imports are the long part: they start first, the oracle's batches fill in
    tasks = imports[:settings.jobs] + oracles + imports[settings.jobs:]
    records = run_all(tasks, settings)
    oracle, imported = oracle_verdicts(records["oracle"], settings), records["import"]
    # A case that killed its batch, alone: its own crash, or the batch's?
    by_index = dict(indexed)
    for index, record in imported.items():
        if "died" in record:
            alone = run_batch("import", [(index, by_index[index])], settings,
                              os.path.join(workdir, "import"), f"alone{index}")
            record["alone"] = alone[index]
    return oracle, imported, time.monotonic() - started


def main(paths):
    settings = Settings()
    settings.jobs = 1
    cases = [{"id": p, "kind": "file", "group": "cli", "path": os.path.abspath(p), "note": "given",
              "allow_refusal": None, "seed": "-"} for p in paths]
    workdir = tempfile.mkdtemp(prefix="mjblend-fuzz-")
    oracle, imports, _ = campaign(cases, settings, workdir)
    bad = 0
    for index, case in enumerate(cases):
        o, r = oracle[index], imports[index]
        print(f"{case['path']}\n    MuJoCo: {o['verdict']} {o['detail'][:500]}")
        print(f"    import: {r.get('status', r)} {(r.get('message') or '').strip()[:1000]}")
        if r.get("export"):
            print(f"    export: {r['export']['status']} {(r['export']['message'] or '').strip()[:500]}")
        for cause, detail in judge(case, o, r):
            bad += 1
            print(f"    FAIL {cause}: {detail}")
        for note in notes(case, o, r):
            print(f"    note: {note}")
    print(f"(child logs and outputs in {workdir})")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))

"""The fuzz tier (issue 16): a few hundred hostile files made here from real models,
each loaded by MuJoCo alone and imported through the add-on, in capped child
processes (fuzz_runner). For every case: no crash, no hang, no traceback or
exception name in what Blender prints, no datablock left behind by a failed
import, a message naming the file, and an import of every file MuJoCo loads
(but the few cases listed with the reason a refusal is acceptable).

One test per (group, kind): "builtin" cases come from the repository's own
models and inline MJCF and always run; "corpus" cases come from
../shared/corpus and are skipped without it. The seed is fixed
(MJBLEND_FUZZ_SEED changes it); the caps are in fuzz_runner.Settings.
Run alone: `.venv/bin/python -m pytest -c tests/pytest.ini tests/fuzz`.
"""

import collections
import os
import shutil
import tempfile
import time

import fuzz_cases
import fuzz_runner
import pytest

SEED = int(os.environ.get("MJBLEND_FUZZ_SEED", fuzz_cases.DEFAULT_SEED))
HAVE_CORPUS = bool(fuzz_cases.corpus_models())
KINDS = {
    "builtin": ("base", "mutation", "truncation", "nan_inf", "encoding", "absurd", "hostile_path",
                "entity", "garbage_asset"),
    "corpus": ("base", "mutation", "truncation", "nan_inf", "encoding"),
}
SUMMARY = []  # lines for the terminal summary (conftest prints them)


def params():
    for group, kinds in KINDS.items():
        for kind in kinds:
            marks = []
            if group == "corpus":
                marks = [pytest.mark.corpus,
                         pytest.mark.skipif(not HAVE_CORPUS, reason=f"no corpus at {fuzz_cases.CORPUS}")]
            yield pytest.param(group, kind, id=f"{group}-{kind}", marks=marks)


def kept_folder():
    """A new folder for this run's files, kept after it (until two more runs): pytest's own
    temporary folders are recycled by other pytest runs on the machine within minutes."""
    base = os.path.join(tempfile.gettempdir(), f"mjblend-fuzz-{os.getuid()}")
    os.makedirs(base, exist_ok=True)
    runs = sorted((os.path.join(base, n) for n in os.listdir(base) if n.startswith("run-")),
                  key=os.path.getmtime)
    for old in runs[:-2]:
        shutil.rmtree(old, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"run-seed{SEED}-", dir=base)


@pytest.fixture(scope="session")
def campaign(request):
    """Every case of the selected tests, generated and run once for the session."""
    wanted = {tuple(item.callspec.params.values()) for item in request.session.items
              if item.originalname == "test_fuzz" and hasattr(item, "callspec")}
    root = kept_folder()
    started = time.monotonic()
    cases = [c for c in fuzz_cases.make_cases(os.path.join(root, "cases"), SEED, corpus=HAVE_CORPUS)
             if (c["group"], c["kind"]) in wanted]
    settings = fuzz_runner.Settings()
    oracle, imports, _ = fuzz_runner.campaign(cases, settings, os.path.join(root, "runs"))
    wall = time.monotonic() - started
    verdicts = collections.Counter(o["verdict"] for o in oracle.values())
    imported = sum(1 for r in imports.values() if r.get("imported"))
    SUMMARY.append(f"fuzz tier: seed {SEED} (MJBLEND_FUZZ_SEED), {len(cases)} cases in {wall:.0f} s "
                   f"({settings.jobs} processes at once); files kept in {root}")
    SUMMARY.append("  MuJoCo alone: " + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items()))
                   + f"; imported {imported}")
    for index, case in enumerate(cases):
        for note in fuzz_runner.notes(case, oracle[index], imports[index]):
            SUMMARY.append(f"  note {case['id']}: {note}")
    return cases, oracle, imports


@pytest.mark.parametrize("group,kind", list(params()))
def test_fuzz(campaign, group, kind):
    cases, oracle, imports = campaign
    mine = [(i, c) for i, c in enumerate(cases) if c["group"] == group and c["kind"] == kind]
    assert mine, f"no {group} {kind} cases were made"
    failures = []
    for index, case in mine:
        for cause, detail in fuzz_runner.judge(case, oracle[index], imports[index]):
            failures.append((cause, fuzz_runner.describe(case, oracle[index], imports[index], cause, detail)))
    by_cause = collections.Counter(cause for cause, _ in failures)
    assert not failures, (f"{len(failures)} failures in {len(mine)} {group} {kind} cases (seed {SEED}): "
                          + ", ".join(f"{n} {c}" for c, n in by_cause.most_common()) + "\n\n"
                          + "\n\n".join(text for _, text in sorted(failures)))


def test_the_rules_catch_each_fault():
    """judge() itself, on made-up records: each rule fires on its fault and not on a clean result."""
    case = {"id": "x", "kind": "k", "group": "builtin", "path": "/m/model.xml", "note": "", "seed": SEED,
            "allow_refusal": None}
    loads, rejects = {"verdict": "loads", "detail": ""}, {"verdict": "rejects", "detail": "bad"}
    clean_fail = {"status": "ERROR", "message": "Error: model.xml: MuJoCo cannot read it", "output": "",
                  "new": [], "gone": [], "imported": False}
    ok = {"status": "FINISHED", "message": None, "output": "Info: Imported", "new": ["objects['a']"],
          "gone": [], "imported": True, "export": {"status": "FINISHED", "message": None, "output": ""}}

    def causes(oracle, record, **changes):
        return {c for c, _ in fuzz_runner.judge({**case, **changes}, oracle, record)}

    assert causes(rejects, clean_fail) == set()
    assert causes(loads, ok) == set()
    assert causes(loads, clean_fail) == {"MuJoCo loads it, the import refuses"}
    assert causes(loads, clean_fail, allow_refusal="too big") == set()
    assert causes(rejects, {"died": -11, "alone": {"died": -11}}) == {"crash"}
    assert causes(rejects, {"hang": 61.0}) == {"hang"}
    assert causes(rejects, {**clean_fail, "new": ["meshes['m']"]}) == {"leftover datablock"}
    assert causes(rejects, {**clean_fail, "output": "Traceback (most recent call last):"}) == {"traceback"}
    assert causes(rejects, {**clean_fail, "message": "model.xml: failed: UnicodeDecodeError"}) == \
        {"exception name in a report"}
    assert causes(rejects, {**clean_fail, "message": "failed"}) == {"message does not name the file"}
    assert causes(rejects, {**clean_fail, "status": "CANCELLED", "message": None}) == {"no message"}
    assert causes(loads, {**ok, "export": {"status": "ERROR", "message": "x: ValueError", "output": ""}}) == \
        {"export: exception name"}

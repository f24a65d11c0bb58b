#!/bin/sh
# Runs the suite (`make test`), per Blender release given, in its own
# environment (tools/make_venv.sh): tier 1 (tests/engine, tests/bridge, tests/batch) with bpy made
# unimportable, then tier 2 (tests/blender, the bpy module); then, with --gui,
# tier 3 once (tests/gui: Debian's Blender under Xvfb, driven from the default
# release's environment). Every run goes to the end; the summary names each
# release that failed, and the exit status is non-zero if any did.
#   tools/run_tests.sh --default 5.0.1 [--gui] [bpy-version ...]
set -u
cd "$(dirname "$0")/.."

default=""; gui=0
while [ $# -gt 0 ]; do
    case $1 in
        --default) default=$2; shift 2 ;;
        --gui) gui=1; shift ;;
        *) break ;;
    esac
done
[ -n "$default" ] || { echo "usage: $0 --default VERSION [--gui] [VERSION ...]" >&2; exit 2; }

# pytest with Blender's modules made unimportable: tier 1 must not need them.
WITHOUT_BLENDER='import sys
for name in ("bpy", "mathutils", "gpu", "bpy_extras", "addon_utils", "bmesh"):
    sys.modules[name] = None
import pytest
sys.exit(pytest.main(sys.argv[1:]))'

venv_of() { if [ "$1" = "$default" ]; then echo .venv; else echo ".venv-bpy-$1"; fi; }

summary=""; failed=0
record() {  # record <label> <exit status> <seconds>
    if [ "$2" -eq 0 ]; then word=passed; else word="FAILED (exit $2)"; failed=1; fi
    summary="$summary
  $1: $word in $3 s"
}

for version in "$@"; do
    venv=$(venv_of "$version")
    start=$(date +%s)
    if tools/make_venv.sh "$version" "$venv"; then
        echo "== bpy $version ($venv): tier 1, no Blender"
        "$venv/bin/python" -c "$WITHOUT_BLENDER" -c tests/pytest.ini tests/engine tests/bridge tests/batch
        status=$?
        echo "== bpy $version ($venv): tier 2, the bpy module"
        "$venv/bin/python" -m pytest -c tests/pytest.ini tests/blender
        status=$(( status | $? ))
    else
        status=$?
    fi
    record "bpy $version" "$status" $(( $(date +%s) - start ))
done

if [ "$gui" = 1 ]; then
    venv=$(venv_of "$default")
    start=$(date +%s)
    echo "== GUI tier: Debian's Blender under Xvfb (driven from $venv)"
    "$venv/bin/python" -m pytest -c tests/pytest.ini tests/gui
    record "GUI tier (Debian Blender)" $? $(( $(date +%s) - start ))
fi

echo "== summary$summary"
exit $failed

#!/bin/sh
# Runs the suite (`make test`), per Blender release given, in its own
# environment (tools/make_venv.sh): tier 1 (tests/engine, tests/bridge,
# tests/batch) with bpy made unimportable, then tier 2 (tests/blender, the bpy
# module). Releases on Python 3.13 (bpy 5.1+) run inside the Debian sid root
# (tools/in_root.sh). First the extension zips (tools/build_extension.py); then,
# with --gui RELEASE, tier 3 once (tests/gui: Debian's Blender 5.2 LTS under Xvfb
# inside that root, MJBlend installed from the linux zip; driven from RELEASE's
# environment, which must be one of the root's). Every run goes to the end;
# the summary names each release that failed, and the exit status is non-zero
# if any did.
#   tools/run_tests.sh --default 5.0.1 [--gui 5.2.3] [bpy-version ...]
set -u
cd "$(dirname "$0")/.."

default=""; gui=""
while [ $# -gt 0 ]; do
    case $1 in
        --default) default=$2; shift 2 ;;
        --gui) gui=$2; shift 2 ;;
        *) break ;;
    esac
done
[ -n "$default" ] || { echo "usage: $0 --default VERSION [--gui VERSION] [VERSION ...]" >&2; exit 2; }

# pytest with Blender's modules made unimportable: tier 1 must not need them.
WITHOUT_BLENDER='import sys
for name in ("bpy", "mathutils", "gpu", "bpy_extras", "addon_utils", "bmesh"):
    sys.modules[name] = None
import pytest
sys.exit(pytest.main(sys.argv[1:]))'

summary=""; failed=0
venv_of() { if [ "$1" = "$default" ]; then echo .venv; else echo ".venv-bpy-$1"; fi; }
# python <venv> ARG...: the environment's Python, inside the root for a root-made one.
python() {
    venv=$1; shift
    if [ -f "$venv/.in-root" ]; then tools/in_root.sh "$venv/bin/python" "$@"; else "$venv/bin/python" "$@"; fi
}

record() {  # record <label> <exit status> <seconds>
    if [ "$2" -eq 0 ]; then word=passed; else word="FAILED (exit $2)"; failed=1; fi
    summary="$summary
  $1: $word in $3 s"
}

# The extension zips, built once on this machine's Python with the default
# release's Blender tools: the GUI tier installs the linux one, and the build
# fills ./wheels (and notes what PyPI lacks), so tests/blender/test_package.py
# builds again in the Debian root, whose pip cannot reach PyPI, from the cache.
zips=build/zips  # inside the repository: the root sees it at the same path
echo "== the extension zips (tools/build_extension.py)"
if tools/make_venv.sh "$default" .venv && .venv/bin/python tools/build_extension.py --output-dir "$zips"; then
    built=1
else
    echo "error: building the extension zips failed" >&2
    built=0; failed=1; summary="
  extension zips: FAILED"
fi

for version in "$@"; do
    venv=$(venv_of "$version")
    start=$(date +%s)
    if tools/make_venv.sh "$version" "$venv"; then
        echo "== bpy $version ($venv): tier 1, no Blender"
        python "$venv" -c "$WITHOUT_BLENDER" -c tests/pytest.ini tests/engine tests/bridge tests/batch
        status=$?
        echo "== bpy $version ($venv): tier 2, the bpy module"
        python "$venv" -m pytest -c tests/pytest.ini tests/blender
        status=$(( status | $? ))
    else
        status=$?
    fi
    record "bpy $version" "$status" $(( $(date +%s) - start ))
done

if [ -n "$gui" ]; then
    venv=$(venv_of "$gui")
    start=$(date +%s)
    echo "== GUI tier: Debian's Blender 5.2 under Xvfb in the Debian root (driven from $venv)"
    status=1
    if ! { tools/make_venv.sh "$gui" "$venv" && [ -f "$venv/.in-root" ]; }; then
        echo "error: the GUI tier runs in the Debian root's environment of bpy $gui (a 5.1+ release)" >&2
    elif [ "$built" = 0 ]; then
        echo "error: the GUI tier installs the linux zip, whose build failed" >&2
    else
        MJBLEND_GUI_ZIP=$(pwd)/$(ls "$zips"/mjblend-*linux_x64.zip)
        export MJBLEND_GUI_ZIP
        python "$venv" -m pytest -c tests/pytest.ini tests/gui
        status=$?
    fi
    record "GUI tier (Debian's Blender 5.2)" "$status" $(( $(date +%s) - start ))
fi

echo "== summary$summary"
exit $failed

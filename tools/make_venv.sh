#!/bin/sh
# Creates (or brings up to date) one test environment: Python 3.11, the given
# bpy release from PyPI, and everything in requirements-dev.txt.
#   tools/make_venv.sh <bpy-version> <venv-dir>
# Idempotent: a stamp records the bpy version and the requirements it was made
# from, so a second call with nothing changed does nothing.
set -eu
cd "$(dirname "$0")/.."
BPY_VERSION=$1
VENV=$2
PYTHON=${PYTHON:-python3.11}

want="bpy==$BPY_VERSION $(cat requirements-dev.txt | cksum)"
stamp="$VENV/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
command -v "$PYTHON" >/dev/null || {
    echo "error: $PYTHON not found; MJBlend needs Python 3.11 (Blender's Python)" >&2; exit 1; }
echo "== environment $VENV: bpy $BPY_VERSION + requirements-dev.txt"
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -r requirements-dev.txt "bpy==$BPY_VERSION"
echo "$want" > "$stamp"

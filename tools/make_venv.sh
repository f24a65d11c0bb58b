#!/bin/sh
# Creates (or brings up to date) one test environment: the given bpy release
# from PyPI, on the Python that release needs, everything in
# requirements-dev.txt, and MuJoCo Warp from requirements-warp.txt (--no-deps).
#   tools/make_venv.sh <bpy-version> <venv-dir>
# bpy 4.2 - 5.0 run Python 3.11: the host's ($PYTHON, default python3.11).
# bpy 5.1 and newer run Python 3.13, which Debian 12 lacks: the environment is
# made with the Debian sid root's python3.13 (tools/debian_root.sh) and runs
# inside that root (tools/in_root.sh); the host's pip downloads and installs its
# packages for Python 3.13 (pip inside the root cannot verify the registry's
# certificate here), with numpy 2 as that bpy requires instead of the numpy<2 line.
# Idempotent: a stamp records the bpy version and the requirements (both files) it was made
# from, so a second call with nothing changed does nothing.
set -eu
cd "$(dirname "$0")/.."
BPY_VERSION=$1
VENV=$2
PYTHON=${PYTHON:-python3.11}

python_of() {  # the Python a bpy release is built for
    case $1 in 4.*|5.0.*) echo 3.11 ;; *) echo 3.13 ;; esac
}
BPY_PYTHON=$(python_of "$BPY_VERSION")

want="bpy==$BPY_VERSION python$BPY_PYTHON $(cat requirements-dev.txt | cksum) $(cat requirements-warp.txt | cksum)"
stamp="$VENV/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
. tools/quiet_pip.sh
echo "== environment $VENV: bpy $BPY_VERSION (Python $BPY_PYTHON) + requirements-dev.txt"
if [ "$BPY_PYTHON" = 3.11 ]; then
    command -v "$PYTHON" >/dev/null || {
        echo "error: $PYTHON not found; bpy $BPY_VERSION needs Python 3.11" >&2; exit 1; }
    test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
    quiet_pip "$VENV/bin/python" -m pip install --upgrade pip
    quiet_pip "$VENV/bin/python" -m pip install -r requirements-dev.txt "bpy==$BPY_VERSION"
    # MuJoCo Warp without its `mujoco` meta-package need (it would replace mujoco-core)
    quiet_pip "$VENV/bin/python" -m pip install --no-deps -r requirements-warp.txt
    "$VENV/bin/python" -c "import bpy, mujoco" || { echo "error: $VENV cannot import bpy and mujoco" >&2; exit 1; }
else
    tools/debian_root.sh
    rm -rf "$VENV"
    tools/in_root.sh "python$BPY_PYTHON" -m venv --without-pip "$VENV"
    site="$VENV/lib/python$BPY_PYTHON/site-packages"
    grep -v '^numpy' requirements-dev.txt > "$VENV/requirements.txt"
    platforms=""
    for glibc in 17 24 26 27 28 31 34 35 39; do platforms="$platforms --platform manylinux_2_${glibc}_x86_64"; done
    # pip download honours Requires-Python for the target Python; pip install
    # --target does not (it checks the host's), so the set pip download chose is
    # installed from its files with that check off.
    wheelhouse="$VENV/wheelhouse"
    target_pip() {
        quiet_pip "$PYTHON" -m pip "$@" --only-binary=:all: --implementation cp --python-version "$BPY_PYTHON" \
            --platform manylinux2014_x86_64 $platforms
    }
    target_pip download --dest "$wheelhouse" -r "$VENV/requirements.txt" "bpy==$BPY_VERSION"
    target_pip install --no-index --find-links "$wheelhouse" --ignore-requires-python \
        --target "$site" "$wheelhouse"/*.whl
    # MuJoCo Warp, --no-deps (its `mujoco` meta-package need would replace mujoco-core)
    target_pip download --no-deps --dest "$wheelhouse/warp" -r requirements-warp.txt
    target_pip install --no-deps --no-index --ignore-requires-python --target "$site" "$wheelhouse"/warp/*.whl
    rm -rf "$wheelhouse"
    touch "$VENV/.in-root"  # tools/run_tests.sh runs this environment inside the root
    tools/in_root.sh "$VENV/bin/python" -c "import bpy, mujoco" \
        || { echo "error: $VENV cannot import bpy and mujoco" >&2; exit 1; }
fi
echo "$want" > "$stamp"

#!/bin/sh
# Creates (or brings up to date) the environment bench/batch_bench.py runs
# MuJoCoUni in: mujoco-uni-runtime (its BatchEnvPool) on the MuJoCo 3.x it
# is built for, which cannot share a process with MJBlend's MuJoCo 4.
#   tools/make_mujoco_uni_env.sh [<venv-dir>]      (default .venv-mujoco-uni)
# mujoco-uni-runtime 0.5.0 needs mujoco>=3.5,<3.12, and its prebuilt wheel's
# native extension refuses any MuJoCo but the one it was built against
# (3.11.0), so both are pinned. The bench talks to it through
# bench/mujoco_uni_worker.py (JSON over a pipe).
# Idempotent: a stamp records what was installed; a second call with nothing
# changed does nothing.
set -eu
cd "$(dirname "$0")/.."
VENV=${1:-.venv-mujoco-uni}
PYTHON=${PYTHON:-python3.11}
PACKAGES="mujoco==3.11.0 mujoco-uni-runtime==0.5.0 numpy<2"

want="$PACKAGES $("$PYTHON" --version 2>&1)"
stamp="$VENV/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
echo "== environment $VENV: $PACKAGES"
command -v "$PYTHON" >/dev/null || { echo "error: $PYTHON not found" >&2; exit 1; }
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
. tools/quiet_pip.sh
# shellcheck disable=SC2086  # PACKAGES is a list
quiet_pip "$VENV/bin/python" -m pip install --only-binary=mujoco-uni-runtime $PACKAGES
"$VENV/bin/python" -c "import mujoco; from mujoco_uni.batch_env import BatchEnvPool" \
    || { echo "error: $VENV cannot import mujoco_uni.batch_env" >&2; exit 1; }
echo "$want" > "$stamp"

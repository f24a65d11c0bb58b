#!/bin/sh
# Installs what the real-GUI test tier needs: Debian's blender (3.4, the
# legacy add-on target), Xvfb and xdotool from apt, and mujoco + numpy (and
# pyzmq + msgpack, for the network bridge) for that Blender's own Python (3.11)
# into .venv/blender-site.
set -eu
cd "$(dirname "$0")/.."

missing=""
command -v blender >/dev/null 2>&1 || missing="$missing blender"
command -v xvfb-run >/dev/null 2>&1 || missing="$missing xvfb xauth"
command -v xdotool >/dev/null 2>&1 || missing="$missing xdotool"
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo"; else
        echo "error: the GUI tests need Debian packages:$missing (run as root or with sudo)" >&2
        exit 1
    fi
    echo "installing Debian packages:$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

MUJOCO=$(sed -n 's/^mujoco-core==//p' requirements-dev.txt)
NUMPY=$(sed -n 's/^numpy//p' requirements-dev.txt)
PYZMQ=$(sed -n 's/^pyzmq==//p' requirements-dev.txt)
MSGPACK=$(sed -n 's/^msgpack==//p' requirements-dev.txt)
.venv/bin/python -m pip install --quiet --upgrade --no-deps --target .venv/blender-site \
    "mujoco-core==$MUJOCO" "numpy$NUMPY" "pyzmq==$PYZMQ" "msgpack==$MSGPACK"
# Blender's Python must import them (Debian's blender runs the system Python 3.11).
PYTHONPATH=.venv/blender-site blender -b --factory-startup --python-use-system-env \
    --python-expr "import mujoco, numpy, zmq, msgpack; print('Blender', __import__('bpy').app.version_string, 'has mujoco', mujoco.__version__, 'pyzmq', zmq.__version__, 'msgpack', '.'.join(map(str, msgpack.version)))" \
    2>&1 | grep "has mujoco"

#!/bin/sh
# Makes (or brings up to date) the Debian sid root that gives this Debian 12
# machine what it lacks for today's Blenders: Python 3.13 (the bpy 5.1 / 5.2
# modules from PyPI need it) and Debian's `blender` 5.2 LTS (the GUI tier;
# Debian builds it on the system's Python 3.14), with Xvfb and xdotool.
#   tools/debian_root.sh [DIR]      (default: .debian-sid in the repository)
# tools/in_root.sh runs commands inside it. Needs root (debootstrap, chroot) and
# Debian's package registry. Idempotent: a stamp records what the root was made
# with; a second call with nothing changed does nothing.
#
# Facts this relies on (checked on Debian 12, 2026-11): debootstrap --variant=minbase
# sid takes ~30 s; apt inside needs Check-Valid-Until=false (sid's Release file reads
# as expired here); pip inside cannot verify the registry's certificate, so Python
# packages are downloaded by the host's pip for the root's Python and installed
# from the files (tools/make_venv.sh, and cattrs below).
set -eu
cd "$(dirname "$0")/.."
DIR=${1:-.debian-sid}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# python3.13: the bpy 5.1 / 5.2 modules' Python. blender: 5.2 LTS on python3.14.
# Blender's extension system (bl_pkg) wants numpy, requests, zstandard (apt) and
# cattrs (pip: sid does not package it). Mesa's EGL: mujoco.Renderer and Blender's
# software OpenGL. xvfb, xauth, xdotool: the GUI tier; procps: its leftover checks.
PACKAGES="python3.13 python3.14 blender python3-numpy python3-requests python3-zstandard
python3-attr python3-typing-extensions libegl1 libegl-mesa0 libgl1-mesa-dri libglx-mesa0
xvfb xauth xdotool procps"
CATTRS="cattrs==26.2.1"

want="sid $(echo $PACKAGES | cksum) $CATTRS"
stamp="$DIR/.mjblend-root"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
[ "$(id -u)" = 0 ] || { echo "error: making the Debian root $DIR needs root (debootstrap, chroot)" >&2; exit 1; }
if ! command -v debootstrap >/dev/null 2>&1; then
    echo "installing debootstrap"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
if [ ! -x "$DIR/usr/bin/apt-get" ]; then
    echo "== Debian sid root in $DIR (debootstrap, ~30 s)"
    rm -rf "$DIR"
    debootstrap --variant=minbase sid "$DIR" "$MIRROR" >"$DIR.log" 2>&1 \
        || { tail -20 "$DIR.log" >&2; echo "error: debootstrap failed (log: $DIR.log)" >&2; exit 1; }
    rm -f "$DIR.log"
fi
# Tools that list mounts (Blender's file browser, df) read /etc/mtab.
ln -sf /proc/self/mounts "$DIR/etc/mtab"
echo "== Debian sid root $DIR: apt packages"
tools/in_root.sh --root "$DIR" sh -c "
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o Acquire::Check-Valid-Until=false update -qq &&
    apt-get -o Acquire::Check-Valid-Until=false install -y -qq --no-install-recommends $(echo $PACKAGES) >/tmp/apt.log 2>&1 ||
    { tail -30 /tmp/apt.log; exit 1; }"
# cattrs (pure Python) for the system Python 3.14 that Debian's Blender runs.
PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade \
    --target "$DIR/usr/local/lib/python3.14/dist-packages" "$CATTRS" 2>&1 | grep -v "^WARNING: Location" || true
tools/in_root.sh --root "$DIR" blender --version | head -1
echo "$want" > "$stamp"

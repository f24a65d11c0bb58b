#!/bin/sh
# Runs a command inside the Debian sid root (tools/debian_root.sh), in the
# current folder: the repository (and ../shared, where the corpus lives) is
# mounted at the same path inside, so paths read the same on both sides.
#   tools/in_root.sh [--root DIR] COMMAND [ARG ...]
# MJBLEND_ROOT_MOUNTS="PATH ..." mounts more folders at their own paths (a git
# worktree's command using the environments of the main checkout, say).
# The mounts live in a mount namespace of the command's own (unshare), so they
# vanish with it: nothing stays mounted under the root for `rm -rf` to walk into.
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
DIR=$HERE/.debian-sid
if [ "${1:-}" = "--root" ]; then DIR=$(cd "$2" && pwd); shift 2; fi
[ $# -gt 0 ] || { echo "usage: $0 [--root DIR] COMMAND [ARG ...]" >&2; exit 2; }
[ -x "$DIR/usr/bin/env" ] || { echo "error: no Debian root in $DIR (run tools/debian_root.sh)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "error: entering the Debian root needs root (chroot)" >&2; exit 1; }

SHARED=$(cd "$HERE/.." && pwd)/shared
MJBLEND_ROOT_MOUNTS=${MJBLEND_ROOT_MOUNTS:-}
export MJBLEND_ROOT_MOUNTS
exec unshare --mount --propagation private sh -eu -c '
    dir=$1 here=$2 shared=$3 cwd=$4; shift 4
    mount -t proc proc "$dir/proc"
    mount --rbind /dev "$dir/dev"
    mount --rbind /sys "$dir/sys"
    for path in "$here" "$shared" $MJBLEND_ROOT_MOUNTS; do
        if [ -d "$path" ]; then mkdir -p "$dir$path"; mount --bind "$path" "$dir$path"; fi
    done
    exec chroot "$dir" /usr/bin/env HOME=/root sh -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"
' in_root "$DIR" "$HERE" "$SHARED" "$(pwd)" "$@"

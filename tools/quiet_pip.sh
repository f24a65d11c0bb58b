# Sourced by the environment makers (tools/make_venv.sh, tools/make_mujoco_uni_env.sh);
# they set VENV first.
quiet_pip() {  # pip "$@" with its exit status, its notes about this machine's absent extra indexes dropped
    log=$(mktemp)
    if PIP_ROOT_USER_ACTION=ignore "$@" --quiet --disable-pip-version-check >"$log" 2>&1; then
        status=0; else status=$?; fi
    grep -v "^WARNING: Location '" "$log" || true
    rm -f "$log"
    [ "$status" = 0 ] || echo "error: pip failed making $VENV: $*" >&2
    return "$status"
}

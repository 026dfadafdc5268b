# Shared helpers for the shell-driven tests. Prints "N passed, N failed" at the end.
set -u
: "${HBDLAB:?HBDLAB must point to the hbdlab executable}"
: "${HBDLAB_BUILD_DIR:?}"
: "${HBDLAB_SOURCE_DIR:?}"
passed=0
failed=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# check NAME COND...: runs the condition command, counts the result.
check() {
    local name=$1
    shift
    if "$@"; then ok; else bad "$name"; fi
}

contains() { case "$1" in *"$2"*) return 0 ;; *) return 1 ;; esac; }

finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

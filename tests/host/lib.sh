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
    # fails when COND fails, so that `check NAME COND || print-diagnostics` prints them
    if "$@"; then ok; else bad "$name"; return 1; fi
}

# expect_fail NAME EXPECTED CMD...: CMD must exit 1 (a Lua error), not crash (>= 128)
# or time out, and its stderr must contain EXPECTED.
expect_fail() {
    local name=$1 want=$2
    shift 2
    timeout 20 "$@" > "$TMP/out" 2> "$TMP/err"
    local rc=$?
    if [ "$rc" -ne 1 ]; then bad "$name: exit $rc (want 1): $(head -c 300 "$TMP/err")"; return; fi
    if ! grep -qF -- "$want" "$TMP/err"; then bad "$name: stderr lacks '$want': $(head -c 300 "$TMP/err")"; return; fi
    ok
}

contains() { case "$1" in *"$2"*) return 0 ;; *) return 1 ;; esac; }

finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

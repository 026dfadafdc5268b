#!/usr/bin/env bash
# Runs every cmocka test executable under valgrind --leak-check=full and
# summarises: errors and definitely-lost bytes must be zero.
#   tests/valgrind.sh [BUILD_DIR]     (a non-sanitizer build; default build)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v valgrind > /dev/null || { echo "valgrind is required" >&2; exit 1; }
status=0
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    log=$(mktemp)
    HBDLAB_SOURCE_DIR=$PWD valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 "$t" > /dev/null 2> "$log"
    rc=$?
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -n1)
    lost=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tail -n1)
    printf '%-28s errors %-3s definitely lost %-6s bytes  exit %s\n' "$(basename "$t")" "${errors:-?}" "${lost:-0}" "$rc"
    [ "$rc" -eq 0 ] || status=1
    rm -f "$log"
done
exit $status

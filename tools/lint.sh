#!/bin/sh
# Checks the C sources against .clang-format and the Lua sources with luacheck
# (.luacheckrc). .ci/run runs it: a change that is not formatted fails CI.
#   tools/lint.sh          check; exit 1 when a file is not formatted or luacheck warns
#   tools/lint.sh --fix    reformat every C file in place (clang-format -i), then check Lua
# Needs the Debian packages clang-format and lua-check (tools/install-deps.sh).
set -eu
cd "$(dirname "$0")/.."

fix=0
case "${1:-}" in
--fix) fix=1 ;;
"") ;;
*) echo "usage: tools/lint.sh [--fix]" >&2; exit 2 ;;
esac

for tool in clang-format luacheck; do
    command -v "$tool" >/dev/null 2>&1 || { echo "lint: $tool not found (tools/install-deps.sh installs it)" >&2; exit 2; }
done

c_files=$(git ls-files '*.c' '*.h')
status=0
if [ "$fix" -eq 1 ]; then
    # shellcheck disable=SC2086
    clang-format -i $c_files
    echo "lint: reformatted $(echo "$c_files" | wc -l) C files"
else
    bad=0
    for f in $c_files; do
        if ! clang-format "$f" | cmp -s "$f" -; then
            echo "lint: $f is not formatted (clang-format -i $f)"
            bad=$((bad + 1))
        fi
    done
    if [ "$bad" -gt 0 ]; then
        echo "lint: $bad C files not formatted; tools/lint.sh --fix reformats them"
        status=1
    fi
fi

# a shell test's `check NAME A && B` counts A only (tools/check_and.awk)
for f in $(git ls-files 'tests/*.sh'); do
    awk -f tools/check_and.awk "$f" || status=1
done

lua_files=$(git ls-files '*.lua')
# shellcheck disable=SC2086
if ! luacheck --no-color --codes -q $lua_files; then
    status=1
fi
exit $status

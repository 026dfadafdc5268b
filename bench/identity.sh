#!/bin/sh
# Byte-identity check for speed work (issue 28): runs bench/identity_sweeps.lua with a reference
# binary and a new one and compares every output file with cmp. Usage:
#   bench/identity.sh REF_HBDLAB NEW_HBDLAB [WORKDIR]
# e.g. build main's hbdlab, copy it aside, build the change, then
#   bench/identity.sh /tmp/ref/hbdlab build/hbdlab
# Exit status 0 when every file is byte-identical.
set -eu
ref=$1 new=$2 dir=${3:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir/ref" "$dir/new"
OUT="$dir/ref" "$ref" "$here/identity_sweeps.lua"
OUT="$dir/new" "$new" "$here/identity_sweeps.lua"
bad=0 n=0
for f in "$dir"/ref/*; do
    n=$((n + 1))
    if ! cmp -s "$f" "$dir/new/$(basename "$f")"; then
        echo "differs: $(basename "$f")"
        bad=$((bad + 1))
    fi
done
echo "$n files compared, $bad differ ($dir)"
[ "$bad" -eq 0 ]

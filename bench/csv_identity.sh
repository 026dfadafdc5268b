#!/bin/sh
# Byte-identity of hl.sweep_to_csv between two builds: bench/csv_identity.sh OLD_HBDLAB NEW_HBDLAB
# Writes bench/csv_identity.lua's files with each (the new one with 1, 2 and 3 worker threads too)
# and compares every file with cmp. Exit status 0 when all are identical.
set -eu
old=$1
new=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$old" "$here/csv_identity.lua" --set "dir=$tmp/old" >/dev/null
status=0
for t in 0 1 2 3; do
    "$new" "$here/csv_identity.lua" --set "dir=$tmp/new$t" --set "threads=$t" >/dev/null
    for f in "$tmp/old"/*.csv; do
        if ! cmp -s "$f" "$tmp/new$t/$(basename "$f")"; then
            echo "differs (threads $t): $(basename "$f")"
            status=1
        fi
    done
done
n=$(ls "$tmp/old" | wc -l)
[ $status -eq 0 ] && echo "identical: $n files, $(cat "$tmp/old"/*.csv | wc -c) bytes, threads 0/1/2/3"
exit $status

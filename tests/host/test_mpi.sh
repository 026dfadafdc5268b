# MPI mode: `mpirun -n 4 hbdlab script.lua` splits every sweep across the ranks
# and gathers the rows; the files rank 0 writes equal the single process's
# byte for byte. Skipped (exit 77) only when hbdlab was built without MPI.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
have=$("$HBDLAB" -e 'io.write(tostring(hl.core.dist().have_mpi))')
if [ "$have" != true ]; then
    echo "SKIP: hbdlab was built without MPI (install openmpi-bin and libopenmpi-dev: tools/install-deps.sh)"
    exit 77
fi
if ! command -v mpirun > /dev/null; then
    echo "FAIL: hbdlab was built with MPI but mpirun is not on PATH" >&2
    exit 1
fi
script=tests/data/shard_sweep.lua
"$HBDLAB" "$script" "$TMP/one" > /dev/null 2>&1
check "single run exits 0" [ $? -eq 0 ]
# Open MPI's own allocations at start-up are not ours to report
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
timeout 300 mpirun --allow-run-as-root --oversubscribe -n 4 "$HBDLAB" "$script" "$TMP/mpi" > "$TMP/mpi.out" 2>&1
rc=$?
check "mpirun -n 4 exits 0 (rc $rc)" [ "$rc" -eq 0 ] || cat "$TMP/mpi.out" >&2
check "rank 0 prints once, with every row gathered" [ "$(grep -c 'rows 105, fn rows 11' "$TMP/mpi.out")" -eq 1 ]
for f in rows stream fn; do
    check "$f: 4 MPI ranks = the single run, byte for byte" cmp -s "$TMP/mpi/$f.csv" "$TMP/one/$f.csv"
done
# a failing rank stops them all with its status instead of leaving them waiting
timeout 120 mpirun --allow-run-as-root --oversubscribe -n 2 "$HBDLAB" -e 'error("boom")' > "$TMP/fail.out" 2>&1
rc=$?
check "a script error under mpirun exits non-zero (rc $rc), not a hang" [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
finish

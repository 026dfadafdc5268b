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
# a warning is printed by rank 0 only (every rank runs the script)
timeout 120 mpirun --allow-run-as-root --oversubscribe -n 2 "$HBDLAB" \
    -e 'hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, input = 200000 }' \
    > "$TMP/warn.out" 2>&1
check "a warning under mpirun -n 2 is printed once ($(grep -c 'context limit' "$TMP/warn.out"))" \
    [ "$(grep -c 'context limit' "$TMP/warn.out")" -eq 1 ]
# a failing rank stops them all with its status instead of leaving them waiting
timeout 120 mpirun --allow-run-as-root --oversubscribe -n 2 "$HBDLAB" -e 'error("boom")' > "$TMP/fail.out" 2>&1
rc=$?
check "a script error under mpirun exits non-zero (rc $rc)" [ "$rc" -ne 0 ]
check "a script error under mpirun is not a hang (rc $rc)" [ "$rc" -ne 124 ]

# ---- issue 22: ranks that disagree on a sweep fail together with one message, under any build
# (before: heap-buffer-overflow in MPI_Allgatherv, or a hang when one rank ran one more sweep)
# mpi_disagree NAME WANT CODE: runs CODE on 2 ranks (r = the rank); both must exit non-zero
# with the same line containing WANT, within the time limit
mpi_disagree() {
    local name=$1 want=$2 code=$3 own=${4:-}
    timeout 120 mpirun --allow-run-as-root --oversubscribe --tag-output -n 2 "$HBDLAB" \
        -e "local r = hl.core.dist().index; local base = { model = 'llama-3.1-8b', cluster = 'hgx-h100',
            parallel = { tp = 8 } }; $code" > "$TMP/dis.out" 2>&1
    local rc=$?
    check "$name: exits non-zero (rc $rc)" [ "$rc" -ne 0 ]
    check "$name: not a hang (rc $rc)" [ "$rc" -ne 124 ]
    local l0 l1
    l0=$(grep -a '^\[1,0\]<stderr>:' "$TMP/dis.out" | grep -aF -- "$want" | sed 's/^\[1,0\]<stderr>://' | head -1)
    l1=$(grep -a '^\[1,1\]<stderr>:' "$TMP/dis.out" | grep -aF -- "$want" | sed 's/^\[1,1\]<stderr>://' | head -1)
    check "$name: rank 0 says '$want'" [ -n "$l0" ] || cat "$TMP/dis.out" >&2
    # the same sentence from WANT on (a rank inside hl.sweep prefixes the script position)
    local s0=${l0#*"$want"} s1=${l1#*"$want"}
    if [ -n "$own" ]; then # the failing rank reports its own error
        check "$name: rank 1 says '$own'" grep -aq "^\[1,1\]<stderr>:.*$own" "$TMP/dis.out"
    else
        check "$name: rank 1 says '$want'" [ -n "$l1" ]
        check "$name: rank 1 says the same as rank 0 ('$l0' / '$l1')" [ "$s0" = "$s1" ]
    fi
    check "$name: no sanitizer report" sh -c "! grep -aq 'ERROR: AddressSanitizer\|runtime error' '$TMP/dis.out'"
}
mpi_disagree "rank-dependent axis length" "MPI ranks disagree on a sweep's size: 3 to 8 points" \
    'local ax = {} for i = 1, 3 + 5 * r do ax[i] = i end hl.sweep { base = base, axes = { batch = ax }, progress = false }'
mpi_disagree "rank-dependent axis values" "MPI ranks disagree on a sweep's axes: 2 points each" \
    'hl.sweep { base = base, axes = { batch = { 1, 2 + r } }, progress = false }'
mpi_disagree "sweep_to_csv of other sizes" "MPI ranks disagree on a sweep's size: 2 to 3 points" \
    "hl.sweep_to_csv { base = base, axes = { batch = r == 0 and { 1, 2 } or { 1, 2, 3 } }, out = '$TMP/d.csv', progress = false }"
mpi_disagree "function-form sweep, other values" "MPI ranks disagree on a sweep's axes: 3 points each" \
    'hl.sweep({ x = { 1, 2, 3 + r } }, function(p) return { y = p.x } end)'
mpi_disagree "a rank runs one more sweep" "MPI ranks out of step: some ranks start an hl.sweep while others end the script" \
    'for _ = 0, r do hl.sweep { base = base, axes = { batch = { 1, 2 } }, progress = false } end'
mpi_disagree "a rank fails in its function, the other gathers" "a sweep failed or was interrupted on some MPI ranks only" \
    'hl.sweep({ x = { 1, 2, 3, 4 } }, function(p) if r == 1 then error("mine") end return { y = p.x } end)' "sweep point 3 {x=3}: .*mine"
mpi_disagree "a rank fails, the other succeeds" "an MPI rank failed (its error is above) while the others ended the script" \
    'if r == 1 then error("only rank 1") end'
finish

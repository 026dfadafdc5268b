# --shard I/N: four processes each run a block of every sweep; `hbdlab merge`
# joins their CSV files into exactly the bytes of the single run (a C sweep
# written by hl.rows.write_csv, a streamed hl.sweep_to_csv, a function-form sweep).
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
script=tests/data/shard_sweep.lua
"$HBDLAB" "$script" "$TMP/one" > "$TMP/one.out" 2>&1
check "single run exits 0" [ $? -eq 0 ]
check "single run: 105 + 11 rows" grep -q "rows 105, fn rows 11" "$TMP/one.out"
# shards 0..3 in parallel, the option before and after the script name
"$HBDLAB" --shard 0/4 "$script" "$TMP/sh" > "$TMP/s0.out" 2>&1 &
p0=$!
"$HBDLAB" "$script" "$TMP/sh" --shard 1/4 > "$TMP/s1.out" 2>&1 &
p1=$!
"$HBDLAB" "$script" "$TMP/sh" --shard=2/4 > "$TMP/s2.out" 2>&1 &
p2=$!
"$HBDLAB" "$script" --shard 3/4 "$TMP/sh" > "$TMP/s3.out" 2>&1
r3=$?
wait $p0; r0=$?
wait $p1; r1=$?
wait $p2; r2=$?
check "four shards exit 0 ($r0 $r1 $r2 $r3)" [ "$r0$r1$r2$r3" = 0000 ]
# 105 points in blocks floor(i*105/4): 26, 26, 26, 27; 11 in 2, 3, 3, 3
check "shard 0 ran its block" grep -q "rows 26, fn rows 2" "$TMP/s0.out"
check "shard 3 ran its block" grep -q "rows 27, fn rows 3" "$TMP/s3.out"
for f in rows rows_all stream fn; do
    # given out of order on purpose: merge orders by shard index
    "$HBDLAB" merge "$TMP/sh/${f}_shard3of4.csv" "$TMP/sh/${f}_shard1of4.csv" "$TMP/sh/${f}_shard0of4.csv" \
        "$TMP/sh/${f}_shard2of4.csv" -o "$TMP/$f.csv"
    check "merge $f exits 0" [ $? -eq 0 ]
    check "$f: 4 shards merged = the single run, byte for byte" cmp -s "$TMP/$f.csv" "$TMP/one/$f.csv"
done
check "the single run's rows CSV has error rows (hbd 3)" grep -q "does not divide" "$TMP/one/rows.csv"
check "a shard without failing points still has the error column" sh -c "head -n1 '$TMP/sh/rows_all_shard0of4.csv' | grep -q ',error'"
# errors
out=$("$HBDLAB" merge "$TMP/sh/rows_shard0of4.csv" "$TMP/sh/rows_shard2of4.csv" -o "$TMP/x.csv" 2>&1)
check "merge names a missing shard" contains "$out" "shard 1 of 4 is missing"
check "nothing written on error" [ ! -e "$TMP/x.csv" ]
out=$("$HBDLAB" merge "$TMP/one/rows.csv" "$TMP/one/fn.csv" -o "$TMP/x.csv" 2>&1)
check "merge refuses other columns" contains "$out" "has other columns than"
# -o naming an input replaced that input; one file given twice doubled its rows (both exited 0)
cp "$TMP/one/rows.csv" "$TMP/a.csv"
cp "$TMP/one/rows.csv" "$TMP/b.csv"
out=$("$HBDLAB" merge "$TMP/a.csv" "$TMP/b.csv" -o "$TMP/a.csv" 2>&1)
check "merge refuses -o equal to an input ($?)" contains "$out" "the output $TMP/a.csv would overwrite the input $TMP/a.csv"
check "the input is left as it was" cmp -s "$TMP/a.csv" "$TMP/one/rows.csv"
ln -s a.csv "$TMP/link.csv"
out=$("$HBDLAB" merge "$TMP/a.csv" "$TMP/b.csv" -o "$TMP/link.csv" 2>&1)
check "merge refuses -o naming an input through a link" contains "$out" "would overwrite the input $TMP/a.csv"
out=$("$HBDLAB" merge "$TMP/a.csv" "$TMP/link.csv" -o "$TMP/x.csv" 2>&1)
check "merge refuses one file given twice" contains "$out" "$TMP/link.csv is given twice"
check "nothing written then" [ ! -e "$TMP/x.csv" ]
out=$("$HBDLAB" "$script" "$TMP/bad" --shard 4/4 2>&1)
rc=$?
check "--shard 4/4 fails" [ "$rc" -ne 0 ]
check "--shard 4/4 says what is allowed" contains "$out" "expected I/N with 0 <= I < N"
out=$("$HBDLAB" -e 'print("x")' --shard 2 2>&1)
check "--shard 2 (no N) fails clearly" contains "$out" "expected I/N"
finish

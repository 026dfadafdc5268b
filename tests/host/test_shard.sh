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
check "a shard without failing points still has the error column" sh -c "sed -n 2p '$TMP/sh/rows_all_shard0of4.csv' | grep -q ',error'"
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

# ---- issue 22: every output of a sharded run is suffixed or refused; merge checks fingerprints
outs=tests/data/shard_outputs.lua
"$HBDLAB" "$outs" "$TMP/o1" > /dev/null 2>&1
check "outputs: single run exits 0" [ $? -eq 0 ]
for i in 0 1 2 3; do
    "$HBDLAB" --shard $i/4 "$outs" "$TMP/o4" > "$TMP/o4_$i.out" 2>&1
    check "outputs: shard $i of 4 exits 0" [ $? -eq 0 ] || cat "$TMP/o4_$i.out" >&2
done
for f in rows.json rows.jsonl fig.png fig.dat fig.gp trace.json; do
    stem=${f%.*} ext=${f##*.}
    check "$f: shard 0 writes its own (suffixed) file" [ -e "$TMP/o4/${stem}_shard0of4.$ext" ]
    check "$f: shard 3 writes its own (suffixed) file" [ -e "$TMP/o4/${stem}_shard3of4.$ext" ]
    check "$f: no shard writes the unsuffixed name (shards overwrote each other)" [ ! -e "$TMP/o4/$f" ]
done
check "a shard's .gp reads its own .dat and draws its own figure" grep -q "fig_shard1of4.dat" "$TMP/o4/fig_shard1of4.gp"
for f in rows two filtered; do
    "$HBDLAB" merge "$TMP/o4/${f}_shard"*of4.csv -o "$TMP/m_$f.csv" 2> "$TMP/m_$f.err"
    check "merge $f exits 0 ($(cat "$TMP/m_$f.err"))" [ $? -eq 0 ]
    check "$f: merged = the single run, byte for byte" cmp -s "$TMP/m_$f.csv" "$TMP/o1/$f.csv"
done
check "two.csv: shard 0 of 4 is an empty block (its fingerprint says so)" grep -q "rows=0-0/2" "$TMP/o4/two_shard0of4.csv"
out=$("$HBDLAB" -e "local r = hl.rows.read_csv('$TMP/o4/rows_shard1of4.csv'); io.write(#r, ' ', r[1].batch)")
check "read_csv of a shard file reads its rows, not the fingerprint ($out)" [ "$out" = "2 4" ]
# rows that every shard computed alike cannot be merged (they would repeat)
out=$("$HBDLAB" merge "$TMP/o4/same_shard"*of4.csv -o "$TMP/x.csv" 2>&1)
check "merge refuses rows that are not a sweep's block ($out)" contains "$out" "not a block of a sweep"
# shards of another run (another sweep, the same columns)
mkdir -p "$TMP/ob"
"$HBDLAB" --shard 1/4 "$outs" "$TMP/ob" b > /dev/null 2>&1
cp "$TMP/o4/rows_shard0of4.csv" "$TMP/o4/rows_shard2of4.csv" "$TMP/o4/rows_shard3of4.csv" "$TMP/ob/"
out=$("$HBDLAB" merge "$TMP/ob/rows_shard"*of4.csv -o "$TMP/x.csv" 2>&1)
check "merge refuses shards of two runs with the same header ($out)" contains "$out" "comes from another run"
# shards of two files of one run (different stems)
out=$("$HBDLAB" merge "$TMP/o4/rows_shard0of4.csv" "$TMP/o4/rows_shard1of4.csv" "$TMP/o4/copy_shard2of4.csv" \
    "$TMP/o4/rows_shard3of4.csv" -o "$TMP/x.csv" 2>&1)
check "merge refuses shards of another file ($out)" contains "$out" "is a shard of copy.csv"
# a renamed shard
cp "$TMP/o4/rows_shard1of4.csv" "$TMP/o4/r2_shard0of4.csv"
out=$("$HBDLAB" merge "$TMP/o4/r2_shard0of4.csv" -o "$TMP/x.csv" 2>&1)
check "merge refuses a shard renamed to another index ($out)" contains "$out" "holds shard 1 of 4"
# a shard that lost rows (a row deleted; an interrupted shard)
mkdir -p "$TMP/lost"
cp "$TMP/o4/rows_shard"*of4.csv "$TMP/lost/"
sed -i '3d' "$TMP/lost/rows_shard2of4.csv"
out=$("$HBDLAB" merge "$TMP/lost/rows_shard"*of4.csv -o "$TMP/x.csv" 2>&1)
check "merge refuses a shard with rows missing ($out)" contains "$out" "holds 1 rows, its block of the sweep 2"
# a shard without its fingerprint
sed -i '1d' "$TMP/lost/rows_shard0of4.csv"
out=$("$HBDLAB" merge "$TMP/lost/rows_shard"*of4.csv -o "$TMP/x.csv" 2>&1)
check "merge refuses a shard-named file without a fingerprint ($out)" contains "$out" "has no shard fingerprint line"
check "nothing written on these errors" [ ! -e "$TMP/x.csv" ]
# subcommands do not run as a shard: a notebook rendered half of every sweep and exited 0
printf '# nb\n\n```lua\nprint(#hl.sweep({x = {1, 2, 3, 4}}, function(p) return {} end))\n```\n' > "$TMP/nb.md"
out=$("$HBDLAB" --shard 0/2 notebook "$TMP/nb.md" 2>&1)
rc=$?
check "--shard with notebook exits 2 ($rc): $out" [ "$rc" -eq 2 ]
check "--shard with notebook says why" contains "$out" "does not apply to 'notebook'"
check "no notebook report written" [ ! -e "$TMP/nb.html" ]
check "no suffixed notebook report written" [ ! -e "$TMP/nb_shard0of2.html" ]
check "a notebook run from a sharded script is refused too" contains "$(
    "$HBDLAB" --shard 0/2 -e "os.exit(require('hbdlab.notebook').main('$TMP/nb.md'))" 2>&1)" "cannot run as one shard"
finish

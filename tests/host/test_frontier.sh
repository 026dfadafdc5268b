# hbdlab frontier CONFIG.json: the same fields as hl.frontier; -o writes the points CSV, the JSON
# and the figures; two shards merged equal the single run's points byte for byte; bad input exits 1
# with a JSON error naming the field.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
cat > "$TMP/cfg.json" <<'JSON'
{"model": "llama-3.1-8b", "systems": [{"gpu": "H100-SXM", "gpus": 4, "hbd": 4},
 {"gpu": "B200", "gpus": 8, "hbd": 8, "name": "B200 x8"}], "precision": ["fp8", "bf16"],
 "input": 1024, "output": 256, "simulate": 0}
JSON
"$HBDLAB" frontier "$TMP/cfg.json" -o "$TMP/one/fr" > "$TMP/one.out" 2>&1
check "single run exits 0: $(head -c 300 "$TMP/one.out")" [ $? -eq 0 ]
check "summary names the curves" grep -q "B200 x8 fp8 agg" "$TMP/one.out"
for f in fr_points.csv fr.json fr.png fr.gp fr.dat fr_cost.png; do
    check "single run wrote $f" [ -s "$TMP/one/$f" ]
done
check "points CSV header" sh -c "head -n1 '$TMP/one/fr_points.csv' | grep -q '^system,precision,mode,tps_per_gpu,tps_per_user'"
"$HBDLAB" frontier "$TMP/cfg.json" -o "$TMP/sh/fr" --shard 0/2 > "$TMP/s0.out" 2>&1 &
p0=$!
"$HBDLAB" --shard 1/2 frontier "$TMP/cfg.json" -o "$TMP/sh/fr" > "$TMP/s1.out" 2>&1
r1=$?
wait $p0; r0=$?
check "two shards exit 0 ($r0 $r1): $(head -c 300 "$TMP/s0.out")" [ "$r0$r1" = 00 ]
check "a shard writes its points only" [ ! -e "$TMP/sh/fr.json" ]
"$HBDLAB" merge "$TMP/sh/fr_points_shard1of2.csv" "$TMP/sh/fr_points_shard0of2.csv" -o "$TMP/merged.csv"
check "merge exits 0" [ $? -eq 0 ]
check "2 shards merged = the single run's points, byte for byte" cmp -s "$TMP/merged.csv" "$TMP/one/fr_points.csv"
# under mpirun the ranks split the search and rank 0 writes the gathered points (when built with MPI)
if [ "$("$HBDLAB" -e 'io.write(tostring(hl.core.dist().have_mpi))')" = true ] && command -v mpirun > /dev/null; then
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 300 \
        mpirun --allow-run-as-root --oversubscribe -n 2 "$HBDLAB" frontier "$TMP/cfg.json" -o "$TMP/mpi/fr" > "$TMP/mpi.out" 2>&1
    check "mpirun -n 2 frontier exits 0: $(tail -c 300 "$TMP/mpi.out")" [ $? -eq 0 ]
    check "2 MPI ranks = the single run's points, byte for byte" cmp -s "$TMP/mpi/fr_points.csv" "$TMP/one/fr_points.csv"
fi
"$HBDLAB" frontier "$TMP/cfg.json" --json > "$TMP/j.out" 2>&1
check "--json exits 0" [ $? -eq 0 ]
check "--json has pareto and best" sh -c "grep -q '\"pareto\"' '$TMP/j.out' && grep -q '\"best\"' '$TMP/j.out'"
echo '{"model": "llama-3.1-8b", "systems": [{"gpu": "H100-SXM", "gpus": 4, "hbd": 4}], "moodes": ["agg"]}' > "$TMP/bad.json"
expect_fail "misspelt field named" "did you mean 'modes'" "$HBDLAB" frontier "$TMP/bad.json"
echo '{"model": "llama-3.1-8b", "systems": [{"gpu": "H100-SXM", "gpus": 4, "hbd": 4}], "slo": {"tpot_s": 1e-7}, "simulate": 0}' > "$TMP/slo.json"
expect_fail "impossible SLO names the best found" "the best found is" "$HBDLAB" frontier "$TMP/slo.json"
"$HBDLAB" frontier > /dev/null 2> "$TMP/usage"
check "no config: usage, exit 2" [ $? -eq 2 ]
"$HBDLAB" notebook notebooks/frontier.md -o "$TMP/frontier.html" > /dev/null 2> "$TMP/nb.err"
check "notebooks/frontier.md runs: $(tail -c 300 "$TMP/nb.err")" grep -q "4 of 4 cells ran, 0 failed" "$TMP/nb.err"
finish

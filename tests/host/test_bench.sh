# `hbdlab bench --quick` as a smoke test: it runs and reports every figure.
# No timing is asserted (speed is measured, docs/PERFORMANCE.md).
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
out=$("$HBDLAB" bench --quick --json 2> "$TMP/err"); rc=$?
check "bench --quick exits 0" [ "$rc" -eq 0 ] || cat "$TMP/err" >&2
for f in sim_latency_median_s sim_latency_p99_s sweep_points_per_s_1thread sweep_points_per_s_all \
         lua_call_overhead_s lua_call_overhead_q1_s lua_call_overhead_q3_s lua_call_names_overhead_s \
         startup_median_s startup_min_s hbd_repro_wall_s stream_10m_rss_bytes serve_light_wall_s serve_heavy_wall_s; do
    check "bench reports $f" contains "$out" "\"$f\":"
done
check "the HBD reproduction ran inside the bench" contains "$out" '"hbd_repro_ok":	true'
check "the streamed sweep ran inside the bench" contains "$out" '"stream_ok":	true'
check "the in-memory sweep ran inside the bench" contains "$out" '"sweep_mem_ok":	true'
# the counts need valgrind able to run this build (not a sanitizer build's)
if command -v valgrind > /dev/null && valgrind -q --tool=none "$HBDLAB" -e '' > /dev/null 2>&1; then
    check "bench counts the start-up's instructions (callgrind)" contains "$out" '"startup_instructions":'
    check "bench counts the Lua overhead's instructions (callgrind)" contains "$out" '"lua_call_overhead_instructions":'
fi
check "bench reports the 10M in-memory sweep's estimate" contains "$out" '"sweep_10m_estimate_bytes":'
check "bench prints a progress line per phase on stderr" grep -q "^bench 9/9: " "$TMP/err"
check "bench prints no warning" sh -c "! grep -q 'warning' '$TMP/err'"
out=$("$HBDLAB" bench --bogus 2>&1); rc=$?
check "unknown bench option is an error" [ "$rc" -eq 2 ]
# attack pass 6: a repeated option was accepted; outside the source tree the bench failed at its
# end (exit 1, "cannot open ./scripts/hbd/reproduce.lua") after running every phase before it
out=$("$HBDLAB" bench --quick --json --json 2>&1); rc=$?
check "a repeated bench option is an error" [ "$rc" -eq 2 ]
check "the repeated option is named" contains "$out" "bench: option '--json' is given twice"
out=$(cd "$TMP" && HBDLAB_SOURCE_DIR="$TMP/none" "$HBDLAB" bench --quick 2>&1); rc=$?
check "bench outside the source tree stops at once" [ "$rc" -eq 2 ]
check "it names the script and the variable" contains "$out" "bench: cannot find $TMP/none/scripts/hbd/reproduce.lua"
check "no phase ran" sh -c "! printf '%s' \"\$1\" | grep -q '^bench 1/9'" _ "$out"
out=$(cd "$TMP" && env -u HBDLAB_SOURCE_DIR "$HBDLAB" bench --quick 2>&1); rc=$?
check "without HBDLAB_SOURCE_DIR it looks in the current folder" contains "$out" "cannot find ./scripts/hbd/reproduce.lua"
finish

# What a newcomer from a clean clone hit (session 8): each subcommand's --help, the examples
# for the users' questions. Each check failed before its fix.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1

# ---- `hbdlab SUB --help`: the usage and the fields the JSON takes, exit 0 ----
# calibrate read --help as a file name ("cannot read --help", exit 1), merge as a shard (exit 2);
# eval / serve / frontier / walkthrough printed a usage line that did not say which fields exist
help_has() { # SUB FIELD: --help exits 0, prints its usage and names FIELD, a field of its JSON
    "$HBDLAB" "$1" --help > "$TMP/help.out" 2> "$TMP/help.err"
    local rc=$?
    check "hbdlab $1 --help exits 0 (rc $rc: $(head -c 200 "$TMP/help.err"))" [ "$rc" -eq 0 ]
    check "hbdlab $1 --help prints its usage" grep -q "^usage: hbdlab $1" "$TMP/help.out"
    check "hbdlab $1 --help names the field '$2'" grep -qw -- "$2" "$TMP/help.out"
    check "hbdlab $1 --help writes nothing on stderr" test ! -s "$TMP/help.err"
}
help_has eval batch
help_has eval precision
help_has serve max_seqs
help_has serve token_budget
help_has frontier systems
help_has frontier tps_per_user
help_has walkthrough batch
help_has calibrate bounds
help_has merge ALL.csv
out=$("$HBDLAB" --help)
check "hbdlab --help says where a subcommand's fields are" contains "$out" "SUBCOMMAND --help"

# ---- scripts/frontier_cluster.lua: the headline question for the systems one names ----
out=$("$HBDLAB" scripts/frontier_cluster.lua --set model=llama-3.1-8b --set systems=H100:8:8,hgx-b200 \
    --set precisions=fp8 --set simulate=2 --set out="$TMP/fc/x" 2> "$TMP/fc.err"); rc=$?
check "frontier_cluster.lua runs (rc $rc: $(tail -c 300 "$TMP/fc.err"))" [ "$rc" -eq 0 ]
check "it prints a best row for each system" sh -c "printf '%s' \"\$1\" | grep -q '^8xH100 hbd8 *fp8 *agg' &&
    printf '%s' \"\$1\" | grep -q '^hgx-b200 *fp8 *disagg'" _ "$out"
check "it names the winner with its launch options" contains "$out" "most tok/s/GPU at >= 20 tok/s/user:"
check "and re-runs the winner through hl.serve" contains "$out" "re-run through hl.serve(best.config)"
check "it writes the charts" test -s "$TMP/fc/x.png"
"$HBDLAB" scripts/frontier_cluster.lua --set systems=GB200:72 > /dev/null 2> "$TMP/bad.err"; rc=$?
check "a system that is neither GPU:GPUS:HBD nor a preset is named (rc $rc)" \
    sh -c "[ $rc -eq 1 ] && grep -q \"'GB200:72' is not GPU:GPUS:HBD\" '$TMP/bad.err'"

# ---- scripts/gpus_for_rate.lua: how many GPUs for N req/s within an SLO ----
# The answer is checked against hl.serve run here on its own: the deployment it names meets the
# target at the rate, and one instance fewer does not (else the answer would not be the fewest).
out=$("$HBDLAB" scripts/gpus_for_rate.lua --set model=llama-3.1-8b --set rate=40 --set tps=1,2 \
    --set input=1024 --set output=256 --set tpot_ms=20 2> "$TMP/g.err"); rc=$?
check "gpus_for_rate.lua runs (rc $rc: $(tail -c 300 "$TMP/g.err"))" [ "$rc" -eq 0 ]
line=$(printf '%s\n' "$out" | grep '^fewest GPUs:')
n=$(printf '%s' "$line" | sed -n 's/^fewest GPUs: \([0-9]*\) (\([0-9]*\) instances of TP\([0-9]*\)).*/\2/p')
tp=$(printf '%s' "$line" | sed -n 's/^fewest GPUs: \([0-9]*\) (\([0-9]*\) instances of TP\([0-9]*\)).*/\3/p')
g=$(printf '%s' "$line" | sed -n 's/^fewest GPUs: \([0-9]*\) .*/\1/p')
check "it names the fewest GPUs ($line)" [ -n "$n" ]
check "and the instance size ($line)" [ -n "$tp" ]
check "GPUs = instances x TP ($g = $n x $tp)" [ "$g" = "$((n * tp))" ]
att() { # INSTANCES: the SLO attainment of that many TP$tp instances at 40 req/s
    "$HBDLAB" -e "local s = hl.serve { model = 'llama-3.1-8b', precision = 'fp8', input = 1024, output = 256,
        cluster = hl.cluster { gpu = 'H100', gpus = $1 * $tp, hbd = $tp }, parallel = { tp = $tp }, replicas = $1,
        rate = 40, requests = 4000, slo = { ttft_ms = 1000, tpot_ms = 20 } } print(s.slo_attainment >= 0.9)"
}
check "the named deployment meets 90% at 40 req/s" [ "$(att "$n")" = true ]
if [ "$n" -gt 1 ]; then check "one instance fewer does not" [ "$(att $((n - 1)))" = false ]; fi

finish

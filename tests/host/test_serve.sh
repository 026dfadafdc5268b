# `hbdlab serve cfg.json`: the summary, --json, and errors as JSON on stderr
# naming the field or the trace line.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
cat > "$TMP/cfg.json" <<'J'
{"model": "llama-3.1-8b", "cluster": {"gpu": "H100-SXM", "gpus": 1}, "rate": 4, "requests": 50,
 "input": {"dist": "uniform", "min": 100, "max": 900}, "output": 32, "slo": {"ttft_ms": 500, "tpot_ms": 50}}
J
out=$("$HBDLAB" serve "$TMP/cfg.json" 2> "$TMP/err"); rc=$?
check "serve exits 0" [ "$rc" -eq 0 ] || cat "$TMP/err" >&2
check "serve prints the request count" contains "$out" "50 requests"
check "serve prints the SLO line" contains "$out" "SLO attainment"
out=$("$HBDLAB" serve "$TMP/cfg.json" --json 2> "$TMP/err"); rc=$?
check "serve --json exits 0" [ "$rc" -eq 0 ]
check "serve --json has goodput" contains "$out" '"goodput_rps":'
printf 'arrival_s,input,output\n0,10,4\n0.5,12\n' > "$TMP/bad.csv"
printf '{"model": "llama-3.1-8b", "cluster": {"gpu": "H100-SXM", "gpus": 1}, "trace": "%s"}' "$TMP/bad.csv" > "$TMP/t.json"
"$HBDLAB" serve "$TMP/t.json" > /dev/null 2> "$TMP/err"; rc=$?
check "a malformed trace fails" [ "$rc" -eq 1 ]
check "the error names the trace line" contains "$(cat "$TMP/err")" "bad.csv line 3: malformed line"
echo '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "rate": -3}' | "$HBDLAB" serve - > /dev/null 2> "$TMP/err"; rc=$?
check "a negative rate fails" [ "$rc" -eq 1 ]
check "the error names the rate" contains "$(cat "$TMP/err")" "field 'rate': -3"
# hbdlab serve cfg.json and hl.serve read the same fields the same way (issue 22 item 10): a
# disaggregated config whose pools carry cluster tables was refused from JSON ("expected a cluster
# object") and ran from Lua; both now print the same summary.
cat > "$TMP/pd.json" <<'J'
{"model": "llama-3.1-8b", "cluster": {"gpu": "H100-SXM", "gpus": 4, "hbd": 4}, "rate": 5, "requests": 40,
 "disagg": {"prefill": {"parallel": {"tp": 1, "gpus": 1}},
            "decode": {"parallel": {"tp": 1, "gpus": 2}, "cluster": {"gpu": "H100-SXM", "gpus": 4, "hbd": 4}}}}
J
out_json=$("$HBDLAB" serve "$TMP/pd.json" 2> "$TMP/err"); rc=$?
check "a disaggregated JSON config with pool clusters runs ($rc)" [ "$rc" -eq 0 ] || cat "$TMP/err" >&2
out_lua=$("$HBDLAB" -e 'local c = hl.cluster { gpu = "H100-SXM", gpus = 4, hbd = 4 }
print(hl.serve { model = "llama-3.1-8b", cluster = c, rate = 5, requests = 40,
  disagg = { prefill = { parallel = { tp = 1, gpus = 1 } }, decode = { parallel = { tp = 1, gpus = 2 }, cluster = c } } })' 2>&1)
check "JSON and hl.serve print the same run" [ "$out_json" = "$out_lua" ]
echo '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1}, "rte": 5}' | "$HBDLAB" serve - > /dev/null 2> "$TMP/err"
check "a misspelt field in JSON gets serve's suggestion" contains "$(cat "$TMP/err")" "serve: unknown field 'rte' (did you mean 'rate'?"
"$HBDLAB" serve > /dev/null 2>&1; rc=$?
check "serve without a config is a usage error" [ "$rc" -eq 2 ]
# Hostile sizes: 1e8 requests with a record each (a closed loop: ~27.2 GB of state) are refused before
# anything is allocated, naming the field and the budget (the run used to eat all memory).
echo '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1}, "concurrency": 10, "requests": 1e8}' |
    timeout 60 "$HBDLAB" serve - > /dev/null 2> "$TMP/err"; rc=$?
check "1e8 requests are refused ($rc)" [ "$rc" -eq 1 ]
check "the refusal names requests and the budget" contains "$(cat "$TMP/err")" "field 'requests': 100000000 requests would take about 27.2 GB, more than the budget of 8 GB"
# The budget is the run's (compact records, 40 B a request, are decided there): 1e8 open-loop requests
# take 4 GB of metrics (1e8 x 40 B), refused under 2 GB; 5,000 (1.36 MB with a record each, which the
# estimate before the run refused under 1 MB) run on 0.2 MB of metrics + 1,024 records.
echo '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1}, "rate": 1, "requests": 1e8}' |
    HBDLAB_SERVE_MEMORY_BYTES=2e9 timeout 60 "$HBDLAB" serve - > /dev/null 2> "$TMP/err"; rc=$?
check "1e8 compact requests are refused under 2 GB ($rc)" [ "$rc" -eq 1 ]
check "the refusal names compact records and the bytes" contains "$(cat "$TMP/err")" "field 'requests': 100000000 requests would take about 4 GB on compact records, more than the budget of 2 GB"
out=$(HBDLAB_SERVE_MEMORY_BYTES=1e6 "$HBDLAB" -e 'local r = hl.serve { model = "llama-3.1-8b", cluster = "hgx-h100",
  parallel = { tp = 1 }, rate = 20, requests = 5000, input = { dist = "uniform", min = 64, max = 512 },
  output = { dist = "uniform", min = 16, max = 128 } } print(r.requests)' 2>&1)
check "5,000 compact requests run within 1 MB ($out)" [ "$out" = "5000" ]
# Ctrl-C during a long hl.serve (1e5 requests of 1e5 tokens: hours of simulated steps) ends it
# with 130; the scheduler's C loop used to ignore it until the run finished.
"$HBDLAB" -e 'io.stdout:write("ready\n") io.stdout:flush()
  hl.serve { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 1 }, rate = 1000, requests = 1e5,
             input = 128, output = 1e5 }' > "$TMP/int.out" 2> "$TMP/int.err" &
pid=$!
for _ in $(seq 100); do [ -s "$TMP/int.out" ] && break; sleep 0.1; done
sleep 1 # into the C loop (sent earlier, the signal stops the Lua code before it: the test cannot fail then)
kill -INT "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
kill -0 "$pid" 2> /dev/null && { kill -KILL "$pid"; echo "hl.serve ignored Ctrl-C for 30 s" >&2; }
wait "$pid"; rc=$?
check "Ctrl-C during hl.serve exits 130 ($rc)" [ "$rc" -eq 130 ]
# the same through `hbdlab serve cfg.json` (attack pass 5): its JSON error path exited 1
printf '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1}, "rate": 1000, "requests": 100000, "input": 128, "output": 100000}\n' > "$TMP/long.json"
"$HBDLAB" serve "$TMP/long.json" > /dev/null 2> "$TMP/term.err" &
pid=$!
sleep 1.5 # into the run (a signal before the Lua code reaches the C loop ends it the same way)
kill -TERM "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
kill -0 "$pid" 2> /dev/null && { kill -KILL "$pid"; echo "hbdlab serve ignored SIGTERM for 30 s" >&2; }
wait "$pid"; rc=$?
check "SIGTERM during hbdlab serve exits 130 ($rc)" [ "$rc" -eq 130 ]
check "and says it was interrupted" grep -q "interrupted" "$TMP/term.err"
for sub in serve eval walkthrough frontier; do
    "$HBDLAB" $sub --help > "$TMP/help.out" 2>&1; rc=$?
    check "hbdlab $sub --help prints its usage, exit 0 (was read as a file name; rc $rc)" \
        sh -c "[ $rc -eq 0 ] && grep -q 'usage: hbdlab $sub' '$TMP/help.out'"
done
# issue 22 attack pass: walkthrough -o naming its config replaced the config with the page; a
# serving config was reported by hl.simulate as "unknown field 'rate'"
printf '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 8}}' > "$TMP/w.json"
cp "$TMP/w.json" "$TMP/w.before"
"$HBDLAB" walkthrough "$TMP/w.json" -o "$TMP/./w.json" > "$TMP/w.out" 2>&1; rc=$?
check "walkthrough -o naming its config is refused (rc $rc)" [ "$rc" -eq 2 ]
check "the config is untouched" cmp -s "$TMP/w.json" "$TMP/w.before"
printf '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "rate": 2}' > "$TMP/w2.json"
"$HBDLAB" walkthrough "$TMP/w2.json" -o "$TMP/w2.html" > "$TMP/w2.out" 2>&1; rc=$?
check "walkthrough of a serving config exits 1 ($rc)" [ "$rc" -eq 1 ]
check "and says it is a serving field ($(head -c 200 "$TMP/w2.out"))" grep -q "'rate' is a serving field" "$TMP/w2.out"
finish

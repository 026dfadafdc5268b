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
"$HBDLAB" serve > /dev/null 2>&1; rc=$?
check "serve without a config is a usage error" [ "$rc" -eq 2 ]
finish

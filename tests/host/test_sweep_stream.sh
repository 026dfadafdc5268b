# Streamed sweeps: the CSV equals the in-memory sweep, and Ctrl-C (or SIGTERM
# through the host's SIGINT path) leaves a valid file with the rows done.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1

# run_and_signal SCRIPT OUT SIGNAL: starts hbdlab on SCRIPT (stdout to OUT), waits
# until it prints "started", lets it run a second, sends SIGNAL; sets rc.
run_and_signal() {
    "$HBDLAB" "$1" > "$2" 2> "$2.err" &
    local pid=$!
    for _ in $(seq 100); do grep -q started "$2" 2>/dev/null && break; sleep 0.05; done
    sleep 1
    kill "-$3" "$pid"
    wait "$pid"; rc=$?
}
cat > "$TMP/stream.lua" <<LUA
local m = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 }
local base = { model = m, cluster = hl.cluster { gpu = "B200", gpus = 64, hbd = 8 }, batch = 16, input = 4096,
               output = 64, parallel = { tp = 8, ep = 16 } }
local axes = { { "hbd", { 8, 16, 32, 64, 48 } }, { "precision", { "fp16", "fp8" } } }
local n = hl.sweep_to_csv { base = base, axes = axes, out = "$TMP/s.csv" }
local mem = hl.sweep { base = base, axes = axes }
local back = hl.rows.read_csv("$TMP/s.csv")
assert(n == #mem and #back == #mem, "row counts " .. n .. " " .. #mem .. " " .. #back)
for i, r in ipairs(mem) do
  for _, k in ipairs { "hbd", "precision", "ttft_s", "tps_per_gpu", "prefill.comm_share" } do
    assert(back[i][k] == r[k], string.format("row %d %s: %s vs %s", i, k, tostring(back[i][k]), tostring(r[k])))
  end
  assert((back[i].error ~= nil) == (r.error ~= nil), "error rows match")
end
print("stream ok")
LUA
out=$("$HBDLAB" "$TMP/stream.lua" 2>&1)
check "streamed CSV equals the in-memory sweep" contains "$out" "stream ok" || echo "$out" >&2

cat > "$TMP/long.lua" <<LUA
local inputs = {}
for i = 1, 4000000 do inputs[i] = 1024 + i end
io.stdout:write("started\n"); io.stdout:flush()
local n, interrupted = hl.sweep_to_csv { base = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 8 },
  parallel = { tp = 8 }, batch = 8, output = 16 }, axes = { input = inputs }, out = "$TMP/long.csv" }
print("rows", n, "interrupted", interrupted, "asked", hl.interrupted())
LUA
run_and_signal "$TMP/long.lua" "$TMP/long.out" INT
check "an interrupted streamed sweep returns normally; handled (hl.interrupted()), exit 0" [ "$rc" -eq 0 ]
check "it reports the interruption" grep -q "interrupted	true	asked	true" "$TMP/long.out"
rows=$(($(wc -l < "$TMP/long.csv") - 1))
check "the file holds the rows done ($rows)" [ "$rows" -gt 0 ] && [ "$rows" -lt 4000000 ]
check "every row is complete" awk -F, 'NR > 1 && NF != 11 { bad = 1 } END { exit bad }' "$TMP/long.csv"
check "no temp file is left" sh -c "! ls '$TMP' | grep -q 'long.csv.tmp'"
# Ctrl-C during an in-memory sweep returns the rows done, flagged
cat > "$TMP/mem.lua" <<LUA
local inputs = {}
for i = 1, 1000000 do inputs[i] = 1024 + i end
io.stdout:write("started\n"); io.stdout:flush()
local rows, interrupted = hl.sweep { base = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 8 },
  parallel = { tp = 8 }, batch = 8, output = 16 }, axes = { input = inputs } }
local complete = true
for _, r in ipairs(rows) do if not (r.ttft_s or r.error) then complete = false end end
print("rows", #rows, "interrupted", interrupted, "complete", complete)
LUA
run_and_signal "$TMP/mem.lua" "$TMP/mem.out" INT
check "an interrupted in-memory sweep returns normally; not handled: the host exits 130 ($rc)" [ "$rc" -eq 130 ]
check "it returns the rows done, flagged" grep -q "interrupted	true	complete	true" "$TMP/mem.out"
check "the host says why it exits 130" grep -q "a sweep was interrupted (the rows done were kept); exit status 130" "$TMP/mem.out.err"
n=$(sed -n 's/^rows\t\([0-9]*\).*/\1/p' "$TMP/mem.out")
check "some but not all rows ($n)" [ "${n:-0}" -gt 0 ] && [ "${n:-0}" -lt 1000000 ]

# SIGTERM takes the same path as Ctrl-C: the rows done are kept
run_and_signal "$TMP/long.lua" "$TMP/long2.out" TERM
check "SIGTERM: the sweep returns normally" [ "$rc" -eq 0 ]
check "SIGTERM: it reports the interruption" grep -q "interrupted	true" "$TMP/long2.out"
check "SIGTERM: every row is complete" awk -F, 'NR > 1 && NF != 11 { bad = 1 } END { exit bad }' "$TMP/long.csv"
finish

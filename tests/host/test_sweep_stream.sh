# Streamed sweeps: the CSV equals the in-memory sweep; what Ctrl-C and SIGTERM do in
# each phase of a sweep. The interruptions are deterministic: HBDLAB_TEST_INTERRUPT
# makes the sweep send itself the signal (through the host's real handler) after N
# points or while the rows are built, so no test depends on timing.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1

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

# streamed sweep, Ctrl-C in the C loop: the rows done are kept, the call returns normally
cat > "$TMP/long.lua" <<LUA
local inputs = {}
for i = 1, 200000 do inputs[i] = 1024 + i end
local n, interrupted = hl.sweep_to_csv { base = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 8 },
  parallel = { tp = 8 }, batch = 8, output = 16 }, axes = { input = inputs }, out = "$TMP/long.csv", threads = 2 }
print("rows", n, "interrupted", interrupted, "asked", hl.interrupted())
LUA
HBDLAB_TEST_INTERRUPT=INT:1000 "$HBDLAB" "$TMP/long.lua" > "$TMP/long.out" 2> "$TMP/long.err"; rc=$?
check "Ctrl-C in a streamed sweep: returns normally; handled (hl.interrupted()), exit 0 ($rc)" [ "$rc" -eq 0 ]
check "it reports the interruption" grep -q "interrupted	true	asked	true" "$TMP/long.out"
rows=$(($(wc -l < "$TMP/long.csv") - 1))
check "the file holds the rows done ($rows >= 1000)" [ "$rows" -ge 1000 ]
check "the file holds only the rows done ($rows < 200000)" [ "$rows" -lt 200000 ]
n=$(sed -n 's/^rows\t\([0-9]*\).*/\1/p' "$TMP/long.out")
check "the count returned is the rows in the file ($n)" [ "${n:-0}" -eq "$rows" ]
cols=$(head -1 "$TMP/long.csv" | awk -F, '{ print NF }')
check "every row is complete" awk -F, -v c="$cols" 'NR > 1 && NF != c { bad = 1 } END { exit bad }' "$TMP/long.csv"
check "no temp file is left" sh -c "! ls '$TMP' | grep -q 'long.csv.tmp'"

# in-memory sweep, Ctrl-C in the C loop: the rows done, flagged; exit 130 unless handled
cat > "$TMP/mem.lua" <<LUA
local inputs = {}
for i = 1, 200000 do inputs[i] = 1024 + i end
local rows, interrupted = hl.sweep { base = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 8 },
  parallel = { tp = 8 }, batch = 8, output = 16 }, axes = { input = inputs }, threads = 2 }
local complete = true
for _, r in ipairs(rows) do if not (r.ttft_s or r.error) then complete = false end end
print("rows", #rows, "interrupted", interrupted, "complete", complete)
LUA
HBDLAB_TEST_INTERRUPT=INT:1000 "$HBDLAB" "$TMP/mem.lua" > "$TMP/mem.out" 2> "$TMP/mem.err"; rc=$?
check "Ctrl-C in an in-memory sweep: returns; not handled: the host exits 130 ($rc)" [ "$rc" -eq 130 ]
check "it returns the rows done, flagged" grep -q "interrupted	true	complete	true" "$TMP/mem.out"
check "the host says why it exits 130" grep -q "a sweep was interrupted (the rows done were kept); exit status 130" "$TMP/mem.err"
n=$(sed -n 's/^rows\t\([0-9]*\).*/\1/p' "$TMP/mem.out")
check "some rows ($n >= 1000)" [ "${n:-0}" -ge 1000 ]
check "not all rows ($n < 200000)" [ "${n:-0}" -lt 200000 ]

# SIGTERM in the C loop ends the script (it was absorbed as a Ctrl-C before): exit 130
HBDLAB_TEST_INTERRUPT=TERM:1000 "$HBDLAB" "$TMP/mem.lua" > "$TMP/term.out" 2> "$TMP/term.err"; rc=$?
check "SIGTERM in an in-memory sweep ends the script ($rc)" [ "$rc" -eq 130 ]
check "SIGTERM: says so" grep -q "sweep terminated (SIGTERM) after" "$TMP/term.err"
check "SIGTERM: the script did not go on" sh -c "! grep -q '^rows' '$TMP/term.out'"
HBDLAB_TEST_INTERRUPT=TERM:1000 "$HBDLAB" "$TMP/long.lua" > "$TMP/term2.out" 2> "$TMP/term2.err"; rc=$?
check "SIGTERM in a streamed sweep ends the script ($rc)" [ "$rc" -eq 130 ]
check "SIGTERM streamed: says how many rows were written" grep -q "sweep_to_csv terminated (SIGTERM): [0-9]* of 200000 rows written" "$TMP/term2.err"
check "SIGTERM streamed: the rows done are in the file, complete" \
    awk -F, -v c="$cols" 'NR > 1 && NF != c { bad = 1 } END { exit bad || NR < 2 }' "$TMP/long.csv"
check "SIGTERM streamed: no temp file" sh -c "! ls '$TMP' | grep -q 'long.csv.tmp'"

# SIGHUP (the terminal or SSH session closed) mid-sweep, a real signal from outside: its default
# action ended the process at once, leaving the partial long.csv.tmp-PID-XXXXXX beside the output
# (attack12). Now it ends the script as SIGTERM does: exit 130, a complete file, no temp file. The
# signal is sent once the temp file exists (the sweep is writing), so no sleep decides the test.
rm -f "$TMP/long.csv"
sed 's/for i = 1, 200000 do/for i = 1, 2000000 do/' "$TMP/long.lua" > "$TMP/hup.lua"
"$HBDLAB" "$TMP/hup.lua" > "$TMP/hup.out" 2> "$TMP/hup.err" &
pid=$!
for _ in $(seq 1 3000); do ls "$TMP" | grep -q 'long.csv.tmp' && break; sleep 0.01; done
kill -HUP "$pid"
wait "$pid"; rc=$?
check "SIGHUP in a streamed sweep ends the script like SIGTERM ($rc)" [ "$rc" -eq 130 ]
check "SIGHUP: says so" grep -q "sweep_to_csv terminated (SIGHUP): [0-9]* of 2000000 rows written" "$TMP/hup.err"
check "SIGHUP: no temp file is left" sh -c "! ls '$TMP' | grep -q 'long.csv.tmp'"
check "SIGHUP: the rows done are in the file, complete" \
    awk -F, -v c="$cols" 'NR > 1 && NF != c { bad = 1 } END { exit bad || NR < 2 }' "$TMP/long.csv"
HBDLAB_TEST_INTERRUPT=HUP:1000 nohup "$HBDLAB" "$TMP/long.lua" > "$TMP/nohup.out" 2> "$TMP/nohup.err"; rc=$?
check "under nohup SIGHUP stays ignored: the sweep completes ($rc)" [ "$rc" -eq 0 ]
check "under nohup: every row written" [ "$(($(wc -l < "$TMP/long.csv") - 1))" -eq 200000 ]

# Ctrl-C while the rows are built (after the C loop): the loop was complete, the script
# stops at its next Lua instruction with "interrupted!" (exit 130)
cat > "$TMP/small.lua" <<LUA
local rows = hl.sweep { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, batch = 8, output = 16 },
  axes = { input = { 128, 256, 512, 1024 } } }
print("after the sweep", #rows)
LUA
HBDLAB_TEST_INTERRUPT=INT:rows "$HBDLAB" "$TMP/small.lua" > "$TMP/rows.out" 2> "$TMP/rows.err"; rc=$?
check "Ctrl-C while rows are built: exit 130 ($rc)" [ "$rc" -eq 130 ]
check "Ctrl-C while rows are built: interrupted! at the next instruction" grep -q "interrupted!" "$TMP/rows.err"
check "Ctrl-C while rows are built: the script did not go on" sh -c "! grep -q 'after the sweep' '$TMP/rows.out'"

# Ctrl-C (a real signal) while the arguments are read in Lua: "interrupted!", exit 130
cat > "$TMP/args.lua" <<LUA
io.stdout:write("started\n"); io.stdout:flush()
while true do local t = {} for i = 1, 1000 do t[i] = i end end
LUA
"$HBDLAB" "$TMP/args.lua" > "$TMP/args.out" 2> "$TMP/args.err" & pid=$!
for _ in $(seq 200); do grep -q started "$TMP/args.out" 2> /dev/null && break; sleep 0.05; done
kill -INT "$pid"; wait "$pid"; rc=$?
check "Ctrl-C in Lua code: exit 130 ($rc)" [ "$rc" -eq 130 ]

# a long exact-steps simulation and the plan search stop on Ctrl-C (C loops poll the flag)
cat > "$TMP/exact.lua" <<LUA
io.stdout:write("started\n"); io.stdout:flush()
hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, batch = 1, input = 16,
              output = 1e9, exact_steps = true, ignore_memory = true }
print("finished")
LUA
"$HBDLAB" "$TMP/exact.lua" > "$TMP/exact.out" 2> "$TMP/exact.err" & pid=$!
for _ in $(seq 200); do grep -q started "$TMP/exact.out" 2> /dev/null && break; sleep 0.05; done
sleep 0.5
kill -INT "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
stopped=$(kill -0 "$pid" 2> /dev/null && echo no || echo yes)
kill -KILL "$pid" 2> /dev/null; wait "$pid"; rc=$?
check "exact steps with output = 1e9 stop on Ctrl-C within 10 s (stopped: $stopped)" [ "$stopped" = yes ]
check "exact steps stopped by Ctrl-C exit 130 ($rc)" [ "$rc" -eq 130 ]
# and when the job does not fit, the memory check fails before any step is taken
out=$(timeout 20 "$HBDLAB" -e 'print(pcall(hl.simulate, { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 },
      batch = 1, input = 16, output = 1e9, exact_steps = true }))' 2>&1); rc=$?
check "exact steps, output 1e9, no fit: the memory error at once ($rc): $out" contains "$out" "does not fit HBM"
finish

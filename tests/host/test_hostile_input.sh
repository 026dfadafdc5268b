# Hostile inputs that need a process of their own (an environment variable, a FIFO,
# a file that is not a text file): each must fail with a message naming the problem,
# and never crash or hang. Issue 14; docs/RELIABILITY.md lists each case.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1

# ---- preset 'base' cycles: today a stack overflow (exit 139) ----
P=$TMP/presets
mkdir -p "$P/gpus" "$P/models" "$P/clusters"
echo '{"base": "selfish", "name": "selfish"}' > "$P/gpus/selfish.json"
echo '{"base": "ping", "name": "pong"}' > "$P/gpus/pong.json"
echo '{"base": "pong", "name": "ping"}' > "$P/gpus/ping.json"
echo '{"base": "m-self", "name": "m-self"}' > "$P/models/m-self.json"
echo '{"base": "m-b", "name": "m-a"}' > "$P/models/m-a.json"
echo '{"base": "m-a", "name": "m-b"}' > "$P/models/m-b.json"
echo '{"gpu": "ping", "gpus": 8, "hbd": 8, "name": "loop"}' > "$P/clusters/loop.json"
# a long but acyclic chain is fine up to 16 presets
prev=h100-sxm
for i in $(seq 1 20); do echo "{\"base\": \"$prev\", \"name\": \"chain$i\"}" > "$P/gpus/chain$i.json"; prev=chain$i; done
expect_fail "gpu preset based on itself" "'base' cycle selfish -> selfish" env HBDLAB_PRESETS=$P "$HBDLAB" -e 'hl.gpu "selfish"'
expect_fail "gpu presets based on each other" "'base' cycle ping -> pong -> ping" env HBDLAB_PRESETS=$P "$HBDLAB" -e 'hl.gpu "ping"'
expect_fail "model preset based on itself" "'base' cycle m-self -> m-self" env HBDLAB_PRESETS=$P "$HBDLAB" -e 'hl.model "m-self"'
expect_fail "model presets based on each other" "'base' cycle m-a -> m-b -> m-a" env HBDLAB_PRESETS=$P "$HBDLAB" -e 'hl.model "m-a"'
expect_fail "cluster whose gpu preset cycles" "'base' cycle ping -> pong -> ping" env HBDLAB_PRESETS=$P "$HBDLAB" -e 'hl.cluster "loop"'
expect_fail "simulate with a cycling cluster" "'base' cycle" env HBDLAB_PRESETS=$P "$HBDLAB" -e 'hl.simulate { model = "m-a", cluster = "loop" }'
check "a 15-deep base chain loads" env HBDLAB_PRESETS=$P "$HBDLAB" -e 'assert(hl.gpu("chain15").name == "chain15")'
expect_fail "a 20-deep base chain is refused" "'base' chain deeper than 16" env HBDLAB_PRESETS=$P "$HBDLAB" -e 'hl.gpu "chain20"'

# ---- files that are not regular text files: refused before reading ----
mkfifo "$TMP/fifo.json"
mkdir -p "$TMP/dir.json" "$TMP/hfdir"
expect_fail "eval a FIFO (today: waits for a writer forever)" "not a regular file (a FIFO)" "$HBDLAB" eval "$TMP/fifo.json"
expect_fail "eval a directory" "not a regular file (a directory)" "$HBDLAB" eval "$TMP/dir.json"
expect_fail "eval /dev/zero (today: reads without end)" "not a regular file (a character device)" "$HBDLAB" eval /dev/zero
expect_fail "from_hf on a FIFO" "not a regular file (a FIFO)" "$HBDLAB" -e "hl.model.from_hf '$TMP/fifo.json'"
expect_fail "gpu JSON file that is a FIFO" "not a regular file (a FIFO)" "$HBDLAB" -e "hl.gpu '$TMP/fifo.json'"
expect_fail "read_csv of /dev/zero" "not a regular file" "$HBDLAB" -e "hl.rows.read_csv '/dev/zero'"
mkfifo "$P/gpus/fifo.json"
expect_fail "preset file that is a FIFO" "not a regular file (a FIFO)" env HBDLAB_PRESETS=$P "$HBDLAB" -e 'hl.gpu "fifo"'
# the serve trace, calibrate's cases and a notebook were read with io.open: a FIFO waited for a
# writer forever, /dev/zero filled memory, a directory read as an empty trace
SV="hl.serve { model = 'llama-3.1-8b', cluster = 'hgx-h100', parallel = { tp = 1 }, trace = "
expect_fail "serve trace that is a FIFO" "field 'trace': cannot read $TMP/fifo.json: not a regular file (a FIFO)" \
    "$HBDLAB" -e "$SV'$TMP/fifo.json' }"
expect_fail "serve trace that is a directory" "field 'trace': cannot read $TMP/dir.json: not a regular file (a directory)" \
    "$HBDLAB" -e "$SV'$TMP/dir.json' }"
expect_fail "calibrate a FIFO" "cannot read $TMP/fifo.json: not a regular file (a FIFO)" "$HBDLAB" calibrate "$TMP/fifo.json"
expect_fail "calibrate a directory" "cannot read $TMP/dir.json: not a regular file (a directory)" \
    "$HBDLAB" calibrate "$TMP/dir.json"
# a cases file that is an array, or has a key calibrate does not know (it was ignored: a typo
# such as "bound" silently fitted with no bounds given)
echo '[1, 2]' > "$TMP/array.json"
expect_fail "calibrate an array" "expected a JSON object {cases, params, bounds}, got an array" "$HBDLAB" calibrate "$TMP/array.json"
echo '{"cases": [], "params": ["eff_gemm"], "bonds": {}}' > "$TMP/typo.json"
expect_fail "calibrate with an unknown key" "unknown field 'bonds'" "$HBDLAB" calibrate "$TMP/typo.json"
mkfifo "$TMP/fifo.md"
expect_fail "notebook that is a FIFO" "cannot read $TMP/fifo.md: not a regular file (a FIFO)" "$HBDLAB" notebook "$TMP/fifo.md"

# ---- input size cap: 64 MiB by default, HBDLAB_MAX_INPUT_BYTES sets it ----
printf '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "batch": 8, "parallel": {"tp": 8}}' > "$TMP/small.json"
check "eval under the cap runs" env HBDLAB_MAX_INPUT_BYTES=1000 "$HBDLAB" eval "$TMP/small.json" > /dev/null
expect_fail "eval over a configured cap" "more than the input limit of 50 bytes (HBDLAB_MAX_INPUT_BYTES)" \
    env HBDLAB_MAX_INPUT_BYTES=50 "$HBDLAB" eval "$TMP/small.json"
truncate -s 65M "$TMP/big.json"
expect_fail "eval over the 64 MiB default cap" "68157440 bytes is more than the input limit of 67108864 bytes" \
    "$HBDLAB" eval "$TMP/big.json"
expect_fail "stdin over the cap" "more than the input limit of 50 bytes" \
    sh -c "HBDLAB_MAX_INPUT_BYTES=50 '$HBDLAB' eval - < '$TMP/small.json'"

# ---- HF configs: duplicate keys, trailing NUL garbage ----
hf=tests/data/hf/llama-3.1-8b.json
if [ -f "$hf" ]; then
    sed 's/"num_hidden_layers": *\([0-9]*\)/"num_hidden_layers": \1, "num_hidden_layers": 2/' "$hf" > "$TMP/hfdir/config.json"
    expect_fail "HF config with a duplicate key" "duplicate key 'num_hidden_layers'" \
        "$HBDLAB" -e "hl.model.from_hf '$TMP/hfdir'"
    { cat "$hf"; printf '\0\0garbage{'; } > "$TMP/hfdir/config.json"
    expect_fail "HF config with trailing NUL garbage" "a NUL byte (not a text file)" \
        "$HBDLAB" -e "hl.model.from_hf '$TMP/hfdir'"
else
    bad "missing $hf"
fi

# ---- JSON booleans: only true/false ----
for v in 0 '"false"' 1 '"no"' null; do
    printf '{"model": "llama-3.1-405b", "cluster": "hgx-h100", "batch": 8, "parallel": {"tp": 8}, "ignore_memory": %s}' "$v" > "$TMP/b.json"
    if [ "$v" = null ]; then
        # null is absent: the 405B model does not fit 8 H100s, which must still be reported
        expect_fail "eval ignore_memory null" "does not fit HBM" "$HBDLAB" eval "$TMP/b.json"
    else
        expect_fail "eval ignore_memory $v" "field 'ignore_memory': expected true or false" "$HBDLAB" eval "$TMP/b.json"
    fi
done
echo '{"base": "h100-sxm", "name": "x", "in_switch_reduce": 0}' > "$P/gpus/boolnum.json"
expect_fail "preset bool field as a number" "'in_switch_reduce': expected true or false, got a number" env HBDLAB_PRESETS=$P "$HBDLAB" -e 'hl.gpu "boolnum"'

# ---- Lua out of memory while a sweep builds its rows: a clean error; nothing leaks (the
# ASan build's leak check runs at exit: the points and axes were lost before the fix) ----
cat > "$TMP/oom.lua" <<'LUA'
local base = { model = "llama-3.1-8b", cluster = "hgx-h100", batch = 8, input = 512, output = 16, parallel = { tp = 8 } }
local inputs = {}
for i = 1, 100000 do inputs[i] = 1e9 + i end -- out of range: failed points, cheap to run
print(pcall(hl.sweep, { base = base, axes = { input = inputs }, progress = false }))
LUA
# 100,000 row views of ~72 bytes of Lua memory need ~7 MB over the ~4 MB of the script and its
# axis values: a 9 MB cap fails while the rows are built (12 MB is enough)
out=$(HBDLAB_TEST_LUA_MEMORY=9000000 "$HBDLAB" "$TMP/oom.lua" 2>&1); rc=$?
check "Lua OOM building sweep rows: a clean error, exit 0 (rc $rc): $out" sh -c "[ $rc -eq 0 ] && echo '$out' | grep -q 'false.*not enough memory'"


# ---- issue 22 item 10: junk in the HBDLAB_* limits was replaced by the default silently ----
# attack pass 7: strtod alone also took a leading space, a sign, hex and inf ('0x10' was 16 bytes)
for v in abc -5 1e999 8GB 0.5 0 " 10" "10 " +10 0x10 0x1p3 inf nan 8e e9; do
    expect_fail "HBDLAB_MAX_INPUT_BYTES=$v is refused, named" "environment variable HBDLAB_MAX_INPUT_BYTES: '$v' is not allowed" \
        env HBDLAB_MAX_INPUT_BYTES="$v" "$HBDLAB" eval "$TMP/small.json"
    expect_fail "HBDLAB_SWEEP_MEMORY_BYTES=$v is refused, named" "environment variable HBDLAB_SWEEP_MEMORY_BYTES: '$v'" \
        env HBDLAB_SWEEP_MEMORY_BYTES="$v" "$HBDLAB" -e "hl.sweep { base = { model = 'llama-3.1-8b', cluster = 'hgx-h100',
            parallel = { tp = 8 } }, axes = { batch = { 1 } }, progress = false }"
    expect_fail "HBDLAB_SERVE_MEMORY_BYTES=$v is refused, named" "environment variable HBDLAB_SERVE_MEMORY_BYTES: '$v'" \
        env HBDLAB_SERVE_MEMORY_BYTES="$v" "$HBDLAB" -e "hl.serve { model = 'llama-3.1-8b', cluster = 'hgx-h100',
            parallel = { tp = 8 }, rate = 1, requests = 5 }"
done
expect_fail "HBDLAB_TEST_LUA_MEMORY=abc is refused, named" "environment variable HBDLAB_TEST_LUA_MEMORY: 'abc'" \
    env HBDLAB_TEST_LUA_MEMORY=abc "$HBDLAB" -e "print(1)"
expect_fail "a junk limit's control bytes are not echoed raw" "'a?[31m' is not allowed" \
    env HBDLAB_MAX_INPUT_BYTES="$(printf 'a\033[31m')" "$HBDLAB" eval "$TMP/small.json"
check "a valid limit in exponent form is read (8e9)" env HBDLAB_SWEEP_MEMORY_BYTES=8e9 "$HBDLAB" -e "hl.sweep { base = {
    model = 'llama-3.1-8b', cluster = 'hgx-h100', parallel = { tp = 8 } }, axes = { batch = { 1 } }, progress = false }"
# the function-form sweep is held to the same budget (it had none): 1,000 points of 2 axes need ~0.3 MB
expect_fail "a function-form sweep over HBDLAB_SWEEP_MEMORY_BYTES is refused before it runs" \
    "over the sweep memory budget of 1e-05 GB (HBDLAB_SWEEP_MEMORY_BYTES)" \
    env HBDLAB_SWEEP_MEMORY_BYTES=10000 "$HBDLAB" -e "local v = {} for i = 1, 1000 do v[i] = i end
        hl.sweep({ a = v, b = { 1 } }, function() error('ran') end)"


# ---- issue 22 item 10: override files were listed by hl.gpus() but never read when their name
# had upper case or '_' ("H100-SXM.json" passed over for the embedded preset; "my_gpu.json"
# reported as "unknown gpu preset 'my_gpu' (did you mean 'my_gpu'?)") ----
O="$TMP/overrides"
mkdir -p "$O/gpus" "$O/models"
sed 's/"eff_gemm": *[0-9.]*/"eff_gemm": 0.5/' "$HBDLAB_SOURCE_DIR/core/presets/gpus/h100-sxm.json" > "$O/gpus/H100-SXM.json"
echo '{"base": "h100-sxm", "name": "my gpu", "eff_gemm": 0.25}' > "$O/gpus/my_gpu.json"
echo '{"base": "llama-3.1-8b", "name": "Tiny", "layers": 2}' > "$O/models/Tiny_Llama.json"
out=$(HBDLAB_PRESETS=$O "$HBDLAB" -e 'print(hl.gpu("H100-SXM").eff_gemm, hl.gpu("h100").eff_gemm, hl.gpu("my_gpu").eff_gemm,
    hl.gpu("MY-GPU").eff_gemm, hl.model("tiny-llama").layers, hl.simulate { model = "Tiny_Llama",
    cluster = { gpu = "H100-SXM", gpus = 1, hbd = 1 } }.ttft_s > 0)' 2>&1)
check "an override file named in upper case or with '_' is read ($out)" [ "$out" = "0.5	0.5	0.25	0.25	2	true" ]
out=$(HBDLAB_PRESETS=$O "$HBDLAB" -e 'print(table.concat(hl.gpus(), " "))' 2>&1)
check "listed under the name it is found by ($out)" contains "$out" " my-gpu "
check "listed once ($out)" [ "$(echo "$out" | tr ' ' '\n' | grep -c '^h100-sxm$')" -eq 1 ]
cp "$O/gpus/H100-SXM.json" "$O/gpus/h100_sxm.json"
expect_fail "two override files naming one preset are refused, both named" \
    "two override files name gpu preset 'h100-sxm': " env HBDLAB_PRESETS=$O "$HBDLAB" -e 'hl.gpu "H100-SXM"'


# ---- issue 22 item 10: an error message quoting user text wrote its escape sequences raw ----
"$HBDLAB" -e 'hl.gpu("x\27[2J\27]0;pwned\7")' 2> "$TMP/esc.err"
check "an error quoting a name has no raw control byte" sh -c "! grep -q \"\$(printf '\\033')\" '$TMP/esc.err'"
check "it shows the name escaped ($(head -c 200 "$TMP/esc.err"))" grep -qF 'x\27[2J\27]0;pwned\7' "$TMP/esc.err"
out=$(printf 'print(string.format("%%s", hl.gpu("H100-SXM"):with { name = "n\\27[5m" }))\n' | "$HBDLAB" - 2>&1)
check "a script printing an object shows its name escaped ($out)" contains "$out" 'gpu n\27[5m:'

finish

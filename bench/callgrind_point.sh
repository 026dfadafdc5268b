#!/usr/bin/env bash
# usage: bench/callgrind_point.sh BINARY -> callgrind instructions per point of the bench's phase-5 sweep (20000 - 5 points, one thread)
# Scratch files (script, CSV, profile) go to $CALLGRIND_DIR or a fresh temp dir, so concurrent runs never share them;
# the profile for callgrind_annotate is $dir/pt_20000.cg, printed on the last line.
bin=$1
dir=${CALLGRIND_DIR:-$(mktemp -d)}
run() { local n=$1; cat > $dir/pt_$n.lua <<LUA
local m = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 }
local inputs = {}
for i = 1, $n // 5 do inputs[i] = 1024 + i end
local n = hl.sweep_to_csv { base = { model = m, cluster = hl.cluster { gpu = "B200", gpus = 128, hbd = 64 },
  precision = "fp8", batch = 16, output = 1024, parallel = { tp = 8, ep = 16 } },
  axes = { { "hbd", { 8, 16, 32, 64, 128 } }, { "input", inputs } }, out = "$dir/pt_$n.csv", threads = 1 }
LUA
valgrind --tool=callgrind --callgrind-out-file=$dir/pt_$n.cg "$bin" $dir/pt_$n.lua >/dev/null 2>$dir/pt_$n.err
grep -o 'Collected : [0-9]*' $dir/pt_$n.err | awk '{print $3}'; }
a=$(run 20000); b=$(run 5); echo "$a $b" | awk '{printf "instr/pt %.0f\n", ($1-$2)/19995}'
echo "profile: $dir/pt_20000.cg"

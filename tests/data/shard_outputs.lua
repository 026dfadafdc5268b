-- Every kind of output a script can write, for the --shard tests (issue 22): a C sweep's
-- rows as CSV, JSON and JSON Lines, a figure, a trace, a sweep of 2 points (an empty block
-- in 4 shards), rows that are not a sweep's block, and a filtered sweep. arg[1] is the
-- output folder, arg[2] ("a" or "b") chooses one of two sweeps with the same columns.
local out = assert(arg[1], "usage: shard_outputs.lua OUTDIR [a|b]")
local which = arg[2] or "a"
local base = { model = "llama-3.1-8b", cluster = "hgx-h100", precision = "fp8", output = 64, parallel = { tp = 8 } }
local batches = which == "a" and { 1, 2, 4, 8, 16, 32, 64, 128 } or { 3, 5, 7, 9, 11, 13, 15, 17 }
local rows = hl.sweep { base = base, axes = { batch = batches }, progress = false }
local cols = { "batch", "ttft_s", "tpot_s" }
hl.rows.write_csv(rows, out .. "/rows.csv", cols)
hl.rows.write_csv(rows, out .. "/copy.csv", cols)
hl.rows.write(rows, out .. "/rows.json")
hl.rows.write(rows, out .. "/rows.jsonl")
hl.rows.write_csv(hl.rows.filter(rows, function(r) return r.batch % 4 == 0 end), out .. "/filtered.csv", cols)
local two = hl.sweep({ x = { 1, 2 } }, function(p) return { y = p.x * 10 } end)
hl.rows.write_csv(two, out .. "/two.csv")
hl.rows.write_csv({ { a = 1 }, { a = 2 } }, out .. "/same.csv")
if #rows > 0 then
  hl.plot.line { data = rows, x = "batch", y = "tpot_s", out = out .. "/fig.png" }
end
hl.trace.write(hl.simulate(base), out .. "/trace.json")
print("rows " .. #rows)

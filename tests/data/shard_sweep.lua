-- A script with three sweeps of uneven sizes, for the --shard and MPI tests:
-- a C sweep written with hl.rows.write_csv, a streamed hl.sweep_to_csv, and a
-- function-form sweep. arg[1] is the output folder.
local out = assert(arg[1], "usage: shard_sweep.lua OUTDIR")
local base = { model = "llama-3.1-8b", cluster = "hgx-h100", precision = "fp8", output = 64 }
-- 3 x 5 x 7 = 105 points; hbd = 3 does not divide 8 GPUs: error rows in the CSV
local rows = hl.sweep { base = base, axes = { { "hbd", { 1, 2, 3, 4, 8 } }, { "batch", { 1, 2, 4, 8, 16, 32, 64 } },
  { "input", { 256, 1024, 4096 } } }, progress = false }
hl.rows.write_csv(rows, out .. "/rows.csv", { "hbd", "batch", "input", "ttft_s", "tpot_s", "usd_per_mtok", "error" })
-- default columns: shards 0 and 3 have no failing point, 1 and 2 have (hbd 3); the files
-- must have the same columns all the same (every result field and `error`)
hl.rows.write_csv(rows, out .. "/rows_all.csv")
hl.sweep_to_csv { base = base, axes = { hbd = { 1, 2, 4, 8 }, batch = { 1, 3, 9, 27, 81 }, precision = { "fp8", "bf16" } },
  out = out .. "/stream.csv" }
local fn_rows = hl.sweep({ x = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 } }, function(p)
  return { square = p.x * p.x, half = p.x / 2, odd = p.x % 2 == 1 }
end)
hl.rows.write_csv(fn_rows, out .. "/fn.csv", { "x", "square", "half", "odd" })
print(string.format("rows %d, fn rows %d", #rows, #fn_rows))

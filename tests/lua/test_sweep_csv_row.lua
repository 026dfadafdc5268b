-- hl.sweep_to_csv writes a good point's row in one piece when every axis is a number and every
-- column a number, integer or boolean (sweep_csv.c direct_row); other rows go cell by cell. Both
-- must give the same cells: checked here against hl.sweep's rows of the same points (numbers
-- read back to the same double, integers in full, booleans true/false, "max" for batch 0, an
-- empty error cell) and a failed point's row (empty cells, the error text).
local T = require "testlib"
local hl = require "hbdlab"

local cols = { "ttft_s", "decode_tps", "prefill.flops", "memory.per_gpu_bytes", "memory.fits", "parallel.tp", "batch",
               "usd_per_mtok" }
-- tp 3 does not divide 64 heads: an error row, written cell by cell
local spec = { base = { model = "llama-3.1-70b", cluster = "hgx-h100", input = 1000, output = 64 },
               axes = { { "tp", { 2, 3, 8 } }, { "batch", { "max", 8, 48 } } }, columns = cols }

local function split(line)
  local cells = {}
  for cell in (line .. ","):gmatch("(.-),") do cells[#cells + 1] = cell end
  return cells
end

T.test("direct rows: the same cells as the sweep's rows", function()
  local dir = T.scratch()
  local path = dir .. "/s.csv"
  local n = hl.sweep_to_csv(T.merged(spec, { out = path }))
  T.eq(n, 9, "nine points")
  local rows = hl.sweep { base = spec.base, axes = spec.axes }
  local f = assert(io.open(path))
  T.eq(f:read("l"), "tp,batch,ttft_s,decode_tps,prefill.flops,memory.per_gpu_bytes,memory.fits,parallel.tp,batch,usd_per_mtok,error",
    "header")
  local seen_max, seen_error = false, false
  for i = 1, 9 do
    local line = f:read("l")
    local c = split(line)
    local r = rows[i]
    if r.error then
      seen_error = true
      T.eq(line, c[1] .. "," .. c[2] .. ",,,,,,,,," .. r.error, "a failed point: empty cells, then the error")
    else
      T.eq(#c, 11, "cells in " .. line)
      T.eq(c[11], "", "empty error cell")
      T.eq(c[2] == "max", spec.axes[2][2][(i - 1) % 3 + 1] == "max", "batch axis cell " .. c[2])
      seen_max = seen_max or c[2] == "max"
      for k, name in ipairs(cols) do
        local cell, want = c[2 + k], r[name]
        if type(want) == "boolean" then
          T.eq(cell, tostring(want), name)
        elseif math.type(want) == "integer" then
          T.eq(cell, string.format("%d", want), name)
        else
          T.eq(string.format("%a", tonumber(cell)), string.format("%a", want), name .. " reads back: " .. cell)
        end
      end
    end
  end
  f:close()
  os.execute("rm -rf '" .. dir .. "'")
  T.ok(seen_max and seen_error, "a max and a failed point were written")
end)

-- memory.fits = false in a good row: only a job with ignore_memory = true runs a point that does
-- not fit (else the point fails and its row goes cell by cell), so this is the one sweep that
-- reaches direct_row's "false" cell. Llama-3.1-70B TP8 on H100 (80 GB): batch 1 and 64 fit,
-- 512 and 2048 at 4,064 tokens of context do not (their KV alone is 8 x 512 x 4064 x 2 x 128 x 2 B
-- a layer x 80 layers / 8 GPUs = 85 GB a GPU at batch 512).
T.test("direct rows: memory.fits false, and the cells after it", function()
  local dir = T.scratch()
  local path = dir .. "/f.csv"
  local f_spec = { base = { model = "llama-3.1-70b", cluster = "hgx-h100", input = 4000, output = 64, ignore_memory = true,
                            parallel = { tp = 8 } },
                   axes = { { "batch", { 1, 64, 512, 2048 } } },
                   columns = { "memory.fits", "ttft_s", "memory.fits", "parallel.tp", "memory.per_gpu_bytes" } }
  T.eq(hl.sweep_to_csv(T.merged(f_spec, { out = path })), 4, "four points")
  local rows = hl.sweep { base = f_spec.base, axes = f_spec.axes }
  local f = assert(io.open(path))
  T.eq(f:read("l"), "batch,memory.fits,ttft_s,memory.fits,parallel.tp,memory.per_gpu_bytes,error", "header")
  local fits = {}
  for i = 1, 4 do
    local line = f:read("l")
    local c = split(line)
    local r = rows[i]
    T.ok(r.error == nil, "point " .. i .. " runs")
    T.eq(#c, 7, "cells in " .. line)
    T.eq(c[2], tostring(r["memory.fits"]), "fits, " .. line)
    T.eq(c[4], c[2], "the second fits cell")
    T.eq(string.format("%a", tonumber(c[3])), string.format("%a", r.ttft_s), "ttft_s after a fits cell: " .. c[3])
    T.eq(c[5], "8", "tp after the second fits cell")
    T.eq(c[6], string.format("%d", r["memory.per_gpu_bytes"]), "memory.per_gpu_bytes")
    T.eq(c[7], "", "empty error cell")
    fits[i] = c[2]
  end
  f:close()
  os.execute("rm -rf '" .. dir .. "'")
  T.eq(table.concat(fits, " "), "true true false false", "batch 1 and 64 fit, 512 and 2048 do not")
end)

-- Friendly-unit columns (ttft_ms, tpot_ms: the field times 1e3) among unscaled ones: direct_row writes
-- a run of number columns in one call, each cell with its own column's scale. A run mixing scales 1
-- and 1e3 (and one after a boolean) must read back to hl.sweep's values: ttft_ms = ttft_s * 1e3 there.
T.test("direct rows: each column of a run keeps its own scale", function()
  local dir = T.scratch()
  local path = dir .. "/u.csv"
  local u_spec = { base = { model = "llama-3.1-70b", cluster = "hgx-h100", input = 1000, output = 64, parallel = { tp = 8 } },
                   axes = { { "batch", { 1, 8 } } },
                   columns = { "ttft_s", "ttft_ms", "tpot_ms", "tpot_s", "memory.fits", "tpot_ms", "ttft_s" } }
  T.eq(hl.sweep_to_csv(T.merged(u_spec, { out = path })), 2, "two points")
  local rows = hl.sweep { base = u_spec.base, axes = u_spec.axes }
  local f = assert(io.open(path))
  T.eq(f:read("l"), "batch,ttft_s,ttft_ms,tpot_ms,tpot_s,memory.fits,tpot_ms,ttft_s,error", "header")
  for i = 1, 2 do
    local c = split(f:read("l"))
    local r = rows[i]
    T.ok(r.error == nil, "point " .. i .. " runs")
    T.ok(r.ttft_ms > r.ttft_s * 999, "ttft_ms is ttft_s in milliseconds")
    for k, name in ipairs(u_spec.columns) do
      if name ~= "memory.fits" then
        T.eq(string.format("%a", tonumber(c[1 + k])), string.format("%a", r[name]), name .. " reads back: " .. c[1 + k])
      end
    end
    T.eq(c[6], "true", "memory.fits")
  end
  f:close()
  os.execute("rm -rf '" .. dir .. "'")
end)

T.done()

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

T.done()

-- batch = "max" and parallel = "auto" in the C sweep (base and axes) give, per
-- point, what hl.simulate gives; sweeps reject unknown options.
local T = require "testlib"
local hl = require "hbdlab"

local base = { model = "llama-3.1-70b", cluster = "hgx-h100", precision = "fp8", input = 2048, output = 256 }
local function with(t) return T.merged(base, t) end

T.test("batch = 'max' in the base: each point's batch is the largest that fits", function()
  local rows = hl.sweep { base = with { batch = "max", parallel = { tp = 8 } }, axes = { input = { 1024, 8192 } }, strict = true }
  T.eq(#rows, 2, "two points")
  for _, r in ipairs(rows) do
    local s = hl.simulate(with { batch = "max", parallel = { tp = 8 }, input = r.input })
    T.eq(r.batch, s.batch, "batch at input " .. r.input)
    T.near(r.tps_per_gpu, s.tps_per_gpu, 1e-12, "tps_per_gpu at input " .. r.input)
  end
  T.ok(rows[1].batch > rows[2].batch, "a longer prompt fits fewer sequences")
end)

T.test("parallel = 'auto' in the base, batch axis with 'max': as hl.simulate", function()
  local rows = hl.sweep { base = with { parallel = "auto" }, axes = { batch = { 1, 64, "max" } }, strict = true }
  T.eq(#rows, 3, "three points")
  for i, b in ipairs { 1, 64, "max" } do
    local s = hl.simulate(with { parallel = "auto", batch = b })
    T.eq(rows[i].batch, s.batch, "batch " .. tostring(b))
    T.eq(rows[i]["parallel.tp"], s.parallel.tp, "tp at batch " .. tostring(b))
    T.eq(rows[i]["parallel.dp"], s.parallel.dp, "dp at batch " .. tostring(b))
    T.near(rows[i].tps_per_gpu, s.tps_per_gpu, 1e-12, "tps_per_gpu at batch " .. tostring(b))
  end
end)

T.test("a parallel axis switches the search per point", function()
  local rows = hl.sweep { base = with { batch = 64, parallel = { tp = 8 } }, axes = { parallel = { "fixed", "auto" } },
                          strict = true }
  T.eq(rows[1]["parallel.tp"], 8, "fixed keeps the base mapping")
  local s = hl.simulate(with { batch = 64, parallel = "auto" })
  T.eq(rows[2]["parallel.tp"], s.parallel.tp, "auto searches")
  T.near(rows[2].tps_per_gpu, s.tps_per_gpu, 1e-12, "auto point = hl.simulate")
  T.ok(rows[2].tps_per_gpu >= rows[1].tps_per_gpu, "the search is at least as good as the fixed mapping")
  T.raises(function() hl.sweep { base = with { batch = 8 }, axes = { parallel = { "fast" } } } end, "'fast' is not allowed")
end)

T.test("sweep_to_csv with batch = 'max' writes the rows hl.sweep gives", function()
  local out = os.tmpname()
  local axes = { { "input", { 1024, 4096 } }, { "batch", { 16, "max" } } }
  local n = hl.sweep_to_csv { base = with { parallel = { tp = 8 } }, axes = axes, out = out,
                              columns = { "batch", "tps_per_gpu" } }
  local text = io.open(out):read("a")
  os.remove(out)
  T.eq(n, 4, "rows written")
  local rows = hl.sweep { base = with { parallel = { tp = 8 } }, axes = axes }
  local lines = {}
  for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
  T.eq(lines[1], "input,batch,batch,tps_per_gpu,error", "header: the axis, then the batch as run")
  T.ok(lines[3]:match("^1024,max,"), "an axis value 'max' is written as max: " .. lines[3])
  for i, r in ipairs(rows) do
    local input, batch_axis, batch, tps, err = lines[i + 1]:match("^([^,]*),([^,]*),([^,]*),([^,]*),(.*)$")
    T.eq(batch_axis, i % 2 == 0 and "max" or "16", "row " .. i .. " batch axis")
    -- every number reads back to the very double hl.sweep gives
    T.eq(tonumber(input), r.input, "row " .. i .. " input")
    T.eq(tonumber(batch), r.batch, "row " .. i .. " batch")
    T.eq(tonumber(tps), r.tps_per_gpu, "row " .. i .. " tps_per_gpu")
    T.eq(err, "", "row " .. i .. " error cell")
  end
end)

T.test("unknown options are errors naming the allowed ones", function()
  T.raises(function() hl.sweep_to_csv { base = base, axes = { batch = { 1 } }, out = "x.csv", thread = 2 } end,
    "hl.sweep_to_csv: unknown option 'thread' (allowed: base, axes, out, columns, zip, threads, progress)")
  T.raises(function() hl.sweep { base = base, axes = { batch = { 1 } }, colums = { "x" } } end,
    "hl.sweep: unknown option 'colums'")
end)

T.done()

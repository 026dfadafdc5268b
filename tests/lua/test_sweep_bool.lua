-- Boolean fields as sweep axes (eplb = {true, false}): hl.sweep, hl.sweep_to_csv and
-- hl.serve_sweep run each value as hl.simulate / hl.serve would with that field set, rows
-- carry the booleans; booleans on a field that is not boolean are refused naming it.
local T = require "testlib"
local hl = require "hbdlab"

-- a skewed MoE on EP 8, where EPLB's placement changes the busiest rank (so the two values differ)
local base = { model = "qwen3-30b-a3b", cluster = "hgx-h200", parallel = { tp = 1, ep = 8, dp = 8 }, batch = 8,
               input = 1024, output = 64, routing_skew = 1 }
local function with(t) return T.merged(base, t) end

T.test("hl.sweep: a boolean axis equals hl.simulate at each value", function()
  local rows = hl.sweep { base = base, axes = { eplb = { true, false } } }
  T.eq(#rows, 2, "two points")
  T.eq(rows[1].eplb, true, "row 1 carries the boolean true")
  T.eq(rows[2].eplb, false, "row 2 carries the boolean false")
  T.near(rows[1].ttft_s, hl.simulate(with { eplb = true }).ttft_s, 1e-12, "eplb = true")
  T.near(rows[2].ttft_s, hl.simulate(with { eplb = false }).ttft_s, 1e-12, "eplb = false")
  T.ok(rows[1].ttft_s ~= rows[2].ttft_s, "the axis has an effect here")
end)

T.test("hl.sweep_to_csv: a boolean axis is written as 1/0", function()
  local path = os.tmpname()
  local n = hl.sweep_to_csv { base = base, axes = { eplb = { true, false } }, out = path, columns = { "ttft_s" } }
  T.eq(n, 2, "two rows written")
  local f = assert(io.open(path))
  local text = f:read("a")
  f:close()
  os.remove(path)
  T.ok(text:find("^eplb,ttft_s,error\n1,") and text:find("\n0,"), text)
end)

T.test("booleans on a field that is not boolean are refused, naming it", function()
  T.raises(function() hl.sweep { base = base, axes = { tp = { true, false } } } end,
    "sweep axis 'tp': true/false given, but 'tp' is a field of type integer")
  T.raises(function() hl.sweep { base = base, axes = { eplb = { true, 0 } } } end,
    "sweep axis 'eplb': values must all be true or false")
end)

T.test("hl.serve_sweep: a boolean serve field as an axis", function()
  local sbase = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 1, hbd = 1 },
                  parallel = { tp = 1 }, rate = 5, requests = 20 }
  local rows = hl.serve_sweep { base = sbase, axes = { chunked_prefill = { true, false } } }
  T.eq(#rows, 2, "two points")
  local off = {}
  for k, v in pairs(sbase) do off[k] = v end
  off.chunked_prefill = false
  T.eq(rows[2].chunked_prefill, false, "row carries false")
  T.near(rows[2]["ttft_s.mean"], hl.serve(off).ttft_s.mean, 1e-12, "false is applied, not dropped")
  T.near(rows[1]["ttft_s.mean"], hl.serve(sbase).ttft_s.mean, 1e-12, "true (the default)")
end)

T.done()

-- spec_accept as a per-position vector ({a1, ..., a_gamma}: draft position k accepted with
-- probability a_k given positions < k were; docs/MODEL.md 6.2) through hl.simulate, the sweep
-- memos (a job differing only in the vector must not hit another's memo), hl.sweep's axis
-- refusals, hl.serve and hl.serve_sweep.
local T = require "testlib"
local hl = require "hbdlab"

local base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 1, gpus = 1 }, batch = 8,
               input = 1024, output = 257, spec_tokens = 3 }
local function with(t) return T.merged(base, t) end

T.test("hl.simulate: E = 1 + a1 + a1 a2 + a1 a2 a3, by hand", function()
  -- {0.9, 0.8, 0.6}: 1 + 0.9 + 0.72 + 0.432 = 3.052; {0.6, 0.8, 0.9}: 1 + 0.6 + 0.48 + 0.432 = 2.512
  T.near(hl.simulate(with { spec_accept = { 0.9, 0.8, 0.6 } }).tokens_per_step, 3.052, 1e-12, "falling")
  T.near(hl.simulate(with { spec_accept = { 0.6, 0.8, 0.9 } }).tokens_per_step, 2.512, 1e-12, "rising")
  -- the scalar keeps its i.i.d. meaning: 1 + 0.8 + 0.64 + 0.512 = 2.952
  T.near(hl.simulate(with { spec_accept = 0.8 }).tokens_per_step, 2.952, 1e-12, "scalar")
end)

T.test("bad vectors are refused naming the field, the entry and what is allowed", function()
  T.raises(function() hl.simulate(with { spec_accept = { 0.9, 0.8 } }) end,
    "field 'spec_accept': a vector of 2 positions with spec_tokens = 3")
  T.raises(function() hl.simulate(with { spec_accept = { 0.9, 0, 0.5 } }) end, "entry 2 is 0 (allowed: 0 < p <= 1")
  T.raises(function() hl.simulate(with { spec_accept = { 0.9, 1.01, 0.5 } }) end, "entry 2 is 1.01")
  T.raises(function() hl.simulate(with { spec_accept = { 0.9, "x", 0.5 } }) end, "entry 2 is a string")
  T.raises(function() hl.simulate(with { spec_accept = {} }) end, "a vector of 0 entries (allowed: 1 to 16")
  T.raises(function() hl.simulate(with { spec_accept = { 0 / 0, 0.5, 0.5 } }) end, "entry 1 is")
end)

T.test("two jobs differing only in the vector give different results through sweeps", function()
  local a, b = { 0.9, 0.8, 0.6 }, { 0.6, 0.8, 0.9 }
  local axes = { input = { 512, 1024 } }
  local direct = {}
  for i, n in ipairs(axes.input) do direct[i] = hl.simulate(with { spec_accept = b, input = n }) end
  -- threads = 1: both sweeps run on this thread, one after the other, so the decode and job-class
  -- memos of the first are there when the second starts
  local ra = hl.sweep { base = with { spec_accept = a }, axes = axes, threads = 1 }
  local rb = hl.sweep { base = with { spec_accept = b }, axes = axes, threads = 1 }
  for i = 1, 2 do
    T.near(rb[i].tokens_per_step, 2.512, 1e-12, "the second sweep's E")
    T.ok(rb[i].tpot_s > ra[i].tpot_s * 1.1, "fewer tokens a pass: a longer TPOT")
    T.near(rb[i].tpot_s, direct[i].tpot_s, 1e-12, "the sweep equals hl.simulate of its job")
    T.near(rb[i].decode_tps, direct[i].decode_tps, 1e-12, "decode_tps")
  end
end)

T.test("the result view's lazy breakdown re-runs the job with its vector", function()
  -- ffn_up_gate runs once per layer per verify pass: 256 tokens / E passes, so its summed time
  -- goes as 1 / E: 3.052 for {0.9, 0.8, 0.6}, 2.512 for {0.6, 0.8, 0.9}
  local function up_gate(v)
    local r = hl.simulate(with { spec_accept = v })
    for _, it in ipairs(r.decode.breakdown) do
      if it.name == "ffn_up_gate" then return it.time_s end
    end
  end
  local a, b = up_gate { 0.9, 0.8, 0.6 }, up_gate { 0.6, 0.8, 0.9 }
  T.near(b / a, 3.052 / 2.512, 1e-12, "verify passes as 1 / E")
end)

T.test("hl.sweep: a vector axis, or a number axis over a vector base, is refused", function()
  T.raises(function() hl.sweep { base = base, axes = { spec_accept = { { 0.9, 0.8, 0.6 } } } } end,
    "sweep axis 'spec_accept': value 1 is a per-position vector")
  T.raises(function() hl.sweep { base = with { spec_accept = { 0.9, 0.8, 0.6 } }, axes = { spec_accept = { 0.7 } } } end,
    "but base gives a per-position vector")
  local rows = hl.sweep { base = base, axes = { spec_accept = { 0.7, 0.8 } } } -- numbers still sweep
  T.near(rows[2].tokens_per_step, 2.952, 1e-12, "a number axis")
end)

local serve = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 1, gpus = 1 }, spec_tokens = 3,
                concurrency = 1, requests = 300, input = 1024, output = 128 }
T.test("hl.serve draws accepted drafts per step from the vector; hl.serve_sweep takes vectors", function()
  local cfg = {}
  for k, v in pairs(serve) do cfg[k] = v end
  cfg.spec_accept = { 0.9, 0.6, 0.3 }
  local r = hl.serve(cfg)
  local job = with { spec_accept = { 0.9, 0.6, 0.3 }, batch = 1, input = 1024, output = 128 }
  local s = hl.simulate(job)
  T.near(s.tokens_per_step, 2.602, 1e-12, "1 + 0.9 + 0.54 + 0.162")
  T.near(r.tpot_s.mean, s.tpot_s, 0.02, "at concurrency 1 the mean TPOT is hl.simulate's")
  cfg.spec_accept = { 0.3, 0.6, 0.9 } -- E = 1 + 0.3 + 0.18 + 0.162 = 1.642: slower
  local r2 = hl.serve(cfg)
  T.ok(r2.tpot_s.mean > 1.3 * r.tpot_s.mean, "the order of the positions matters")
  local b = {}
  for k, v in pairs(serve) do b[k] = v end
  local rows = hl.serve_sweep { base = b, axes = { spec_accept = { { 0.9, 0.6, 0.3 }, { 0.3, 0.6, 0.9 } } } }
  T.eq(rows[1]["tpot_s.mean"], r.tpot_s.mean, "the first vector, as hl.serve")
  T.eq(rows[2]["tpot_s.mean"], r2.tpot_s.mean, "the second vector, as hl.serve")
  -- print(rows) and print(rows[i]) are readable (they printed "table: 0x..."), vectors as numbers
  local text = tostring(rows)
  T.ok(text:find("2 serve_sweep rows", 1, true) and text:find("tpot_s.mean", 1, true)
    and text:find("{0.9, 0.6, 0.3}", 1, true) and text:find("{0.3, 0.6, 0.9}", 1, true), "rows: " .. text)
  local one = tostring(rows[2])
  T.ok(one:find("^{spec_accept = {0.3, 0.6, 0.9}, ") and one:find("tpot_s.mean = ", 1, true), "a row: " .. one)
  T.eq(rows[2].spec_accept[3], 0.9, "the vector's values stay in the row")
end)

T.done()

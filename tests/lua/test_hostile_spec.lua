-- Attack pass 5 (docs/RELIABILITY.md): speculative decoding, sweep axes and trace ids attacked from
-- outside. Each case here was accepted silently, swept the wrong field, or refused a valid run with a
-- message about something else before its fix.
local T = require "testlib"
local hl = require "hbdlab"

local job = { model = "llama-3.1-70b", cluster = "hgx-h100", parallel = { tp = 4, gpus = 4 }, batch = 8,
              input = 1024, output = 65, spec_tokens = 3, spec_accept = 0.8 }
local function with(t) return T.merged(job, t) end

T.test("a spec_accept vector's keys are exactly 1..n", function()
  -- {0.9, 0.8, 0.7, x = 1} ran as {0.9, 0.8, 0.7}, the key dropped, as lists elsewhere are refused
  T.raises(function() hl.simulate(with { spec_accept = { 0.9, 0.8, 0.7, x = 1 } }) end,
    "field 'spec_accept': expected a list {v1, v2, ...}, got a key \"x\"")
  T.raises(function() hl.simulate(with { spec_accept = { [0] = 0.5, 0.9, 0.8, 0.7 } }) end,
    "field 'spec_accept': expected a list")
  T.raises(function() hl.simulate(with { spec_accept = { 0.9, 0.8, 0.7, [1.5] = 1 } }) end,
    "field 'spec_accept': expected a list")
  T.raises(function()
    hl.serve { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 1, gpus = 1 }, rate = 5, requests = 10,
               input = 100, output = 10, spec_tokens = 2, spec_accept = { 0.9, 0.8, y = 2 } }
  end, "field 'spec_accept': expected a list {v1, v2, ...}, got a key \"y\"")
  -- a plain vector still runs: E = 1 + 0.9 + 0.9 * 0.8 + 0.9 * 0.8 * 0.7 = 3.124
  T.near(hl.simulate(with { spec_accept = { 0.9, 0.8, 0.7 } }).tokens_per_step, 3.124, 1e-12, "E of the vector")
end)

T.test("an out-of-range value is shown exactly, not rounded into the allowed range", function()
  -- %g printed 1 + 2^-52 as "1" beside "allowed: 0 < p <= 1", and NaN as "-nan"
  T.raises(function() hl.simulate(with { spec_accept = { 1 + 2 ^ -52, 1, 1 } }) end,
    "entry 1 is 1.0000000000000002 (allowed: 0 < p <= 1")
  T.raises(function() hl.simulate(with { spec_accept = { 0.9, -(0 / 0), 0.7 } }) end, "entry 2 is nan (allowed")
  T.raises(function() hl.gpu("H100-SXM"):with { eff_gemm = 1 + 2 ^ -52 } end,
    "field 'eff_gemm': 1.0000000000000002 is out of range (allowed: 0.01..1)")
end)

T.test("an object axis of hl.sweep is named by what it replaces", function()
  -- axes = {spec_draft_model = {model}} replaced the target's model at every point (an 8B's TPOT
  -- reported for the 70B job), and any other name did the same
  T.raises(function() hl.sweep { base = job, axes = { spec_draft_model = { hl.model("llama-3.1-8b") } } } end,
    "sweep axis 'spec_draft_model': a draft model is a base field of hl.sweep, not an axis")
  T.raises(function() hl.sweep { base = job, axes = { gpu = { hl.model("llama-3.1-8b") } } } end,
    "sweep axis 'gpu': its values are model objects, which only an axis named 'model' takes")
  T.raises(function() hl.sweep { base = job, axes = { foo = { hl.model("llama-3.1-8b") } } } end,
    "sweep axis 'foo': its values are model objects")
  -- preset names said "job: unknown field 'spec_draft_model' (did you mean 'spec_draft_layers'?)"
  T.raises(function() hl.sweep { base = job, axes = { spec_draft_model = { "llama-3.1-8b" } } } end,
    "a draft model is a base field of hl.sweep, not an axis")
  T.raises(function()
    hl.sweep_to_csv { base = job, axes = { spec_draft_model = { "llama-3.1-8b" } }, out = os.tmpname() }
  end, "a draft model is a base field of hl.sweep, not an axis")
  -- the named object axes still sweep
  local rows = hl.sweep { base = job, axes = { model = { hl.model("llama-3.1-8b"), "llama-3.1-70b" } } }
  T.eq(#rows, 2, "a model axis")
  T.near(rows[2].tpot_s, hl.simulate(job).tpot_s, 1e-12, "its second point is the 70B job")
  T.ok(rows[1].tpot_s < rows[2].tpot_s, "the 8B is faster")
end)

T.test("hl.serve with a draft model on DP ranks runs", function()
  -- refused before: "field 'spec_draft_model': field 'batch': 1 sequences do not split over dp = 2
  -- groups": the draft's KV per token was resolved on the instance's job (batch 1) over 2 ranks
  local s = { model = "llama-3.1-8b", cluster = "hgx-h100", requests = 60, rate = 5, input = 256, output = 32,
              seed = 1, spec_tokens = 2, spec_accept = 0.8, spec_draft_model = "llama-3.1-8b" }
  local one = hl.serve(T.merged(s, { parallel = { tp = 1, gpus = 1 } }))
  local two = hl.serve(T.merged(s, { parallel = { tp = 1, gpus = 2 } }))
  -- each DP rank is a GPU like the one-GPU instance's (its weights, the draft's weights and both KVs)
  T.eq(two.kv_blocks_total, 2 * one.kv_blocks_total, "two ranks hold twice the blocks")
  T.ok(two.tpot_s.mean > 0 and two.tpot_s.mean < 1, "a TPOT")
  local four = hl.serve(T.merged(s, { parallel = { tp = 2, gpus = 4 } }))
  T.ok(four.kv_blocks_total > 0, "tp 2 x dp 2 runs")
end)

local dir, file = T.scratch()

T.test("trace ids past 2^53 - 1 are refused, not merged", function()
  -- 9007199254740993 reads as the double 9007199254740992: two conversations became one (the
  -- second request was taken for the first's next turn and given its cached history)
  local base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 1, gpus = 1 }, prefix_cache = true }
  local p = file("big.csv", "arrival_s,input,output,session,turn\n0,100,10,9007199254740993,1\n"
    .. "1,200,10,9007199254740992,2\n")
  T.raises(function() hl.serve(T.merged(base, { trace = p })) end,
    "line 2: session 9007199254740992 (need a whole number in 0..9007199254740991 = 2^53 - 1")
  local j = file("big.jsonl", '{"arrival_s": 0, "input": 100, "output": 10, "prefix": 9007199254740992, '
    .. '"prefix_len": 50}\n')
  T.raises(function() hl.serve(T.merged(base, { trace = j })) end, "line 1: prefix 9007199254740992 (need a whole")
  -- the largest id still reads
  local ok = file("ok.csv", "arrival_s,input,output,session,turn\n0,100,10,9007199254740991,1\n"
    .. "1,200,10,9007199254740991,2\n")
  T.eq(hl.serve(T.merged(base, { trace = ok })).requests, 2, "2^53 - 1 is an id")
end)

T.test("hl.rows.write takes a list of columns, or none", function()
  -- an options table ({columns = {"a"}}) or {} wrote a CSV of no columns: a file of empty lines
  local rows = { { a = 1, b = 2 }, { a = 3, b = 4 } }
  local p = dir .. "/r.csv"
  T.raises(function() hl.rows.write(rows, p, { columns = { "a" } }) end,
    "columns: expected a list {v1, v2, ...}, got a key \"columns\"")
  T.raises(function() hl.rows.write(rows, p, {}) end, "columns: an empty list")
  T.raises(function() hl.rows.write(rows, p, "a") end, "columns: expected a list of column names, got string")
  T.eq(io.open(p, "rb"), nil, "nothing written")
  hl.rows.write(rows, p, { "b" })
  local f = assert(io.open(p, "rb"))
  T.eq(f:read("a"), "b\n2\n4\n", "the column asked for")
  f:close()
end)

T.test("a token budget smaller than one verify pass is refused up front", function()
  -- spec_tokens = 3 takes 4 tokens a decoding sequence a step: with token_budget = 3 no decode was
  -- ever scheduled, and the run failed at t = 0.48 s, "no request could be scheduled"
  local s = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 1, gpus = 1 }, rate = 5, requests = 20,
              input = 200, output = 20, seed = 3, spec_tokens = 3, spec_accept = 0.8 }
  T.raises(function() hl.serve(T.merged(s, { token_budget = 3 })) end,
    "serve field 'token_budget': 3 tokens cannot hold one verify pass with spec_tokens = 3",
    "raise token_budget to at least 4")
  T.eq(hl.serve(T.merged(s, { token_budget = 4 })).requests, 20, "4 tokens: one sequence's verify pass a step")
end)

T.test("NaN options of hl.frontier, hl.serve_capacity and plot are shown as nan", function()
  -- Lua's tostring(0/0) is "-nan" on x86: "field 'simulate': -nan is not allowed"
  local f = { model = "llama-3.1-8b", systems = { { gpu = "H100-SXM", gpus = 2, hbd = 2 } }, modes = { "agg" } }
  T.raises(function() hl.frontier(T.merged(f, { simulate = 0 / 0 })) end, "field 'simulate': nan is not allowed")
  T.raises(function() hl.frontier(T.merged(f, { near = 0 / 0 })) end, "field 'near': nan is not a fraction")
  T.raises(function() hl.frontier(T.merged(f, { slo = { ttft_s = 0 / 0 } })) end, "field 'slo.ttft_s': nan is not")
  local c = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 1, gpus = 1 }, input = 100, output = 10,
              slo = { ttft_ms = 200 } }
  T.raises(function() hl.serve_capacity(T.merged(c, { target = 0 / 0 })) end,
    "hl.serve_capacity field 'target': nan is not a fraction in (0, 1]")
  T.raises(function() hl.serve_capacity(T.merged(c, { tolerance = 0 / 0 })) end,
    "hl.serve_capacity field 'tolerance': nan is not in 1e-3..0.5")
  T.raises(function() hl.frontier(T.merged(f, { input = { dist = "normal", mean = 0 / 0, std = 1 } })) end,
    "field 'input': mean length nan is not a finite number of tokens")
  local plot = require "hbdlab.plot"
  local p = { data = { { x = 1, y = 1 } }, x = "x", y = "y", out = T.scratch() .. "/p.png" }
  T.raises(function() plot.line(T.merged(p, { xtics = { 0 / 0 } })) end, "plot: xtics[1] must be a finite number, got nan")
  T.raises(function() plot.line(T.merged(p, { logx = 0 / 0 })) end,
    "plot: field 'logx' must be true or a number > 1 (the log base), got nan")
end)

T.test("JSON null in a spec_accept vector is named null", function()
  T.raises(function() hl.simulate(with { spec_accept = hl.core.json_decode("[0.9, null, 0.7]") }) end,
    "field 'spec_accept': entry 2 is null, not a number in (0, 1]")
end)

os.execute("rm -rf '" .. dir .. "'")
T.done()

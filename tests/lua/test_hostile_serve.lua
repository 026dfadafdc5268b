-- hl.serve attacked from outside (issue 24's serving features, attack pass 3): each case here was
-- accepted silently, reported a made-up value or printed `table: 0x...` before its fix; now it is
-- refused naming the field, the value and what is allowed, or gives the right value.
local T = require "testlib"
local hl = require "hbdlab"

local base = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 1, hbd = 1 }, parallel = { tp = 1 },
               rate = 5, requests = 20, input = 200, output = 20 }
local function with(t) return T.merged(base, t, false) end -- a false change drops the field

-- a trace run: the trace gives arrivals, lengths and the request count
local function traced(path, t)
  local o = with { rate = false, requests = false, input = false, output = false, trace = path }
  for k, v in pairs(t or {}) do o[k] = v end
  return o
end

local dir, file = T.scratch()

T.test("a single output token has no TPOT and no gap: nil, not 0", function()
  -- output = 1: the only token comes from the prefill, so no request has a time per output token
  -- after the first and no inter-token gap exists; the statistics used to read 0 ms
  local r = hl.serve(with { output = 1, keep_requests = true })
  T.eq(r.tpot_s.n, 0, "no TPOT counted")
  T.eq(r.tpot_s.mean, nil, "tpot mean")
  T.eq(r.tpot_s.p99, nil, "tpot p99")
  T.eq(r.itl_s.n, 0, "no gap counted")
  T.eq(r.itl_s.mean, nil, "itl mean")
  T.eq(r.per_request[1].tpot_s, nil, "a request's own TPOT")
  T.ok(r.ttft_s.mean > 0, "TTFT still measured")
  local s = tostring(r)
  T.ok(s:find("tpot           -         -         -         -", 1, true), "printed as -: " .. s)
  -- a mix: only the requests with two tokens or more count
  local m = hl.serve(with { output = { dist = "uniform", min = 1, max = 2 }, requests = 40, keep_requests = true })
  local two = 0
  for _, q in ipairs(m.per_request) do if q.output == 2 then two = two + 1 end end
  T.ok(two > 0 and two < 40, "both lengths drawn")
  T.eq(m.tpot_s.n, two, "TPOT over the two-token requests only")
end)

T.test("groups: empty tables and scalars are refused naming the group", function()
  T.raises(function() hl.serve(with { sessions = {} }) end, "serve field 'sessions': an empty table",
    "allowed: turns, think_s")
  T.raises(function() hl.serve(with { prefix_cache = true, kv_offload = {} }) end, "'kv_offload': an empty table",
    "capacity_bytes")
  T.raises(function() hl.serve(with { slo = {} }) end, "serve field 'slo': an empty table", "ttft_s, tpot_s")
  T.raises(function() hl.serve(with { prefix_cache = true, kv_offload = true }) end,
    "serve field 'kv_offload': expected a table {capacity_bytes, bw, host_bytes, link, overlap}, got boolean")
  T.raises(function() hl.serve(with { sessions = 3 }) end, "serve field 'sessions': expected a table {turns, think_s}")
  -- a boolean field given a table: "expected true or false", not "a number"
  T.raises(function() hl.serve(with { prefix_cache = {} }) end, "serve field 'prefix_cache': expected true or false, got a table")
  T.raises(function() hl.serve(with { router = {} }) end, "serve field 'router': expected a name, got a table")
  -- input and output still take a number or a table
  T.eq(hl.serve(with { input = 100 }).requests, 20, "input = N")
end)

T.test("a group's path at the top level names the group", function()
  -- "kv_offload.bw" used to say "unknown field 'kv_offload.bw' (did you mean 'kv_offload.bw'?)"
  T.raises(function() hl.serve(with { prefix_cache = true, ["kv_offload.bw"] = 1e9 }) end,
    "'kv_offload.bw' is key 'bw' of group 'kv_offload': give kv_offload = {bw = ...}, or its flat name 'kv_offload_bw'")
  -- and a serve_sweep axis by that path sets the group (the group name holds "_")
  local rows = hl.serve_sweep { base = with { prefix_cache = true, requests = 8, kv_offload = { capacity_bytes = 1e9, host_bytes = 2.56e11 } },
                                axes = { ["kv_offload.bw"] = { 1e9, 2e9 } } }
  T.eq(#rows, 2, "two points")
  T.eq(rows[2]["kv_offload.bw"], 2e9, "the axis value in its row")
  T.ok(rows[1].reload_s ~= nil, "the tier ran (reload_s is nil without kv_offload)")
end)

T.test("kv_blocks is a whole number; shared_prefix fits the prompt", function()
  T.raises(function() hl.serve(with { kv_blocks = 1000.5 }) end,
    "serve field 'kv_blocks': 1000.5 is not a whole number of KV blocks")
  -- a 500-token shared prefix of 200-token prompts was cut to 200 silently
  T.raises(function() hl.serve(with { shared_prefix = 500, prefix_cache = true }) end,
    "serve field 'shared_prefix': 500 tokens, but the longest prompt is 200 tokens (input)")
  T.raises(function() hl.serve(with { shared_prefix = 301, input = { dist = "uniform", min = 100, max = 300 } }) end,
    "longest prompt is 300 tokens (input.max)")
  -- up to the longest prompt it runs: all 200 tokens shared, the last block always recomputed:
  -- floor(199 / 16) = 12 blocks of 16 = 192 tokens cached for each of the 19 requests after the first
  local r = hl.serve(with { shared_prefix = 200, prefix_cache = true, arrival = "constant", rate = 1 })
  T.eq(r.prefill_tokens_saved, 19 * 192, "tokens saved")
  local tr = file("short.csv", "arrival_s,input,output\n0,100,10\n1,120,10\n")
  T.raises(function() hl.serve(traced(tr, { shared_prefix = 121 })) end,
    "longest prompt is 120 tokens (the trace's input)")
  T.raises(function() hl.serve(with { prefix_cache = true, kv_blocks = 2 ^ 31 }) end,
    "serve field 'kv_blocks': 2147483648 KV blocks on one DP rank with prefix_cache", "1..2^30")
end)

T.test("CSV traces: a repeated column and extra cells are refused", function()
  -- "input" twice: the last one read used to win silently (input 50 ran, not 100)
  local dup = file("dup.csv", "arrival_s,input,output,input\n0,100,10,50\n")
  T.raises(function() hl.serve(traced(dup)) end,
    "line 1: the CSV header's column 4 (input) repeats column 2")
  local alias = file("alias.csv", "arrival_s,input,output,prompt_tokens\n0,100,10,50\n")
  T.raises(function() hl.serve(traced(alias)) end, "column 4 (prompt_tokens) repeats column 2")
  -- a fourth cell under a three-column header was dropped
  local extra = file("extra.csv", "arrival_s,input,output\n0,100,10,99\n")
  T.raises(function() hl.serve(traced(extra)) end,
    "line 2: malformed line (more cells than the header has columns")
  -- columns the trace does not know are still read past (other tools' metadata)
  local other = file("other.csv", "arrival_s,user,input,output\n0,7,100,10\n")
  T.eq(hl.serve(traced(other)).requests, 1, "an unknown column is skipped")
  -- an old Mac file: one line of lone CRs
  T.raises(function() hl.serve(traced(file("cr.csv", "arrival_s,input,output\r0,100,10\r"))) end,
    "its lines end in a lone CR")
  local wide = { "arrival_s", "input", "output" }
  for i = 1, 70 do wide[#wide + 1] = "x" .. i end
  T.raises(function() hl.serve(traced(file("wide.csv", table.concat(wide, ",") .. "\n"))) end,
    "the CSV header has more than 64 columns")
end)

T.test("a trace's later turn must hold the earlier turn", function()
  -- turn 2 (200 tokens) cannot continue turn 1's 300 + 10 tokens; with the cache its 12 blocks
  -- were credited as turn 1's content
  local shrink = file("shrink.csv", "arrival_s,input,output,session,turn\n0,300,10,1,1\n5,200,10,1,2\n")
  T.raises(function() hl.serve(traced(shrink, { prefix_cache = true })) end,
    "request 2 (session 1, its request 2 by arrival) has a prompt of 200 tokens, shorter than the conversation's " ..
    "previous request, request 1: 300 prompt + 10 generated tokens")
  local jl = file("shrink.jsonl", '{"arrival_s": 0, "input": 300, "output": 10, "session": 4}\n' ..
    '{"arrival_s": 5, "input": 309, "output": 10, "session": 4}\n')
  T.raises(function() hl.serve(traced(jl)) end, "has a prompt of 309 tokens")
  -- exactly the history (300 + 10) is allowed: turn 2 finds floor(309 / 16) = 19 blocks = 304 tokens
  local ok = file("ok.csv", "arrival_s,input,output,session,turn\n0,300,10,1,1\n5,310,10,1,2\n")
  T.eq(hl.serve(traced(ok, { prefix_cache = true })).prefill_tokens_saved, 304, "turn 2's hit")
end)

T.test("serve_capacity with an SLO that limits nothing is refused", function()
  -- slo = {} passed the 'slo is required' check; every rate met it and the search doubled to the
  -- probe limit, printing "capacity 976 req/s or more ... within ;"
  local t = with { slo = {} }
  t.rate, t.requests = nil, nil
  T.raises(function() hl.serve_capacity(t) end, "hl.serve_capacity field 'slo': {} gives no limit")
end)

T.test("serve_capacity searches configurations the analytical mode cannot take", function()
  -- its first probe was the analytical steady state, which refuses speculation, prefix caching,
  -- sessions and replicas: hl.serve_capacity failed on every one of them ("... has no effect with
  -- mode = analytical"); the simulated search now starts at 1 req/s with no analytical estimate
  local function cap(t)
    local o = with(t)
    o.rate, o.requests = nil, 200
    o.slo, o.tolerance, o.min_duration, o.max_requests = { ttft_ms = 200, tpot_ms = 30 }, 0.2, 1, 2000
    return hl.serve_capacity(o)
  end
  local plain = cap {}
  T.ok(plain.analytical_rate > 0, "an estimate without them")
  for name, t in pairs { spec_tokens = { spec_tokens = 2, spec_accept = 0.7 },
                         prefix_cache = { prefix_cache = true, shared_prefix = 100 },
                         sessions = { sessions = { turns = 2 } },
                         replicas = { cluster = hl.cluster { gpu = "H100-SXM", gpus = 2, hbd = 2 }, replicas = 2 } } do
    local c = cap(t)
    T.ok(c.rate > 0 and c.result ~= nil, name .. ": a capacity")
    T.eq(c.analytical_rate, nil, name .. ": no estimate")
    T.eq(c.no_estimate, name, name .. ": named")
    T.ok(tostring(c):find("no analytical estimate with " .. name, 1, true), name .. " printed")
  end
  local o = with { spec_tokens = 2, spec_accept = 0.7, slo = { ttft_ms = 200 }, mode = "analytical" }
  o.rate, o.requests = nil, nil
  T.raises(function() hl.serve_capacity(o) end,
    "hl.serve_capacity field 'mode': \"analytical\" has no model of field 'spec_tokens'")
  -- hl.serve itself: the step timer's "not yet by the serving step timer" was stale
  T.raises(function() hl.serve(with { mode = "analytical", requests = false, spec_tokens = 2, spec_accept = 0.7 }) end,
    "field 'spec_tokens': 2 has no effect with mode = \"analytical\"")
end)

T.test("serve_pd_ratio: a capacity that is only a lower bound says so", function()
  -- max_requests = 2,000 over min_duration = 2 s stops each search at 1,000 req/s: the 3 + 1 split
  -- reached it (its capacity is "512 or more"); the rows and the best line read as exact before
  local r = hl.serve_pd_ratio { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 4, hbd = 4 },
                                gpus = 4, prefill = { parallel = { tp = 1 } }, decode = { parallel = { tp = 1 } },
                                input = 300, output = 30, slo = { ttft_ms = 300, tpot_ms = 30 }, tolerance = 0.2,
                                min_duration = 2, max_requests = 2000 }
  local bounded
  for _, row in ipairs(r.rows) do if row.lower_bound then bounded = row end end
  T.ok(bounded, "a row stopped at max_requests")
  T.ok(tostring(r):find(">= " .. string.format("%.4g", bounded.rate), 1, true), "printed as >=: " .. tostring(r))
end)

T.test("every part of a serve result prints readably", function()
  local r = hl.serve(with { keep_requests = true, keep_steps = true })
  for name, v in pairs { step_log = r.step_log, step = r.step_log[1], kv_series = r.kv_series,
                         per_request = r.per_request, request = r.per_request[1], result = r } do
    local s = tostring(v)
    T.ok(not s:find("table: 0x", 1, true), name .. " prints as " .. s)
  end
  T.ok(tostring(r.step_log):find("iterations (step_log)", 1, true), "step_log header")
  T.ok(tostring(r.step_log[1]):find("decodes = ", 1, true), "a step's fields")
  T.ok(tostring(r.per_request[1]):find("ttft_s = ", 1, true), "a request's fields")
  T.ok(tostring(r.kv_series):find("samples (kv_series)", 1, true), "kv_series header")
  T.ok(tostring(r):find("on 1 GPU: ", 1, true), "one GPU, singular")
end)

T.test("hl.serve warns of a request beyond the model's context limit, as hl.simulate does", function()
  local warn = require "hbdlab.warn"
  local seen = {}
  local old = warn.sink
  warn.sink = function(m) seen[#seen + 1] = m end
  warn.seen = {}
  -- one conversation of 200 turns: the last prompt holds 200 x 1,000 + 199 x 10 tokens, and 10 more come
  hl.serve(with { input = 1000, output = 10, requests = 200, sessions = { turns = 200 } })
  hl.serve(with { input = 1000, output = 10, requests = 4, sessions = { turns = 200 } }) -- 4 turns: 4,040 tokens
  warn.sink = old
  local hit
  for _, m in ipairs(seen) do if m:find("202000 tokens is beyond llama-3.1-8b's context limit", 1, true) then hit = m end end
  T.ok(hit, "the context warning: " .. table.concat(seen, " | "))
  T.eq(#seen, 1, "no warning for the 4-turn run")
end)

T.test("think times that carry the clock past 1e9 s are refused", function()
  -- 1,000 requests of one client thinking 1e6 s each end near 1e9 s (allowed); 100,000 reached
  -- 1e11 s, where a 6.24 ms step was timed 0.03% off (TPOT max 6.2408 against 6.2378 ms)
  T.raises(function() hl.serve(with { rate = false, concurrency = 1, think_s = 1e6, requests = 100000 }) end,
    "serve field 'think_s': 1e+06 s of think time spreads 100000 requests", "past 1e9 s")
  T.raises(function() hl.serve(with { rate = false, concurrency = 2, requests = 4000, sessions = { turns = 4, think_s = 1e6 } }) end,
    "serve field 'sessions.think_s': 1e+06 s")
  T.raises(function() hl.serve(with { rate = 1, requests = 10, sessions = { turns = 2000, think_s = 1e6 } }) end,
    "serve field 'sessions.think_s'")
  local r = hl.serve(with { rate = false, concurrency = 1, think_s = 1e5, requests = 20 })
  T.eq(r.requests, 20, "a long think within the clock's range runs")
end)

T.test("an interrupted frontier's outputs say so", function()
  -- Ctrl-C during the confirming simulations: the files written are whole, but of part of the
  -- search; the JSON used to look like a finished one. The second simulation is interrupted here.
  local calls, serve = 0, hl.serve
  hl.serve = function(t)
    calls = calls + 1
    if calls == 2 then error("interrupted!") end
    return serve(t)
  end
  local stem = dir .. "/fr"
  local ok, r = pcall(hl.frontier, { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 2, hbd = 2 },
                                     precision = "fp8", input = 256, output = 32, simulate = 4, requests = 20,
                                     concurrency = { 1, 4 }, progress = false, out = stem })
  hl.serve = serve
  require("hbdlab.core").take_interrupted() -- the test goes on (a script would exit 130)
  T.ok(ok, tostring(r))
  T.eq(r.interrupted, true, "the result is flagged")
  local f = assert(io.open(stem .. ".json"))
  local js = require("hbdlab.core").json_decode(f:read("a"))
  f:close()
  T.eq(js.interrupted, true, "the JSON says it was interrupted")
end)

T.test("hl.frontier: serve fields its steady-state points cannot model, and output errors", function()
  local f = { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 2, hbd = 2 }, precision = "fp8", input = 256,
              output = 32, simulate = 0, concurrency = { 1, 4 }, progress = false }
  local function fr(t)
    local o = {}
    for k, v in pairs(f) do o[k] = v end
    for k, v in pairs(t) do o[k] = v end
    return hl.frontier(o)
  end
  -- each used to end "no configuration of llama-3.1-8b could be evaluated on any system; the most
  -- frequent reason: serve field 'prefix_cache' has no effect with mode = \"analytical\" ..."
  for _, k in ipairs { "prefix_cache", "spec_tokens", "sessions", "kv_offload", "replicas", "keep_steps" } do
    local v = ({ prefix_cache = true, spec_tokens = 2, sessions = { turns = 2 }, kv_offload = { capacity_bytes = 1 },
                 replicas = 2, keep_steps = true })[k]
    T.raises(function() fr { serve = { [k] = v } } end, "hl.frontier: field 'serve." .. k .. "': not modelled by the " ..
      "frontier's points")
  end
  -- serve.trace said "give trace at the top level", which the frontier refuses
  T.raises(function() fr { serve = { trace = "x.csv" } } end, "field 'serve.trace': the search sets it (each point's")
  -- an output folder that is a file: the message had hbdlab's own position (hbdlab/frontier.lua:636:)
  local plainfile = file("plain", "x")
  local ok, e = pcall(fr, { out = plainfile .. "/fr" })
  T.ok(not ok and e:find("hl.frontier: cannot create folder", 1, true) and not e:find("frontier.lua:", 1, true), e)
end)

os.execute("rm -rf '" .. dir .. "'")
T.done()

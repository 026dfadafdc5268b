-- hl.serve from Lua: concurrency 1 equals hl.simulate, result shape, friendly
-- SLO units, traces from files, and bad input naming the field or line.
local T = require "testlib"
local hl = require "hbdlab"

local base = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 1, hbd = 1 }, parallel = { tp = 1 } }
-- with(changes) or with(from, changes): a false change drops the field
local function with(a, b)
  if b == nil then a, b = base, a end
  return T.merged(a, b, false)
end

local function tmpfile(text)
  local p = os.tmpname()
  local f = assert(io.open(p, "w"))
  f:write(text)
  f:close()
  return p
end

T.test("concurrency 1 equals hl.simulate", function()
  local s = hl.simulate(with { batch = 1, input = 3000, output = 200 })
  local r = hl.serve(with { concurrency = 1, requests = 4, input = 3000, output = 200 })
  T.near(r.ttft_s.mean, s.ttft_s, 0.01, "TTFT")
  T.near(r.tpot_s.mean, s.tpot_s, 0.01, "TPOT")
  T.near(r.e2e_s.mean, s.total_s, 0.01, "end to end")
  T.eq(r.requests, 4, "requests")
  T.eq(r.queue_s.max, 0, "closed loop: no queueing")
end)

T.test("result fields and printing", function()
  local r = hl.serve(with { rate = 5, requests = 300, input = { dist = "uniform", min = 100, max = 900 },
                            output = { dist = "normal", mean = 100, std = 30, min = 2, max = 300 },
                            slo = { ttft_ms = 100, tpot_ms = 30 }, keep_requests = true })
  T.eq(#r.per_request, 300, "per-request rows")
  local good = 0
  for _, q in ipairs(r.per_request) do
    T.ok(q.input >= 100 and q.input <= 900, "uniform input in bounds")
    T.ok(q.output >= 2 and q.output <= 300, "normal output clamped")
    if q.ttft_s <= 0.1 and q.tpot_s <= 0.03 then good = good + 1 end
  end
  T.near(r.slo_attainment, good / 300, 1e-12, "attainment from per-request TTFT/TPOT")
  T.ok(r.ttft_s.p50 <= r.ttft_s.p90 and r.ttft_s.p90 <= r.ttft_s.p99, "percentiles ordered")
  T.ok(#r.kv_series.t_s > 10 and #r.kv_series.kv_util == #r.kv_series.t_s, "KV series")
  T.ok(tostring(r):find("SLO attainment"), "summary prints")
end)

T.test("trace files", function()
  local csv = tmpfile("arrival_s,input,output\n0,500,20\n0.01,300,10\n0.5,100,5\n")
  local r = hl.serve(with { trace = csv, keep_requests = true })
  T.eq(r.requests, 3, "all trace requests")
  T.eq(r.per_request[2].input, 300, "lengths from the trace")
  local jl = tmpfile('{"arrival_s": 0, "input": 50, "output": 5}\n{"arrival_s": 0.2, "input": 60, "output": 6}\n')
  T.eq(hl.serve(with { trace = jl }).requests, 2, "JSON lines")
  local bad = tmpfile("arrival_s,input,output\n0,500,20\n0.1,300\n")
  T.raises(function() hl.serve(with { trace = bad }) end, "line 3: malformed line")
  local empty = tmpfile("arrival_s,input,output\n")
  T.raises(function() hl.serve(with { trace = empty }) end, "the trace is empty")
  os.remove(csv); os.remove(jl); os.remove(bad); os.remove(empty)
end)

T.test("capacity: the highest rate meeting the SLO", function()
  local c = hl.serve_capacity(with { input = 512, output = 64, requests = 600, slo = { ttft_ms = 150, tpot_ms = 12 },
                                     target = 0.9, tolerance = 0.05 })
  T.ok(c.rate > 0, "a positive capacity")
  T.ok(c.result.slo_attainment >= 0.9, "the returned rate meets the target")
  local above
  for _, p in ipairs(c.probes) do
    if p.mode == "simulate" and not p.ok and p.rate > c.rate and (not above or p.rate < above) then above = p.rate end
  end
  T.ok(above and above <= c.rate * 1.06, "a failing probe within the tolerance above it")
  local a = hl.serve_capacity(with { input = 512, output = 64, slo = { ttft_ms = 150, tpot_ms = 12 }, mode = "analytical" })
  T.ok(a.rate > 0 and a.result.meets_slo, "analytical capacity")
  T.raises(function() hl.serve_capacity(with { input = 512, output = 64 }) end, "field 'slo' is required")
  T.raises(function() hl.serve_capacity(with { rate = 3, slo = { ttft_s = 1 } }) end, "give no rate")
  T.raises(function() hl.serve_capacity(with { slo = { ttft_s = 1 }, target = 2 }) end, "field 'target'")
  local s = hl.serve(with { rate = 2, mode = "analytical" })
  T.ok(s.stable and s.tpot_s > 0, "analytical mode of hl.serve")
  T.raises(function() hl.serve(with { rate = 2, mode = "fast" }) end, "serve field 'mode': 'fast' is not one of simulate, analytical")
end)

T.test("disaggregated pools and the best split", function()
  local c = hl.cluster { gpu = "H100-SXM", gpus = 4, hbd = 4 }
  local job = { model = "llama-3.1-8b", cluster = c, input = 2000, output = 100, requests = 300, rate = 20 }
  local d = hl.serve(with(job, { disagg = { prefill = { parallel = { tp = 1, gpus = 1 } },
                                            decode = { parallel = { tp = 1, gpus = 2 } } }, keep_requests = true }))
  T.eq(d.gpus, 3, "both pools' GPUs")
  T.eq(d.kv_link, "scaleup", "1 + 2 GPUs in one HBD of 4: the KV moves over scale-up")
  T.ok(d.kv_transfer_s > 0, "a transfer time")
  -- transfers share the links (concurrent clock): the first one, alone, is the fastest
  T.ok(d.per_request[1].kv_transfer_s <= d.kv_transfer_s * (1 + 1e-9), "the first transfer is uncontended")
  T.ok(d.per_request[1].e2e_s > d.per_request[1].ttft_s + d.kv_transfer_s, "decoding starts after the transfer")
  local r = hl.serve_pd_ratio(with(job, { rate = false, gpus = 4, prefill = { parallel = { tp = 1 } },
                                          decode = { parallel = { tp = 1 } }, slo = { ttft_s = 0.5, tpot_s = 0.02 },
                                          requests = 200, tolerance = 0.1 }))
  T.eq(#r.rows, 3, "1:3, 2:2, 3:1")
  T.ok(tostring(r):find("best split:", 1, true) and tostring(r):find("<- best", 1, true), "a P/D result prints")
  for _, row in ipairs(r.rows) do T.ok(row.rate <= r.best.rate, "best is the highest rate") end
  T.raises(function() hl.serve(with(job, { disagg = { prefill = {} } })) end, "disagg.decode")
  T.raises(function() hl.serve(with(job, { disagg = { prefill = {}, decode = {}, bogus = 1 } })) end, "unknown key 'bogus'")
  -- pools on one 4-GPU cluster that need more GPUs than it has: this used to fail later with
  -- "KV transfer: collective: 2 ranks at 1 per HBD need 2 HBDs; the cluster has 1"
  T.raises(function() hl.serve(with(job, { disagg = { prefill = { parallel = { tp = 1, gpus = 3 } },
                                                      decode = { parallel = { tp = 1, gpus = 2 } } } })) end,
           "field 'disagg': the prefill pool (3 GPUs) and the decode pool (2 GPUs) share one cluster of 4 GPUs and need 5")
  T.raises(function() hl.serve(with(job, { disagg = { prefill = {}, decode = {} } })) end,
           "the prefill pool (4 GPUs) and the decode pool (4 GPUs)")
  -- kv_link = "scaleout" says the pools are apart: two whole 4-GPU clusters of one HBD each run, and the
  -- transfer crosses scale-out (it was refused: the prefill cluster has a single HBD)
  local apart = hl.serve(with(job, { disagg = { prefill = { parallel = { tp = 1 } }, decode = { parallel = { tp = 1 } },
                                                kv_link = "scaleout" } }))
  T.eq(apart.kv_link, "scaleout", "kv_link as given")
  T.ok(apart.kv_transfer_s > 0, "a scale-out KV transfer is timed")
end)

T.test("bad input", function()
  T.raises(function() hl.serve(with { rate = -1 }) end, "serve field 'rate': -1 is out of range")
  T.raises(function() hl.serve(with { rate = 1, slo = { ttft_s = 0 } }) end, "serve field 'slo.ttft_s': 0 is out of range")
  T.raises(function() hl.serve(with { rate = 1, slo = { tpot_ms = 0 } }) end, "serve field 'slo.tpot_ms': 0 is out of range")
  T.raises(function() hl.serve(with { slo = { ttft = 1 } }) end, "unknown key 'ttft'")
  T.raises(function() hl.serve(with { bogus = 1 }) end, "unknown field 'bogus'")
  -- 0 and "yes" are true in Lua: chunked_prefill = 0 left chunking on without a word
  T.raises(function() hl.serve(with { chunked_prefill = 0 }) end, "field 'chunked_prefill': expected true or false, got number")
  T.raises(function() hl.serve(with { keep_requests = "yes" }) end, "field 'keep_requests': expected true or false, got string")
  T.raises(function() hl.serve(with { keep_steps = 1 }) end, "field 'keep_steps': expected true or false")
  -- one limit in s and in ms: which was meant? (the later key in table order won)
  T.raises(function() hl.serve(with { slo = { ttft_ms = 1, ttft_s = 2 } }) end, "ttft_s and ttft_ms give the same limit twice")
  T.raises(function() hl.serve(with { requests = 2 ^ 63 }) end, "serve field 'requests': 9.22337e+18 is out of range")
  T.raises(function() hl.serve(with { requests = 10.5 }) end, "serve field 'requests': 10.5 is not an integer")
  T.raises(function() hl.serve(with { input = { dist = "zipf" } }) end, "serve field 'input.dist': 'zipf' is not one of fixed, uniform, normal, trace, auto")
  T.raises(function() hl.serve(with { max_seqs = 0 }) end, "field 'max_seqs': 0")
  T.raises(function() hl.serve(with { trace = "/nonexistent/t.csv" }) end, "serve field 'trace': cannot read")
  T.raises(function() hl.serve(with { parallel = "auto" }) end, "explicit mapping")
end)

T.test("the serve schema: help, suggestions, sweep axes", function()
  local help = require("hbdlab.help").text "serve" -- what hl.help "serve" prints
  for _, f in ipairs(require("hbdlab.core").fields("serve")) do
    T.ok(help:find("  " .. f.name, 1, true), "hl.help \"serve\" prints field " .. f.name)
  end
  for _, f in ipairs(require("hbdlab.core").serve_result_fields("result")) do
    T.ok(help:find("  " .. f.name .. " ", 1, true), "hl.help \"serve\" prints result field " .. f.name)
  end
  -- a misspelt serve field was reported as a 'simulate' error listing only the job's fields
  T.raises(function() hl.serve(with { rte = 5 }) end, "serve: unknown field 'rte' (did you mean 'rate'?")
  T.raises(function() hl.serve(with { rate = 5, max_seq = 8 }) end, "did you mean 'max_seqs'?")
  T.raises(function() hl.serve(with { rate = 5, token_budjet = 8 }) end, "did you mean 'token_budget'?")
  T.raises(function() hl.serve(with { rate = 5, slo = { tpot = 1 } }) end, "unknown key 'tpot' (did you mean 'tpot_s'?")
  -- serve fields as sweep axes (they were 'job: unknown field rate'); each row is hl.serve's run
  local rows = hl.serve_sweep { base = with { requests = 60, input = 512, output = 16 },
                                axes = { rate = { 2, 8 }, max_seqs = { 4, 64 }, ["input.mean"] = { 256 } } }
  T.eq(#rows, 4, "2 x 2 x 1 points")
  for _, row in ipairs(rows) do
    local r = hl.serve(with { requests = 60, input = 256, output = 16, rate = row.rate, max_seqs = row.max_seqs })
    T.eq(row["ttft_s.p99"], r.ttft_s.p99, "row = hl.serve at rate " .. row.rate .. ", max_seqs " .. row.max_seqs)
    T.eq(row.steps, r.steps, "same steps")
  end
  T.raises(function() hl.serve_sweep { base = with {}, axes = { rte = { 1 } } } end, "did you mean 'rate'?")
end)

T.test("serve-result manners: no silent rate, no SLO line without an SLO", function()
  -- hl.serve ran Poisson at 1 request/s when no arrival process was given
  T.raises(function() hl.serve(with { requests = 10 }) end, "an arrival process is required: rate")
  local r = hl.serve(with { rate = 4, requests = 20, input = 256, output = 8 })
  T.eq(r.slo_attainment, nil, "no SLO: no attainment (it printed 100%)")
  T.eq(r.goodput_rps, nil, "no SLO: no goodput")
  T.ok(not tostring(r):find("SLO attainment"), "no SLO line")
  local g = hl.serve(with { rate = 4, requests = 20, input = 256, output = 8, slo = { ttft_s = 10 } })
  T.eq(g.slo_attainment, 1, "a loose SLO: every request meets it")
end)

-- issue 22 item 8: serving inputs that were silently ignored or contradictory are refused, naming
-- both fields; each case below ran before (and dropped, clamped or defaulted something).
T.test("serving inputs: no silent acceptance", function()
  local csv = tmpfile("arrival_s,input,output\n0,500,20\n0.01,300,10\n0.5,100,5\n")
  T.raises(function() hl.serve(with { trace = csv, arrival = "poisson", rate = 3 }) end,
           "serve field 'arrival': \"poisson\" contradicts field 'trace'") -- the trace was dropped
  T.raises(function() hl.serve(with { trace = csv, rate = 3 }) end, "serve field 'rate' has no effect with field 'trace'")
  T.raises(function() hl.serve(with { trace = csv, concurrency = 2 }) end,
           "serve field 'concurrency' has no effect with field 'trace'")
  T.raises(function() hl.serve(with { trace = csv, requests = 10 }) end,
           "serve field 'requests': 10, but the trace holds 3 requests")
  T.raises(function() hl.serve(with { trace = csv, warmup = 3 }) end, "serve field 'warmup': 3 leaves no request of 3")
  T.eq(hl.serve(with { trace = csv, requests = 2 }).requests, 2, "a trace's first requests")
  os.remove(csv)
  T.raises(function() hl.serve(with { rate = 5, input = { dist = "uniform", min = 1.5, max = 2.5 } }) end,
           "serve field 'input.min': 1.5 is not a whole number of tokens")
  T.raises(function() hl.serve(with { rate = 5, input = { dist = "uniform", min = 600 } }) end,
           "{dist = \"uniform\"} needs both min and max (max is missing") -- max was the mean, 1,024
  T.raises(function() hl.serve(with { rate = 5, input = { min = 600 } }) end,
           "serve field 'input.min': 600 has no effect with input.dist = \"fixed\"")
  T.raises(function() hl.serve(with { rate = 5, output = { dist = "normal", mean = 100 } }) end, "std is missing")
  T.raises(function() hl.serve(with { rate = 5, output = { dist = "uniform", min = 2, max = 9, mean = 5 } }) end,
           "serve field 'output.mean': 5 has no effect with output.dist = \"uniform\"")
  T.raises(function() hl.serve(with { rate = 5, input = { dist = "uniform", min = 6, max = 9, mx = 10 } }) end,
           "serve field 'input': unknown key 'mx' (did you mean 'max'?")
  -- 1e-300 req/s put every arrival where a step no longer moves the clock: every latency read 0
  T.raises(function() hl.serve(with { rate = 1e-300 }) end, "serve field 'rate': 1e-300 is out of range")
  T.raises(function() hl.serve(with { rate = 1e-6, requests = 2000 }) end, "past 1e9 s where the clock")
  T.raises(function() hl.serve(with { rate = 5, concurrency = 3 }) end, "serve fields 'rate' and 'concurrency' contradict")
  local unchunked = with { rate = 5, chunk = 512 }
  unchunked.chunked_prefill = false -- (with() drops false values)
  T.raises(function() hl.serve(unchunked) end, "serve field 'chunk' has no effect with chunked_prefill = false")
  T.raises(function() hl.serve(with { rate = 5, think_s = 1 }) end, "serve field 'think_s' has no effect without a closed loop")
  -- 1e7 clients for 30 requests: all but 30 clients would never send one (a loop of 30, not 1e7)
  T.raises(function() hl.serve(with { concurrency = 1e7, requests = 30 }) end,
           "serve field 'concurrency': 10000000 clients but field 'requests' is 30 (each client needs a request")
  T.raises(function() hl.serve(with { concurrency = 1001 }) end, "field 'requests' is 1000 (its default)")
  T.ok(hl.serve(with { concurrency = 30, requests = 30 }).steps > 0, "concurrency = requests runs")
  T.ok(hl.serve(with { concurrency = 5000, mode = "analytical" }).rate > 0, "analytical: no request count to exceed")
  T.raises(function() hl.serve(with { rate = 5, kv_link = "scaleup" }) end, "'disagg.kv_link' has no effect without disagg")
  T.raises(function() hl.serve(with { rate = 5, mode = "analytical", requests = 100 }) end,
           "serve field 'requests' has no effect with mode = \"analytical\"")
  T.raises(function() hl.serve(with { rate = 5, batch = 8 }) end, "field 'batch' has no effect in serving")
  T.raises(function() hl.serve(with { rate = 5, objective = "ttft" }) end, "field 'objective' has no effect in serving")
  local c = hl.cluster { gpu = "H100-SXM", gpus = 4, hbd = 4 }
  local pools = function(p, d) return { prefill = p, decode = d, kv_link = "scaleup" } end
  T.raises(function() hl.serve(with { cluster = c, rate = 5, disagg = pools({ parallel = { tp = 1, gpus = 1 }, batch = 4 },
                                                                          { parallel = { tp = 1, gpus = 1 } }) }) end,
           "disagg.prefill: field 'batch' has no effect in serving")
  T.raises(function() hl.serve(with { cluster = c, rate = 5, disagg = pools({ parallel = { tp = 1, gpus = 1 } },
                                                                          { parallel = { tp = 1, gpus = 1 }, rate = 2 }) }) end,
           "serve field 'disagg.decode': 'rate' is a serve field")
  -- the transfer was timed at the prefill pool's KV bytes whatever the decode pool keeps
  T.raises(function() hl.serve(with { cluster = c, rate = 5, disagg = pools({ parallel = { tp = 1, gpus = 1 }, kv_precision = "fp8" },
                                                                          { parallel = { tp = 1, gpus = 1 } }) }) end,
           "the prefill pool keeps KV in fp8 and the decode pool in bf16")
  -- enum values: a clear message, not "bad argument #-1 to 'serve' (invalid option 'Poisson')"
  T.eq(hl.serve(with { arrival = "Poisson", rate = 5, requests = 5 }).requests, 5, "enum names in any letter case")
  T.raises(function() hl.serve(with { arrival = "Poison", rate = 5 }) end,
           "serve field 'arrival': 'Poison' is not one of poisson, constant, concurrency, trace, auto")
  T.raises(function() hl.serve(with { rate = 5, arrival = 1 }) end, "serve field 'arrival': expected one of")
end)

-- issue 24: readable results and cost at the served rate
T.test("serve-result manners: printing and cost", function()
  local r = hl.serve(with { rate = 4, requests = 30, input = 256, output = 8, keep_requests = true })
  local pr = tostring(r.per_request)
  T.ok(pr:find("30 requests (per_request)", 1, true) and pr:find("ttft_ms", 1, true), "per_request prints a table")
  T.ok(not pr:find("table: 0x", 1, true), "not an address")
  T.ok(r.usd_per_mtok_out > 0 and r.usd_per_mtok_in > 0 and r.joules_per_token > 0 and r.tokens_per_mw > 0,
       "cost and energy at the served rate")
  T.ok(tostring(r):find("/Mtok in", 1, true), "printed")
  -- a GPU with no price: nil USD fields (never a silent 0) and a warning
  local g = hl.gpu { base = "H100-SXM", capex_usd = 0 }
  local np = hl.serve(with { cluster = hl.cluster { gpu = g, gpus = 1, hbd = 1 }, rate = 4, requests = 10,
                             input = 256, output = 8 })
  T.eq(np.usd_per_mtok_out, nil, "no price: nil")
  T.ok(np.joules_per_token > 0, "energy still known")
  T.ok(tostring(np):find("cost unknown", 1, true), "printed as unknown")
  local c = hl.serve_capacity(with { input = 256, output = 16, slo = { ttft_ms = 200, tpot_ms = 20 }, tolerance = 0.2,
                                     requests = 300 })
  T.ok(c.usd_per_mtok_out and c.usd_per_mtok_out > 0 and c.joules_per_token > 0, "capacity carries cost at its rate")
  local cp = tostring(c)
  T.ok(cp:find("^capacity ") and not cp:find("table: 0x", 1, true), "capacity prints: " .. cp:sub(1, 80))
end)

-- issue 22 item 4: every accepted tolerance and SLO ends the search.
T.test("capacity search terminates", function()
  T.raises(function() hl.serve_capacity(with { slo = { ttft_s = 1 }, tolerance = 1e-300 }) end,
           "hl.serve_capacity field 'tolerance': 1e-300 is not in 1e-3..0.5")
  T.raises(function() hl.serve_capacity(with { slo = { ttft_s = 1 }, max_requests = 5 }) end,
           "hl.serve_capacity field 'max_requests': 5")
  -- a very loose SLO doubled the rate until 'requests' passed the memory budget (28 s, then an error
  -- about a field the user never set); now the probe size stops it with a lower bound that says why
  local c = hl.serve_capacity(with { input = 512, output = 32, slo = { ttft_s = 1e6, tpot_s = 1e6 }, max_requests = 5000 })
  T.ok(c.rate > 0 and c.lower_bound, "a lower bound")
  T.ok(c.lower_bound:find("more than max_requests = 5000", 1, true), "names the capacity parameter: " .. c.lower_bound)
  T.ok(tostring(c):find("or more", 1, true), "printed as a lower bound")
  local a = hl.serve_capacity(with { input = 512, output = 32, slo = { ttft_s = 1e6, tpot_s = 1e6 }, mode = "analytical" })
  T.ok(a.rate > 0 and #a.probes <= 200, "analytical: bracketed by stability")
  local tight = hl.serve_capacity(with { input = 512, output = 32, slo = { ttft_s = 1e-9 }, tolerance = 0.5 })
  T.eq(tight.rate, 0, "nothing meets a 1 ns TTFT")
  T.ok(tostring(tight):find("no rate meets the SLO", 1, true), "and says so")
end)

-- issue 22 item 9: P/D ratio inputs that raised internal Lua errors
T.test("serve_pd_ratio: clear messages", function()
  local t = with { gpus = 4, decode = { parallel = { tp = 1 } }, slo = { ttft_s = 1 } }
  t.prefill = { parallel = { tp = 0 } }
  T.raises(function() hl.serve_pd_ratio(t) end, "hl.serve_pd_ratio field 'prefill.parallel.tp': 0 is not a whole number")
  t.prefill = { parallel = { tp = 0 / 0 } }
  T.raises(function() hl.serve_pd_ratio(t) end, "'prefill.parallel.tp': nan is not a whole number")
  t.prefill = { parallel = 4 }
  T.raises(function() hl.serve_pd_ratio(t) end, "'prefill.parallel': expected a table")
  t.prefill, t.gpus = { parallel = { tp = 1 } }, 0 / 0
  T.raises(function() hl.serve_pd_ratio(t) end, "hl.serve_pd_ratio field 'gpus': nan")
end)

T.test("serve_pd_ratio over a list of mappings", function()
  local c = hl.cluster { gpu = "H100-SXM", gpus = 4, hbd = 4 }
  local job = { model = "llama-3.1-8b", cluster = c, input = 2000, output = 100, requests = 150, gpus = 4,
                slo = { ttft_s = 0.5, tpot_s = 0.02 }, tolerance = 0.1 }
  local one = hl.serve_pd_ratio(with(job, { prefill = { parallel = { tp = 1 } }, decode = { parallel = { tp = 1 } } }))
  local r = hl.serve_pd_ratio(with(job, { prefill = { { parallel = { tp = 1 } }, { parallel = { tp = 2 } } },
                                          decode = { parallel = { tp = 1 } } }))
  -- tp1 prefill: 1:3, 2:2, 3:1 (the same runs as without a list); tp2 prefill instances of 2 GPUs: 2:2
  T.eq(#r.rows, 4, "three splits with tp1 prefill instances, one with tp2")
  for i = 1, 3 do
    T.eq(r.rows[i].rate, one.rows[i].rate, "the tp1 pair is the single-mapping search, split " .. i)
    T.eq(r.rows[i].prefill_mapping, "tp1", "mapping named")
  end
  T.eq(r.rows[4].prefill_mapping, "tp2", "the second prefill mapping")
  T.eq(r.rows[4].prefill_gpus, 2, "one tp2 prefill instance")
  for _, row in ipairs(r.rows) do T.ok(row.rate <= r.best.rate, "best is the highest rate") end
  T.ok(tostring(r):find("tp2 / tp1", 1, true), "the printout names the mappings")
  T.raises(function() hl.serve_pd_ratio(with(job, { prefill = { { parallel = { tp = 1 } }, x = 1 }, decode = { parallel = { tp = 1 } } })) end,
           "a list of instance descriptions holds only tables")
end)

T.done()

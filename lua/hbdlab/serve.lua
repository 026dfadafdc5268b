-- hl.serve: requests over time on one model instance, scheduled iteration by
-- iteration (continuous batching) in the C core; results print as a summary.
local core = require "hbdlab.core"

local M = {}

-- Every other field describes the instance and goes to the job parser of
-- hl.simulate (core/src/job.c's field table), which rejects unknown names.
local not_for_serve = { batch = "the batch comes from the scheduler (max_seqs, token_budget)",
                        exact_steps = "iterations are always timed one by one" }
-- Fields of the workload and the scheduler (SI units; slo converted below).
local serve_keys = {
  arrival = true, rate = true, concurrency = true, requests = true, seed = true, input = true,
  output = true, trace = true, max_seqs = true, token_budget = true, chunked_prefill = true,
  chunk = true, block_tokens = true, kv_blocks = true, slo = true, keep_requests = true,
  keep_steps = true, max_samples = true, mode = true, disagg = true, reserve = true, warmup = true,
}
local slo_keys = { ttft_s = 1, tpot_s = 1, ttft_ms = 1e-3, tpot_ms = 1e-3 }

-- Splits hl.serve fields into (job fields, serve fields for core.serve).
function M.split(t, level)
  level = (level or 1) + 1
  local job, sv = {}, {}
  for k, v in pairs(t) do
    if serve_keys[k] then sv[k] = v
    elseif not_for_serve[k] then error("hl.serve field '" .. k .. "': not a serve field (" .. not_for_serve[k] .. ")", level)
    else job[k] = v end
  end
  if sv.slo ~= nil then
    if type(sv.slo) ~= "table" then error("hl.serve field 'slo': expected {ttft_s =, tpot_s =}", level) end
    for k, v in pairs(sv.slo) do
      local scale = slo_keys[k]
      if not scale then error("hl.serve field 'slo': unknown key '" .. tostring(k) .. "' (allowed: ttft_s, tpot_s, ttft_ms, tpot_ms)", level) end
      if type(v) ~= "number" then error("hl.serve field 'slo." .. k .. "': expected a number, got " .. type(v), level) end
      if not (v > 0) then
        error(string.format("hl.serve field 'slo.%s': %g is not allowed (must be > 0; omit it for no limit)", k, v), level)
      end
      local key = k:match("^(%a+)_") == "ttft" and "slo_ttft_s" or "slo_tpot_s"
      if sv[key] ~= nil then -- ttft_s and ttft_ms both given: which one was meant?
        error("hl.serve field 'slo." .. k .. "': the " .. key:sub(5, 8) .. " limit is given twice (in s and in ms)", level)
      end
      sv[key] = v * scale
    end
    sv.slo = nil
  end
  if sv.trace ~= nil then
    if type(sv.trace) ~= "string" then error("hl.serve field 'trace': expected a file name (CSV or JSONL)", level) end
    -- a regular file within the input limit: a FIFO or /dev/zero must not hang or fill memory
    local ok, text = pcall(core.read_file, sv.trace)
    if not ok then error("hl.serve field 'trace': cannot read " .. tostring(text), level) end
    sv.trace_text, sv.trace_origin = text, sv.trace
    sv.trace = nil
    sv.arrival = sv.arrival or "trace"
  elseif sv.arrival == nil and sv.concurrency ~= nil then
    sv.arrival = "concurrency"
  end
  if type(sv.rate) == "number" and not (sv.rate > 0) then
    error(string.format("hl.serve field 'rate': %g requests/s is not allowed (must be > 0)", sv.rate), level)
  end
  return job, sv
end

local result_mt = {}
result_mt.__index = result_mt

local function ms(s) return string.format("%.4g", s * 1e3) end

result_mt.__tostring = function(r)
  local lines = {
    string.format("%d requests in %.4g s on %d GPUs: %.4g req/s, %.4g input + %.4g output tok/s (%.4g + %.4g per GPU)",
      r.requests, r.duration_s, r.gpus, r.rps, r.input_tps, r.output_tps, r.input_tps_per_gpu, r.output_tps_per_gpu),
    "            mean       p50       p90       p99  (ms)",
  }
  for _, k in ipairs { "ttft_s", "tpot_s", "itl_s", "e2e_s", "queue_s" } do
    local s = r[k]
    lines[#lines + 1] = string.format("  %-6s %9s %9s %9s %9s", k:sub(1, -3), ms(s.mean), ms(s.p50), ms(s.p90), ms(s.p99))
  end
  if r.kv_link then
    lines[#lines + 1] = string.format("  disaggregated: KV transfer %s ms per request over %s", ms(r.kv_transfer_s), r.kv_link)
  end
  lines[#lines + 1] = string.format("  SLO attainment %.1f%%, goodput %.4g req/s (%.4g output tok/s per GPU)",
    r.slo_attainment * 100, r.goodput_rps, r.goodput_tps_per_gpu)
  lines[#lines + 1] = string.format("  %d steps, %.4g tokens/step, %.4g running, %.4g waiting, KV %.1f%% mean (%.1f%% max of %d blocks), %d preemptions",
    r.steps, r.mean_step_tokens, r.mean_running, r.mean_waiting, r.kv_util_mean * 100, r.kv_util_max * 100,
    r.kv_blocks_total, r.preemptions)
  return table.concat(lines, "\n")
end

--- hl.serve{ model =, cluster =, parallel = {tp = 8}, rate = 10 | concurrency = 4 | trace = "t.csv",
---           requests = 1000, input = 1024 | {dist = "uniform", min =, max =}, output = 128,
---           max_seqs = 256, token_budget = 8192, chunked_prefill = true, chunk = 0,
---           slo = { ttft_s = 2, tpot_s = 0.1 } } -> result (see hl.help "serve")
local steady_mt = {}
steady_mt.__index = steady_mt
steady_mt.__tostring = function(r)
  return string.format("steady state at %.4g req/s (%s): iteration %s ms, TTFT %s ms, TPOT %s ms, %.4g running, " ..
    "budget %.0f%%, KV %.0f%%, %.4g output tok/s per GPU", r.rate, r.stable and "stable" or "UNSTABLE", ms(r.iter_s),
    ms(r.ttft_s), ms(r.tpot_s), r.running, r.budget_util * 100, r.kv_util * 100, r.output_tps_per_gpu)
end

-- disagg = { prefill = {job fields: parallel (with gpus), cluster, ...}, decode = {...}, kv_link = "auto" }:
-- the two pools' job tables (each the top-level instance fields overridden by its own).
local function pools(job, d, level)
  if type(d) ~= "table" then error("hl.serve field 'disagg': expected {prefill = {...}, decode = {...}, kv_link =}", level) end
  local out = {}
  for k in pairs(d) do
    if k ~= "prefill" and k ~= "decode" and k ~= "kv_link" then
      error("hl.serve field 'disagg': unknown key '" .. tostring(k) .. "' (allowed: prefill, decode, kv_link)", level)
    end
  end
  for _, which in ipairs { "prefill", "decode" } do
    local p = d[which]
    if type(p) ~= "table" then error("hl.serve field 'disagg." .. which .. "': expected a table of instance fields (parallel = {tp =, gpus =}, ...)", level) end
    local j = {}
    for k, v in pairs(job) do j[k] = v end
    for k, v in pairs(p) do j[k] = v end
    out[which] = j
  end
  return out.prefill, out.decode, d.kv_link
end

local function run(job, sv)
  local mode = sv.mode or "simulate"
  sv.mode = nil
  local djob
  if sv.disagg ~= nil then
    job, djob, sv.kv_link = pools(job, sv.disagg, 4)
    sv.disagg = nil
    if mode ~= "simulate" then error("hl.serve: the analytical mode is for one instance (disaggregation is simulated)", 3) end
  end
  if mode == "analytical" then return setmetatable(core.serve_steady(job, sv), steady_mt) end
  if mode ~= "simulate" then error("hl.serve field 'mode': '" .. tostring(mode) .. "' is not one of simulate, analytical", 3) end
  return setmetatable(core.serve(job, sv, djob), result_mt)
end

function M.serve(t)
  if type(t) ~= "table" then error("hl.serve expects a table of fields", 2) end
  local job, sv = M.split(t, 2)
  return run(job, sv)
end

--- hl.serve_capacity{ <hl.serve fields>, slo = {...}, target = 0.9, tolerance = 0.02,
---                    mode = "simulate" | "analytical", min_duration = 60 } -> {rate, result, probes, ...}
--- The highest Poisson arrival rate whose SLO attainment is at least `target`
--- (simulate) or whose steady state is stable and within the SLO (analytical):
--- bracketed by doubling from the analytical estimate, then bisected to `tolerance`.
function M.serve_capacity(t)
  if type(t) ~= "table" then error("hl.serve_capacity expects a table of fields", 2) end
  local base = {}
  for k, v in pairs(t) do if v ~= false or k == "chunked_prefill" or k == "reserve" then base[k] = v end end
  local target, tol, mode = base.target or 0.9, base.tolerance or 0.02, base.mode or "simulate"
  local min_duration = base.min_duration or 60
  base.target, base.tolerance, base.mode, base.min_duration = nil, nil, nil, nil
  if type(min_duration) ~= "number" or not (min_duration >= 0) then
    error("hl.serve_capacity field 'min_duration': " .. tostring(min_duration) .. " is not a number of seconds >= 0", 2)
  end
  if type(target) ~= "number" or not (target > 0 and target <= 1) then
    error("hl.serve_capacity field 'target': " .. tostring(target) .. " is not a fraction in (0, 1]", 2)
  end
  if type(tol) ~= "number" or not (tol > 0 and tol < 1) then
    error("hl.serve_capacity field 'tolerance': " .. tostring(tol) .. " is not in (0, 1)", 2)
  end
  if base.slo == nil then error("hl.serve_capacity: field 'slo' is required ({ttft_s =, tpot_s =})", 2) end
  if base.rate ~= nil or base.concurrency ~= nil or base.trace ~= nil then
    error("hl.serve_capacity: the rate is what it searches; give no rate, concurrency or trace", 2)
  end
  if mode ~= "simulate" and mode ~= "analytical" then
    error("hl.serve_capacity field 'mode': '" .. tostring(mode) .. "' is not one of simulate, analytical", 2)
  end
  if base.requests == nil and mode == "simulate" then base.requests = 2000 end
  local job, sv0 = M.split(base, 2)
  local probes = {}
  local function probe(rate, how)
    local sv = {}
    for k, v in pairs(sv0) do sv[k] = v end
    sv.rate, sv.mode = rate, how
    -- a finite run hides overload when its whole backlog clears within the SLO: offer at least
    -- min_duration seconds of arrivals, so a rate the instance cannot carry builds a queue
    if how == "simulate" then sv.requests = math.max(sv.requests or 0, math.ceil(rate * min_duration)) end
    local r = run(job, sv)
    local ok
    if how == "analytical" then ok = r.meets_slo else ok = r.slo_attainment >= target end
    probes[#probes + 1] = { rate = rate, ok = ok, mode = how,
                            attainment = r.slo_attainment, ttft_s = r.ttft_s, tpot_s = r.tpot_s }
    return ok, r
  end
  local function search(how, start)
    local lo, hi, best = 0, nil, nil
    local r0 = start
    local ok, res = probe(r0, how)
    if ok then
      lo, best = r0, res
      for _ = 1, 40 do
        local r = lo * 2
        local ok2, res2 = probe(r, how)
        if not ok2 then hi = r break end
        lo, best = r, res2
      end
    else
      hi = r0
      for _ = 1, 40 do
        local r = hi / 2
        local ok2, res2 = probe(r, how)
        if ok2 then lo, best = r, res2 break end
        hi = r
      end
      if lo == 0 then return 0, nil end
    end
    if not hi then return lo, best end
    while (hi - lo) / hi > tol do
      local mid = (lo + hi) / 2
      local ok3, res3 = probe(mid, how)
      if ok3 then lo, best = mid, res3 else hi = mid end
    end
    return lo, best
  end
  local est = sv0.disagg == nil and search("analytical", 1) or 0 -- no analytical model of two pools
  local rate, best = est
  if mode == "analytical" and sv0.disagg ~= nil then
    error("hl.serve_capacity: the analytical mode is for one instance (disaggregation is simulated)", 2)
  end
  if mode == "simulate" then rate, best = search("simulate", est > 0 and est or 1)
  else best = select(2, probe(est, "analytical")) end
  return { rate = rate, analytical_rate = est, result = best, probes = probes, target = target, mode = mode,
           goodput_rps = best and (best.goodput_rps or (best.meets_slo and best.rate)) or 0 }
end

--- hl.serve_pd_ratio{ <hl.serve fields without rate>, gpus = N, prefill = {parallel = {tp =}, ...},
---                     decode = {parallel = {tp =}, ...}, kv_link =, slo =, target =, tolerance = }
--- -> {best = row, rows = {{prefill_gpus, decode_gpus, rate, rate_per_gpu}, ...}}
--- Every split of N GPUs into whole prefill and decode instances; each split's
--- capacity (hl.serve_capacity, simulated); the best is the highest rate per GPU.
function M.serve_pd_ratio(t)
  if type(t) ~= "table" then error("hl.serve_pd_ratio expects a table of fields", 2) end
  local N, pre, dec = t.gpus, t.prefill, t.decode
  if type(N) ~= "number" or N < 2 or N % 1 ~= 0 then error("hl.serve_pd_ratio field 'gpus': expected a whole number >= 2", 2) end
  if type(pre) ~= "table" or type(dec) ~= "table" then
    error("hl.serve_pd_ratio: fields 'prefill' and 'decode' are required (instance fields, parallel = {tp =, ...})", 2)
  end
  local function size(p)
    local q = p.parallel or {}
    return (q.tp or 1) * (q.pp or 1)
  end
  local sp, sd = size(pre), size(dec)
  local rows, best = {}, nil
  for np = sp, N - sd, sp do
    local nd = N - np
    if nd % sd == 0 then
      local base = {}
      for k, v in pairs(t) do if k ~= "gpus" and k ~= "prefill" and k ~= "decode" and k ~= "kv_link" then base[k] = v end end
      local function pool(p, g)
        local o = {}
        for k, v in pairs(p) do o[k] = v end
        local q = {}
        for k, v in pairs(p.parallel or {}) do q[k] = v end
        q.gpus = g
        o.parallel = q
        return o
      end
      base.disagg = { prefill = pool(pre, np), decode = pool(dec, nd), kv_link = t.kv_link }
      local c = M.serve_capacity(base)
      local row = { prefill_gpus = np, decode_gpus = nd, rate = c.rate, rate_per_gpu = c.rate / N,
                    ttft_p99_s = c.result and c.result.ttft_s.p99, tpot_p99_s = c.result and c.result.tpot_s.p99 }
      rows[#rows + 1] = row
      if not best or row.rate > best.rate then best = row end
    end
  end
  if not best then
    error(string.format("hl.serve_pd_ratio: %d GPUs do not split into prefill instances of %d and decode instances of %d GPUs",
      N, sp, sd), 2)
  end
  return { best = best, rows = rows }
end

M.result_mt = result_mt
return M

-- hl.serve: requests over time on one model instance, scheduled iteration by
-- iteration (continuous batching) in the C core; hl.serve_capacity and
-- hl.serve_pd_ratio search over it; hl.serve_sweep runs it over axes. Every
-- field, default and check is the core's (core/src/serve_fields.c); this file
-- prints results and drives the searches.
local core = require "hbdlab.core"
local objects = require "hbdlab.objects"
local num_text = require("hbdlab.pretty").num_text

local M = {}

-- The position error(e, level) gives a message raised in the function that calls this one
-- ("x.lua:3: "), or "" when that caller is not a Lua line (pcall, a tail call).
local function where(level)
  local at = debug.getinfo(level + 2, "Sl")
  return at and at.currentline > 0 and (at.short_src .. ":" .. at.currentline .. ": ") or ""
end

-- A message caught from core.serve without the user's position a binding gave it (hl_error
-- places its messages at the user's line; error(e, level) then wrote it twice: "x.lua:2: x.lua:2: ...").
local function unplaced(e, level)
  local w = where(level + 1)
  if type(e) == "string" and w ~= "" and e:sub(1, #w) == w then return e:sub(#w + 1) end
  return e
end

local function ms(s) return s and string.format("%.4g", s * 1e3) or "-" end
local function pct(x) return string.format("%.1f%%", x * 100) end

-- Appends line(i) for rows 1..k and n-k+1..n (every row when n <= 2k), a "... m more ..." line
-- between, and returns the lines joined.
local function head_tail(lines, n, k, line)
  for i = 1, math.min(n, k) do line(i) end
  if n > 2 * k then lines[#lines + 1] = string.format("  ... %d more ...", n - 2 * k) end
  for i = math.max(k + 1, n - k + 1), n do line(i) end
  return table.concat(lines, "\n")
end

local per_request_mt = {}
per_request_mt.__tostring = function(rows)
  local lines = { string.format("%d requests (per_request):", #rows),
                  "       #  arrival_s  input  output   queue_ms    ttft_ms    tpot_ms     e2e_ms  preempt  good" }
  local n = #rows
  local function line(i)
    local q = rows[i]
    lines[#lines + 1] = string.format("  %6d %10.4g %6d %7d %10s %10s %10s %10s %8d  %s", i, q.arrival_s, q.input,
      q.output, ms(q.queue_s), ms(q.ttft_s), ms(q.tpot_s), ms(q.e2e_s), q.preemptions, tostring(q.good))
  end
  return head_tail(lines, n, 10, line)
end

-- print(r.per_request[i]), print(r.step_log[i]): one record, its fields in the result table's order.
local function record_mt(kind)
  local names
  return { __tostring = function(q)
    names = names or core.serve_result_fields(kind)
    local parts = {}
    for _, f in ipairs(names) do
      local v = q[f.name]
      if v ~= nil then
        parts[#parts + 1] = f.name .. " = " .. (math.type(v) == "float" and string.format("%.6g", v) or tostring(v))
      end
    end
    return "{" .. table.concat(parts, ", ") .. "}"
  end }
end
local request_mt, step_mt = record_mt("request"), record_mt("step")

-- print(r.step_log): the first and last iterations, one line each (the fields of hl.help "serve").
local step_log_mt = {}
step_log_mt.__tostring = function(rows)
  local lines = { string.format("%d iterations (step_log):", #rows),
                  "         #      t_s    dt_ms  decodes  chunks  prefill  preempt    kv_used  pool  group" }
  local n = #rows
  local function line(i)
    local q = rows[i]
    lines[#lines + 1] = string.format("  %8d %8.4g %8s %8d %7d %8.4g %8d %10.4g %5d %6d", i, q.t_s, ms(q.dt_s), q.decodes,
      q.chunks, q.prefill_tokens, q.preempted, q.kv_used, q.pool, q.group)
  end
  return head_tail(lines, n, 10, line)
end

-- print(r.kv_series): its samples, first and last.
local kv_series_mt = {}
kv_series_mt.__tostring = function(s)
  local n = #s.t_s
  local lines = { string.format("%d samples (kv_series):", n), "         #        t_s  kv_util  running  waiting" }
  local function line(i)
    lines[#lines + 1] = string.format("  %8d %10.4g %8s %8.4g %8.4g", i, s.t_s[i], pct(s.kv_util[i]), s.running[i], s.waiting[i])
  end
  return head_tail(lines, n, 5, line)
end

local result_mt = {}
result_mt.__index = result_mt

-- The cost line: USD fields are nil when a GPU has no price (a warning said so).
local function cost_line(r)
  local usd = r.usd_per_mtok_in and string.format("$%.4g/Mtok in, %s/Mtok out ($%.4g/h)", r.usd_per_mtok_in,
    r.usd_per_mtok_out and string.format("$%.4g", r.usd_per_mtok_out) or "-", r.usd_per_hour)
    or "unknown (the GPU has no price)"
  local energy = r.joules_per_token and string.format("%.4g J/token, %.4g kW mean of %.4g kW provisioned, %.4g output " ..
    "tok/s per MW", r.joules_per_token, r.power_w / 1e3, r.peak_power_w / 1e3, r.tokens_per_mw) or
    "energy unknown (the GPU has no power)"
  return string.format("  cost %s; %s", usd, energy)
end

result_mt.__tostring = function(r)
  local lines = {
    string.format("%d requests in %.4g s on %d GPU%s: %.4g req/s, %.4g input + %.4g output tok/s (%.4g + %.4g per GPU)",
      r.requests, r.duration_s, r.gpus, r.gpus == 1 and "" or "s", r.rps, r.input_tps, r.output_tps, r.input_tps_per_gpu, r.output_tps_per_gpu),
    "            mean       p50       p90       p99  (ms)",
  }
  for _, k in ipairs { "ttft_s", "tpot_s", "itl_s", "e2e_s", "queue_s" } do
    local s = r[k]
    lines[#lines + 1] = string.format("  %-6s %9s %9s %9s %9s", k:sub(1, -3), ms(s.mean), ms(s.p50), ms(s.p90), ms(s.p99))
  end
  if r.kv_link then
    lines[#lines + 1] = string.format("  disaggregated: KV transfer %s ms per request over %s", ms(r.kv_transfer_s), r.kv_link)
  end
  if r.slo_attainment then -- nil without an SLO: no "100%" of nothing
    lines[#lines + 1] = string.format("  SLO attainment %s, goodput %.4g req/s (%.4g output tok/s per GPU)",
      pct(r.slo_attainment), r.goodput_rps, r.goodput_tps_per_gpu)
  end
  lines[#lines + 1] = string.format("  %d steps, %.4g tokens/step, %.4g running, %.4g waiting, KV %s mean (%s max of %d blocks), %d preemptions",
    r.steps, r.mean_step_tokens, r.mean_running, r.mean_waiting, pct(r.kv_util_mean), pct(r.kv_util_max),
    r.kv_blocks_total, r.preemptions)
  if r.prefix_hit_rate then -- nil without prefix_cache
    lines[#lines + 1] = string.format("  prefix cache: %s of prompt tokens found cached (%.4g saved), cached KV %s mean (%s max)",
      pct(r.prefix_hit_rate), r.prefill_tokens_saved, pct(r.kv_cached_mean), pct(r.kv_cached_max))
  end
  if r.reload_s then -- nil without kv_offload
    lines[#lines + 1] = string.format("  KV offload: %.4g tokens loaded from the host in %s ms, %.4g blocks offloaded",
      r.host_hit_tokens, ms(r.reload_s), r.offloaded_blocks)
  end
  lines[#lines + 1] = cost_line(r)
  return table.concat(lines, "\n")
end

local steady_mt = {}
steady_mt.__index = steady_mt
steady_mt.__tostring = function(r)
  return string.format("steady state at %.4g req/s (%s): iteration %s ms, TTFT %s ms, TPOT %s ms, %.4g running, " ..
    "budget %.0f%%, KV %.0f%%, %.4g output tok/s per GPU", r.rate, r.stable and "stable" or "UNSTABLE", ms(r.iter_s),
    ms(r.ttft_s), ms(r.tpot_s), r.running, r.budget_util * 100, r.kv_util * 100, r.output_tps_per_gpu)
end

-- A GPU without a price or a power: those fields are nil, and one warning says why (warn.lua's
-- rule, the same as hl.simulate's).
local function check_cost(r, t)
  if r.usd_per_mtok ~= nil and r.joules_per_token ~= nil then return end
  local ok, c = pcall(objects.coerce, "cluster", t.cluster)
  require("hbdlab.warn").check_cost(ok and type(c) == "userdata" and c.gpu or nil, r)
end

-- The longest request of a configuration in tokens (prompt + output; nil when a trace's): each
-- length's fixed value or upper bound (a normal length without one: its mean), a session's last
-- turn holding every earlier turn. For the context-limit warning hl.simulate gives.
local function longest_request(t)
  local function top(v, def)
    if v == nil then return def end
    if type(v) == "number" then return v end
    if type(v) ~= "table" or v.dist == "trace" then return nil end
    return v.max or v.mean
  end
  local i = top(t.input, t.input_max or t.input_mean or 1024)
  local o = top(t.output, t.output_max or t.output_mean or 128)
  if type(i) ~= "number" or type(o) ~= "number" or t.trace ~= nil then return nil end
  local turns = type(t.sessions) == "table" and t.sessions.turns or t.session_turns
  local n = type(t.requests) == "number" and t.requests or 1000 -- a conversation ends with the requests
  if type(turns) == "number" and turns > 1 then turns = math.min(turns, n); i = turns * i + (turns - 1) * o end
  return i + o
end

--- hl.serve{ model =, cluster =, parallel = {tp = 8}, rate = 10 | concurrency = 4 | trace = "t.csv", ... }
--- -> result (fields: hl.help "serve")
function M.serve(t)
  if type(t) ~= "table" then error("hl.serve expects a table of fields", 2) end
  -- model / cluster as plain tables of fields, as hl.simulate and hl.sweep take them (core.serve
  -- takes objects and names: "expected a cluster object or preset name, got table")
  local ok, r, unread = pcall(function() return core.serve(objects.coerce_job(t, "serve")) end)
  if not ok then error(unplaced(r, 1), 2) end
  if unread then require("hbdlab.warn").warn(unread) end -- a trace's columns or keys it reads past
  require("hbdlab.warn").check_context(t.model, longest_request(t))
  if t.mode == "analytical" then return setmetatable(r, steady_mt) end
  if r.per_request then
    setmetatable(r.per_request, per_request_mt)
    for _, q in ipairs(r.per_request) do setmetatable(q, request_mt) end
  end
  if r.step_log then
    setmetatable(r.step_log, step_log_mt)
    for _, q in ipairs(r.step_log) do setmetatable(q, step_mt) end
  end
  if r.kv_series then setmetatable(r.kv_series, kv_series_mt) end
  check_cost(r, t)
  return setmetatable(r, result_mt)
end

local function copy(t)
  core.check_plain_table(t, "serve") -- the copy would drop what an __index gives (as core.serve refuses it)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  return o
end

-- Fields a steady state has no use for (the core refuses them with mode = "analytical").
local simulate_only = { "requests", "seed", "warmup", "keep_requests", "keep_steps", "max_samples" }
-- Features only the simulation has (the analytical mode refuses them): no analytical estimate.
local simulated_only_fields = { "spec_tokens", "prefix_cache", "sessions", "session_turns", "replicas" }

local cost_fields = { "usd_per_mtok_in", "usd_per_mtok_out", "usd_per_mtok", "usd_per_hour", "joules_per_token",
                      "joules_per_token_in", "joules_per_token_out", "power_w", "peak_power_w", "tokens_per_mw" }

local capacity_mt = {}
capacity_mt.__tostring = function(c)
  local slo = {}
  if c.slo then
    for k, v in pairs(c.slo) do slo[#slo + 1] = k .. " " .. tostring(v) end
    table.sort(slo)
  end
  local unit = c.conversations_per_s and string.format(" conversations/s (%.4g turns/s offered, %d turns each)",
    c.turns_per_s, c.session_turns) or " req/s"
  local lines = { string.format("capacity %.4g%s%s (%s; %s of requests within %s; %s, %d probes)",
    c.rate, unit, c.lower_bound and " or more" or "", c.mode, pct(c.target), table.concat(slo, ", "),
    c.analytical_rate and string.format("analytical estimate %.4g req/s", c.analytical_rate)
      or string.format("no analytical estimate with %s", c.no_estimate or "?"), #c.probes) }
  if c.lower_bound then lines[#lines + 1] = "  a lower bound: " .. c.lower_bound end
  if c.result then lines[#lines + 1] = tostring(c.result) else lines[#lines + 1] = "  no rate meets the SLO" end
  return table.concat(lines, "\n")
end

--- hl.serve_capacity{ <hl.serve fields>, slo = {...}, target = 0.9, tolerance = 0.02,
---                    mode = "simulate" | "analytical", min_duration = 60, max_requests = 1e5 }
--- -> {rate, result, probes, lower_bound, ...}
--- The highest Poisson arrival rate whose SLO attainment is at least `target`
--- (simulate) or whose steady state is stable and within the SLO (analytical):
--- bracketed by doubling from the analytical estimate, then bisected to `tolerance`.
--- The search always ends: tolerance >= 1e-3, at most 60 doublings (and rates
--- up to 1e9/s), and in simulate mode at most max_requests requests per probe
--- (the answer is then a lower bound, and says so).
function M.serve_capacity(t)
  if type(t) ~= "table" then error("hl.serve_capacity expects a table of fields", 2) end
  local base = copy(t)
  local target, tol, mode = base.target or 0.9, base.tolerance or 0.02, base.mode or "simulate"
  local min_duration, max_requests = base.min_duration or 60, base.max_requests or 1e5
  base.target, base.tolerance, base.mode, base.min_duration, base.max_requests = nil, nil, nil, nil, nil
  if type(min_duration) ~= "number" or not (min_duration >= 0 and min_duration <= 1e6) then
    error("hl.serve_capacity field 'min_duration': " .. num_text(min_duration) .. " is not a number of seconds in 0..1e6", 2)
  end
  if type(max_requests) ~= "number" or not (max_requests >= 100 and max_requests <= 1e7) or max_requests % 1 ~= 0 then
    error("hl.serve_capacity field 'max_requests': " .. num_text(max_requests) .. " is not a whole number in 100..1e7", 2)
  end
  if type(target) ~= "number" or not (target > 0 and target <= 1) then
    error("hl.serve_capacity field 'target': " .. num_text(target) .. " is not a fraction in (0, 1]", 2)
  end
  if type(tol) ~= "number" or not (tol >= 1e-3 and tol <= 0.5) then
    error("hl.serve_capacity field 'tolerance': " .. num_text(tol) .. " is not in 1e-3..0.5 (a relative width of the " ..
      "rate bracket; below 1e-3 the attainment of a finite run is noise)", 2)
  end
  if base.slo == nil then error("hl.serve_capacity: field 'slo' is required ({ttft_s =, tpot_s =})", 2) end
  -- slo = {} (or a JSON null in it) limits nothing: every rate "meets" it and the search would
  -- double up to the probe limit; refused here (hl.serve refuses an empty group too)
  if type(base.slo) == "table" and next(base.slo) == nil then
    error("hl.serve_capacity field 'slo': {} gives no limit (give ttft_s, tpot_s or ttft_ms, tpot_ms)", 2)
  end
  if base.rate ~= nil or base.concurrency ~= nil or base.trace ~= nil or base.arrival ~= nil then
    error("hl.serve_capacity: the rate is what it searches; give no rate, concurrency, trace or arrival", 2)
  end
  if mode ~= "simulate" and mode ~= "analytical" then
    error("hl.serve_capacity field 'mode': " .. (type(mode) == "string" and ("'" .. mode .. "'") or num_text(mode)) ..
      " is not one of simulate, analytical", 2)
  end
  if mode == "analytical" and base.disagg ~= nil then
    error("hl.serve_capacity: the analytical mode is for one instance (disaggregation is simulated)", 2)
  end
  -- sessions: the searched rate starts conversations (hl.serve's rate with sessions), each of
  -- `turns` requests, while a result's rps and goodput_rps count requests (turns)
  local turns = type(base.sessions) == "table" and type(base.sessions.turns) == "number" and base.sessions.turns
    or type(base.session_turns) == "number" and base.session_turns or 1
  if turns < 1 then turns = 1 end
  local given_requests = base.requests
  -- "x" failed in the search ("attempt to compare string with number"); -inf was ignored
  if given_requests ~= nil and (type(given_requests) ~= "number" or not (given_requests >= 1) or given_requests % 1 ~= 0) then
    error("hl.serve_capacity field 'requests': " .. num_text(given_requests) .. " is not a whole number of requests >= 1", 2)
  end
  if given_requests ~= nil and given_requests > max_requests then
    error(string.format("hl.serve_capacity field 'requests': %g is more than max_requests = %g", given_requests, max_requests), 2)
  end
  base.requests = nil
  local probes, stopped = {}, nil
  local function probe(rate, how)
    local sv = copy(base)
    sv.rate = rate
    if how == "analytical" then
      sv.mode = "analytical"
      for _, k in ipairs(simulate_only) do sv[k] = nil end
    else
      -- a finite run hides overload when its whole backlog clears within the SLO: offer at least
      -- min_duration seconds of arrivals, so a rate the instance cannot carry builds a queue
      -- with sessions the rate starts conversations of `turns` requests each: min_duration s of
      -- them is rate * turns * min_duration requests
      sv.requests = math.max(given_requests or 2000, math.ceil(rate * turns * min_duration))
      if sv.requests > max_requests then
        stopped = string.format("at %.4g req/s a probe of min_duration = %g s needs %d requests, more than " ..
          "max_requests = %d (raise max_requests, or lower min_duration)", rate, min_duration, sv.requests, max_requests)
        return nil
      end
    end
    local ok, r = pcall(M.serve, sv)
    if not ok then error(r, 0) end
    local good
    if how == "analytical" then good = r.meets_slo else good = (r.slo_attainment or 1) >= target end
    probes[#probes + 1] = { rate = rate, ok = good, mode = how,
                            attainment = r.slo_attainment, ttft_s = r.ttft_s, tpot_s = r.tpot_s }
    return good, r
  end
  local RATE_MAX = 1e9 -- the rate field's upper bound
  local function search(how, start)
    local lo, hi, best = 0, nil, nil
    local ok, res = probe(start, how)
    if ok == nil and how ~= "analytical" then
      -- the estimate's probe needs more than max_requests: start at the largest rate one can take
      start = max_requests / min_duration
      ok, res = probe(start, how)
    end
    if ok == nil then return 0, nil end
    if ok then
      lo, best = start, res
      for _ = 1, 60 do
        local r = math.min(lo * 2, RATE_MAX)
        if r <= lo then stopped = stopped or "the SLO holds up to the largest rate (1e9 req/s)"; break end
        local ok2, res2 = probe(r, how)
        if ok2 == nil then break end
        if not ok2 then hi = r break end
        lo, best = r, res2
      end
    else
      hi = start
      for _ = 1, 60 do
        local r = hi / 2
        -- the lowest rate a probe can take (the rate field's bound, and arrivals within 1e9 s of the
        -- clock): below it nothing meets the SLO
        if r < math.max(1e-6, (given_requests or 2000) / 5e8) then return 0, nil end
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
  -- the steady state (mode = "analytical") is of one instance without speculation, prefix caching
  -- or sessions, and refuses them: with one of them the simulated search starts at 1 req/s and there
  -- is no analytical estimate (nil, not 0); asked for, the analytical mode says why it cannot
  local simulated_only
  for _, k in ipairs(simulated_only_fields) do
    local v = base[k]
    if v ~= nil and v ~= false and v ~= 0 and not (k == "replicas" and v == 1) then simulated_only = k break end
  end
  if mode == "analytical" and simulated_only then
    error(string.format("hl.serve_capacity field 'mode': \"analytical\" has no model of field '%s' (simulated " ..
      "only); mode = \"simulate\"", simulated_only), 2)
  end
  local est = (base.disagg == nil and not simulated_only) and search("analytical", 1) or 0
  local rate, best = est, nil
  if mode == "simulate" then
    stopped = nil
    rate, best = search("simulate", est > 0 and est or 1)
  else
    if est > 0 then best = select(2, probe(est, "analytical")) end
  end
  local no_estimate = base.disagg ~= nil and "disagg" or simulated_only
  local out = { rate = rate, analytical_rate = (not no_estimate) and est or nil, no_estimate = no_estimate,
                result = best, probes = probes, target = target, mode = mode,
                slo = t.slo, lower_bound = stopped,
                goodput_rps = best and (best.goodput_rps or (best.meets_slo and best.rate)) or 0,
                rate_unit = turns > 1 and "conversations/s" or "requests/s",
                conversations_per_s = turns > 1 and rate or nil, turns_per_s = turns > 1 and rate * turns or nil,
                session_turns = turns > 1 and turns or nil }
  -- cost and energy at the capacity: the simulated run's (nil when unknown, or for the analytical mode)
  for _, k in ipairs(cost_fields) do out[k] = best and best[k] end
  return setmetatable(out, capacity_mt)
end

local pd_mt = {}
pd_mt.__tostring = function(p)
  local b = p.best
  local bounded = 0 -- other rows whose capacity is only a lower bound: one of them may beat the best
  for _, r in ipairs(p.rows) do if r.lower_bound and r ~= b then bounded = bounded + 1 end end
  local lines = { string.format("best split: %d prefill + %d decode GPUs%s, %.4g req/s (%.4g per GPU)%s", b.prefill_gpus,
    b.decode_gpus, b.prefill_mapping and string.format(" (%s / %s)", b.prefill_mapping, b.decode_mapping) or "",
    b.rate, b.rate_per_gpu, bounded > 0 and string.format("; %d other capacities are lower bounds (>=: the search " ..
      "reached max_requests), so the best split is not decided", bounded)
      or b.lower_bound and " or more (the search reached max_requests)" or ""),
    "  prefill  decode      req/s  req/s/GPU  ttft_p99_ms  tpot_p99_ms  $/Mtok_out  J/token" }
  for _, r in ipairs(p.rows) do
    lines[#lines + 1] = string.format("  %7d %7d %10s %10.4g %12s %12s %11s %8s%s%s", r.prefill_gpus, r.decode_gpus,
      string.format(r.lower_bound and ">= %.4g" or "%.4g", r.rate),
      r.rate_per_gpu, ms(r.ttft_p99_s), ms(r.tpot_p99_s), r.usd_per_mtok_out and string.format("%.4g", r.usd_per_mtok_out) or "-",
      r.joules_per_token and string.format("%.4g", r.joules_per_token) or "-",
      r.prefill_mapping and string.format("  %s / %s", r.prefill_mapping, r.decode_mapping) or "", r == b and "  <- best" or "")
  end
  return table.concat(lines, "\n")
end

-- GPUs of one instance of a pool: tp x pp, each checked against the job field table's range.
local function instance_size(p, which)
  local q = p.parallel
  if q ~= nil and type(q) ~= "table" then
    error("hl.serve_pd_ratio field '" .. which .. ".parallel': expected a table {tp =, pp =}, got " .. type(q), 3)
  end
  q = q or {}
  local n = 1
  for _, k in ipairs { "tp", "pp" } do
    local v = q[k] or p[k] or 1
    local f
    for _, x in ipairs(core.fields("job")) do if x.name == k then f = x end end
    if type(v) ~= "number" or v ~= v or v % 1 ~= 0 or v < f.min or v > f.max then
      error(string.format("hl.serve_pd_ratio field '%s.parallel.%s': %s is not a whole number in %g..%g", which, k,
        num_text(v), f.min, f.max), 3)
    end
    n = n * v
  end
  return n
end

local pd_splits -- below: the splits of N GPUs for one pair of mappings

--- hl.serve_pd_ratio{ <hl.serve fields without rate>, gpus = N, prefill = {parallel = {tp =}, ...},
---                     decode = {parallel = {tp =}, ...}, kv_link =, slo =, target =, tolerance = }
--- -> {best = row, rows = {{prefill_gpus, decode_gpus, rate, rate_per_gpu}, ...}}
--- Every split of N GPUs into whole prefill and decode instances; each split's
--- capacity (hl.serve_capacity, simulated); the best is the highest rate per GPU.
--- prefill and decode may each be a list of instance descriptions ({{parallel = {tp = 4}},
--- {parallel = {tp = 8}}}): every pair of them is searched, and each row names its
--- mappings (prefill_mapping, decode_mapping: "tp4", "tp2pp2").
function M.serve_pd_ratio(t)
  if type(t) ~= "table" then error("hl.serve_pd_ratio expects a table of fields", 2) end
  local N, pre, dec = t.gpus, t.prefill, t.decode
  if type(N) ~= "number" or not (N >= 2 and N <= 1e6) or N % 1 ~= 0 then
    error("hl.serve_pd_ratio field 'gpus': " .. num_text(N) .. " is not a whole number in 2..1e6", 2)
  end
  if type(pre) ~= "table" or type(dec) ~= "table" then
    error("hl.serve_pd_ratio: fields 'prefill' and 'decode' are required (instance fields, parallel = {tp =, ...})", 2)
  end
  -- read with p[1] and p.parallel below: an __index there ran (or raised) instead of being refused
  core.check_plain_table(pre, "hl.serve_pd_ratio field 'prefill'")
  core.check_plain_table(dec, "hl.serve_pd_ratio field 'decode'")
  -- a list of instance descriptions: every pair of mappings (docs/MODEL.md 12)
  local function alternatives(p, which)
    if p[1] == nil then return { p }, false end
    for k in pairs(p) do
      if type(k) ~= "number" or type(p[k]) ~= "table" then
        error(string.format("hl.serve_pd_ratio field '%s': a list of instance descriptions holds only tables, " ..
          "got key %s", which, tostring(k)), 3)
      end
    end
    return p, true
  end
  local pres, listed_p = alternatives(pre, "prefill")
  local decs, listed_d = alternatives(dec, "decode")
  local listed = listed_p or listed_d
  local function mapping(p)
    local q = p.parallel or {}
    local pp = q.pp or p.pp or 1
    return "tp" .. tostring(q.tp or p.tp or 1) .. (pp > 1 and ("pp" .. tostring(pp)) or "")
  end
  local rows, best = {}, nil
  for ip, pre1 in ipairs(pres) do
    for id, dec1 in ipairs(decs) do
      local got = pd_splits(t, N, pre1, dec1, listed_p and ("prefill[" .. ip .. "]") or "prefill",
        listed_d and ("decode[" .. id .. "]") or "decode")
      for _, row in ipairs(got) do
        if listed then row.prefill_mapping, row.decode_mapping = mapping(pre1), mapping(dec1) end
        rows[#rows + 1] = row
        if not best or row.rate > best.rate then best = row end
      end
    end
  end
  if not best then
    error(string.format("hl.serve_pd_ratio: %d GPUs do not split into the prefill and decode instances given", N), 2)
  end
  return setmetatable({ best = best, rows = rows }, pd_mt)
end

-- The splits of N GPUs into whole instances of pre and dec, each with its capacity (rows).
pd_splits = function(t, N, pre, dec, pname, dname)
  local sp, sd = instance_size(pre, pname), instance_size(dec, dname)
  local rows, best = {}, nil
  for np = sp, N - sd, sp do
    local nd = N - np
    if nd % sd == 0 then
      local base = {}
      for k, v in pairs(t) do if k ~= "gpus" and k ~= "prefill" and k ~= "decode" and k ~= "kv_link" then base[k] = v end end
      local function pool(p, g)
        local o = copy(p)
        local q = copy(p.parallel or {})
        q.gpus = g
        o.parallel = q
        return o
      end
      base.disagg = { prefill = pool(pre, np), decode = pool(dec, nd), kv_link = t.kv_link }
      local ok, c = pcall(M.serve_capacity, base)
      if not ok then error(c, 3) end
      local row = { prefill_gpus = np, decode_gpus = nd, rate = c.rate, rate_per_gpu = c.rate / N,
                    lower_bound = c.lower_bound, -- the search stopped early: rate is at least this
                    ttft_p99_s = c.result and c.result.ttft_s.p99, tpot_p99_s = c.result and c.result.tpot_s.p99 }
      for _, k in ipairs(cost_fields) do row[k] = c[k] end
      rows[#rows + 1] = row
      if not best or row.rate > best.rate then best = row end
    end
  end
  if not best and not (pname:find("%[") or dname:find("%[")) then
    error(string.format("hl.serve_pd_ratio: %d GPUs do not split into prefill instances of %d and decode instances of %d GPUs",
      N, sp, sd), 3)
  end
  return rows
end

-- print(rows) of hl.serve_sweep: the axes, then a summary of each row (the rows hold every result
-- field flat; hl.rows.print(rows, cols) shows others). print(rows[i]): every field of the row,
-- the axes first. A vector axis value (spec_accept = {0.9, 0.8}) prints as its numbers.
local sweep_summary = { "rps", "ttft_s.p50", "ttft_s.p99", "tpot_s.mean", "output_tps_per_gpu", "slo_attainment",
                        "goodput_rps", "usd_per_mtok_out", "joules_per_token" }
local vector_mt = { __tostring = function(v)
  local parts = {}
  for i, x in ipairs(v) do parts[i] = string.format("%.6g", x) end
  return "{" .. table.concat(parts, ", ") .. "}"
end }
local function sweep_cell(v)
  return math.type(v) == "float" and string.format("%.6g", v) or tostring(v)
end
local serve_row_mt = {}
local serve_rows_mt = { __tostring = function(rows)
  local axes = require("hbdlab.rows").axes_of[rows] or {}
  local cols = {}
  for _, k in ipairs(axes) do cols[#cols + 1] = k end
  for _, k in ipairs(sweep_summary) do
    for _, r in ipairs(rows) do
      if r[k] ~= nil then cols[#cols + 1] = k; break end -- slo fields only with an SLO, cost only with a price
    end
  end
  return string.format("%d serve_sweep rows (every result field is in each row; hl.rows.print(rows, {...}) shows others):\n",
    #rows) .. require("hbdlab.rows").format(rows, cols)
end }
serve_row_mt.__tostring = function(row)
  local axes, seen, parts = serve_row_mt.axes[row] or {}, {}, {}
  for _, k in ipairs(axes) do
    seen[k] = true
    parts[#parts + 1] = k .. " = " .. sweep_cell(row[k])
  end
  local rest = {}
  for k in pairs(row) do if not seen[k] then rest[#rest + 1] = k end end
  table.sort(rest)
  for _, k in ipairs(rest) do parts[#parts + 1] = k .. " = " .. sweep_cell(row[k]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end
serve_row_mt.axes = setmetatable({}, { __mode = "k" })

--- hl.serve_sweep{ base = {<hl.serve fields>}, axes = {rate = {1, 2, 4}, max_seqs = {64, 256}, tp = {4, 8}},
---                 zip = false } -> rows
--- A serving sweep: hl.serve at every combination of the axes (or, with zip, at
--- the i-th value of each). An axis is any serve field (its name or path:
--- "input.mean", "slo.ttft_s") or any instance field of hl.simulate (tp,
--- precision, cluster, ...). Each row holds the axes' values and the result's
--- fields flat ("ttft_s.p99", "usd_per_mtok_out"); mode = "analytical" in base
--- gives steady-state rows.
function M.serve_sweep(t)
  if type(t) ~= "table" or type(t.base) ~= "table" or type(t.axes) ~= "table" then
    error("hl.serve_sweep expects {base = {hl.serve fields}, axes = {name = {values}}}", 2)
  end
  for k in pairs(t) do
    if k ~= "base" and k ~= "axes" and k ~= "zip" then
      error("hl.serve_sweep: unknown field '" .. tostring(k) .. "' (allowed: base, axes, zip)", 2)
    end
  end
  if t.zip ~= nil and type(t.zip) ~= "boolean" then
    error("hl.serve_sweep: field 'zip': expected true or false, got " .. type(t.zip) .. " " .. num_text(t.zip), 2)
  end
  local names = {}
  for k, v in pairs(t.axes) do
    if type(k) ~= "string" then error("hl.serve_sweep: axis names must be strings", 2) end
    if type(v) ~= "table" or #v == 0 then error("hl.serve_sweep axis '" .. k .. "': expected a non-empty list of values", 2) end
    -- {1, nil, 3} ran one point: a list is keys 1..n exactly
    local ok, e = pcall(core.check_list, v, "hl.serve_sweep axis '" .. k .. "'")
    if not ok then error(unplaced(e, 1), 2) end
    names[#names + 1] = k
  end
  table.sort(names)
  if #names == 0 then error("hl.serve_sweep: no axes", 2) end
  local points = {}
  if t.zip then
    local n = #t.axes[names[1]]
    for _, k in ipairs(names) do
      if #t.axes[k] ~= n then
        error(string.format("hl.serve_sweep: zip needs axes of one length ('%s' has %d, '%s' %d)", k, #t.axes[k], names[1], n), 2)
      end
    end
    for i = 1, n do
      local p = {}
      for _, k in ipairs(names) do p[k] = t.axes[k][i] end
      points[#points + 1] = p
    end
  else
    points[1] = {}
    for _, k in ipairs(names) do
      local nxt = {}
      for _, p in ipairs(points) do
        for _, v in ipairs(t.axes[k]) do
          local q = copy(p)
          q[k] = v
          nxt[#nxt + 1] = q
        end
      end
      points = nxt
    end
  end
  -- an axis given by path ("input.mean", "slo.ttft_s") sets that key of its group in the base
  -- (input.mean: the base's input table, or a fixed length made a table; parallel.tp alike)
  local function set(cfg, k, v)
    local g, key = k:match("^([%a_]+)%.([%w_]+)$") -- kv_offload.bw: group names hold "_"
    if g then
      local sub = type(cfg[g]) == "table" and copy(cfg[g]) or (type(cfg[g]) == "number" and { mean = cfg[g] }) or {}
      sub[key] = v
      cfg[g] = sub
    else
      cfg[k] = v
    end
  end
  local rows = {}
  local function flatten(row, prefix, r)
    for k, v in pairs(r) do
      if type(v) == "table" and k ~= "kv_series" and k ~= "per_request" and k ~= "step_log" then
        flatten(row, prefix .. k .. ".", v)
      elseif type(v) ~= "table" then
        row[prefix .. k] = v
      end
    end
  end
  for i, p in ipairs(points) do
    local cfg = copy(t.base)
    for _, k in ipairs(names) do set(cfg, k, p[k]) end
    local ok, r, unread = pcall(function() return core.serve(objects.coerce_job(cfg, "serve")) end)
    if ok and unread then require("hbdlab.warn").warn(unread) end
    if not ok then
      local parts = {}
      for _, k in ipairs(names) do -- a value as text: a string quoted, a table by its type (not "table: 0x...")
        local v = p[k]
        local shown = type(v) == "string" and string.format("%q", v)
          or (type(v) == "table" and getmetatable(v) == nil) and "a table" or tostring(v)
        parts[#parts + 1] = k .. " = " .. shown
      end
      -- a position hl_error gave the message (the user's line, when hl.serve_sweep's caller is not) is
      -- not repeated inside it: "point 1 (rate = 1): x.lua:47: simulate field ..."
      local msg = tostring(unplaced(r, 1)):gsub("^[^\n]-:%d+: ", "", 1)
      error(string.format("hl.serve_sweep point %d (%s): %s", i, table.concat(parts, ", "), msg), 2)
    end
    local row = setmetatable({}, serve_row_mt)
    flatten(row, "", r)
    for _, k in ipairs(names) do
      local v = p[k]
      if type(v) == "table" and getmetatable(v) == nil then -- a vector value: a copy that prints its numbers
        local c = {}
        for j, x in ipairs(v) do c[j] = x end
        v = setmetatable(c, vector_mt)
      end
      row[k] = (type(v) == "userdata" and v.name) or v
    end
    serve_row_mt.axes[row] = names
    rows[#rows + 1] = row
  end
  require("hbdlab.rows").axes_of[rows] = names
  return setmetatable(rows, serve_rows_mt)
end

M.result_mt = result_mt

--- Whether x is a result of hl.serve, hl.serve_capacity or hl.serve_pd_ratio (by its metatable).
function M.is_result(x)
  local mt = getmetatable(x)
  return mt ~= nil and (mt == result_mt or mt == steady_mt or mt == capacity_mt or mt == pd_mt)
end
return M

-- hl.frontier: the Pareto frontier of output tokens/s per GPU against tokens/s per user
-- (interactivity) over every serving configuration of one or more systems, aggregated and
-- disaggregated. The search enumerates mappings and loads, evaluates each with the analytical
-- steady state of hl.serve (and hl.simulate for decode pools), keeps the non-dominated points and
-- confirms those on or near the frontier with hl.serve's simulation. docs/MODEL.md section 13.
local core = require "hbdlab.core"
local num_text = require("hbdlab.pretty").num_text

local M = {}

-- The frontier's field table: one row per field (name, default, help). Checking a call, the
-- defaults, hl.help "frontier" and the JSON form (hbdlab frontier cfg.json) all read it.
M.fields = {
  { "model", nil, "model: a preset name or object (required)" },
  { "systems", nil, "a cluster (object, preset name, or hl.cluster fields with an optional name) or a list of them (required)" },
  { "precision", "fp8", "a precision or a list of them (each system x precision is its own curve)" },
  { "framework", nil, "serving framework profile (trtllm, vllm, sglang, rocm, vllm_v0, trtllm_v06); none = the ideal roofline" },
  { "input", 1024, "prompt tokens: a number or a length distribution as in hl.serve" },
  { "output", 1024, "output tokens: a number or a length distribution as in hl.serve" },
  { "slo", nil, "{ttft_s =, tpot_s =, tps_per_user =}: the limits the best point must meet" },
  { "modes", { "agg", "disagg" }, "serving modes to search: agg (one pool per instance), disagg (prefill and decode instances)" },
  { "max_tp", 0, "largest tensor-parallel size (0 = the system's HBD size)" },
  { "max_pp", 8, "largest pipeline-parallel size" },
  { "concurrency", nil, "per-instance concurrencies to try (default 1, 2, 4, ... until the instance is full)" },
  { "prefill_load", { 0.3, 0.5, 0.7, 0.85, 0.95 }, "prefill instance utilisations to try (fractions of its saturation rate)" },
  { "serve", nil, "extra hl.serve fields applied to every configuration (max_seqs, token_budget, chunk, block_tokens, ...)" },
  { "simulate", 24, "how many points on or near each frontier hl.serve simulates to confirm (0 = none)" },
  { "near", 0.05, "a point within this fraction of the frontier's tokens/s per GPU is 'near' it (simulated too)" },
  { "requests", 600, "requests per confirming simulation (per instance for agg; at least 3 per client of the simulated population)" },
  { "tolerance", 0.02, "best points are re-run at twice the requests until tokens/s per GPU and per user move by at most this (0 = none)" },
  { "out", nil, "path stem: writes STEM_points.csv, STEM.json, STEM.png (frontier) and STEM_cost.png" },
  { "progress", false, "a progress line on stderr" },
}

local field_names, field_default = {}, {}
for i, f in ipairs(M.fields) do
  field_names[i] = f[1]
  field_default[f[1]] = f[2]
end

-- Columns of a point in CSV (and flat rows): the search's result fields first, then the configuration.
-- Membership of a Pareto set is a property of the whole search, not of a shard's points: it is in
-- the JSON and the Lua result (p.pareto, r.pareto), not in the points CSV that shards merge into.
M.columns = { "system", "precision", "mode", "tps_per_gpu", "tps_per_user", "ttft_p50_s", "ttft_p90_s", "tpot_s",
              "rps", "usd_per_mtok", "joules_per_token", "gpus_used", "simulated", "tps_per_gpu_used", "replicas",
              "gpus_idle",
              "tp", "pp", "ep", "dp", "instance_gpus", "instances", "concurrency",
              "p_tp", "p_pp", "p_ep", "p_dp", "p_instances", "p_load", "d_instances", "kv_transfer_s", "redundant_experts" }

local function fail(msg, level) error("hl.frontier: " .. msg, (level or 1) + 1) end

-- A field's value as a list (a single value is a list of one); an empty list is refused by name
-- (it would otherwise be read as one value, a table, and reported as "table: 0x...").
local function list_of(v, name)
  if type(v) == "table" and getmetatable(v) == nil then
    if next(v) == nil then fail("field '" .. name .. "': an empty list (give at least one value)", 4) end
    -- {1, nil, 3} and {1, x = 2} are refused: ipairs would drop what follows the hole or the key
    local ok, e = pcall(core.check_list, v, "field '" .. name .. "'")
    if not ok then fail(e, 4) end
    return v
  end
  return { v }
end

-- An error of a call made for the user (hl.cluster of a system): its message without the
-- position inside hbdlab's library ("hbdlab/objects.lua:49: ").
local function plain_error(e) return (tostring(e):gsub("^hbdlab/[%w_]+%.lua:%d+: ", "")) end

local function pow2_upto(n)
  local out, v = {}, 1
  while v <= n do out[#out + 1] = v; v = v * 2 end
  return out
end

-- The default concurrencies of an instance with attention DP size dp: 1, 2, 4, ..., 4096 and dp
-- times each (a per-rank batch of 1 ... 4096). Powers of two alone were never multiples of a DP
-- size of 3, 9, 18, 72: such decode instances had no point at all, and wide instances stopped at
-- 4096 / dp sequences a rank (57 on EP 72). Sorted, without repeats; the search stops at the
-- first that does not fit or is unstable. decode_only: the multiples of dp alone.
local function concurrencies(dp, decode_only)
  local seen, out = {}, {}
  for _, v in ipairs(pow2_upto(4096)) do
    for _, c in ipairs(decode_only and { dp * v } or { v, dp * v }) do
      if not seen[c] then seen[c] = true; out[#out + 1] = c end
    end
  end
  table.sort(out)
  return out
end

local function copy(t)
  local o = {}
  for k, v in pairs(t or {}) do o[k] = v end
  return o
end

-- A system: a cluster object and its display name.
local function system_of(hl, s, i)
  local name
  if type(s) == "table" and getmetatable(s) == nil then
    local t = copy(s)
    name, t.name = t.name, nil
    local ok, c = pcall(hl.cluster, t)
    if not ok then fail(string.format("systems[%d]: %s", i, plain_error(c)), 3) end
    s = c
  elseif type(s) == "string" then
    local ok, c = pcall(hl.cluster, s)
    if not ok then fail(string.format("systems[%d]: %s", i, plain_error(c)), 3) end
    name, s = s, c
  elseif type(s) ~= "userdata" then
    fail(string.format("systems[%d]: expected a cluster, a preset name or a table of cluster fields, got %s", i, type(s)), 3)
  end
  name = name or string.format("%dx%s HBD%d", s.gpus, s.gpu.name, s.hbd)
  return { cluster = s, name = name, gpus = s.gpus, hbd = s.hbd }
end

-- Instance sizes the search tries on G GPUs: the powers of two, the divisors of G (the sizes that
-- tile the cluster: 72 = 9 x 8 = 3 x 24 = 1 x 72 on an NVL72), and G - s for each of those (the pool
-- beside one prefill or decode pool of size s: 24 + 48 on 72 GPUs). Derived, docs/MODEL.md 14.
local function instance_sizes(G)
  local base, set = {}, {}
  for _, v in ipairs(pow2_upto(G)) do base[v] = true end
  for d = 1, G do if G % d == 0 then base[d] = true end end
  for s in pairs(base) do
    set[s] = true
    if G - s >= 1 then set[G - s] = true end
  end
  return set
end

-- Instance mappings of a model on a system: TP (powers of two up to max_tp, dividing the heads) x
-- PP (powers of two) x, for MoE models, attention DP with EP = 1 (experts sharded by TP; DP 1) or
-- EP = TP x DP (wide EP: every GPU of a stage holds its own experts, as vLLM's
-- --enable-expert-parallel and SGLang's DP attention deploy it), DP such that the instance's GPUs
-- are one of instance_sizes(G). Experts that do not divide EP get the fewest redundant experts that
-- make them divide (at most a quarter more; DeepSeek-V3's own deployment adds 32 to 256).
local function mappings(model, sys, opt)
  local G, out = sys.gpus, {}
  local max_tp = opt.max_tp > 0 and opt.max_tp or sys.hbd
  local experts = model.experts or 0
  local sizes = instance_sizes(G)
  for _, tp in ipairs(pow2_upto(math.min(G, max_tp))) do
    if model.heads % tp == 0 then
      for _, pp in ipairs(pow2_upto(math.min(opt.max_pp, G // tp))) do
        if pp <= model.layers then
          local dps = { 1 }
          if experts > 0 then
            dps = {}
            for dp = 1, G // (tp * pp) do if sizes[tp * pp * dp] then dps[#dps + 1] = dp end end
          end
          for _, dp in ipairs(dps) do
            local eps = experts > 0 and (tp * dp > 1 and { 1, tp * dp } or { 1 }) or { 1 }
            for _, ep in ipairs(eps) do
              local r = 0
              if experts > 0 and experts % ep ~= 0 then
                r = ep - experts % ep
                if r > experts / 4 then r = nil end
              end
              -- TP-sharded experts with attention DP would be a second copy of a mapping
              if r and not (ep == 1 and dp > 1) then
                out[#out + 1] = { tp = tp, pp = pp, dp = dp, ep = ep, gpus = tp * pp * dp, redundant = r }
              end
            end
          end
        end
      end
    end
  end
  return out
end

local function parallel_of(m)
  return { tp = m.tp, pp = m.pp, dp = m.dp, ep = m.ep, gpus = m.gpus }
end

-- The hl.serve fields of one instance of mapping m (everything a re-run needs).
local function instance_fields(base, sys, m)
  local t = copy(base)
  t.cluster = sys.cluster
  t.parallel = parallel_of(m)
  if m.redundant and m.redundant > 0 then t.redundant_experts = m.redundant end
  return t
end

-- Cost of a served point: USD per GPU-second and watts per GPU of the cost model (core/src/cost.c,
-- docs/MODEL.md section 11) at the point's mapping and batch, from the static job of the same shape:
-- the job's whole bill over its GPU-seconds. nil when the GPU's price or power is unknown.
local function cost_rates(hl, fields, batch)
  local t = copy(fields)
  t.mode, t.concurrency, t.rate, t.requests, t.max_seqs, t.token_budget, t.chunk = nil, nil, nil, nil, nil, nil, nil
  t.block_tokens, t.chunked_prefill, t.warmup, t.slo, t.arrival, t.seed = nil, nil, nil, nil, nil, nil
  t.batch = math.max(1, math.floor(batch))
  if type(t.input) == "table" then t.input = math.floor(t.input.mean or t.input.max or 1024) end
  if type(t.output) == "table" then t.output = math.floor(t.output.mean or t.output.max or 1024) end
  local ok, r = pcall(hl.simulate, t)
  if not ok or r.usd_per_mtok == nil or r.usd_per_mtok ~= r.usd_per_mtok then return nil end
  local tokens = t.batch * t.output
  local gpu_s = r.total_s * t.parallel.gpus
  if not (gpu_s > 0) then return nil end
  local usd = r.usd_per_mtok * tokens / 1e6
  local joules = r.joules_per_token and r.joules_per_token * tokens
  return { usd_per_gpu_s = usd / gpu_s, w_per_gpu = joules and joules / gpu_s }
end

-- on the GPUs the configuration runs on (idle GPUs of the cluster are not charged: MODEL.md 14)
local function priced(p, rates)
  if rates and p.tps_per_gpu_used > 0 then
    p.usd_per_mtok = rates.usd_per_gpu_s / p.tps_per_gpu_used * 1e6
    p.joules_per_token = rates.w_per_gpu and rates.w_per_gpu / p.tps_per_gpu_used
  end
  return p
end

-- A point's tokens/s per GPU of the whole cluster of G GPUs (docs/MODEL.md 14, "Per-GPU basis"):
-- p.replicas copies of its configuration of p.replica_gpus GPUs fill the cluster as far as whole
-- copies go, each at p.tps_per_gpu_used (output tokens/s per GPU it runs on); the GPUs left over
-- serve nothing. Aggregated instances tile the cluster (g divides G), so there the two are equal.
local function on_cluster(p, G)
  p.gpus_used = p.replicas * p.replica_gpus
  p.gpus_idle = G - p.gpus_used
  p.tps_per_gpu = p.gpus_used == G and p.tps_per_gpu_used or p.tps_per_gpu_used * p.gpus_used / G
  return p
end

local last_progress = 0
local function progress_line(on, done, total, what)
  if not on then return end
  local now = os.clock()
  if done < total and now - last_progress < 0.2 then return end
  last_progress = now
  io.stderr:write(string.format("\rfrontier: %d/%d %s   ", done, total, what))
  if done == total then io.stderr:write("\n") end
end

-- A configuration that cannot run (does not fit, a mapping the model refuses) is skipped; its
-- message is counted so that a search with nothing to show says why (an input error repeats
-- on every configuration). Ctrl-C goes through.
local function note_error(ctx, msg)
  msg = tostring(msg)
  if msg:find("interrupted!", 1, true) then error(msg, 0) end
  msg = msg:gsub("^[^:]*:%d+: ", "")
  ctx.errors[msg] = (ctx.errors[msg] or 0) + 1
  if ctx.cur_errors then ctx.cur_errors[msg] = (ctx.cur_errors[msg] or 0) + 1 end
end

local function most_frequent(errors)
  local best, n = nil, 0
  for m, k in pairs(errors) do if k > n or (k == n and m < best) then best, n = m, k end end
  return best
end

local function mean_length(v)
  if type(v) == "number" then return v end
  if type(v) == "table" then
    if v.mean then return v.mean end
    if v.min and v.max then return (v.min + v.max) / 2 end
  end
  return nil
end

-- A prefill instance: its saturation rate (the highest Poisson rate whose analytical steady state of
-- prompt-only requests is stable, by doubling and bisection) and TTFT at each load of opt.prefill_load.
local function prefill_profile(hl, ctx, sys, prec, m)
  local fields = instance_fields(ctx.base, sys, m)
  fields.precision, fields.mode, fields.output = prec, "analytical", 1
  local function at(rate)
    local f = copy(fields)
    f.rate = rate
    local ok, r = pcall(hl.serve, f)
    if not ok then
      note_error(ctx, r)
      return nil
    end
    return r
  end
  local lo, hi = 0, 1e-3
  local r = at(hi)
  if not r or not r.stable then return nil end
  for _ = 1, 60 do
    r = at(hi * 2)
    if not r or not r.stable then break end
    lo, hi = hi * 2, hi * 4
  end
  lo = math.max(lo, 1e-3)
  hi = math.max(hi, lo * 2)
  for _ = 1, 30 do
    if (hi - lo) <= 1e-3 * hi then break end
    local mid = (lo + hi) / 2
    r = at(mid)
    if r and r.stable then lo = mid else hi = mid end
  end
  local prof = { m = m, sat = lo, loads = {} }
  for _, u in ipairs(ctx.prefill_load) do
    local rr = at(u * lo)
    if rr and rr.stable then prof.loads[#prof.loads + 1] = { u = u, ttft_s = rr.ttft_s } end
  end
  if #prof.loads == 0 then return nil end
  -- the KV hand-off of one mean prompt (serve.c's kv_transfer_time, through a one-request run)
  local probe = copy(ctx.base)
  probe.precision, probe.requests, probe.rate = prec, 1, 1
  probe.input, probe.output = math.floor(ctx.input_mean + 0.5), 2
  local pool = instance_fields({}, sys, m)
  probe.disagg = { prefill = { parallel = pool.parallel, redundant_experts = pool.redundant_experts },
                   decode = { parallel = pool.parallel, redundant_experts = pool.redundant_experts } }
  probe.cluster = sys.cluster
  local ok, pr = pcall(hl.serve, probe)
  if ok then prof.kv_transfer_s = pr.kv_transfer_s else note_error(ctx, pr) end
  return prof
end

-- TTFT of a prefill instance at utilisation u: linear between the measured loads, the first below.
local function ttft_at(prof, u)
  local L = prof.loads
  if u <= L[1].u then return L[1].ttft_s end
  for i = 2, #L do
    if u <= L[i].u then
      local a, b = L[i - 1], L[i]
      return a.ttft_s + (b.ttft_s - a.ttft_s) * (u - a.u) / (b.u - a.u)
    end
  end
  return nil -- above the highest stable load tried
end

-- A decode instance at concurrency c: TPOT of c sequences decoding at the workload's context
-- (hl.simulate's decode phase, which hl.serve equals at concurrency 1), its request rate
-- c / ((output - 1) TPOT).
local function decode_point(hl, ctx, sys, prec, m, c)
  local t = instance_fields(ctx.base, sys, m)
  t.precision, t.batch = prec, c
  t.input, t.output = math.floor(ctx.input_mean + 0.5), math.max(2, math.floor(ctx.output_mean + 0.5))
  for _, k in ipairs { "max_seqs", "token_budget", "chunk", "block_tokens", "chunked_prefill", "warmup", "seed", "slo" } do t[k] = nil end
  local ok, r = pcall(hl.simulate, t)
  if not ok then
    note_error(ctx, r)
    return nil
  end
  if not r.memory.fits then return nil end
  return { m = m, c = c, tpot_s = r.tpot_s, rate = c / ((t.output - 1) * r.tpot_s), fields = t }
end

-- A point's numbers from an hl.serve simulation (percentiles included) of one of its p.replicas
-- copies (an aggregated instance, or a disaggregated pair of pools); requests/s are the cluster's.
local function take_simulated(p, r, G)
  -- the analytical numbers stay beside the simulated ones (ratios never mix the two sets)
  if not p.simulated and p.tps_per_gpu then
    p.analytical = { tps_per_gpu = p.tps_per_gpu, tps_per_gpu_used = p.tps_per_gpu_used, tps_per_user = p.tps_per_user,
                     tpot_s = p.tpot_s, ttft_p90_s = p.ttft_p90_s }
  end
  p.tps_per_gpu_used = r.output_tps_per_gpu
  on_cluster(p, G)
  p.tps_per_user = 1 / r.tpot_s.mean
  p.tpot_s = r.tpot_s.mean
  p.ttft_p50_s, p.ttft_p90_s = r.ttft_s.p50, r.ttft_s.p90
  p.rps = r.rps * p.replicas
  p.simulated = true
  return p
end

-- Aggregated points of one instance mapping: per-instance closed loops at concurrency c (analytical
-- steady state); the system runs floor(G / instance GPUs) such instances behind a router, each with
-- its own share of the users (a round-robin router of a closed population: every instance alike).
local function agg_points(hl, ctx, sys, prec, m, out)
  local fields = instance_fields(ctx.base, sys, m)
  fields.precision = prec
  fields.mode = "analytical"
  local instances = sys.gpus // m.gpus
  local loads = ctx.concurrency or concurrencies(m.dp)
  local rates = nil
  for _, c in ipairs(loads) do
    local f = copy(fields)
    f.concurrency = c
    -- the scheduler admits the whole population (max_seqs >= the concurrency, and at least the
    -- default 256: the steady state counts the request itself beside c others decoding)
    if not ctx.base.max_seqs then f.max_seqs = math.max(256, c + m.dp) end
    local ok, r = pcall(hl.serve, f)
    if not ok then
      note_error(ctx, r)
      break
    end
    if not r.stable then break end
    -- a physical bound: c users decoding one token per TPOT of a decode-only batch of c cannot
    -- produce more than c / TPOT(c) tokens/s (prefill work only slows them). An analytical point
    -- above it (the steady state's known weakness with pipeline stages and chunks) is replaced by
    -- hl.serve's simulation of the same configuration when the search simulates, else dropped.
    local dec = decode_point(hl, ctx, sys, prec, m, c)
    local bound = dec and c / dec.tpot_s
    local suspect = bound and r.output_tps > 1.02 * bound
    local p = { system = sys.name, precision = prec, mode = "agg", replicas = instances, replica_gpus = m.gpus,
                tp = m.tp, pp = m.pp, ep = m.ep, dp = m.dp, instance_gpus = m.gpus, instances = instances,
                concurrency = c, redundant_experts = m.redundant, config = f, simulated = false }
    if suspect then
      ctx.suspect = (ctx.suspect or 0) + 1
      if not ctx.simulate then goto continue end
      local sf = copy(f)
      sf.mode, sf.requests = nil, math.max(ctx.requests, 3 * c)
      local ok2, s2 = pcall(hl.serve, sf)
      if not ok2 then
        note_error(ctx, s2)
        goto continue
      end
      take_simulated(p, s2, sys.gpus)
      p.config = sf
    else
      p.tps_per_gpu_used, p.tps_per_user, p.tpot_s = r.output_tps_per_gpu, 1 / r.tpot_s, r.tpot_s
      on_cluster(p, sys.gpus)
      p.ttft_p50_s, p.ttft_p90_s, p.rps = r.ttft_s, r.ttft_s, r.rate * instances
    end
    rates = rates or cost_rates(hl, fields, c)
    out[#out + 1] = priced(p, rates)
    ::continue::
  end
end

-- Disaggregated points: for each decode candidate (mapping, concurrency), the prefill profile and
-- instance counts that give the most tokens/s per GPU (x prefill instances at rate <= x u sat,
-- y decode instances at y rate_d, x g_p + y g_d <= G), once overall and once within the SLO's TTFT.
-- The prefill choices tried are the best few by GPU-seconds per request (the continuous optimum
-- does not depend on the decode candidate); what this pruning can miss: docs/MODEL.md 13.
local function disagg_points(hl, ctx, sys, prec, profiles, d, out)
  local G = sys.gpus
  local best_any, best_slo
  local limit = ctx.slo and ctx.slo.ttft_s
  for _, pr in ipairs(profiles) do
    local gp, gd = pr.m.gpus, d.m.gpus
    -- MoE: one prefill and one decode instance (see prefill_profiles); dense: x and y instances
    for x = 1, ctx.moe and math.min(1, (G - gd) // gp) or (G - gd) // gp do
      local pcap = x * pr.sat
      local y0 = ctx.moe and 1 or math.max(1, math.floor(pcap / d.rate))
      for y = y0, ctx.moe and 1 or y0 + 1 do
        if x * gp + y * gd <= G then
          local rate = math.min(pcap * pr.loads[#pr.loads].u, y * d.rate)
          local u = rate / pcap
          local ttft = ttft_at(pr, u)
          if ttft and rate > 0 then
            ttft = ttft + (pr.kv_transfer_s or 0)
            local used = x * gp + y * gd
            local p = {
              system = sys.name, precision = prec, mode = "disagg",
              tps_per_gpu_used = rate * ctx.output_mean / used, tps_per_user = 1 / d.tpot_s,
              -- as many copies of the x + y instances as fit the cluster, each at this rate
              replicas = G // used, replica_gpus = used,
              ttft_p50_s = ttft, ttft_p90_s = ttft, tpot_s = d.tpot_s, rps = rate * (G // used),
              simulated = false, tp = d.m.tp, pp = d.m.pp, ep = d.m.ep, dp = d.m.dp, instance_gpus = gd,
              instances = y, d_instances = y, concurrency = d.c, p_tp = pr.m.tp, p_pp = pr.m.pp,
              p_ep = pr.m.ep, p_dp = pr.m.dp, p_instances = x, p_load = u, redundant_experts = d.m.redundant,
              kv_transfer_s = pr.kv_transfer_s,
              _prefill = pr, _decode = d, _offered = rate, -- one copy's arrival rate, its config's
            }
            on_cluster(p, G)
            if not best_any or p.tps_per_gpu > best_any.tps_per_gpu then best_any = p end
            if limit and ttft <= limit and (not best_slo or p.tps_per_gpu > best_slo.tps_per_gpu) then best_slo = p end
          end
        end
      end
    end
  end
  if best_any then out[#out + 1] = best_any end
  if best_slo and best_slo ~= best_any then out[#out + 1] = best_slo end
end

-- hl.serve fields that reproduce a disaggregated point: y decode instances and x prefill instances
-- as the two pools (each pool's GPUs its instances together), at the point's rate.
local function disagg_config(ctx, sys, p, requests)
  local pr, d = p._prefill, p._decode
  local f = copy(ctx.base)
  f.cluster, f.precision = sys.cluster, p.precision
  local pp = parallel_of(pr.m)
  pp.gpus, pp.dp = pr.m.gpus * p.p_instances, pr.m.dp * p.p_instances
  local dp = parallel_of(d.m)
  dp.gpus, dp.dp = d.m.gpus * p.d_instances, d.m.dp * p.d_instances
  f.disagg = { prefill = { parallel = pp }, decode = { parallel = dp } }
  if pr.m.redundant > 0 then f.disagg.prefill.redundant_experts = pr.m.redundant end
  if d.m.redundant > 0 then f.disagg.decode.redundant_experts = d.m.redundant end
  f.rate, f.requests = p._offered or p.rps / p.replicas, requests
  -- room for twice the decode population: Poisson arrivals fluctuate around the mean population c,
  -- and a batch capped at c puts the decode pool exactly at its capacity (a critically loaded queue
  -- whose waits grow with the run: 26.6 tok/s/user analytically, 17.8 simulated over 48,000 requests
  -- with the cap, 25.0 without it; qwen3-30b-a3b on 8 H200, docs/MODEL.md 14)
  if not ctx.base.max_seqs then f.max_seqs = math.max(256, 2 * (p.concurrency + 1) * p.d_instances) end
  return f
end

-- Pareto set of a group: the points no other point of the group dominates (at least as many
-- tokens/s per user and per GPU, more of one). Sorted by tokens/s per user descending, a point is
-- kept when its tokens/s per GPU beats every point before it (equal points are all kept).
function M.pareto(points)
  local idx = {}
  for i = 1, #points do idx[i] = i end
  table.sort(idx, function(a, b)
    local pa, pb = points[a], points[b]
    if pa.tps_per_user ~= pb.tps_per_user then return pa.tps_per_user > pb.tps_per_user end
    if pa.tps_per_gpu ~= pb.tps_per_gpu then return pa.tps_per_gpu > pb.tps_per_gpu end
    return a < b
  end)
  local keep, best_y, last = {}, -math.huge, nil
  for _, i in ipairs(idx) do
    local p = points[i]
    if p.tps_per_gpu > best_y then
      keep[#keep + 1] = p
      best_y, last = p.tps_per_gpu, p
    elseif last and p.tps_per_gpu == last.tps_per_gpu and p.tps_per_user == last.tps_per_user then
      keep[#keep + 1] = p
    end
  end
  return keep
end

-- the key of a curve, "system|precision|mode": of pareto[], best[], launch[] and the points' groups
local function curve_key(system, precision, mode) return system .. "|" .. precision .. "|" .. mode end
local function group_key(p) return curve_key(p.system, p.precision, p.mode) end

local function meets(p, slo)
  if not slo then return true end
  if slo.ttft_s and not (p.ttft_p90_s <= slo.ttft_s) then return false end
  if slo.tpot_s and not (p.tpot_s <= slo.tpot_s) then return false end
  if slo.tps_per_user and not (p.tps_per_user >= slo.tps_per_user) then return false end
  return true
end

-- The best tokens/s per GPU a frontier reaches at interactivity >= x (nil beyond its reach).
-- Also the point that reaches it.
local function reach(front, x)
  local y, at
  for _, p in ipairs(front) do
    if p.tps_per_user >= x and (not y or p.tps_per_gpu > y) then y, at = p.tps_per_gpu, p end
  end
  return y, at
end

-- The requests a confirmation of p runs: `requests`, and at least three per client of the
-- simulated population (the decode population of a disaggregated point).
local function requests_for(ctx, p)
  return math.max(ctx.requests, 3 * (p.concurrency or 0) * (p.mode == "agg" and 1 or (p.d_instances or 1)))
end

-- Confirms a point by simulation: its numbers become hl.serve's (percentiles included).
-- requests: the run's requests (default requests_for(ctx, p)).
local function confirm(hl, ctx, sys, p, requests)
  p._rates = p._rates or (p.usd_per_mtok and { usd_per_gpu_s = p.usd_per_mtok * p.tps_per_gpu_used / 1e6,
                                                w_per_gpu = p.joules_per_token and p.joules_per_token * p.tps_per_gpu_used })
  local f
  if p.mode == "agg" then
    f = copy(p.config)
    -- three requests per client at least (as agg_points does): with one per client the run is the
    -- start-up burst and the drain, not the steady state the analytical point stands for
    f.mode, f.requests = nil, requests or requests_for(ctx, p)
  else
    -- likewise three times the decode population, else the arrivals end before the decode pool fills
    f = disagg_config(ctx, sys, p, requests or requests_for(ctx, p))
  end
  local ok, r = pcall(hl.serve, f)
  if not ok then
    if tostring(r):find("interrupted!", 1, true) then error(r, 0) end
    p.sim_error = tostring(r)
    return
  end
  take_simulated(p, r, sys.gpus)
  p.config = f
  if p.usd_per_mtok and p._rates then priced(p, p._rates) end
end

-- Doubles a confirmed point's requests until its tokens/s per GPU and per user move by at most
-- o.tolerance between runs of R and 2R requests, at most five doublings (32 R) and 2e5 requests.
-- A run of R requests includes its start-up and drain, which bias its rates by about population / R
-- (docs/MODEL.md 14); the point keeps the last run's numbers and config (re-running it reproduces
-- them), p.converged says whether the change fell within the tolerance, p.converged_change the change.
local function converge(hl, ctx, sys, p, o)
  if o.tolerance <= 0 then return end
  local k = p.system .. " " .. p.precision .. " " .. p.mode
  local R = p.config.requests
  local prev_gpu, prev_user = p.tps_per_gpu, p.tps_per_user
  local change
  for _ = 1, 5 do
    if 2 * R > 2e5 then break end
    R = 2 * R
    confirm(hl, ctx, sys, p, R)
    if p.config.requests ~= R then break end -- the longer run failed (p.sim_error): keep the last one
    change = math.max(math.abs(p.tps_per_gpu - prev_gpu) / p.tps_per_gpu, math.abs(p.tps_per_user - prev_user) / p.tps_per_user)
    p.converged_change = change
    if change <= o.tolerance then p.converged = true; return end
    prev_gpu, prev_user = p.tps_per_gpu, p.tps_per_user
  end
  p.converged = false
  if not change then
    p.converge_note = (string.format("%s: the best point's convergence was not checked (a run of %d requests could not be doubled " ..
      "within 2e5 requests, or the longer run failed)", k, R))
    return
  end
  p.converge_note = (string.format("%s: the best point's numbers are not converged: they moved by %.3g%% between %d and %d requests " ..
    "(tolerance %.3g%%; runs stop at 32 times the first one's requests or 2e5); its numbers depend on the run's length",
    k, 100 * change, R // 2, R, 100 * o.tolerance))
end

local function check(t)
  if type(t) ~= "table" then fail("expects a table of fields", 3) end
  core.check_fields(t, field_names, "hl.frontier")
  if t.model == nil then fail("field 'model' is required (a preset name or a model object)", 3) end
  -- tables read field by field below (input.mean, slo.ttft_s, serve.*): an __index there ran or raised
  for _, k in ipairs { "model", "input", "output", "slo", "serve" } do
    if type(t[k]) == "table" then core.check_plain_table(t[k], "hl.frontier field '" .. k .. "'") end
  end
  if t.systems == nil then fail("field 'systems' is required (a cluster or a list of clusters)", 3) end
  local o = {}
  for _, n in ipairs(field_names) do
    local v = t[n]
    if v == nil then v = field_default[n] end
    o[n] = v
  end
  for _, n in ipairs { "max_tp", "max_pp", "simulate", "requests" } do
    local v = o[n]
    if type(v) ~= "number" or v ~= math.floor(v) or v < 0 or v > 1e6 then
      fail(string.format("field '%s': %s is not allowed (a whole number in 0..1e6)", n, num_text(v)), 3)
    end
  end
  if o.max_pp < 1 then fail("field 'max_pp': 0 is not allowed (at least 1)", 3) end
  for _, n in ipairs { "max_tp", "max_pp" } do
    local v = o[n]
    if v > 0 and 2 ^ math.floor(math.log(v, 2) + 0.5) ~= v then
      fail(string.format("field '%s': %d is not a power of two (the search tries powers of two)", n, v), 3)
    end
  end
  if type(o.output) == "number" and o.output < 2 then
    fail("field 'output': " .. tostring(o.output) .. " is not allowed (at least 2: tokens/s per user is 1 / TPOT)", 3)
  end
  if type(o.systems) == "table" and getmetatable(o.systems) == nil then
    if next(o.systems) == nil then fail("field 'systems': an empty list (give at least one cluster)", 3) end
    if #o.systems > 0 then
      o.systems = list_of(o.systems, "systems")
    else -- one system as a table of cluster fields: {a = "hgx-h100"} is neither that nor a list
      local names = { "gpu" }
      for _, f in ipairs(core.fields("cluster")) do names[#names + 1] = f.name end
      for alias in pairs(require("hbdlab.objects").aliases.cluster) do names[#names + 1] = alias end
      local ok, e = pcall(core.check_fields, o.systems, names,
        "hl.frontier field 'systems' (a list of systems {\"hgx-h100\", ...} or one table of cluster fields)")
      if not ok then error(plain_error(e), 3) end
    end
  end
  if type(o.progress) ~= "boolean" then
    fail("field 'progress': expected true or false, got " .. type(o.progress) .. " " .. num_text(o.progress), 3)
  end
  if o.simulate > 0 and o.requests < 1 then
    fail(string.format("field 'requests': 0 is not allowed with simulate = %d (each confirming simulation needs " ..
      "at least 1 request; simulate = 0 confirms none)", o.simulate), 3)
  end
  if type(o.tolerance) ~= "number" or not (o.tolerance >= 0 and o.tolerance < 1) then
    fail("field 'tolerance': " .. num_text(o.tolerance) .. " is not a fraction in [0, 1) (0 = no convergence re-runs)", 3)
  end
  if type(o.near) ~= "number" or not (o.near >= 0 and o.near <= 1) then
    fail("field 'near': " .. num_text(o.near) .. " is not a fraction in [0, 1]", 3)
  end
  o.modes = list_of(o.modes, "modes")
  for i, m in ipairs(o.modes) do
    if m ~= "agg" and m ~= "disagg" then
      fail(string.format("field 'modes'[%d]: %s is not one of agg, disagg", i,
        type(m) == "string" and ("'" .. m .. "'") or num_text(m)), 3)
    end
  end
  if o.concurrency ~= nil then
    o.concurrency = list_of(o.concurrency, "concurrency")
    for i, c in ipairs(o.concurrency) do
      if type(c) ~= "number" or c ~= math.floor(c) or c < 1 or c > 1e7 then
        fail(string.format("field 'concurrency'[%d]: %s is not a whole number in 1..1e7", i, num_text(c)), 3)
      end
    end
  end
  o.prefill_load = list_of(o.prefill_load, "prefill_load")
  for i, u in ipairs(o.prefill_load) do
    if type(u) ~= "number" or not (u > 0 and u < 1) then
      fail(string.format("field 'prefill_load'[%d]: %s is not a fraction in (0, 1)", i, num_text(u)), 3)
    end
    if i > 1 and u <= o.prefill_load[i - 1] then fail("field 'prefill_load': must increase", 3) end
  end
  if o.slo ~= nil then
    if type(o.slo) ~= "table" then fail("field 'slo': expected {ttft_s =, tpot_s =, tps_per_user =}", 3) end
    core.check_fields(o.slo, { "ttft_s", "tpot_s", "tps_per_user" }, "hl.frontier field 'slo'")
    for k, v in pairs(o.slo) do
      if type(v) ~= "number" or not (v > 0 and v < math.huge) then
        fail(string.format("field 'slo.%s': %s is not allowed (a number > 0)", k, num_text(v)), 3)
      end
    end
  end
  if o.serve ~= nil and type(o.serve) ~= "table" then fail("field 'serve': expected a table of hl.serve fields", 3) end
  for _, k in ipairs { "model", "cluster", "parallel", "precision", "rate", "concurrency", "trace", "mode", "disagg", "input", "output" } do
    if o.serve and o.serve[k] ~= nil then
      local top = ({ model = 1, precision = 1, concurrency = 1, input = 1, output = 1 })[k]
      fail("field 'serve." .. k .. "': the search sets it (" ..
        (top and ("give " .. k .. " at the top level, or not at all)") or "each point's; leave it out)"), 3)
    end
  end
  -- the points are steady states (hl.serve mode = "analytical"), which model none of these: every
  -- point failed and the search ended "no configuration ... could be evaluated" (attack pass 3)
  for _, k in ipairs { "spec_tokens", "spec_accept", "spec_draft_layers", "spec_draft_model", "prefix_cache", "shared_prefix", "sessions",
                       "kv_offload", "replicas", "keep_steps", "keep_requests", "max_samples" } do
    if o.serve and o.serve[k] ~= nil then
      fail("field 'serve." .. k .. "': not modelled by the frontier's points (steady states of one instance, " ..
        "hl.serve mode = \"analytical\"); run hl.serve or hl.serve_capacity with it on a point's config", 3)
    end
  end
  if o.out ~= nil and (type(o.out) ~= "string" or o.out == "" or o.out:sub(-1) == "/") then
    fail("field 'out': " .. (type(o.out) == "string" and ("'" .. o.out .. "'") or num_text(o.out)) ..
      " is not a path stem (a non-empty string naming a file, not a folder)", 3)
  end
  return o
end

--- A point's hl.serve fields as plain values (JSON): the model by preset name (or its fields), the
--- cluster as its fields (every cluster field of the core's table, the GPU by preset name).
function M.plain_config(cfg)
  if type(cfg) ~= "table" then return cfg end
  local function object_fields(kind, obj)
    local t = {}
    for _, f in ipairs(core.fields(kind)) do
      local v = obj[f.name]
      if type(v) == "number" or type(v) == "string" or type(v) == "boolean" then t[f.name] = v end
    end
    return t
  end
  local o = {}
  for k, v in pairs(cfg) do
    if type(v) == "userdata" and k == "cluster" then
      o[k] = object_fields("cluster", v)
      o[k].gpu = v.gpu.name
    elseif type(v) == "userdata" and k == "model" then
      o[k] = object_fields("model", v)
    elseif type(v) == "table" then
      o[k] = M.plain_config(v)
    else
      o[k] = v
    end
  end
  return o
end

-- A flat row of a point (M.columns), for CSV.
local function flat(p)
  local r = {}
  for _, c in ipairs(M.columns) do r[c] = p[c] end
  return r
end

--- A result as plain values (the JSON of `hbdlab frontier --json` and of STEM.json): every point
--- with its pareto flag and its hl.serve fields, the Pareto sets and best points, ratios, launch options.
function M.plain(res)
  local function plain(p)
    local o = flat(p)
    o.pareto, o.config = p.pareto, M.plain_config(p.config)
    -- a simulated point's analytical numbers; a best point's convergence; an unconfirmed best
    o.analytical, o.converged, o.converged_change, o.unconfirmed = p.analytical, p.converged, p.converged_change, p.unconfirmed
    o.unsettled, o.settle_simulate = p.unsettled, p.settle_simulate
    return o
  end
  local js = { points = {}, pareto = {}, best = {}, ratios = res.ratios, launch = res.launch, warnings = res.warnings,
                interrupted = res.interrupted } -- Ctrl-C / SIGTERM: the points done, not the whole search
  for i, p in ipairs(res.points) do js.points[i] = plain(p) end
  for k, list in pairs(res.pareto) do
    js.pareto[k] = {}
    for i, p in ipairs(list) do js.pareto[k][i] = plain(p) end
  end
  for k, p in pairs(res.best) do js.best[k] = plain(p) end
  return js
end

-- what: the charts' subject, "deepseek-v3, 2048 in / 512 out tokens" (their title names the model and lengths)
local function write_outputs(hl, res, stem, what)
  local rows = require "hbdlab.rows"
  local flat_rows = {}
  for i, p in ipairs(res.points) do flat_rows[i] = flat(p) end
  -- the shard's block of the work list, for the fingerprint `hbdlab merge` checks
  rows.block_of[flat_rows] = res.block
  rows.write_csv(flat_rows, stem .. "_points.csv", M.columns)
  local d = core.dist()
  if d.count > 1 and not d.mpi then return end -- a shard writes its points only (hbdlab merge joins them)
  local js = M.plain(res)
  rows.write_atomic(stem .. ".json", core.json_encode(js, true) .. "\n")
  local plot = require "hbdlab.plot"
  -- every curve keeps its colour in both charts (the cost chart lacks the curves without a price)
  local keys = {}
  for i, k in ipairs(res.groups) do keys[i] = (k:gsub("|", " ")) end
  plot.frontier { points = res.points, x = "tps_per_user", y = "tps_per_gpu", out = stem .. ".png", keys = keys,
                  title = what .. ": output tokens/s per GPU vs tokens/s per user" }
  local priced_pts = {}
  for _, p in ipairs(res.points) do if p.usd_per_mtok then priced_pts[#priced_pts + 1] = p end end
  if #priced_pts > 0 then
    plot.frontier { points = priced_pts, x = "tps_per_user", y = "usd_per_mtok", out = stem .. "_cost.png", keys = keys,
                    title = what .. ": USD per million output tokens vs tokens/s per user",
                    ylabel = "USD per million output tokens", lower = true }
  end
end

--- hl.frontier{ model =, systems = {...}, precision =, framework =, input =, output =, slo =,
---              modes = {"agg", "disagg"}, ... } -> { points, pareto, best, ratios, launch }
--- (hl.help "frontier" lists every field).
function M.frontier(t)
  local o = check(t)
  local hl = require "hbdlab"
  local model = o.model
  if type(model) ~= "string" and type(model) ~= "table" and type(model) ~= "userdata" then
    fail("field 'model': expected a preset name, a model object or a table of model fields, got " .. type(model), 2)
  end
  if type(model) == "string" or (type(model) == "table" and getmetatable(model) == nil) then
    local ok, m = pcall(hl.model, model)
    if not ok then fail("field 'model': " .. tostring(m), 2) end
    model = m
  end
  local systems = {}
  local sys_list = (type(o.systems) == "table" and getmetatable(o.systems) == nil and #o.systems > 0) and o.systems or { o.systems }
  for i, s in ipairs(sys_list) do systems[i] = system_of(hl, s, i) end
  local precs = list_of(o.precision, "precision")
  for i, pr in ipairs(precs) do
    local ok = type(pr) == "string" and pcall(core.precision_bytes, pr)
    if not ok then fail(string.format("field 'precision'[%d]: %s is not a precision (fp32, bf16, fp16, fp8, fp4, ...)", i, num_text(pr)), 2) end
  end
  -- system names are the curves' keys: a repeated name gets #2, #3, ...
  local seen_names = {}
  for _, sy in ipairs(systems) do
    local nm, k = sy.name, 1
    while seen_names[sy.name] do k = k + 1; sy.name = nm .. " #" .. k end
    seen_names[sy.name] = true
  end
  local base = copy(o.serve)
  base.model, base.input, base.output, base.framework = model, o.input, o.output, o.framework
  local ctx = { base = base, concurrency = o.concurrency, prefill_load = o.prefill_load, slo = o.slo,
                requests = o.requests, simulate = o.simulate > 0 and core.dist().count == 1,
                input_mean = mean_length(o.input), output_mean = mean_length(o.output), errors = {},
                moe = (model.experts or 0) > 0 }
  if not ctx.input_mean or not ctx.output_mean then fail("fields 'input' and 'output': give numbers or distributions with a mean or min/max", 2) end
  -- the disaggregated points are computed from these means without hl.serve's own check: a NaN or
  -- infinite length would give NaN tokens/s per GPU on every disagg point
  -- (a finite but out-of-range length is left to hl.serve, whose message every configuration repeats)
  for _, f in ipairs { { "input", ctx.input_mean }, { "output", ctx.output_mean } } do
    local v = f[2]
    if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then
      fail(string.format("field '%s': mean length %s is not a finite number of tokens", f[1], num_text(v)), 2)
    end
  end
  -- a fixed length out of hl.serve's range, or an unknown framework, failed every configuration: the
  -- search ran to its end and returned no point, with a warning (attack pass 7); refused here
  for _, f in ipairs { "input", "output" } do
    local v = o[f]
    if type(v) == "number" and not (v >= 1 and v <= 1e8 and v == math.floor(v)) then
      fail(string.format("field '%s': %s is not a whole number of tokens in 1..1e8", f, num_text(v)), 2)
    end
  end
  if o.framework ~= nil then
    local names
    for _, fd in ipairs(core.fields("job")) do if fd.name == "framework" then names = fd.values end end
    local ok = type(o.framework) == "string" and names and ("|" .. names .. "|"):find("|" .. o.framework:lower() .. "|", 1, true)
    if not ok then
      fail(string.format("field 'framework': %s is not one of %s", type(o.framework) == "string" and
        string.format("%q", o.framework) or ("a " .. type(o.framework)), (names or ""):gsub("|", ", ")), 2)
    end
  end
  -- the work list: (system, precision, mode, mapping); sharded and split over MPI ranks like a sweep
  local work = {}
  local want = {}
  for _, m in ipairs(o.modes) do want[m] = true end
  for _, sys in ipairs(systems) do
    local maps = mappings(model, sys, o)
    for _, prec in ipairs(precs) do
      for _, m in ipairs(maps) do
        if want.agg and sys.gpus % m.gpus == 0 then work[#work + 1] = { sys = sys, prec = prec, mode = "agg", m = m } end
        if want.disagg and m.gpus < sys.gpus then work[#work + 1] = { sys = sys, prec = prec, mode = "disagg", m = m } end
      end
    end
  end
  local lo, hi = core.dist_block(#work)
  local points, interrupted = {}, false
  local group_errors = {} -- per system|precision|mode of the work list: its configurations' errors
  local profiles = {} -- per system|precision: prefill profiles (evaluated in every shard: they are few)
  local function prefill_profiles(sys, prec)
    local key = sys.name .. "|" .. prec
    if profiles[key] then return profiles[key] end
    local list = {}
    for _, m in ipairs(mappings(model, sys, o)) do
      if m.gpus < sys.gpus then
        local p = prefill_profile(hl, ctx, sys, prec, m)
        if p then list[#list + 1] = p end
      end
    end
    -- GPU-seconds per request at the highest load: the best few prefill choices
    table.sort(list, function(a, b)
      local ca, cb = a.m.gpus / (a.sat * a.loads[#a.loads].u), b.m.gpus / (b.sat * b.loads[#b.loads].u)
      if ca ~= cb then return ca < cb end
      return a.m.gpus < b.m.gpus
    end)
    -- dense models: the best four (a pool of x instances is one instance with DP x, the same
    -- per-GPU rate); MoE models: the best of each instance size, since a pool is one instance
    -- (x = 1: pooling x wide-EP instances would be one EP group of x times the GPUs, and pooling
    -- TP-sharded experts would shard each expert over the pool), so the size itself is the choice
    local keep, seen_size = {}, {}
    for _, p in ipairs(list) do
      if ctx.moe then
        if not seen_size[p.m.gpus] then seen_size[p.m.gpus] = true; keep[#keep + 1] = p end
      elseif #keep < 4 then
        keep[#keep + 1] = p
      end
    end
    -- and the fastest prompt (lowest TTFT at the lightest load), for tight TTFT limits
    local fastest
    for _, p in ipairs(list) do if not fastest or p.loads[1].ttft_s < fastest.loads[1].ttft_s then fastest = p end end
    if fastest then
      local seen = false
      for _, p in ipairs(keep) do if p == fastest then seen = true end end
      if not seen then keep[#keep + 1] = fastest end
    end
    profiles[key] = keep
    return keep
  end
  local ok, err = pcall(function()
    for i = lo + 1, hi do
      local w = work[i]
      local wk = curve_key(w.sys.name, w.prec, w.mode)
      group_errors[wk] = group_errors[wk] or {}
      ctx.cur_errors = group_errors[wk]
      if w.mode == "agg" then
        agg_points(hl, ctx, w.sys, w.prec, w.m, points)
      else
        local profs = prefill_profiles(w.sys, w.prec)
        if #profs > 0 then
          for _, c in ipairs(ctx.concurrency or concurrencies(w.m.dp, true)) do
            -- a decode instance with attention DP needs at least one sequence per DP group: the
            -- concurrencies below dp (or not a multiple of it) are skipped, not the end of the loop
            -- (stopping there dropped every wide-EP DP-attention decode instance from disagg)
            if c % w.m.dp == 0 then
              local d = decode_point(hl, ctx, w.sys, w.prec, w.m, c)
              if not d then break end
              disagg_points(hl, ctx, w.sys, w.prec, profs, d, points)
            end
          end
        end
      end
      progress_line(o.progress, i - lo, hi - lo, "configurations")
    end
  end)
  if not ok then
    if tostring(err):find("interrupted!", 1, true) then
      interrupted = true
      io.stderr:write(string.format("\nfrontier interrupted: %d points kept\n", #points))
      core.note_interrupted_sweep()
    else
      error(err, 0)
    end
  end
  local d = core.dist()
  if d.mpi then
    -- every rank's points on every rank (in rank order), as a function-form sweep gathers rows
    local mine = {}
    for i, p in ipairs(points) do mine[i] = flat(p) end
    local all = require("hbdlab.sweep").gather_rows(mine)
    points = all
  end
  local sharded = d.count > 1 and not d.mpi
  local sys_of = {} -- system by (unique) name: the points name theirs
  for _, sy in ipairs(systems) do sys_of[sy.name] = sy end
  -- Pareto sets per system x precision x mode; then confirm the points on or near them
  local groups, order = {}, {}
  for _, p in ipairs(points) do
    local k = group_key(p)
    if not groups[k] then groups[k] = {}; order[#order + 1] = k end
    table.insert(groups[k], p)
  end
  local function fronts()
    local pareto = {}
    for _, k in ipairs(order) do
      pareto[k] = M.pareto(groups[k])
    end
    return pareto
  end
  local pareto = fronts()
  if o.simulate > 0 and not sharded and not interrupted and not d.mpi then
    local todo = {}
    for _, k in ipairs(order) do
      local front, picked = pareto[k], {}
      for _, p in ipairs(front) do picked[p] = true end
      -- near: within `near` of the frontier's tokens/s per GPU at the point's interactivity
      for _, p in ipairs(groups[k]) do
        local y = reach(front, p.tps_per_user)
        if not picked[p] and y and p.tps_per_gpu >= (1 - o.near) * y then picked[p] = true end
      end
      local list = {}
      for _, p in ipairs(groups[k]) do if picked[p] then list[#list + 1] = p end end
      table.sort(list, function(a, b) return a.tps_per_user > b.tps_per_user end)
      -- at most `simulate` per group, spread over the curve
      local n = #list
      local step = n > o.simulate and n / o.simulate or 1
      local j = 1
      while j <= n + 1e-9 do
        todo[#todo + 1] = list[math.floor(j)]
        j = j + step
      end
    end
    local ok2, err2 = pcall(function()
      for i, p in ipairs(todo) do
        confirm(hl, ctx, sys_of[p.system], p)
        progress_line(o.progress, i, #todo, "simulations")
      end
    end)
    if not ok2 then
      if tostring(err2):find("interrupted!", 1, true) then
        interrupted = true
        core.note_interrupted_sweep()
      else
        error(err2, 0)
      end
    end
    pareto = fronts()
  end
  for _, p in ipairs(points) do p.pareto = false end
  for _, k in ipairs(order) do for _, p in ipairs(pareto[k]) do p.pareto = true end end
  -- the best point under the SLO per group: the highest tokens/s per GPU that meets it, confirmed
  -- by simulation when the search simulates (the analytical TTFT is optimistic near saturation):
  -- candidates are tried best first until a simulated one still meets the SLO (at most `simulate`)
  local best, missing, overall = {}, {}, nil
  local warnings = {} -- what the user must know about the result (also printed once to stderr)
  local function note(msg)
    warnings[#warnings + 1] = msg
    require("hbdlab.warn").warn("hl.frontier: " .. msg)
  end
  local can_simulate = o.simulate > 0 and not sharded and not interrupted and not d.mpi
  -- fn(hl, ctx, p's system, p, ...) under pcall; true when Ctrl-C / SIGTERM stopped it (the search
  -- is then interrupted), any other error raised again
  local function stopped(fn, p, ...)
    local done, e = pcall(fn, hl, ctx, sys_of[p.system], p, ...)
    if done then return false end
    if tostring(e):find("interrupted!", 1, true) then
      interrupted = true
      core.note_interrupted_sweep()
      return true
    end
    error(e, 0)
  end
  for _, k in ipairs(order) do
    for _, p in ipairs(groups[k]) do
      if not overall or p.tps_per_gpu > overall.tps_per_gpu then overall = p end
    end
    local b, budget_out
    local tries, skip = 0, {}
    while true do
      -- the point that meets the SLO with the most tokens/s per GPU, by the numbers known now
      local top, top_sim
      for _, p in ipairs(groups[k]) do
        if meets(p, o.slo) and not skip[p] then
          if not top or p.tps_per_gpu > top.tps_per_gpu then top = p end
          if p.simulated and (not top_sim or p.tps_per_gpu > top_sim.tps_per_gpu) then top_sim = p end
        end
      end
      if top and top.simulated and can_simulate and o.tolerance > 0 and not top.converged_checked then
        -- a confirmed candidate is re-run until its numbers converge; one that then misses the SLO
        -- (a queue that grows with the run: its TTFT p90 rises with the requests) is dropped
        top.converged_checked = true
        if stopped(converge, top, o) then b = top; break end
        if not meets(top, o.slo) then skip[top] = true; goto next_candidate end
      end
      if not top or top.simulated or not can_simulate then b = top; break end
      if tries >= o.simulate then
        -- the budget ran out before the best candidate was confirmed: the best confirmed point, or
        -- the analytical one (flagged) when none is; what it left unconfirmed is counted below
        budget_out = true
        if top_sim then b = top_sim else b = top; b.unconfirmed = true end
        break
      end
      tries = tries + 1
      if stopped(confirm, top) then b = top_sim; break end
      if not top.simulated then skip[top] = true end -- its simulation failed (p.sim_error): not a candidate
      ::next_candidate::
    end
    if b and b.simulated and can_simulate and not interrupted and o.tolerance > 0 and not b.converged_checked then
      -- the best confirmed point left when the budget ran out: converged too
      b.converged_checked = true
      stopped(converge, b, o)
      if not meets(b, o.slo) then
        b.misses_slo = true -- the summary's best line says so too, not only the warning
        note(string.format("%s: the best confirmed point misses the SLO once converged (TTFT p90 %.4g s, TPOT %.4g s); " ..
          "raise simulate to confirm others", k:gsub("|", " "), b.ttft_p90_s, b.tpot_s))
      end
    end
    if b and b.converge_note then note(b.converge_note) end
    if budget_out and b then
      -- the unconfirmed candidates (analytically within the SLO) above the best, by its final numbers;
      -- confirming them all (at most) settles the curve's best
      local above, highest = 0, nil
      for _, p in ipairs(groups[k]) do
        if p ~= b and meets(p, o.slo) and not skip[p] and not p.simulated and p.tps_per_gpu > b.tps_per_gpu then
          above = above + 1
          highest = math.max(highest or 0, p.tps_per_gpu)
        end
      end
      if b.unconfirmed then
        note(string.format("%s: the simulate budget (%d) ran out before any candidate was confirmed within the SLO: " ..
          "'best' is analytical and unconfirmed (%.4g tok/s/GPU); simulate = %d confirms it and every candidate above it",
          k:gsub("|", " "), o.simulate, b.tps_per_gpu, tries + above + 1))
      elseif above > 0 then
        note(string.format("%s: the simulate budget (%d) ran out with %d unconfirmed candidates above the best confirmed " ..
          "point (%.4g tok/s/GPU; the highest unconfirmed one %.4g analytically): 'best' is the best confirmed point, " ..
          "not necessarily the curve's best; simulate = %d confirms them all", k:gsub("|", " "), o.simulate, above,
          b.tps_per_gpu, highest, tries + above))
        b.unsettled, b.settle_simulate = above, tries + above
      end
    end
    if b then best[k] = b else missing[#missing + 1] = k end
  end
  if can_simulate then
    pareto = fronts()
    for _, p in ipairs(points) do p.pareto = false end
    for _, k in ipairs(order) do for _, p in ipairs(pareto[k]) do p.pareto = true end end
  end
  for _, p in ipairs(points) do
    if p.mode == "disagg" and p._prefill and not p.config then
      -- the fields that reproduce the point: as confirm runs them, three requests per decode client at least
      p.config = disagg_config(ctx, sys_of[p.system], p, requests_for(ctx, p))
    end
    p._prefill, p._decode, p._rates, p._offered = nil, nil, nil, nil
    p.converged_checked, p.converge_note = nil, nil
  end
  -- a curve of the work list without a single point (a precision the GPU cannot run, a model that
  -- fits no mapping) is named with its most frequent reason, not left out silently
  if not interrupted and not d.mpi then
    local named = {}
    for _, w in ipairs(work) do
      local wk = curve_key(w.sys.name, w.prec, w.mode)
      if group_errors[wk] and not groups[wk] and not named[wk] then
        named[wk] = true
        note(string.format("%s: no configuration could be evaluated; the most frequent reason: %s", wk:gsub("|", " "),
          tostring(most_frequent(group_errors[wk]) or "none of its mappings fits (memory) or is stable")))
      end
    end
  end
  if next(best) == nil and not interrupted and not sharded then
    if not overall then
      fail("no configuration of " .. tostring(model.name) .. " could be evaluated on any system; the most frequent reason: " ..
        tostring(most_frequent(ctx.errors) or "none of its mappings fits"), 2)
    end
    fail(string.format("no configuration meets the SLO (ttft_s %s, tpot_s %s, tps_per_user %s); the best found is %s %s %s " ..
      "tp %d pp %d ep %d dp %d at concurrency %d: %.4g tok/s/GPU, %.4g tok/s/user, TTFT p90 %.4g s, TPOT %.4g s",
      tostring(o.slo and o.slo.ttft_s), tostring(o.slo and o.slo.tpot_s), tostring(o.slo and o.slo.tps_per_user),
      overall.system, overall.precision, overall.mode, overall.tp, overall.pp, overall.ep, overall.dp,
      overall.concurrency, overall.tps_per_gpu, overall.tps_per_user, overall.ttft_p90_s, overall.tpot_s), 2)
  end
  -- ratios at equal interactivity, each from one set of numbers, named by `basis`: "simulated" (the
  -- Pareto sets of the simulated points alone) when both curves have a simulated point that reaches
  -- x, else "analytical" (every point at its analytical numbers); never a simulated number over an
  -- analytical one. At the SLO the ratio is of the two best points printed (basis "best").
  local ratios = {}
  local xs = {}
  for _, v in ipairs { 10, 20, 50, 100, 200 } do if not (o.slo and o.slo.tps_per_user == v) then xs[#xs + 1] = v end end
  local sets = {}
  local function set_of(k, basis)
    local key = k .. "|" .. basis
    if sets[key] == nil then
      local list = {}
      for _, p in ipairs(groups[k] or {}) do
        if basis == "simulated" then
          if p.simulated then list[#list + 1] = p end
        else
          local a = p.analytical or (not p.simulated and p) or nil -- a suspect point has no analytical numbers
          if a then list[#list + 1] = { tps_per_user = a.tps_per_user, tps_per_gpu = a.tps_per_gpu } end
        end
      end
      sets[key] = M.pareto(list)
    end
    return sets[key]
  end
  local function ratio_at(ka, kb, x)
    for _, basis in ipairs { "simulated", "analytical" } do
      local ya, pa = reach(set_of(ka, basis), x)
      local yb, pb = reach(set_of(kb, basis), x)
      -- simulated: whether both runs converged (only best points are re-run; others are runs of
      -- `requests`, at least 3 a client, biased low by about population / requests: MODEL.md 14)
      if ya and yb then return yb / ya, basis, yb, ya, basis == "simulated" and (pa.converged and pb.converged) or nil end
    end
  end
  local function add(q, kb, ka)
    local bb, ba = best[kb], best[ka]
    if bb and ba then
      local basis = (bb.simulated and ba.simulated) and "simulated" or "analytical"
      local yb = basis == "simulated" and bb.tps_per_gpu or (bb.analytical or bb).tps_per_gpu
      local ya = basis == "simulated" and ba.tps_per_gpu or (ba.analytical or ba).tps_per_gpu
      local r = copy(q)
      r.at, r.basis, r.ratio, r.tps_per_gpu, r.ref_tps_per_gpu = "best", "best " .. basis, yb / ya, yb, ya
      ratios[#ratios + 1] = r
    end
    for _, x in ipairs(xs) do
      local v, basis, yb, ya, conv = ratio_at(ka, kb, x)
      if v then
        local r = copy(q)
        r.tps_per_user, r.ratio, r.basis, r.tps_per_gpu, r.ref_tps_per_gpu = x, v, basis, yb, ya
        if basis == "simulated" then r.converged = conv == true end
        ratios[#ratios + 1] = r
      end
    end
  end
  for _, sys in ipairs(systems) do
    for _, prec in ipairs(precs) do
      local ka, kg = curve_key(sys.name, prec, "agg"), curve_key(sys.name, prec, "disagg")
      if groups[ka] and groups[kg] then add({ what = "disagg/agg", system = sys.name, precision = prec }, kg, ka) end
    end
  end
  if #systems > 1 then
    for _, prec in ipairs(precs) do
      for _, mode in ipairs(o.modes) do
        local ref = curve_key(systems[1].name, prec, mode)
        for s = 2, #systems do
          local other = curve_key(systems[s].name, prec, mode)
          if groups[ref] and groups[other] then
            add({ what = systems[s].name .. " / " .. systems[1].name, precision = prec, mode = mode }, other, ref)
          end
        end
      end
    end
  end
  local launch = {}
  for k, p in pairs(best) do launch[k] = M.launch(p, model) end
  local res = setmetatable({ points = points, pareto = pareto, best = best, missing = missing, ratios = ratios,
                             warnings = warnings,
                             launch = launch, interrupted = interrupted or nil, groups = order,
                             -- a configuration yields any number of points: the count is not checked
                             block = { lo, hi, #work, filtered = true } }, M.result_mt)
  if o.out then
    local function len(v) local m = mean_length(v); return m and string.format("%.6g", m) or tostring(v) end
    local what = string.format("%s, %s%s in / %s out tokens", model.name,
      (type(o.input) == "table" or type(o.output) == "table") and "mean " or "", len(o.input), len(o.output))
    local okw, ew = pcall(write_outputs, hl, res, o.out, what)
    if not okw then fail(plain_error(ew), 2) end -- "cannot create folder ...", not hbdlab's own position
    if interrupted then -- whole files of a partial search: say so, and the JSON says "interrupted": true
      local confirmed = 0
      for _, p in ipairs(points) do if p.simulated then confirmed = confirmed + 1 end end
      io.stderr:write(string.format("frontier interrupted: %s_points.csv and %s.json hold the %d points done " ..
        "(%d confirmed by simulation), not the whole search\n", o.out, o.out, #points, confirmed))
    end
  end
  return res
end

--- The launch options a user would type for a point, in vLLM, SGLang and TensorRT-LLM terms: a
--- translation of the point's configuration (names from each engine's documentation), not a guarantee.
function M.launch(p, model)
  local name = type(model) == "userdata" and model.name or tostring(model)
  local moe = (p.ep or 1) > 1
  local function one(tp, pp, dp, ep, conc)
    local v = { string.format("vllm serve %s --tensor-parallel-size %d --pipeline-parallel-size %d", name, tp, pp) }
    if dp > 1 then v[#v + 1] = string.format("--data-parallel-size %d", dp) end
    if moe then v[#v + 1] = "--enable-expert-parallel" end
    v[#v + 1] = string.format("--max-num-seqs %d --enable-chunked-prefill", math.max(1, math.ceil(conc / dp)))
    local s = { string.format("python -m sglang.launch_server --model-path %s --tp-size %d", name, tp * dp) }
    if pp > 1 then s[#s + 1] = string.format("--pp-size %d", pp) end
    if dp > 1 then s[#s + 1] = string.format("--dp-size %d --enable-dp-attention", dp) end
    if moe then s[#s + 1] = string.format("--ep-size %d", ep) end
    s[#s + 1] = string.format("--max-running-requests %d", conc)
    local t = { string.format("trtllm-serve %s --tp_size %d --pp_size %d", name, tp * dp, pp) }
    if moe then t[#t + 1] = string.format("--ep_size %d", ep) end
    t[#t + 1] = string.format("--max_batch_size %d", math.max(1, math.ceil(conc / dp)))
    if dp > 1 then t[#t + 1] = "(extra_llm_api_options: enable_attention_dp: true)" end
    return { vllm = table.concat(v, " "), sglang = table.concat(s, " "), trtllm = table.concat(t, " ") }
  end
  local out = { note = "a translation of the configuration into each engine's options, not a guarantee" }
  if p.mode == "agg" then
    out.instance = one(p.tp, p.pp, p.dp, p.ep, p.concurrency)
    out.instances = p.instances
  else
    -- the decode instance's room as its config gives it (twice the population: the pool is not run
    -- at exactly its capacity, MODEL.md 14), per decode instance
    local room = p.config and p.config.max_seqs and math.ceil(p.config.max_seqs / (p.d_instances or 1)) or p.concurrency
    out.decode = one(p.tp, p.pp, p.dp, p.ep, room)
    out.prefill = one(p.p_tp, p.p_pp, p.p_dp, p.p_ep, 1)
    out.decode.sglang = out.decode.sglang .. " --disaggregation-mode decode"
    out.prefill.sglang = out.prefill.sglang .. " --disaggregation-mode prefill"
    out.prefill_instances, out.decode_instances = p.p_instances, p.d_instances
    out.copies = p.replicas -- of the prefill and decode instances above, side by side on the cluster
  end
  return out
end

M.result_mt = {}
M.result_mt.__index = M.result_mt
M.result_mt.__tostring = function(r)
  local lines = { string.format("frontier: %d points in %d curves%s", #r.points, #r.groups,
    r.interrupted and " (interrupted: the points so far)" or ""),
    "  tok/s/GPU: output tokens/s per GPU of the whole cluster, copies of a configuration filling it (docs/MODEL.md 14)" }
  for _, k in ipairs(r.groups) do
    local f, b = r.pareto[k], r.best[k]
    lines[#lines + 1] = string.format("  %-40s %3d on the frontier", k:gsub("|", " "), #f)
    if b then
      lines[#lines + 1] = string.format("    best: tp %d pp %d ep %d dp %d x%d at concurrency %d: %.4g tok/s/GPU, %.4g tok/s/user, TTFT p90 %.4g ms%s",
        b.tp, b.pp, b.ep, b.dp, b.instances, b.concurrency, b.tps_per_gpu, b.tps_per_user, b.ttft_p90_s * 1e3,
        b.simulated and (" (simulated" .. (b.converged == false and ", NOT converged" or "") ..
          (b.unsettled and string.format("; NOT settled: %d unconfirmed candidates above it, simulate = %d confirms them",
            b.unsettled, b.settle_simulate) or "") .. ")")
          or (b.unconfirmed and " (analytical, NOT confirmed: the simulate budget ran out)" or " (analytical)"))
        .. (b.misses_slo and "; MISSES the SLO once converged (raise simulate)" or "")
      if b.mode == "disagg" then
        lines[#lines] = lines[#lines] .. string.format(" with %d prefill x tp %d pp %d ep %d dp %d at load %.2f",
          b.p_instances, b.p_tp, b.p_pp, b.p_ep, b.p_dp, b.p_load)
      end
      if b.gpus_idle > 0 then
        lines[#lines] = lines[#lines] .. string.format("; %d %s of %d GPUs on %d of %d GPUs, %d idle: %.4g tok/s per GPU used",
          b.replicas, b.replicas == 1 and "copy" or "copies", b.replica_gpus, b.gpus_used, b.gpus_used + b.gpus_idle,
          b.gpus_idle, b.tps_per_gpu_used)
      end
    else
      lines[#lines + 1] = "    best: none meets the SLO"
    end
  end
  local short = false
  for _, q in ipairs(r.ratios) do
    lines[#lines + 1] = string.format("  %s %s%s %s: %.3gx (%s: %.4g / %.4g tok/s/GPU)", q.what,
      q.system and (q.system .. " ") or "", q.precision .. (q.mode and (" " .. q.mode) or ""),
      q.at == "best" and "of the best points above" or string.format("at >= %g tok/s/user", q.tps_per_user),
      q.ratio, q.basis, q.tps_per_gpu, q.ref_tps_per_gpu) .. (q.converged == false and " *" or "")
    if q.converged == false then short = true end
  end
  if short then
    lines[#lines + 1] = "  * from a confirming run that was not re-run to convergence (only best points are): " ..
      "runs of `requests`, at least 3 a client, read low by about population / requests (docs/MODEL.md 14)"
  end
  for _, w in ipairs(r.warnings or {}) do lines[#lines + 1] = "  warning: " .. w end
  return table.concat(lines, "\n")
end

return M

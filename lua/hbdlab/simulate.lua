-- hl.simulate: one inference job. Results print as a compact summary.
local core = require "hbdlab.core"
local objects = require "hbdlab.objects"

local M = {}

-- A result is a view over the C result (lua/bind/l_result_view.c): fields are read on access,
-- groups built on first access; pairs() and json_encode see every field. Its metatable is the
-- views' own; its methods live in `methods`.
local result_mt, methods = core.result_view_mt()

-- The simulate fields each result was run from, for hl.walkthrough: the fields table itself when
-- it held the objects, else a copy with the objects in it (made when asked for).
M.job_of = setmetatable({}, { __index = function(_, r)
  local t, m, c = core.result_view_kept(r)
  if t == nil then return nil end
  if rawequal(t.model, m) and rawequal(t.cluster, c) then return t end
  local job = {}
  for k, v in pairs(t) do job[k] = v end
  job.model, job.cluster = m, c
  return job
end })

--- r:trace(): per-GPU events of one prefill layer pass and one decode step.
function methods.trace(r) return require("hbdlab.trace").events(r) end

--- A duration in the unit that reads best: s from 1 s, ms from 1 ms, else us.
function M.duration(s)
  local a = math.abs(s)
  if a >= 1 then return string.format("%.4g s", s) end
  if a >= 1e-3 or a == 0 then return string.format("%.4g ms", s * 1e3) end
  return string.format("%.4g us", s * 1e6)
end
local ms = M.duration

--- The cost line of a printed result; an unknown price or power reads "unknown" (never 0).
function M.cost_line(r)
  local function num(v, unit) return v == nil and ("unknown " .. unit) or string.format("%.4g %s", v, unit) end
  return string.format("\n  cost: %s in, %s out, %s, %s at the wall", num(r.usd_per_mtok_in, "USD/Mtok"),
    num(r.usd_per_mtok_out, "USD/Mtok"), num(r.joules_per_token, "J/token"),
    r.power_w == nil and "unknown W" or objects.si(r.power_w, "W"))
end

result_mt.__tostring = function(r)
  local p = r.parallel
  return string.format(
    "%s on %d GPU%s (tp %d, pp %d, ep %d, dp %d, etp %d), batch %d, input %d, output %d\n" ..
    "  TTFT %s   TPOT %s   total %s   bound: %s\n" ..
    "  decode %.4g tok/s   per GPU %.4g tok/s (%.4g incl. prompt)\n" ..
    "  comm share: prefill %.1f%%, decode %.1f%%\n" ..
    "  memory/GPU: weights %s + KV %s + workspace %s = %s (%s)",
    r.precision, p.gpus, p.gpus == 1 and "" or "s", p.tp, p.pp, p.ep, p.dp, p.etp, r.batch, r.input, r.output,
    ms(r.ttft_s), ms(r.tpot_s), ms(r.total_s), r.bound,
    r.decode_tps, r.tps_per_gpu, r.tps_per_gpu_incl_prompt,
    r.prefill.comm_share * 100, r.decode.comm_share * 100,
    objects.si(r.memory.weights_bytes, "B"), objects.si(r.memory.kv_bytes, "B"),
    objects.si(r.memory.workspace_bytes, "B"), objects.si(r.memory.per_gpu_bytes, "B"),
    r.memory.fits and "fits" or "DOES NOT FIT") ..
    M.cost_line(r) ..
    ((r.decode.time_s > 0 and r.decode.compute_s == 0) and
      "\n  decode compute_s is 0: every decode operator is HBM-bound at this batch (below the ridge point), " ..
      "so its time counts as memory_s" or "")
end

--- hl.simulate{ model = m, cluster = c, precision = "fp8", batch = 16, input = 32768, output = 1024,
---              parallel = { tp = 8, ep = 16 }, overlap = 0, ... } -> result (see hl.help "simulate")
local warn -- hbdlab.warn, required on the first call
-- Clusters whose GPU's price was checked (the cost warning depends only on the GPU): weak keys.
local cost_checked = setmetatable({}, { __mode = "k" })
local simulate_c = core.simulate
local resolved_pair = objects.resolved_pair

-- The warning flags core.simulate returns (lua/bind/l_sim.c): the checks of hbdlab.warn run
-- only when the core saw what they look for; WARN_TBO: any of the four two_batch_overlap reasons.
local WARN_CONTEXT, WARN_LIMITS, WARN_COST, WARN_MAPPING, WARN_SPEC, WARN_TBO = 1, 2, 4, 8, 16, 32 | 64 | 128 | 256

function M.simulate(t)
  if type(t) ~= "table" then error("hl.simulate expects a table of fields", 2) end
  warn = warn or require "hbdlab.warn"
  local m, c = t.model, t.cluster
  if type(m) ~= "userdata" or type(c) ~= "userdata" then m, c = resolved_pair(m, c) end -- names resolve once
  local ok, r, flags = pcall(simulate_c, t, m, c)
  if not ok then
    -- a job read in full that fails to run may fail for want of a mapping, and says so; a
    -- misspelt or refused field is the whole story (core.job_reads: the binding's own reading)
    if core.job_reads(t, m, c) then warn.check_job(t, nil, true) end
    error(r, 0)
  end
  if flags ~= 0 and warn.enabled then
    if flags & (WARN_CONTEXT | WARN_MAPPING | WARN_SPEC) ~= 0 then
      local job = t
      if not (rawequal(t.model, m) and rawequal(t.cluster, c)) then job = M.job_of[r] end
      warn.check_job(job, r)
    end
    if flags & WARN_LIMITS ~= 0 then warn.check_limits(t, r) end
    if flags & WARN_TBO ~= 0 then warn.check_tbo(r, flags) end
    if flags & WARN_COST ~= 0 and type(c) == "userdata" and not cost_checked[c] then
      cost_checked[c] = true
      warn.check_cost(c.gpu, r)
    end
  end
  return r
end

M.result_mt = result_mt
return M

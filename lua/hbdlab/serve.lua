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
  keep_steps = true, max_samples = true,
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
      sv[k:match("^(%a+)_") == "ttft" and "slo_ttft_s" or "slo_tpot_s"] = v * scale
    end
    sv.slo = nil
  end
  if sv.trace ~= nil then
    if type(sv.trace) ~= "string" then error("hl.serve field 'trace': expected a file name (CSV or JSONL)", level) end
    local f, err = io.open(sv.trace, "rb")
    if not f then error("hl.serve field 'trace': cannot read " .. tostring(err), level) end
    sv.trace_text, sv.trace_origin = f:read("a"), sv.trace
    f:close()
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
function M.serve(t)
  if type(t) ~= "table" then error("hl.serve expects a table of fields", 2) end
  local job, sv = M.split(t, 2)
  return setmetatable(core.serve(job, sv), result_mt)
end

M.result_mt = result_mt
return M

-- hl.simulate: one inference job. Results print as a compact summary.
local core = require "hbdlab.core"
local objects = require "hbdlab.objects"

local M = {}

local trace = require "hbdlab.trace"

local result_mt = {}
result_mt.__index = result_mt

--- r:trace(): per-GPU events of one prefill layer pass and one decode step.
function result_mt.trace(r) return trace.events(r) end

local function ms(s) return string.format("%.4g ms", s * 1e3) end

result_mt.__tostring = function(r)
  local p = r.parallel
  return string.format(
    "%s on %d GPUs (tp %d, pp %d, ep %d, dp %d, etp %d), batch %d, input %d, output %d\n" ..
    "  TTFT %s   TPOT %s   total %s   bound: %s\n" ..
    "  decode %.4g tok/s   per GPU %.4g tok/s (%.4g incl. prompt)\n" ..
    "  comm share: prefill %.1f%%, decode %.1f%%\n" ..
    "  memory/GPU: weights %s + KV %s + workspace %s = %s (%s)",
    r.precision, p.gpus, p.tp, p.pp, p.ep, p.dp, p.etp, r.batch, r.input, r.output,
    ms(r.ttft_s), ms(r.tpot_s), ms(r.total_s), r.bound,
    r.decode_tps, r.tps_per_gpu, r.tps_per_gpu_incl_prompt,
    r.prefill.comm_share * 100, r.decode.comm_share * 100,
    objects.si(r.memory.weights_bytes, "B"), objects.si(r.memory.kv_bytes, "B"),
    objects.si(r.memory.workspace_bytes, "B"), objects.si(r.memory.per_gpu_bytes, "B"),
    r.memory.fits and "fits" or "DOES NOT FIT")
end

--- hl.simulate{ model = m, cluster = c, precision = "fp8", batch = 16, input = 32768, output = 1024,
---              parallel = { tp = 8, ep = 16 }, overlap = 0, ... } -> result (see hl.help "simulate")
function M.simulate(t)
  if type(t) ~= "table" then error("hl.simulate expects a table of fields", 2) end
  local warn = require "hbdlab.warn"
  local ok, r = pcall(core.simulate, objects.coerce_job(t))
  if not ok then
    warn.check_job(t, nil, true) -- a job that fails for want of a mapping says so
    error(r, 0)
  end
  warn.check_job(t, r)
  return setmetatable(r, result_mt)
end

M.result_mt = result_mt
return M

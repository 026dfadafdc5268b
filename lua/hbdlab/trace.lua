-- Traces of a simulation: per-GPU events of one prefill layer pass and one
-- decode step, and their export as Chrome/Perfetto trace-event JSON.
local core = require "hbdlab.core"

local M = {}

local MAX_GPUS = 8 -- ranks shown; the mapping is symmetric, every rank runs the same kernels

--- Returns an array of events { gpu, phase, name, kind, tier, layers, ts_s, dur_s, bytes, flops }.
--- Events of a phase run back to back on each GPU (overlap is not drawn).
function M.events(r)
  local out = {}
  local gpus = math.min(r.parallel.gpus, MAX_GPUS)
  local t0 = 0
  for _, phase in ipairs { "prefill", "decode" } do
    local t = t0
    for g = 0, gpus - 1 do
      t = t0
      for _, e in ipairs(r[phase].events or {}) do
        out[#out + 1] = { gpu = g, phase = phase, name = e.name, kind = e.kind, tier = e.tier,
                          layers = e.layers, ts_s = t, dur_s = e.dur_s, bytes = e.bytes, flops = e.flops }
        t = t + e.dur_s
      end
    end
    t0 = t + 1e-6
  end
  return out
end

--- Writes a Chrome trace-event JSON file (loads in ui.perfetto.dev and chrome://tracing).
function M.write(r, path)
  local ev = {}
  local gpus = math.min(r.parallel.gpus, MAX_GPUS)
  for g = 0, gpus - 1 do
    ev[#ev + 1] = { name = "thread_name", ph = "M", pid = 1, tid = g, args = { name = "GPU " .. g } }
  end
  ev[#ev + 1] = { name = "process_name", ph = "M", pid = 1, tid = 0,
                  args = { name = "hbdlab: one prefill layer pass, then one decode step" } }
  for _, e in ipairs(M.events(r)) do
    ev[#ev + 1] = {
      name = e.name, cat = e.phase .. "," .. e.kind .. (e.tier and ("," .. e.tier) or ""), ph = "X",
      ts = e.ts_s * 1e6, dur = e.dur_s * 1e6, pid = 1, tid = e.gpu,
      args = { phase = e.phase, layers = e.layers, tier = e.tier, bytes = e.bytes, flops = e.flops },
    }
  end
  local text = core.json_encode({ traceEvents = ev, displayTimeUnit = "ms" }, false)
  return require("hbdlab.rows").write_atomic(path, text)
end

return M

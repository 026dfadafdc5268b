-- Beyond the article: the same experiment (FP8, 128 GPUs unless stated) with
-- the mapping chosen per HBD size by parallel = "auto", with a hierarchical
-- dispatch, at 400G vs 800G scale-out, on GB200 NVL72 and on a 384-GPU domain.
local here = (arg and arg[0] or "scripts/hbd/beyond.lua"):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local S = require "study"
local P = hl.params { precision = { "fp8", "precision" }, out = { "plots/out/hbd", "folder for the chart" } }
local rows = {}

local function add(variant, gpus, hbd, over, extra)
  local vv = S.values(over)
  local ok, r = pcall(hl.simulate, S.job(vv, gpus, hbd, P.precision, extra))
  if not ok then
    rows[#rows + 1] = { variant = variant, gpus = gpus, hbd = hbd, error = tostring(r):gsub("^[^:]*:%d+: ", "") }
    return
  end
  rows[#rows + 1] = { variant = variant, gpus = gpus, hbd = hbd, ttft_s = r.ttft_s, tpot_s = r.tpot_s,
    tps_per_gpu = r.tps_per_gpu, mapping = string.format("tp%d pp%d ep%d dp%d etp%d", r.parallel.tp, r.parallel.pp,
      r.parallel.ep, r.parallel.dp, r.parallel.etp), ["prefill.comm_share"] = r.prefill.comm_share }
end

for _, hbd in ipairs(S.sizes[128]) do
  add("article mapping (fixed)", 128, hbd)
  add("parallel = auto (per HBD)", 128, hbd, nil, { parallel = "auto" })
  add("hierarchical dispatch", 128, hbd, { dispatch = "hierarchical" })
  add("400G scale-out", 128, hbd, { scaleout_gbps = 400 })
end
-- GB200 NVL72: one 72-GPU rack as one HBD vs the same 72 GPUs in HBDs of 8;
-- TP8 x DP9 attention (batch 18 so that it splits), EP8 x expert-TP9.
for _, hbd in ipairs { 8, 72 } do
  add("GB200 NVL72 rack, 72 GPUs", 72, hbd, { gpu = "GB200", batch = 18 }, { parallel = { tp = 8, ep = 8 } })
end
-- A 384-GPU domain (CloudMatrix-sized) of B200s vs HBDs of 8 and 64
for _, hbd in ipairs { 8, 64, 384 } do
  add("384 GPUs", 384, hbd, { batch = 48 })
end
hl.rows.print(rows, { "variant", "gpus", "hbd", "mapping", "ttft_s", "tpot_s", "tps_per_gpu", "prefill.comm_share", "error" })
local plotted = hl.rows.filter(rows, function(r) return r.gpus == 128 and not r.error end)
hl.plot.line { data = plotted, x = "hbd", y = "tps_per_gpu", by = "variant", logx = 2, xtics = S.sizes[128],
  title = "Per-GPU throughput vs HBD size, 128 x B200, " .. P.precision .. ": the article's setup and variants",
  xlabel = "HBD size (GPUs)", ylabel = "generated tokens/s per GPU", out = P.out .. "/beyond_tps.png" }
hl.plot.line { data = plotted, x = "hbd", y = "ttft_s", by = "variant", logx = 2, xtics = S.sizes[128], yscale = 1e3,
  title = "TTFT vs HBD size, 128 x B200, " .. P.precision .. ": the article's setup and variants",
  xlabel = "HBD size (GPUs)", ylabel = "TTFT (ms)", out = P.out .. "/beyond_ttft.png" }
print("charts: " .. P.out .. "/beyond_tps.png, beyond_ttft.png")

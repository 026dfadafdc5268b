-- Goodput per GPU vs HBD size, aggregated vs prefill/decode disaggregated, for
-- DeepSeek-V3 and Llama-3.1-70B: every number from hl.serve_capacity (the
-- highest Poisson rate whose SLO attainment reaches the target, simulated with
-- continuous batching, docs/MODEL.md section 12), divided by the GPUs used.
--   DeepSeek-V3: one instance per HBD (EP = HBD size, data-parallel attention);
--     disaggregated: a prefill HBD and a decode HBD, the KV over scale-out.
--   Llama-3.1-70B: TP8 instances; disaggregated: the best split of four
--     instances (hl.serve_pd_ratio), the KV over scale-up when the HBD holds both.
-- Its earlier headline (DeepSeek-V3 goodput per GPU falling with HBD size) came from max_seqs = 256
-- capping a whole pooled instance; each DP rank now has its own scheduler and cap (docs/MODEL.md
-- section 12, "scripts/serving_hbd.lua's falling goodput per GPU": the cap no longer binds, and the
-- lock-stepped ranks' prompt interference makes short probes non-monotonic in the rate: give
-- requests = 2000 or more before reading the DeepSeek-V3 rows).
local P = hl.params {
  gpu = { "B200", "GPU preset" },
  hbds = { "8,16,32,64", "HBD sizes (GPUs), comma-separated" },
  requests = { 600, "requests per simulated probe" },
  target = { 0.9, "SLO attainment the capacity must reach" },
  tolerance = { 0.05, "relative precision of each capacity search" },
  scaleout_gbps = { 400, "NIC rate per GPU, Gbit/s" },
  out = { "plots/out/serving_hbd", "output prefix for figures and CSV" },
}
local hbds = {}
for h in P.hbds:gmatch("%d+") do hbds[#hbds + 1] = tonumber(h) end
local work = { input = { dist = "uniform", min = 1000, max = 3000 }, output = { dist = "uniform", min = 200, max = 600 },
               requests = P.requests, target = P.target, tolerance = P.tolerance }
local function with(a, b)
  local o = {}
  for k, v in pairs(a) do o[k] = v end
  for k, v in pairs(b) do o[k] = v end
  return o
end
local rows = {}
local function add(model, hbd, mode, gpus, rate, extra)
  local r = { model = model, hbd = hbd, mode = mode, gpus = gpus, rate = rate, goodput_per_gpu = rate / gpus }
  for k, v in pairs(extra or {}) do r[k] = v end
  rows[#rows + 1] = r
  -- each row is a capacity search (about 2 minutes for all 16): say where the run is
  io.stderr:write(string.format("serving_hbd: %s HBD %d %s: %.4g requests/s (%d of 16)\n", model, hbd, mode, rate, #rows))
end

-- DeepSeek-V3, FP8: an instance is one HBD with EP over it.
local ds_slo = { ttft_s = 2, tpot_s = 0.05 }
for _, h in ipairs(hbds) do
  local c = hl.cluster { gpu = P.gpu, gpus = 2 * h, hbd = h, scaleout_gbps = P.scaleout_gbps }
  local inst = { tp = 1, ep = h, gpus = h }
  local base = with(work, { model = "deepseek-v3", cluster = c, precision = "fp8", kv_precision = "fp8",
                            dispatch = "hierarchical", slo = ds_slo })
  local ok, agg = pcall(hl.serve_capacity, with(base, { parallel = inst }))
  if ok then add("deepseek-v3", h, "aggregated", h, agg.rate) else print("deepseek-v3 HBD " .. h .. ": " .. tostring(agg)) end
  local ok2, dis = pcall(hl.serve_capacity, with(base, {
    disagg = { prefill = { parallel = inst }, decode = { parallel = inst }, kv_link = "scaleout" } }))
  if ok2 then add("deepseek-v3", h, "disaggregated 1:1", 2 * h, dis.rate) else print("deepseek-v3 HBD " .. h .. " disaggregated: " .. tostring(dis)) end
end

-- Llama-3.1-70B, FP8: TP8 instances, 32 GPUs.
local ll_slo = { ttft_s = 1, tpot_s = 0.03 }
for _, h in ipairs(hbds) do
  local c = hl.cluster { gpu = P.gpu, gpus = 32, hbd = math.min(h, 32), scaleout_gbps = P.scaleout_gbps }
  local base = with(work, { model = "llama-3.1-70b", cluster = c, precision = "fp8", kv_precision = "fp8", slo = ll_slo })
  local agg = hl.serve_capacity(with(base, { parallel = { tp = 8, gpus = 8 } }))
  add("llama-3.1-70b", h, "aggregated", 8, agg.rate)
  local pd = hl.serve_pd_ratio(with(base, { gpus = 16, prefill = { parallel = { tp = 8 } }, decode = { parallel = { tp = 8 } } }))
  add("llama-3.1-70b", h, "disaggregated 1:1", 16, pd.best.rate, { split = pd.best.prefill_gpus .. ":" .. pd.best.decode_gpus })
end

hl.rows.print(rows, { "model", "hbd", "mode", "gpus", "rate", "goodput_per_gpu" })
hl.rows.write_csv(rows, P.out .. ".csv")
for _, m in ipairs { "deepseek-v3", "llama-3.1-70b" } do
  local sub = hl.rows.filter(rows, function(r) return r.model == m end)
  if #sub > 0 then
    hl.plot.line { data = sub, x = "hbd", y = "goodput_per_gpu", by = "mode", logx = 2, xtics = hbds,
      title = string.format("%s on %s: goodput per GPU vs HBD size (SLO attainment %.0f%%)", m, P.gpu, P.target * 100),
      xlabel = "HBD size (GPUs)", ylabel = "requests/s per GPU", out = P.out .. "_" .. m .. ".png" }
  end
end
print("wrote " .. P.out .. ".csv and one figure per model")

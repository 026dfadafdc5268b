-- DeepSeek-V3 (FP8) on 72 GPUs, served as a whole deployment (docs/MODEL.md section 12): one
-- NVLink domain of 72 GPUs (GB200 NVL72) against nine 8-GPU H200 servers. Every number is an
-- hl.serve simulation (closed loops of `conc` clients per GPU, uniform prompt and output lengths):
--   1. aggregated, uniform routing: wide EP with attention DP (one instance, ep = dp = 72, 32
--      redundant experts placed by EPLB: 288 slots, 4 per GPU) on both systems, and on the H200
--      servers nine replicas of one server each (ep = dp = 8) behind a least-loaded router;
--   2. disaggregated, uniform routing: a prefill instance of 24 GPUs and a decode instance of 48
--      (both ep = dp, 32 redundant experts), KV over NVLink in the rack, over the NICs between
--      servers, transfers sharing the links on one clock with back-pressure;
--   3. routing skew: the same deployments at one load with uniform routing and Zipf-skewed
--      expert popularity (routing_skew), with and without EPLB where the mapping allows both
--      (EP 72 needs its 32 replicas, so EPLB is always on there; EP 8 is shown static, EPLB
--      without replicas, and EPLB with 32).
-- Figures (line and bar charts, with their .dat and .gp) under `out`.
local P = hl.params {
  conc = { "4,16", "clients per GPU of the closed loops (comma-separated)" },
  requests = { 1.5, "requests per run, as a multiple of the clients" },
  skew = { 1.0, "Zipf exponent of expert popularity for the skewed runs" },
  skew_conc = { 16, "clients per GPU of the routing-skew runs" },
  out = { "plots/out/serving_cluster", "output folder for the figures and CSV" },
}
local concs = {}
for c in P.conc:gmatch("%d+") do concs[#concs + 1] = tonumber(c) end

local nvl72 = hl.cluster { gpu = "GB200", gpus = 72, hbd = 72 }
local h200x9 = hl.cluster { gpu = "H200", gpus = 72, hbd = 8 }
local work = { model = "deepseek-v3", precision = "fp8", kv_precision = "fp8", dispatch = "hierarchical",
               input = { dist = "uniform", min = 1000, max = 3000 }, output = { dist = "uniform", min = 200, max = 600 },
               seed = 1 }
local function with(...)
  local o = {}
  for _, t in ipairs { ... } do for k, v in pairs(t) do o[k] = v end end
  return o
end
local function wide(gpus) return { parallel = { tp = 1, ep = gpus, dp = gpus, gpus = gpus }, redundant_experts = 32 } end

local rows = {}
local function run(system, deployment, cfg, c, extra)
  local clients = c * 72
  local ok, r = pcall(hl.serve, with(work, cfg, { concurrency = clients, requests = math.ceil(P.requests * clients) }))
  local row = with({ system = system, deployment = deployment, conc_per_gpu = c }, extra or {})
  if ok then
    row.tps_per_gpu = r.output_tps / r.gpus
    row.tps_per_user = 1 / r.tpot_s.mean
    row.ttft_s, row.tpot_s, row.gpus, row.preemptions = r.ttft_s.mean, r.tpot_s.mean, r.gpus, r.preemptions
  else
    row.error = tostring(r)
  end
  rows[#rows + 1] = row
  return row
end

-- 1 and 2: per-GPU throughput against per-user speed, over the load
local systems = { { "GB200 NVL72", nvl72 }, { "9 x H200 servers", h200x9 } }
for _, c in ipairs(concs) do
  for _, s in ipairs(systems) do
    run(s[1], "aggregated EP72 + DP attention", with({ cluster = s[2] }, wide(72)), c)
    run(s[1], "disaggregated 24P + 48D", { cluster = s[2], disagg = { prefill = wide(24), decode = wide(48) } }, c)
  end
  run("9 x H200 servers", "9 replicas of EP8 + DP attention",
      { cluster = h200x9, replicas = 9, router = "least_loaded", parallel = { tp = 1, ep = 8, dp = 8 } }, c)
end
local curve = {}
for _, r in ipairs(rows) do
  if not r.error then
    r.series = r.system .. ", " .. r.deployment
    curve[#curve + 1] = r
  end
end

-- 3: routing skew at one load, with and without EPLB
local skew_rows = {}
local function skewed(system, deployment, cfg)
  for _, s in ipairs { 0, P.skew } do
    local row = run(system, deployment, with(cfg, { routing_skew = s > 0 and s or nil }), P.skew_conc,
                    { routing = s > 0 and string.format("Zipf %.2g", s) or "uniform" })
    skew_rows[#skew_rows + 1] = row
  end
end
skewed("GB200 NVL72", "EP72, EPLB with 32 replicas", with({ cluster = nvl72 }, wide(72)))
skewed("9 x H200 servers", "EP72, EPLB with 32 replicas", with({ cluster = h200x9 }, wide(72)))
local ep8 = { cluster = h200x9, replicas = 9, router = "least_loaded", parallel = { tp = 1, ep = 8, dp = 8 } }
skewed("9 x H200 servers", "9 x EP8, static", ep8)
skewed("9 x H200 servers", "9 x EP8, EPLB", with(ep8, { eplb = true }))
skewed("9 x H200 servers", "9 x EP8, EPLB with 32 replicas", with(ep8, { redundant_experts = 32 }))

hl.rows.print(rows, { "system", "deployment", "routing", "conc_per_gpu", "tps_per_gpu", "tps_per_user", "ttft_s",
                      "tpot_s", "preemptions", "error" })
hl.rows.write_csv(rows, P.out .. "/results.csv")
hl.plot.line { data = curve, x = "tps_per_user", y = "tps_per_gpu", by = "series",
  title = "DeepSeek-V3 FP8, 72 GPUs: NVL72 rack vs 9 H200 servers",
  xlabel = "output tokens/s per user (1 / TPOT)", ylabel = "output tokens/s per GPU", out = P.out .. "/tps_frontier.png" }
local bars = {}
for _, r in ipairs(skew_rows) do
  if not r.error then bars[#bars + 1] = { config = r.system .. ": " .. r.deployment, routing = r.routing, tps_per_gpu = r.tps_per_gpu } end
end
hl.plot.bar { data = bars, x = "config", y = "tps_per_gpu", by = "routing",
  title = string.format("Uniform vs skewed routing, %d clients/GPU", P.skew_conc),
  ylabel = "output tokens/s per GPU", out = P.out .. "/routing_skew.png" }
print("figures and data: " .. P.out .. "/ (tps_frontier, routing_skew, results.csv)")

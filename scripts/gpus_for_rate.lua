-- How many GPUs serve N requests/s within an SLO? For each instance size (TP), hl.serve_capacity finds
-- the highest Poisson rate one instance serves with `target` of its requests within the SLO
-- (docs/MODEL.md 12); ceil(N / that rate) instances are then run together behind the router at N
-- req/s with hl.serve (replicas): one more instance while that run misses the target, one fewer
-- while the smaller deployment still meets it. The answer is the whole deployment's run.
-- For a MoE model's wide-EP instances, or disaggregation, ask hl.frontier (scripts/frontier_cluster.lua).
--   build/hbdlab scripts/gpus_for_rate.lua --set rate=50 --set gpu=H100 --set tps=2,4,8
local P = hl.params {
  model = { "llama-3.1-70b", "model preset" },
  gpu = { "H100", "GPU preset (each instance sits inside one HBD)" },
  precision = { "fp8", "weight precision" },
  rate = { 20, "requests/s to serve (Poisson)" },
  input = { 2048, "prompt tokens" },
  output = { 512, "output tokens" },
  ttft_ms = { 1000, "SLO: time to first token (ms)" },
  tpot_ms = { 50, "SLO: time per output token after the first (ms)" },
  target = { 0.9, "fraction of requests that must meet both SLOs" },
  tps = { "1,2,4,8", "instance sizes (tensor-parallel GPUs, comma-separated)" },
  requests = { 4000, "requests of each confirming run of the whole deployment" },
}

local rows, best = {}, nil
for v in tostring(P.tps):gmatch("[^,%s]+") do
  local tp = math.tointeger(tonumber(v))
  if not tp or tp < 1 then error("--set tps: '" .. v .. "' is not a positive whole number", 0) end
  local ok, c = pcall(hl.serve_capacity, { model = P.model, precision = P.precision, input = P.input, output = P.output,
    cluster = hl.cluster { gpu = P.gpu, gpus = tp }, parallel = { tp = tp }, target = P.target,
    slo = { ttft_ms = P.ttft_ms, tpot_ms = P.tpot_ms } })
  if not ok then
    rows[#rows + 1] = { tp = tp, note = (tostring(c):gsub("^.-:%d+: ", "")) }
  elseif not (c.rate > 0) then
    rows[#rows + 1] = { tp = tp, note = "one instance cannot meet the SLO at any rate" }
  else
    -- the deployment: n instances of tp GPUs at the whole rate, behind the router. From ceil(N / rate),
    -- one instance more while it misses the target, or one fewer while that one still meets it (the
    -- router's turns smooth Poisson arrivals: n instances together can do better than n alone)
    local function run(k)
      return hl.serve { model = P.model, precision = P.precision, input = P.input, output = P.output,
                        cluster = hl.cluster { gpu = P.gpu, gpus = k * tp, hbd = tp }, parallel = { tp = tp },
                        replicas = k, rate = P.rate, requests = P.requests,
                        slo = { ttft_ms = P.ttft_ms, tpot_ms = P.tpot_ms } }
    end
    local n = math.ceil(P.rate / c.rate)
    local s = run(n)
    local limit = n + math.ceil(n / 2)
    while s.slo_attainment < P.target and n < limit do n = n + 1; s = run(n) end
    while s.slo_attainment >= P.target and n > 1 do
      local fewer = run(n - 1)
      if fewer.slo_attainment < P.target then break end
      n, s = n - 1, fewer
    end
    local met = s.slo_attainment >= P.target
    rows[#rows + 1] = { tp = tp, per_instance_rps = c.rate, instances = n, gpus = n * tp,
                        attainment = s.slo_attainment, ttft_p90_ms = s.ttft_s.p90 * 1e3, tpot_p90_ms = s.tpot_s.p90 * 1e3,
                        note = (met and "" or "misses the target") .. (c.lower_bound and " (capacity a lower bound)" or "") }
    if met and (not best or n * tp < best.gpus) then best = rows[#rows] end
  end
end

print(string.format("%s on %s at %s, %d in / %d out tokens: %g req/s with %g%% of requests within TTFT %g ms and TPOT %g ms",
  P.model, P.gpu, P.precision, P.input, P.output, P.rate, P.target * 100, P.ttft_ms, P.tpot_ms))
hl.rows.print(rows, { "tp", "per_instance_rps", "instances", "gpus", "attainment", "ttft_p90_ms", "tpot_p90_ms", "note" })
if best then
  print(string.format("fewest GPUs: %d (%d instances of TP%d), confirmed by hl.serve of the whole deployment at %g req/s",
    best.gpus, best.instances, best.tp, P.rate))
else
  print("no instance size meets the SLO at this rate")
end

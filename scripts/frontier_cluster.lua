-- The users' question, for the clusters you name: which configuration of this whole cluster gives the
-- most output tokens/s per GPU at my tokens/s per user, aggregated or disaggregated, with wide EP, at
-- this HBD size? (hl.frontier, docs/MODEL.md section 14.) Each system is GPU:GPUS:HBD (GPUS GPUs in
-- HBDs of HBD: GB200:144:72 is two NVL72 racks, H100:64:8 eight 8-GPU servers) or a cluster preset.
-- Prints, per system x precision x mode, the best configuration meeting the SLO, then the winner with
-- its launch options, which is re-run through hl.serve on its printed config (an error if it differs).
--   build/hbdlab scripts/frontier_cluster.lua --set model=llama-3.1-70b --set systems=GB200:72:72,B200:64:8
local P = hl.params {
  model = { "deepseek-v3", "model preset (deepseek-r1 is deepseek-v3's architecture; llama-3.1-70b: a dense 70B)" },
  systems = { "GB200:72:72,GB200:144:72,H100:64:8", "systems, comma-separated: GPU:GPUS:HBD or a cluster preset name" },
  precisions = { "fp8,fp4", "weight precisions (comma-separated; a GPU without FP4 gets a warning, no curve)" },
  modes = { "agg,disagg", "serving modes: agg (one pool per instance), disagg (prefill and decode instances)" },
  tps_per_user = { 20, "tokens/s per user the best points must reach" },
  ttft_s = { 3, "TTFT p90 limit of the best points (s)" },
  input = { 2048, "prompt tokens" },
  output = { 512, "output tokens" },
  scaleout_gbps = { 0, "scale-out NIC per GPU in Gbit/s (0: the GPU preset's)" },
  simulate = { 24, "candidates per curve confirmed by hl.serve (raise it when a best point is NOT settled)" },
  out = { "plots/out/frontier_cluster", "path stem: STEM_points.csv, STEM.json, STEM.png, STEM_cost.png" },
}

local function list(s) local t = {} for v in tostring(s):gmatch("[^,%s]+") do t[#t + 1] = v end return t end

local systems = {}
for _, s in ipairs(list(P.systems)) do
  local gpu, n, hbd = s:match("^([^:]+):(%d+):(%d+)$")
  local sys
  if gpu then
    sys = { gpu = gpu, gpus = tonumber(n), hbd = tonumber(hbd), name = string.format("%sx%s hbd%s", n, gpu, hbd) }
  elseif s:find(":", 1, true) then
    error(string.format("--set systems: '%s' is not GPU:GPUS:HBD (e.g. GB200:72:72) nor a cluster preset name", s), 0)
  else
    local c = hl.cluster(s) -- a preset name: the cluster as its preset gives it
    sys = { gpu = c.gpu, gpus = c.gpus, hbd = c.hbd, name = s }
  end
  if P.scaleout_gbps > 0 then sys.scaleout_gbps = P.scaleout_gbps end
  systems[#systems + 1] = sys
end

local r = hl.frontier { model = P.model, systems = systems, precision = list(P.precisions), modes = list(P.modes),
                        input = P.input, output = P.output, simulate = P.simulate, out = P.out,
                        slo = { ttft_s = P.ttft_s, tps_per_user = P.tps_per_user } }

-- one line per configuration: the (decode) instance, its copies, and the prefill pool of a disaggregated one
local function mapping(b)
  local s = string.format("tp%d pp%d ep%d dp%d", b.tp, b.pp, b.ep, b.dp)
  if b.mode == "disagg" then
    s = string.format("%d decode x %s + %d prefill x tp%d pp%d ep%d dp%d", b.d_instances, s, b.p_instances, b.p_tp, b.p_pp,
      b.p_ep, b.p_dp)
  else
    s = string.format("%d x %s", b.instances, s)
  end
  if b.replicas > 1 and b.mode == "disagg" then s = s .. string.format(", %d copies", b.replicas) end
  if b.gpus_idle > 0 then s = s .. string.format(", %d GPUs idle", b.gpus_idle) end
  return s
end
local function status(b)
  if not b.simulated then return b.unconfirmed and "analytical, NOT confirmed" or "analytical" end
  if b.misses_slo then return "MISSES the SLO" end
  if b.unsettled then return string.format("NOT settled (simulate=%d)", b.settle_simulate) end
  if b.converged == false then return "NOT converged" end
  return "simulated"
end

print(string.format("%s, %d in / %d out tokens, SLO: >= %g tok/s/user, TTFT p90 <= %g s", P.model, P.input, P.output,
  P.tps_per_user, P.ttft_s))
print("tok/s/GPU: output tokens/s per GPU of the whole cluster (copies of the configuration fill it)")
local rows, winner, wkey = {}, nil, nil
for _, k in ipairs(r.groups) do
  local b = r.best[k]
  local sys, prec, mode = k:match("^(.-)|([^|]+)|([^|]+)$")
  if b then
    rows[#rows + 1] = { system = sys, precision = prec, mode = mode, ["tok/s/GPU"] = string.format("%.0f", b.tps_per_gpu),
                        ["tok/s/user"] = string.format("%.1f", b.tps_per_user),
                        ["TTFT p90 ms"] = string.format("%.0f", b.ttft_p90_s * 1e3), configuration = mapping(b),
                        status = status(b) }
    if b.simulated and not b.misses_slo and (not winner or b.tps_per_gpu > winner.tps_per_gpu) then winner, wkey = b, k end
  else
    rows[#rows + 1] = { system = sys, precision = prec, mode = mode, configuration = "none meets the SLO", status = "-" }
  end
end
hl.rows.print(rows, { "system", "precision", "mode", "tok/s/GPU", "tok/s/user", "TTFT p90 ms", "configuration", "status" })
if not winner then
  print("no confirmed configuration meets the SLO: loosen it or raise simulate (warnings above)")
  return
end
print(string.format("\nmost tok/s/GPU at >= %g tok/s/user: %s, %.0f tok/s/GPU at %.1f tok/s/user (%s)", P.tps_per_user,
  (wkey:gsub("|", " ")), winner.tps_per_gpu, winner.tps_per_user, mapping(winner)))
local l = r.launch[wkey]
for _, part in ipairs { "instance", "prefill", "decode" } do
  if l[part] then
    for _, eng in ipairs { "vllm", "sglang", "trtllm" } do print(string.format("  %-8s %-6s %s", part, eng, l[part][eng])) end
  end
end
print("  (" .. l.note .. ")")

-- the winner's printed config, run again through hl.serve: the same numbers, or an error
local s = hl.serve(winner.config)
local got = { s.output_tps_per_gpu, 1 / s.tpot_s.mean, s.ttft_s.p90 }
local want = { winner.tps_per_gpu_used, winner.tps_per_user, winner.ttft_p90_s }
for i = 1, 3 do
  if math.abs(got[i] - want[i]) > 1e-9 * math.abs(want[i]) then
    error(string.format("hl.serve on the winner's config gives %.10g, the frontier printed %.10g", got[i], want[i]))
  end
end
print(string.format("re-run through hl.serve(best.config), %d requests: same numbers", winner.config.requests))
print(string.format("figures and data: %s.png, %s_cost.png, %s_points.csv, %s.json", P.out, P.out, P.out, P.out))

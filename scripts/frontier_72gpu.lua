-- The question a cluster buyer asks of hl.frontier (docs/MODEL.md section 14): on 72 GPUs, which
-- configuration gives the most output tokens/s per GPU at 20 tokens/s per user, aggregated or
-- disaggregated, with wide expert parallelism, for a MoE model (DeepSeek-V3) and a dense one
-- (Llama-3.1-70B), on one NVLink domain of 72 GB200 (NVL72) against eight 8-GPU HGX H100 servers
-- (64 GPUs), at FP8 and FP4 (H100 has no FP4: that curve is named in the warnings, not dropped).
-- Every best point is then re-run with hl.serve on its printed config, which must give its numbers
-- exactly (the script stops with an error otherwise).
local P = hl.params {
  models = { "deepseek-v3,llama-3.1-70b", "models (comma-separated)" },
  precisions = { "fp8,fp4", "precisions (comma-separated)" },
  input = { 2048, "prompt tokens" },
  output = { 512, "output tokens" },
  ttft_s = { 3, "TTFT p90 limit of the best points (s)" },
  tps_per_user = { 20, "tokens/s per user the best points must reach" },
  simulate = { 24, "candidates per curve confirmed by hl.serve" },
  out = { "plots/out/frontier_72gpu", "output folder (points CSV, JSON and charts per model)" },
}
local function list(s) local t = {} for v in s:gmatch("[^,]+") do t[#t + 1] = v end return t end
local systems = { { gpu = "GB200", gpus = 72, hbd = 72, name = "NVL72" },
                  { gpu = "H100-SXM", gpus = 64, hbd = 8, name = "8x HGX H100" } }
for _, model in ipairs(list(P.models)) do
  local r = hl.frontier { model = model, systems = systems, precision = list(P.precisions), input = P.input,
                          output = P.output, slo = { ttft_s = P.ttft_s, tps_per_user = P.tps_per_user },
                          simulate = P.simulate, out = P.out .. "/" .. model }
  print("== " .. model)
  print(r)
  for _, k in ipairs(r.groups) do
    local b = r.best[k]
    if b and b.simulated then
      local s = hl.serve(b.config)
      -- the config is one copy (an aggregated instance, or a disaggregated pair of pools); the
      -- printed tok/s/GPU is of the whole cluster, b.replicas copies filling it (MODEL.md 14)
      local G = b.gpus_used + b.gpus_idle
      local got = { s.output_tps_per_gpu, s.output_tps * b.replicas / G, 1 / s.tpot_s.mean, s.ttft_s.p90, s.rps * b.replicas }
      local want = { b.tps_per_gpu_used, b.tps_per_gpu, b.tps_per_user, b.ttft_p90_s, b.rps }
      for i = 1, 5 do
        if math.abs(got[i] - want[i]) > 1e-9 * math.abs(want[i]) then
          error(string.format("%s: hl.serve on the printed config gives %.10g, the frontier printed %.10g", k, got[i], want[i]))
        end
      end
      print(string.format("  %s: re-run through hl.serve(best.config), %d requests: same numbers", k, b.config.requests))
    end
  end
end
print("figures and data: " .. P.out .. "/")

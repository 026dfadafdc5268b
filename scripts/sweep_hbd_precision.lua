-- TTFT and TPOT vs HBD size for each precision: a declarative sweep.
local P = hl.params {
  gpu = { "B200", "GPU preset" },
  gpus = { 128, "GPUs in the cluster" },
  model = { "qwen1.5-110b", "model preset" },
  experts = { 16, "routed experts added to the model (0 = dense)" },
  topk = { 2, "experts per token" },
  batch = { 16, "sequences" },
  input = { 31744, "prompt tokens (32K context of qwen1.5-110b minus the 1,024 generated)" },
  output = { 1024, "generated tokens" },
  scaleout_gbps = { 800, "NIC rate per GPU, Gbit/s" },
  out = { "plots/out/sweep", "output prefix for figures and CSV" },
}
local m = hl.model(P.model)
if P.experts > 0 then m = m:with { experts = P.experts, topk = P.topk } end
local hbds = {}
local h = 8
while h <= P.gpus do hbds[#hbds + 1] = h; h = h * 2 end
local rows = hl.sweep {
  base = { model = m, cluster = hl.cluster { gpu = P.gpu, gpus = P.gpus, hbd = 8, scaleout_gbps = P.scaleout_gbps },
           batch = P.batch, input = P.input, output = P.output,
           parallel = { tp = 8, ep = P.experts > 0 and math.min(P.experts, P.gpus) or 1 } },
  axes = { hbd = hbds, precision = { "fp16", "fp8", "fp4" } },
}
hl.rows.print(rows, { "precision", "hbd", "ttft_s", "tpot_s", "tps_per_gpu", "prefill.comm_share", "decode.comm_share" })
hl.rows.write_csv(rows, P.out .. ".csv")
hl.plot.line { data = rows, x = "hbd", y = "ttft_s", by = "precision", logx = 2, xtics = hbds, yscale = 1e3,
  title = string.format("TTFT vs HBD size (%d x %s)", P.gpus, P.gpu), xlabel = "HBD size (GPUs)", ylabel = "TTFT (ms)",
  out = P.out .. "_ttft.png" }
hl.plot.line { data = rows, x = "hbd", y = "tpot_s", by = "precision", logx = 2, xtics = hbds, yscale = 1e3,
  title = string.format("TPOT vs HBD size (%d x %s)", P.gpus, P.gpu), xlabel = "HBD size (GPUs)", ylabel = "TPOT (ms)",
  out = P.out .. "_tpot.png" }
print("wrote " .. P.out .. ".csv, " .. P.out .. "_ttft.png, " .. P.out .. "_tpot.png")

-- Example experiment: TTFT and per-GPU throughput vs HBD size on 128 B200 GPUs
-- serving Qwen1.5-110B extended to 16 experts (top-2), at FP16, FP8 and FP4.
-- Writes plots/out/example_ttft.png and plots/out/example_tps.png.
local hl = require "hbdlab"

local model = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 }
local rows = {}
print(string.format("%-6s %5s %12s %12s %14s %10s", "prec", "hbd", "TTFT (ms)", "TPOT (ms)", "tok/s/GPU", "comm%pre"))
for _, prec in ipairs { "fp16", "fp8", "fp4" } do
  for _, hbd in ipairs { 8, 16, 32, 64, 128 } do
    local r = hl.simulate {
      model = model, precision = prec, batch = 16, input = 31744, output = 1024, -- 32K context in all
      cluster = hl.cluster { gpu = "B200", gpus = 128, hbd = hbd, scaleout_gbps = 800 },
      parallel = { tp = 8, ep = 16 },
    }
    rows[#rows + 1] = { precision = prec, hbd = hbd, ttft_s = r.ttft_s, tps_per_gpu = r.tps_per_gpu }
    print(string.format("%-6s %5d %12.1f %12.3f %14.2f %9.1f%%", prec, hbd, r.ttft_s * 1e3, r.tpot_s * 1e3,
      r.tps_per_gpu, r.prefill.comm_share * 100))
  end
end
hl.plot.line { data = rows, x = "hbd", y = "ttft_s", by = "precision", yscale = 1e3, logx = true,
  xtics = { 8, 16, 32, 64, 128 }, title = "TTFT vs HBD size (128 x B200, batch 16, 31K input + 1K output)",
  xlabel = "HBD size (GPUs)", ylabel = "TTFT (ms)", out = "plots/out/example_ttft.png" }
hl.plot.line { data = rows, x = "hbd", y = "tps_per_gpu", by = "precision", logx = true,
  xtics = { 8, 16, 32, 64, 128 }, title = "Per-GPU throughput vs HBD size (128 x B200)",
  xlabel = "HBD size (GPUs)", ylabel = "tokens/s per GPU", out = "plots/out/example_tps.png" }
print("figures: plots/out/example_ttft.png plots/out/example_tps.png (with .dat and .gp beside them)")

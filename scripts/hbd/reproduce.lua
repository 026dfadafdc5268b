-- Reproduces the published HBD results (seed 000): B200, Qwen1.5-110B extended
-- to 16 experts, batch 16, 32K input; 64 GPUs with HBD 8..64 and 128 GPUs with
-- HBD 8..128; FP16, FP8, FP4. Prints published vs reproduced (readings A and B),
-- the R3 communication shares, the conclusions; writes the article's figures.
-- Every open assumption is a parameter of scripts/hbd/study.lua (--set name=value).
local here = (arg and arg[0] or "scripts/hbd/reproduce.lua"):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local S = require "study"

local spec = {
  json = { "", "also write the published-vs-reproduced table as JSON to this file" },
  out = { "plots/out/hbd", "folder for figures and data" },
  quiet = { false, "print only the summary table" },
}
for k, v in pairs(S.open) do spec[k] = { v[1], v[2] } end
local P = hl.params(spec)
local over = {}
for k in pairs(S.open) do over[k] = P[k] end

local res = S.run(over)
local rep, pub, rows = res.reproduced, res.published, res.rows

local function pct(x) return string.format("%5.1f%%", x) end
print("HBD study (seed 000): published vs reproduced")
print(string.format("%-50s %10s %12s %12s", "result", "published", "reading B", "reading A"))
local lines = {
  { "R1  64 GPUs, HBD 8->64: TTFT reduction", 46, rep.r1_ttft_reduction_pct, rep.r1_ttft_reduction_pct_fp8 },
  { "R1  64 GPUs, HBD 8->64: per-GPU throughput gain", 41, rep.r1_tps_gain_pct, rep.r1_tps_gain_pct_fp8 },
  { "R2 128 GPUs, HBD 8->128: TTFT reduction", 57, rep.r2_ttft_reduction_pct, rep.r2_ttft_reduction_pct_fp8 },
  { "R2 128 GPUs, HBD 8->128: per-GPU throughput gain", 59, rep.r2_tps_gain_pct, rep.r2_tps_gain_pct_fp8 },
}
for _, l in ipairs(lines) do print(string.format("%-50s %10s %12s %12s", l[1], pct(l[2]), pct(l[3]), pct(l[4]))) end
print(string.format("%-50s %10s %12s", "R4 128 GPUs, throughput HBD128/HBD8, FP16", "1.36x", string.format("%.2fx", rep.r4_ratio_fp16)))
print(string.format("%-50s %10s %12s", "R4 128 GPUs, throughput HBD128/HBD8, FP8", "-", string.format("%.2fx", rep.r4_ratio_fp8)))
print(string.format("%-50s %10s %12s", "R4 128 GPUs, throughput HBD128/HBD8, FP4", "1.63x", string.format("%.2fx", rep.r4_ratio_fp4)))
print("Reading B: 'up to' = the largest gain over FP16/FP8/FP4; reading A: the FP8 numbers.")

if not P.quiet then
  print("\nR3: communication share at 128 GPUs (prefill / decode)")
  print(string.format("%-6s %s", "prec", "HBD 8 -> 16 -> 32 -> 64 -> 128"))
  for _, prec in ipairs(S.precisions) do
    local pre, dec = {}, {}
    for _, hbd in ipairs(S.sizes[128]) do
      for _, r in ipairs(rows) do
        if r.gpus == 128 and r.hbd == hbd and r.precision == prec then
          pre[#pre + 1] = string.format("%4.1f%%", r.prefill_comm_share * 100)
          dec[#dec + 1] = string.format("%4.1f%%", r.decode_comm_share * 100)
        end
      end
    end
    print(string.format("%-6s prefill %s\n%-6s decode  %s", prec, table.concat(pre, "  "), "", table.concat(dec, "  ")))
  end
  print(string.format("R3 (every share falls at every doubling): %s%s", rep.r3_falls and "yes" or "NO",
    res.r3_violation and (" - " .. res.r3_violation) or ""))
  print("\nConclusions of the article, checked on the reproduction:")
  print(string.format("  1. fixed scale and precision: larger HBD -> lower TTFT, higher decode and per-GPU throughput: %s",
    rep.conclusion1 and "holds" or "FAILS"))
  print(string.format("  2. fixed precision: the larger the cluster, the larger the HBD gain (128 vs 64 GPUs): %s",
    rep.conclusion2 and "holds" or "FAILS"))
  print(string.format("  3. fixed scale: the lower the precision, the larger the gain (FP4 %.2fx > FP8 %.2fx > FP16 %.2fx): %s",
    rep.r4_ratio_fp4, rep.r4_ratio_fp8, rep.r4_ratio_fp16, rep.conclusion3 and "holds" or "FAILS"))

  -- Figures like the article's
  local out = P.out
  hl.rows.write_csv(rows, out .. "/results.csv")
  for _, gpus in ipairs { 64, 128 } do
    local sub = hl.rows.filter(rows, { gpus = gpus })
    hl.plot.line { data = sub, x = "hbd", y = "ttft_s", by = "precision", logx = 2, xtics = S.sizes[gpus], yscale = 1e3,
      title = string.format("TTFT vs HBD size, %d x B200", gpus), xlabel = "HBD size (GPUs)", ylabel = "TTFT (ms)",
      out = string.format("%s/ttft_%d.png", out, gpus) }
    hl.plot.line { data = sub, x = "hbd", y = "tps_per_gpu", by = "precision", logx = 2, xtics = S.sizes[gpus],
      title = string.format("Per-GPU throughput vs HBD size, %d x B200", gpus), xlabel = "HBD size (GPUs)",
      ylabel = "generated tokens/s per GPU", out = string.format("%s/tps_%d.png", out, gpus) }
  end
  local sub128 = hl.rows.filter(rows, { gpus = 128 })
  for _, phase in ipairs { "prefill", "decode" } do
    hl.plot.line { data = sub128, x = "hbd", y = phase .. "_comm_share", by = "precision", logx = 2, xtics = S.sizes[128],
      yscale = 100, ymin = 0, title = string.format("Communication share of %s time, 128 x B200", phase),
      xlabel = "HBD size (GPUs)", ylabel = "communication share (%)", out = string.format("%s/comm_share_%s.png", out, phase) }
  end
  local gains = {}
  for _, prec in ipairs(S.precisions) do
    gains[#gains + 1] = { precision = prec, ["64 GPUs (HBD 64 / HBD 8)"] = 1 + rep["r1_tps_gain_pct_" .. prec] / 100,
                          ["128 GPUs (HBD 128 / HBD 8)"] = rep["r4_ratio_" .. prec] }
  end
  hl.plot.bar { data = gains, x = "precision", y = { "64 GPUs (HBD 64 / HBD 8)", "128 GPUs (HBD 128 / HBD 8)" },
    title = "Per-GPU throughput gain of the largest HBD vs HBD 8", xlabel = "precision", ylabel = "throughput ratio",
    out = out .. "/gain_vs_precision.png" }
  local fp8 = hl.rows.filter(sub128, { precision = "fp8" })
  local breakdown = {}
  for _, r in ipairs(fp8) do
    breakdown[#breakdown + 1] = { hbd = r.hbd, compute = r["prefill.compute_s"], memory = r["prefill.memory_s"],
      tp_allreduce = r["prefill.tp_allreduce_s"] or 0, ep_dispatch = r["prefill.ep_dispatch_s"] or 0,
      ep_combine = r["prefill.ep_combine_s"] or 0, overhead = r["prefill.overhead_s"] }
  end
  hl.plot.bar { data = breakdown, x = "hbd", y = { "compute", "memory", "tp_allreduce", "ep_dispatch", "ep_combine", "overhead" },
    stacked = true, title = "Prefill time breakdown, 128 x B200, FP8 (collectives before overlap)",
    xlabel = "HBD size (GPUs)", ylabel = "time (s)", out = out .. "/breakdown_fp8.png" }
  print("\nfigures and data: " .. out .. "/ (ttft_64/128, tps_64/128, comm_share_prefill/decode, gain_vs_precision, breakdown_fp8, results.csv)")
end

if P.json ~= "" then
  local t = {}
  for k, v in pairs(rep) do t[k] = v end
  t.published = pub
  hl.rows.write_atomic(P.json, hl.core.json_encode(t, true) .. "\n")
  print("wrote " .. P.json)
end
return res

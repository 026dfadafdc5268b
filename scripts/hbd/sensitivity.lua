-- Sensitivity of the HBD reproduction: each open parameter moved alone over a
-- plausible range; how R1, R2 and R4 move, and whether the directions (R3 and
-- the three conclusions) survive. Tornado charts show which numbers are
-- calibration (magnitudes move) and which conclusions are robust.
local here = (arg and arg[0] or "scripts/hbd/sensitivity.lua"):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local S = require "study"
local P = hl.params { out = { "plots/out/hbd", "folder for the charts and CSV" } }

-- parameter, low, high (plausible range)
local ranges = {
  { "scaleout_gbps", 400, 1600 }, { "scaleout_latency_us", 8, 25 }, { "scaleup_latency_us", 1, 4 },
  { "peer_cost_us", 0, 0.2 }, { "eff_scaleup", 0.3, 0.8 }, { "eff_scaleout", 0.7, 0.94 },
  { "eff_gemm", 0.5, 0.85 }, { "eff_mem", 0.7, 0.9 }, { "layer_overhead_us", 0, 60 }, { "overlap", 0, 0.5 },
  { "output", 1024, 8192 }, { "topk", 1, 4 }, { "expert_ffn_ratio", 0.25, 1.5 },
  { "wire_floor", "fp8", "bf16" }, { "kv_precision", "fp8", "bf16" }, { "dispatch", "flat", "hierarchical" },
  { "attn_tp", 16, 32 }, -- 4 would need dp = 32 > batch 16 at 128 GPUs
}
local metrics = { "r1_ttft_reduction_pct", "r1_tps_gain_pct", "r2_ttft_reduction_pct", "r2_tps_gain_pct",
                  "r4_ratio_fp16", "r4_ratio_fp4" }
local base = S.run().reproduced
local rows = {}
local function directions(r) return r.r3_falls and r.conclusion1 and r.conclusion2 and r.conclusion3 end
print(string.format("%-20s %-13s %-13s %13s %13s %13s %13s %11s %11s  %s", "parameter", "low", "high",
  "R1 TTFT", "R1 thr", "R2 TTFT", "R2 thr", "R4 FP16", "R4 FP4", "directions"))
print(string.format("%-20s %-13s %-13s %13.1f %13.1f %13.1f %13.1f %11.2f %11.2f  %s", "(baseline)", "", "",
  base.r1_ttft_reduction_pct, base.r1_tps_gain_pct, base.r2_ttft_reduction_pct, base.r2_tps_gain_pct,
  base.r4_ratio_fp16, base.r4_ratio_fp4, directions(base) and "hold" or "break"))
for _, rg in ipairs(ranges) do
  local name = rg[1]
  local lo, hi = S.run({ [name] = rg[2] }).reproduced, S.run({ [name] = rg[3] }).reproduced
  local row = { parameter = name, low_value = tostring(rg[2]), high_value = tostring(rg[3]),
                directions_hold = directions(lo) and directions(hi) }
  local cells = {}
  for _, m in ipairs(metrics) do
    row[m .. "_low"], row[m .. "_high"] = lo[m], hi[m]
    local f = m:find("ratio") and "%5.2f/%-5.2f" or "%5.1f/%-5.1f"
    cells[#cells + 1] = string.format(f, lo[m], hi[m])
  end
  rows[#rows + 1] = row
  print(string.format("%-20s %-13s %-13s %13s %13s %13s %13s %11s %11s  %s", name, tostring(rg[2]), tostring(rg[3]),
    cells[1], cells[2], cells[3], cells[4], cells[5], cells[6],
    row.directions_hold and "hold" or ("break (" .. (directions(lo) and "high" or "low") .. ")")))
end
hl.rows.write_csv(rows, P.out .. "/sensitivity.csv")
for _, m in ipairs { { "r2_tps_gain_pct", "R2: per-GPU throughput gain at 128 GPUs (%)" },
                     { "r4_ratio_fp4", "R4: FP4 throughput ratio HBD128/HBD8" },
                     { "r1_ttft_reduction_pct", "R1: TTFT reduction at 64 GPUs (%)" } } do
  hl.plot.tornado { data = rows, name = "parameter", low = m[1] .. "_low", high = m[1] .. "_high", base = base[m[1]],
    low_label = "parameter at its low value", high_label = "parameter at its high value",
    title = "Sensitivity of " .. m[2] .. string.format(" (baseline %.2f)", base[m[1]]), xlabel = m[2],
    out = string.format("%s/tornado_%s.png", P.out, m[1]) }
end
print("\ncharts: " .. P.out .. "/tornado_*.png; table: " .. P.out .. "/sensitivity.csv")

-- The HBD reproduction (issue: reproduce seed 000): runs the study with its
-- documented parameters and checks the published results under reading B.
local T = require "testlib"
local hl = require "hbdlab"
package.path = os.getenv("HBDLAB_SOURCE_DIR") .. "/scripts/hbd/?.lua;" .. package.path
local S = require "study"

local res = S.run()
local r = res.reproduced

T.test("R1 and R2 within 5 percentage points (reading B)", function()
  local function within(got, want, label)
    T.ok(math.abs(got - want) <= 5, string.format("%s: reproduced %.1f, published %.1f", label, got, want))
  end
  within(r.r1_ttft_reduction_pct, 46, "R1 TTFT reduction")
  within(r.r1_tps_gain_pct, 41, "R1 throughput gain")
  within(r.r2_ttft_reduction_pct, 57, "R2 TTFT reduction")
  within(r.r2_tps_gain_pct, 59, "R2 throughput gain")
end)

T.test("R4 FP16 and FP4 ratios within 0.07", function()
  T.ok(math.abs(r.r4_ratio_fp16 - 1.36) <= 0.07, string.format("FP16 %.3f vs 1.36", r.r4_ratio_fp16))
  T.ok(math.abs(r.r4_ratio_fp4 - 1.63) <= 0.07, string.format("FP4 %.3f vs 1.63", r.r4_ratio_fp4))
end)

T.test("R3: every communication share falls at every HBD doubling", function()
  T.ok(r.r3_falls, "violation: " .. tostring(res.r3_violation))
  -- checked here independently of the summary
  for _, prec in ipairs(S.precisions) do
    for _, phase in ipairs { "prefill_comm_share", "decode_comm_share" } do
      local last = math.huge
      for _, hbd in ipairs(S.sizes[128]) do
        for _, row in ipairs(res.rows) do
          if row.gpus == 128 and row.hbd == hbd and row.precision == prec then
            T.ok(row[phase] < last, string.format("%s %s at HBD %d", prec, phase, hbd))
            last = row[phase]
          end
        end
      end
    end
  end
end)

T.test("conclusions 2 and 3", function()
  for _, prec in ipairs(S.precisions) do
    T.ok(r["r2_tps_gain_pct_" .. prec] > r["r1_tps_gain_pct_" .. prec], "128 GPUs gain more than 64: " .. prec)
    T.ok(r["r2_ttft_reduction_pct_" .. prec] > r["r1_ttft_reduction_pct_" .. prec], "TTFT: " .. prec)
  end
  T.ok(r.r4_ratio_fp4 > r.r4_ratio_fp8 and r.r4_ratio_fp8 > r.r4_ratio_fp16, "FP4 > FP8 > FP16")
  T.ok(r.conclusion1, "conclusion 1")
end)

T.test("the entry script writes the JSON table with the contract's fields", function()
  local json = os.tmpname()
  local code = hl.core.spawn { os.getenv("HBDLAB"), os.getenv("HBDLAB_SOURCE_DIR") .. "/scripts/hbd/reproduce.lua",
    "--set", "json=" .. json, "--set", "quiet=true" }
  T.eq(code, 0, "exit status")
  local t = hl.rows.read_json(json)
  os.remove(json)
  for _, k in ipairs { "r1_ttft_reduction_pct", "r1_tps_gain_pct", "r2_ttft_reduction_pct", "r2_tps_gain_pct",
                       "r1_ttft_reduction_pct_fp8", "r1_tps_gain_pct_fp8", "r2_ttft_reduction_pct_fp8",
                       "r2_tps_gain_pct_fp8", "r4_ratio_fp16", "r4_ratio_fp8", "r4_ratio_fp4" } do
    T.ok(type(t[k]) == "number", "field " .. k)
  end
  T.eq(t.r3_falls, true, "r3_falls")
  T.near(t.r2_tps_gain_pct, r.r2_tps_gain_pct, 1e-12, "same numbers as the library run")
end)

T.test("the core knows nothing about the article: a study parameter is only an input", function()
  local moved = S.run({ scaleout_gbps = 400 }).reproduced
  T.ok(moved.r2_ttft_reduction_pct > r.r2_ttft_reduction_pct, "slower scale-out, larger HBD gain")
end)

T.done()

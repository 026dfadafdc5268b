-- tools/fit_mi300x_small_m.lua: can the only public MI300X small-M FP8 GEMM table identify a
-- compute-side shape term (docs/MODEL.md section 3: gemm_blend, gemm_k_latency_fp8,
-- gemm_tile_rows) for the MI300X preset? Prints the preset's errors on the table, then fits of
-- the section 3 GEMM formula with in-sample, leave-one-out and leave-shape-out errors.
--
--   build/hbdlab tools/fit_mi300x_small_m.lua
--
-- Data (not fitted to any validation case): Hugging Face, "Creating custom kernels for the AMD
-- MI300" (2025; huggingface/blog mi300kernels.md), skinny GEMM results, the Torch column
-- (torch._scaled_mm = hipBLASLt, FP8 per-tensor, HIP graph, 500 warm-ups, rotating weights,
-- rocm/vllm rocm6.3.1 vllm 0.6.6 container): Llama-3.1-405B TP8 shapes (N x K) QKV 2304 x 16384,
-- gate/up 13312 x 16384, down 16384 x 6656 at M = 1, 8, 16, 32 rows (us). The fits also keep
-- AMD's max-achievable FP8 rate (ROCm blog "Measuring Max-Achievable FLOPs - Part 2":
-- hipblaslt-bench 4096 x 3648 x 32896 at 1,273 TFLOP/s) as a 13th point, so a compute-side
-- term cannot buy the small-M fit by breaking the large-GEMM rate. The measured kernels hold no
-- activation conversion, so gemm_latency_fp8 is 0 here; tile 16 is the smallest FP8 MFMA
-- (16x16x32, same blog).
local hl = require "hbdlab"
local base = hl.gpu "MI300X"

local rows = { -- m, n, k, us
  { 1, 2304, 16384, 14.938 }, { 8, 2304, 16384, 16.300 }, { 16, 2304, 16384, 16.693 }, { 32, 2304, 16384, 16.817 },
  { 1, 13312, 16384, 77.636 }, { 8, 13312, 16384, 80.031 }, { 16, 13312, 16384, 75.236 }, { 32, 13312, 16384, 82.198 },
  { 1, 16384, 6656, 31.066 }, { 8, 16384, 6656, 31.559 }, { 16, 16384, 6656, 31.671 }, { 32, 16384, 6656, 35.561 },
}
local maf = { 4096, 3648, 32896, 2 * 4096 * 3648 * 32896 / 1273e12 * 1e6, maf = true }

local function time_us(g, r)
  return hl.roofline { gpu = g, m = r[1], n = r[2], k = r[3], precision = "fp8" }.time_s * 1e6
end

-- The preset as it is: max(compute, memory), 64-row tiles, kernel_latency / eff_mem_fp8 fitted to M = 1.
print("preset (max of the limits, 64-row tiles; fitted to the M = 1 rows only):")
local preset = base:with { gemm_latency_fp8 = 0 }
for _, r in ipairs(rows) do
  local t = time_us(preset, r)
  print(string.format("  M %2d  %5d x %5d  measured %7.3f us  model %7.3f us  %+6.1f%%", r[1], r[2], r[3], r[4], t,
                      (t / r[4] - 1) * 100))
end

local function fit(label, tile, params, bounds, start)
  local all = { maf }
  for _, r in ipairs(rows) do all[#all + 1] = r end
  local function cases(sel)
    local c, f = {}, {}
    for i, r in ipairs(all) do
      c[i] = { name = r[1] .. "x" .. r[2] .. "x" .. r[3], measured = r[4] * 1e-6, predict = function(p)
        local over = { gemm_tile_rows = tile, gemm_latency_fp8 = 0 }
        for k, v in pairs(p) do over[k] = v end
        return time_us(base:with(over), r) * 1e-6
      end }
      f[i] = sel(r)
    end
    return c, f
  end
  local res = hl.calibrate { cases = cases(function() return true end), params = params, bounds = bounds, start = start,
                             loo = true }
  local held = {}
  for _, n in ipairs { 2304, 13312, 16384 } do -- leave one shape out (the MAF point always in)
    local c, f = cases(function(r) return r.maf or r[2] ~= n end)
    local rf = hl.calibrate { cases = c, params = params, bounds = bounds, start = res.params, fit = f, loo = false }
    for i, x in ipairs(rf.cases) do if not f[i] then held[#held + 1] = math.abs(x.after_err) end end
  end
  table.sort(held)
  local ps = {}
  for _, k in ipairs(params) do ps[#ps + 1] = string.format("%s %.4g", k, res.params[k]) end
  print(string.format("%s, %d-row tiles: %s", label, tile, table.concat(ps, ", ")))
  print(string.format("  in-sample median %.1f%% max %.1f%%; leave-one-out median %.1f%% max %.1f%%; " ..
                      "leave-shape-out median %.1f%% max %.1f%%", res.after.median * 100, res.after.max * 100,
                      res.loo.median * 100, res.loo.max * 100, (held[6] + held[7]) / 2 * 100, held[#held] * 100))
end

local B = { eff_mem_fp8 = { 0.2, 1 }, kernel_latency = { 0, 20e-6 }, gemm_blend = { 1, 12 },
            gemm_k_latency_fp8 = { 1e-12, 5e-9 }, eff_gemm_fp8 = { 0.2, 1 } }
local S = { eff_mem_fp8 = 0.62, kernel_latency = 2.91e-6, gemm_blend = 2, gemm_k_latency_fp8 = 0.3e-9, eff_gemm_fp8 = 0.49 }
local function sub(names)
  local b, s = {}, {}
  for _, k in ipairs(names) do b[k], s[k] = B[k], S[k] end
  return names, b, s
end
print("fits of the section 3 GEMM formula (log error), the 12 rows and the max-achievable point:")
for _, tile in ipairs { 16, 64 } do
  fit("memory side only", tile, sub { "eff_mem_fp8", "kernel_latency" })
  fit("blend of compute, memory, main loop", tile,
      sub { "eff_mem_fp8", "gemm_k_latency_fp8", "gemm_blend", "eff_gemm_fp8" })
end

-- tools/fit_mi300x_fp8.lua: fits the compute side of the MI300X FP8 GEMM model (docs/MODEL.md
-- section 3: eff_gemm_fp8, gemm_k0_fp8, gemm_blend; gemm_tile_rows given) to AMD's tuned FP8 GEMMs
-- on MI300X and reports in-sample and leave-one-shape-out errors, the errors by row range, the
-- Hugging Face hipBLASLt rows at M = 1-32 (another library, not fitted) and AMD's max-achievable
-- point.
--
--   build/hbdlab tools/fit_mi300x_fp8.lua --set csv=<aiter>/aiter/configs/a8w8_tuned_gemm.csv
--
-- Data (not fitted to any validation case; not in this repository): ROCm/aiter PR #1092 "[MI300X]
-- tune Gemm performance for llama 70b/405b" (merged 26 Sep 2025, commit fbb52ddfad), its
-- a8w8_tuned_gemm.csv: the fastest Composable Kernel FP8 (e4m3fnuz, per-token x per-channel
-- scaled, BF16 out) kernel found per shape and its time in us, on MI300X (cu_num 304), for the
-- Llama-3 70B linear layers at TP 1/4/8 and 405B at TP 2/4/8 (24 N x K shapes, M = 1-16384;
-- 427 rows). Only rows with M >= `m_min` are fitted: below that the kernel is a streaming one
-- whose time is the memory side's, fitted to hipBLASLt (HF blog, test_amd_presets.lua), and aiter's CK kernels
-- there are another library's (up to 2x hipBLASLt's time at M = 1). The memory side
-- (eff_mem_fp8), kernel_latency and a zero gemm_latency_fp8 (the measured kernel holds no
-- activation conversion) are the preset's; eff_mem_fp8 is refitted to the HF M = 1 rows with
-- the fitted compute side, and the two fits alternate until both settle (two rounds).
local hl = require "hbdlab"
local P = hl.params {
  csv = { "", "aiter's aiter/configs/a8w8_tuned_gemm.csv (at commit fbb52ddfad or later)" },
  m_min = { 64, "fit the rows with at least this many rows M" },
  tile = { 16, "gemm_tile_rows (the smallest CDNA3 FP8 MFMA is 16x16x32)" },
}
if P.csv == "" then error("fit_mi300x_fp8: give --set csv=<aiter a8w8_tuned_gemm.csv>", 0) end
local base = hl.gpu "MI300X"
local rows = {}
for _, r in ipairs(hl.rows.read_csv(P.csv)) do
  local cu, m = tonumber(r.cu_num), tonumber(r.M)
  if cu == 304 and m >= P.m_min then
    rows[#rows + 1] = { m = m, n = tonumber(r.N), k = tonumber(r.K), t = tonumber(r.us) * 1e-6 }
  end
end
if #rows == 0 then error("fit_mi300x_fp8: no cu_num 304 rows with M >= " .. P.m_min .. " in " .. P.csv, 0) end
-- Hugging Face "Creating custom kernels for the AMD MI300" (2025), Torch (hipBLASLt) column, us
local hf = {
  { 1, 2304, 16384, 14.938 }, { 8, 2304, 16384, 16.300 }, { 16, 2304, 16384, 16.693 }, { 32, 2304, 16384, 16.817 },
  { 1, 13312, 16384, 77.636 }, { 8, 13312, 16384, 80.031 }, { 16, 13312, 16384, 75.236 }, { 32, 13312, 16384, 82.198 },
  { 1, 16384, 6656, 31.066 }, { 8, 16384, 6656, 31.559 }, { 16, 16384, 6656, 31.671 }, { 32, 16384, 6656, 35.561 },
}
local fixed = { gemm_latency_fp8 = 0, gemm_tile_rows = P.tile, eff_mem_fp8 = base.eff_mem_fp8 }
local function gpu_of(p)
  local o = {}
  for k, v in pairs(fixed) do o[k] = v end
  for k, v in pairs(p) do o[k] = v end
  return base:with(o)
end
local function t_of(g, m, n, k) return hl.roofline { gpu = g, m = m, n = n, k = k, precision = "fp8" }.time_s end
local names = { "eff_gemm_fp8", "gemm_k0_fp8", "gemm_blend" }
local bounds = { eff_gemm_fp8 = { 0.1, 1 }, gemm_k0_fp8 = { 0, 20000 }, gemm_blend = { 1, 12 } }
local start = { eff_gemm_fp8 = 0.45, gemm_k0_fp8 = 500, gemm_blend = 2 }
local function cases(sel)
  local c, f = {}, {}
  for i, r in ipairs(rows) do
    c[i] = { name = r.m .. "x" .. r.n .. "x" .. r.k, measured = r.t,
             predict = function(p) return t_of(gpu_of(p), r.m, r.n, r.k) end }
    f[i] = sel(r)
  end
  return c, f
end
local res
for _ = 1, 2 do
  res = hl.calibrate { cases = cases(function() return true end), params = names, bounds = bounds, start = start,
                       loo = false }
  start = res.params
  -- the memory side at one row: eff_mem_fp8 refitted to HF's M = 1 rows under this compute side
  local c1 = {}
  for _, r in ipairs(hf) do
    if r[1] == 1 then
      c1[#c1 + 1] = { name = r[2] .. "x" .. r[3], measured = r[4] * 1e-6, predict = function(p)
        local o = {}
        for k, v in pairs(res.params) do o[k] = v end
        o.eff_mem_fp8 = p.eff_mem_fp8
        return t_of(gpu_of(o), 1, r[2], r[3])
      end }
    end
  end
  local r1 = hl.calibrate { cases = c1, params = { "eff_mem_fp8" }, bounds = { eff_mem_fp8 = { 0.2, 1 } },
                            start = { eff_mem_fp8 = fixed.eff_mem_fp8 }, loo = false }
  fixed.eff_mem_fp8 = r1.params.eff_mem_fp8
end
local function abs_median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = math.abs(v) end
  table.sort(s)
  return s[(#s + 1) // 2] or 0
end
local function abs_max(t)
  local x = 0
  for _, v in ipairs(t) do x = math.max(x, math.abs(v)) end
  return x
end
local errs = {}
for i, c in ipairs(res.cases) do errs[i] = c.after_err end
print(string.format("fitted: eff_gemm_fp8 %.4f, gemm_k0_fp8 %.1f, gemm_blend %.3g; eff_mem_fp8 %.4f (HF M = 1); tile %d",
  res.params.eff_gemm_fp8, res.params.gemm_k0_fp8, res.params.gemm_blend, fixed.eff_mem_fp8, P.tile))
print(string.format("aiter M >= %d, %d rows: in-sample median %.1f%%, max %.1f%%", P.m_min, #rows,
  100 * abs_median(errs), 100 * abs_max(errs)))
local held, shapes = {}, {}
for _, r in ipairs(rows) do shapes[r.n .. "x" .. r.k] = true end
for sh in pairs(shapes) do
  local c, f = cases(function(r) return r.n .. "x" .. r.k ~= sh end)
  local rf = hl.calibrate { cases = c, params = names, bounds = bounds, start = res.params, loo = false, fit = f }
  for i, cc in ipairs(rf.cases) do
    if not f[i] then held[#held + 1] = cc.after_err end
  end
end
print(string.format("leave one N x K shape out: median %.1f%%, max %.1f%%", 100 * abs_median(held), 100 * abs_max(held)))
for _, b in ipairs { { 64, 1023 }, { 1024, 4095 }, { 4096, 1e9 } } do
  local e = {}
  for i, r in ipairs(rows) do
    if r.m >= b[1] and r.m <= b[2] then e[#e + 1] = errs[i] end
  end
  if #e > 0 then
    table.sort(e)
    print(string.format("  M %5d-%-5s %3d rows: median |error| %.1f%%, median %+.1f%%", b[1],
      b[2] < 1e9 and tostring(b[2]) or "", #e, 100 * abs_median(e), 100 * e[(#e + 1) // 2]))
  end
end
local g = gpu_of(res.params)
local he = {}
for _, r in ipairs(hf) do he[#he + 1] = t_of(g, r[1], r[2], r[3]) / (r[4] * 1e-6) - 1 end
print(string.format("HF hipBLASLt M = 1-32 (12 rows, only M = 1 fitted, eff_mem_fp8): median %.1f%%, max %.1f%%",
  100 * abs_median(he), 100 * abs_max(he)))
local tm = t_of(g, 4096, 3648, 32896)
print(string.format("AMD max-achievable shape 4096 x 3648 x 32896: %.0f TFLOP/s (hipBLASLt, 2025 branch: 1,273)",
  2 * 4096 * 3648 * 32896 / tm / 1e12))

-- tools/fit_kernels.lua: fits the shape-aware kernel model of docs/MODEL.md section 3 (GEMM by
-- precision, decode and prefill attention, MoE experts, all-reduce) to measured kernel latencies in
-- the CSV format of the shared reference (AIConfigurator's collectors, see its README), and reports
-- in-sample and leave-shape-out errors: the shapes (GEMM (n, k), attention heads, MoE model) are
-- split into `folds` groups; each group is predicted by a fit to the others.
--
--   build/hbdlab tools/fit_kernels.lua --set dir=../shared/reference/kernels/h100_sxm --set gpu=H100-SXM
--
-- Every prediction is hl.roofline on the GPU with the candidate fields: the same operator
-- constructors and timing as inside hl.simulate. Prints the fitted fields (to copy into the GPU
-- preset with their source) and the error table; nothing is written unless `json` is given.
local hl = require "hbdlab"
local P = hl.params {
  dir = { "", "directory of one GPU's CSV tables (gemm.csv, attention_decode_vllm.csv, ...)" },
  gpu = { "H100-SXM", "GPU preset the fields are fitted on" },
  folds = { 5, "leave-shape-out folds (0 = in-sample only)" },
  kinds = { "gemm_bf16,gemm_fp8,gemm_fp4,attn_decode,attn_prefill,moe,allreduce", "what to fit, in this order" },
  stride = { 1, "use every stride-th row of each table (a quick look)" },
  json = { "", "write the fitted fields and errors as JSON to this file" },
  start_json = { "", "fields fitted by an earlier run (its json), fitted on top of" },
  prefill_tile = { 32, "query tile rows of prefill attention (attn_tile_rows; not fitted: a granularity)" },
  attn_blend_max = { 16, "largest attn_blend of the decode attention fit (1: the additive model, for comparison)" },
  attn_split = { "shape", "decode attention's held-out groups: shape (hashed (heads, kv_heads) folds) or kv "
                 .. "(each KV-head count held out in turn: the extrapolation in K)" },
  attn_slots = { 132, "waves form: CTAs resident at once, SMs x CTAs per SM (not fitted: a granularity; H100 SXM has 132 SMs, B200 148)" },
  attn_form = { "blend", "decode attention's unit term: blend (units x attn_unit_s, power mean with the KV stream) "
                .. "or waves (ceil(units / attn_slots) waves x attn_cta_s; a prototype evaluated here)" },
  allreduce = { "both", "all-reduce tables: custom (TensorRT-LLM's kernel, in a CUDA graph), nccl (nccl-tests) or both" },
}
if P.attn_split ~= "shape" and P.attn_split ~= "kv" then
  error("fit_kernels: attn_split must be shape or kv, not '" .. P.attn_split .. "'", 0)
end
if P.dir == "" then error("fit_kernels: give --set dir=<directory of one GPU's CSV tables>", 0) end

local function read(name)
  local f = io.open(P.dir .. "/" .. name, "r")
  if not f then return nil end
  f:close()
  return hl.rows.read_csv(P.dir .. "/" .. name)
end

local base = hl.gpu(P.gpu)
local fitted = {} -- fields fitted so far: later kinds are fitted on top of them
if P.start_json ~= "" then
  for k, v in pairs(hl.rows.read_json(P.start_json).fields) do fitted[k] = v end
end

-- fitted parameters that are not GPU fields (a prototype form evaluated in this script)
local local_param = { attn_cta_s = true }

local function gpu_with(p)
  local over = {}
  for k, v in pairs(fitted) do over[k] = v end
  for k, v in pairs(p) do
    if not local_param[k] then over[k] = v end
  end
  return base:with(over)
end

-- A fold number 0..folds-1 from a shape key (a deterministic hash: the same split on every run).
local function fold_of(key, folds, fold)
  if fold then return fold % folds end
  local h = 5381
  for i = 1, #key do h = (h * 33 + key:byte(i)) % 2147483647 end
  return h % folds
end

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  if #s == 0 then return 0 end
  return #s % 2 == 1 and s[(#s + 1) // 2] or (s[#s // 2] + s[#s // 2 + 1]) / 2
end

local function pct(t, q)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  if #s == 0 then return 0 end
  return s[math.max(1, math.ceil(q * #s))]
end

-- rows: {key =, measured =, op = {hl.roofline fields}}; params: names; bounds: name -> {lo, hi}.
local function fit_kind(label, rows, params, bounds, start)
  if #rows < #params then
    print(string.format("%-13s skipped: %d rows", label, #rows))
    return
  end
  local function cases_of(sel)
    local cases, flags = {}, {}
    local cache_p, cache_g
    for i, r in ipairs(rows) do
      cases[i] = {
        name = r.key,
        measured = r.measured,
        predict = function(p)
          if p ~= cache_p then cache_p, cache_g = p, gpu_with(p) end
          if r.predict then return r.predict(cache_g, p) end
          local op = { gpu = cache_g }
          for k, v in pairs(r.op) do op[k] = v end
          return hl.roofline(op).time_s
        end,
      }
      flags[i] = sel(r)
    end
    return cases, flags
  end
  local all = cases_of(function() return true end)
  local res = hl.calibrate { cases = all, params = params, bounds = bounds, start = start, loo = false }
  local err, gerr, gheld = {}, {}, {}
  for i, c in ipairs(res.cases) do
    err[i] = math.abs(c.after_err)
    local g = rows[i].group
    if g then
      gerr[g] = gerr[g] or {}
      table.insert(gerr[g], err[i])
    end
  end
  local out = { label = label, rows = #rows, params = res.params, median = median(err), p90 = pct(err, 0.9) }
  if P.folds > 0 then
    local held = {}
    for f = 0, P.folds - 1 do
      local cases, flags = cases_of(function(r) return fold_of(r.shape, P.folds, r.fold) ~= f end)
      local any = false
      for _, v in ipairs(flags) do if v then any = true end end
      if any then
        local rf = hl.calibrate { cases = cases, params = params, bounds = bounds, start = res.params, loo = false,
                                  fit = flags }
        for i, c in ipairs(rf.cases) do
          if not flags[i] then
            held[#held + 1] = math.abs(c.after_err)
            local g = rows[i].group
            if g then
              gheld[g] = gheld[g] or {}
              table.insert(gheld[g], math.abs(c.after_err))
            end
          end
        end
      end
    end
    out.lso_median, out.lso_p90 = median(held), pct(held, 0.9)
  end
  for k, v in pairs(res.params) do fitted[k] = v end
  local ps = {}
  for _, k in ipairs(params) do ps[#ps + 1] = string.format("%s %.4g", k, res.params[k]) end
  print(string.format("%-13s %5d rows  median %5.1f%%  p90 %5.1f%%  leave-shape-out median %5.1f%%  p90 %5.1f%%  (%s)",
    label, #rows, 100 * out.median, 100 * out.p90, 100 * (out.lso_median or 0), 100 * (out.lso_p90 or 0),
    table.concat(ps, ", ")))
  local gnames = {}
  for g in pairs(gerr) do gnames[#gnames + 1] = g end
  table.sort(gnames)
  out.groups = {}
  for _, g in ipairs(gnames) do
    local h = gheld[g] or {}
    out.groups[g] = { rows = #gerr[g], median = median(gerr[g]), p90 = pct(gerr[g], 0.9), lso_median = median(h),
                      lso_p90 = pct(h, 0.9) }
    print(string.format("  %-18s %5d rows  median %5.1f%%  p90 %5.1f%%  leave-shape-out median %5.1f%%  p90 %5.1f%%",
      g, #gerr[g], 100 * median(gerr[g]), 100 * pct(gerr[g], 0.9), 100 * median(h), 100 * pct(h, 0.9)))
  end
  return out
end

local kinds = {}

-- The FP8 rows are dynamic per-tensor FP8: each call also computes the activation's scale. A
-- served FP8 checkpoint carries calibrated static scales, so the FP8 GEMM is fitted on the row
-- minus its measured `compute_scale` (fp8_quantize.csv, same m and k): AIC's "fp8_static" mode.
-- The static quantisation of the activation stays in the row (quant_bytes_fp8).
local function compute_scale_table()
  local t = read "fp8_quantize.csv"
  local s = {}
  for _, r in ipairs(t or {}) do
    if r.op == "compute_scale" then s[tonumber(r.m) .. "x" .. tonumber(r.k)] = tonumber(r.latency_ms) * 1e-3 end
  end
  return s
end

local function gemm_rows(dtype, prec)
  local t = read "gemm.csv"
  local rows = {}
  if not t then return rows end
  local scale = dtype == "fp8" and compute_scale_table() or nil
  for i, r in ipairs(t) do
    if r.dtype == dtype and (i % P.stride == 0) then
      local m, n, k = tonumber(r.m), tonumber(r.n), tonumber(r.k)
      local lat = tonumber(r.latency_ms) * 1e-3
      local cs = scale and scale[m .. "x" .. k]
      if not scale or (cs and lat - cs > 0) then
        rows[#rows + 1] = { key = dtype .. " " .. m .. "x" .. n .. "x" .. k, shape = n .. "x" .. k,
                            measured = lat - (cs or 0), op = { m = m, n = n, k = k, precision = prec } }
      end
    end
  end
  return rows
end

kinds.gemm_bf16 = function()
  return fit_kind("gemm bf16", gemm_rows("bfloat16", "bf16"),
    { "eff_gemm", "eff_mem", "kernel_latency", "gemm_k_latency", "gemm_blend" },
    { eff_gemm = { 0.2, 1 }, eff_mem = { 0.2, 1 }, kernel_latency = { 0, 20e-6 }, gemm_k_latency = { 0, 5e-9 },
      gemm_blend = { 1, 12 } },
    { eff_gemm = 0.75, eff_mem = 0.8, kernel_latency = 3e-6, gemm_k_latency = 0.3e-9, gemm_blend = 3 })
end

local function quant_kind(label, dtype, prec, suffix)
  local names = { "eff_gemm_" .. suffix, "eff_mem_" .. suffix, "gemm_latency_" .. suffix,
                  "gemm_k_latency_" .. suffix, "quant_bytes_" .. suffix }
  local b = { [names[1]] = { 0.1, 1 }, [names[2]] = { 0.1, 1 }, [names[3]] = { 0, 40e-6 },
              [names[4]] = { 1e-12, 5e-9 }, [names[5]] = { 0, 16 } }
  local s = { [names[1]] = 0.6, [names[2]] = 0.7, [names[3]] = 5e-6, [names[4]] = 0.5e-9, [names[5]] = 3 }
  return fit_kind(label, gemm_rows(dtype, prec), names, b, s)
end
kinds.gemm_fp8 = function() return quant_kind("gemm fp8 static", "fp8", "fp8", "fp8") end
kinds.gemm_fp4 = function()
  if base.fp4_flops == nil or base.fp4_flops <= 0 then return nil end
  return quant_kind("gemm fp4", "nvfp4", "fp4", "fp4")
end

-- The waves prototype (attn_form = waves): a decode kernel runs its units (sequence x KV head,
-- one CTA each) attn_slots at a time (SMs x resident CTAs per SM); each wave of CTAs costs
-- attn_cta_s of fixed work (launch of the CTA, loading Q, the softmax epilogue, writing O) that is
-- composed with the KV stream by the power mean of MODEL.md section 3:
--   time = kernel_latency + attn_latency + ((max(c, m))^p + (W attn_cta_s)^p)^(1/p),
--   W = ceil(batch kv_heads / attn_slots)
-- with m and c the roofline's memory and compute sides without the fixed part (hl.roofline on the
-- GPU with attn_latency = attn_unit_s = attn_blend = 0, so the same bytes, FLOP and eff_mem_attn).
local gpu_bare = setmetatable({}, { __mode = "k" })
local function wave_blend(a, b, p)
  local hi = math.max(a, b)
  if p <= 0 or hi <= 0 then return hi end
  return hi * ((a / hi) ^ p + (b / hi) ^ p) ^ (1 / p)
end
local function waves_predict(op)
  return function(g, p)
    if p == nil or p.attn_cta_s == nil then -- hl.calibrate's "before": the GPU's own decode form
      local o = { gpu = g }
      for k, v in pairs(op) do o[k] = v end
      return hl.roofline(o).time_s
    end
    local g0 = gpu_bare[g]
    if not g0 then
      g0 = g:with { attn_latency = 0, attn_unit_s = 0, attn_blend = 0 }
      gpu_bare[g] = g0
    end
    local o = { gpu = g0 }
    for k, v in pairs(op) do o[k] = v end
    local r = hl.roofline(o)
    local side = math.max(r.compute_s, r.memory_s)
    local fixed = r.time_s - side -- kernel_latency
    local waves = math.ceil(op.batch * op.kv_heads / P.attn_slots)
    return fixed + p.attn_latency + wave_blend(side, waves * p.attn_cta_s, p.attn_blend)
  end
end

local function attn_rows(file, decode)
  local t = read(file)
  local rows = {}
  if not t then return rows end
  for i, r in ipairs(t) do
    local full = tonumber(r.window) == 0 and tonumber(r.head_dim) == 128
    local dt = decode and r.kv_dtype or r.attn_dtype
    if full and (dt == "bfloat16" or (decode and dt == "fp8")) and (not decode or true)
        and (decode or r.kv_dtype == "bfloat16") and i % P.stride == 0 then
      local heads, kvh = tonumber(r.heads), tonumber(r.kv_heads)
      local op = { kind = "attention", batch = tonumber(r.batch), heads = heads, kv_heads = kvh, head_dim = 128,
                   precision = "bf16", kv_bytes = r.kv_dtype == "fp8" and 1 or 2 }
      if decode then op.q, op.context = 1, tonumber(r.cached_tokens)
      else op.q, op.context = tonumber(r.isl), 0 end
      local row = { key = file .. " " .. i, shape = heads .. "/" .. kvh, measured = tonumber(r.latency_ms) * 1e-3,
                    op = op }
      if decode then
        -- reported by KV heads per GPU (the unit count's factor that an MHA model extrapolates)
        row.group = string.format("kv_heads %d", kvh)
        if P.attn_split == "kv" then row.fold = math.floor(math.log(kvh, 2) + 0.5) end
        if P.attn_form == "waves" then row.predict = waves_predict(op) end
      end
      rows[#rows + 1] = row
    end
  end
  return rows
end

kinds.attn_decode = function()
  if P.attn_form == "waves" then
    return fit_kind("attn decode waves", attn_rows("attention_decode_vllm.csv", true),
      { "eff_mem_attn", "attn_latency", "attn_cta_s", "attn_blend" },
      { eff_mem_attn = { 0.2, 1 }, attn_latency = { 0, 40e-6 }, attn_cta_s = { 0, 100e-6 }, attn_blend = { 0, P.attn_blend_max } },
      { eff_mem_attn = 0.8, attn_latency = 5e-6, attn_cta_s = 3.5e-6 * P.attn_slots / 132,
        attn_blend = math.min(2, P.attn_blend_max / 2) })
  end
  if P.attn_form ~= "blend" then error("fit_kernels: attn_form must be blend or waves, not '" .. P.attn_form .. "'", 0) end
  return fit_kind("attn decode", attn_rows("attention_decode_vllm.csv", true),
    { "eff_mem_attn", "attn_latency", "attn_unit_s", "attn_blend" },
    { eff_mem_attn = { 0.2, 1 }, attn_latency = { 0, 40e-6 }, attn_unit_s = { 0, 1e-6 }, attn_blend = { 0, P.attn_blend_max } },
    { eff_mem_attn = 0.8, attn_latency = 5e-6, attn_unit_s = 0.02e-6, attn_blend = math.min(2, P.attn_blend_max / 2) })
end

kinds.attn_prefill = function()
  -- the decode fit's latency and unit cost stay; prefill adds its compute efficiency
  -- query tiles of `prefill_tile` rows, the granularity that fits the measured prefill kernels best
  -- of 16, 32, 64, 128: 32 on H100 (7.0% vs 7.6% at 64), 64 on Blackwell (B200 6.3% vs 9.6% at 32,
  -- GB200 7.6% vs 10.2%; 16 and 128 worse everywhere); real kernels choose their tile by length
  fitted.attn_tile_rows = P.prefill_tile
  return fit_kind("attn prefill", attn_rows("attention_prefill.csv", false),
    { "eff_attn", "attn_tile_s", "attn_prefill_latency" },
    { eff_attn = { 0.1, 1 }, attn_tile_s = { 0, 20e-6 }, attn_prefill_latency = { 0, 50e-6 } },
    { eff_attn = 0.5, attn_tile_s = 1e-8, attn_prefill_latency = 3e-6 })
end

kinds.moe = function()
  local t = read "moe.csv"
  local rows = {}
  if not t then return nil end
  local want = { bfloat16 = "bf16", fp8 = "fp8" }
  for i, r in ipairs(t) do
    if want[r.dtype] and r.distribution == "balanced" then
      rows[#rows + 1] = {
        key = r.model .. " " .. i, shape = r.model .. " tp" .. r.moe_tp .. " ep" .. r.moe_ep,
        measured = tonumber(r.latency_ms) * 1e-3,
        op = { kind = "moe", tokens = tonumber(r.tokens), hidden = tonumber(r.hidden), inter = tonumber(r.inter),
               topk = tonumber(r.topk), experts = tonumber(r.experts), ep = tonumber(r.moe_ep),
               etp = tonumber(r.moe_tp), precision = want[r.dtype] } }
    end
  end
  return fit_kind("moe", rows, { "moe_latency", "eff_grouped", "grouped_k0", "grouped_k0_fp8", "moe_perm_bytes" },
    { moe_latency = { 0, 200e-6 }, eff_grouped = { 0.2, 1.5 }, grouped_k0 = { 0, 20000 }, grouped_k0_fp8 = { 0, 20000 },
      moe_perm_bytes = { 0, 64 } },
    { moe_latency = 20e-6, eff_grouped = 0.9, grouped_k0 = 500, grouped_k0_fp8 = 1500, moe_perm_bytes = 12 })
end

-- All-reduce: TensorRT-LLM's custom kernel table (its AUTO strategy, `trtllm_ar`: one-shot,
-- two-shot or NCCL, in a CUDA graph) and nccl-tests (`nccl`: NCCL's tuning model, launch included)
-- over `ranks` GPUs of one HBD, fitted together (`allreduce = both`) so that one set of link fields
-- serves both; the medians are reported per table. Kernel fields do not enter a collective's time.
kinds.allreduce = function()
  local rows = {}
  local function add(file, algo, group, pick)
    local t = read(file)
    if not t then return end
    for i, r in ipairs(t) do
      if pick(r) and i % P.stride == 0 then
        rows[#rows + 1] = { key = file .. " " .. i, shape = file .. " " .. r.ranks, group = group,
                            measured = tonumber(r.latency_ms) * 1e-3,
                            coll = { bytes = tonumber(r.bytes), ranks = tonumber(r.ranks), algo = algo } }
      end
    end
  end
  if P.allreduce == "custom" or P.allreduce == "both" then
    add("allreduce_custom.csv", "trtllm_ar", "allreduce custom", function() return true end)
  end
  if P.allreduce == "nccl" or P.allreduce == "both" then
    add("nccl.csv", "nccl", "allreduce nccl", function(r) return r.op == "all_reduce" and r.dtype == "half" end)
  end
  if #rows == 0 then return nil end
  for _, r in ipairs(rows) do
    local c = r.coll
    r.predict = function(g)
      local cl = hl.cluster { gpu = g, gpus = c.ranks, hbd = c.ranks }
      return hl.collective { op = "allreduce", bytes = c.bytes, ranks = c.ranks, cluster = cl, algo = c.algo }.time_s
    end
  end
  return fit_kind("allreduce " .. P.allreduce, rows,
    { "coll_launch", "scaleup_latency", "eff_scaleup", "in_switch_eff", "in_switch_latency", "custom_ar_latency",
      "custom_ar_eff" },
    { coll_launch = { 0, 20e-6 }, scaleup_latency = { 0, 5e-6 }, eff_scaleup = { 0.3, 1 }, in_switch_eff = { 0.1, 1.5 },
      in_switch_latency = { 0, 100e-6 }, custom_ar_latency = { 0, 20e-6 }, custom_ar_eff = { 0.1, 1 } },
    { coll_launch = 4e-6, scaleup_latency = 0.6e-6, eff_scaleup = 0.8, in_switch_eff = 0.6, in_switch_latency = 25e-6,
      custom_ar_latency = 3e-6, custom_ar_eff = 0.5 })
end

local results = {}
for name in P.kinds:gmatch("[^,]+") do
  local f = kinds[name]
  if not f then error("fit_kernels: unknown kind '" .. name .. "'", 0) end
  local r = f()
  if r then results[#results + 1] = r end
end
print("fitted fields for " .. P.gpu .. ":")
local names = {}
for k in pairs(fitted) do names[#names + 1] = k end
table.sort(names)
for _, k in ipairs(names) do print(string.format("  \"%s\": %.4g,", k, fitted[k])) end
if P.json ~= "" then hl.rows.write_json({ gpu = P.gpu, fields = fitted, kinds = results }, P.json) end

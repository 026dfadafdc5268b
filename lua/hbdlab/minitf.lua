-- hl.minitf: the native CPU mini-transformer, and hl.minitf.check, which
-- verifies (1) KV-cache decode equals recomputation, (2) every sharded layout
-- equals the unsharded model, and (3) the counted FLOPs, weight bytes, KV bytes
-- and per-rank collective bytes equal what the analytical model predicts.
local core = require "hbdlab.core"

local M = {}

--- hl.simulate on this CPU as a "GPU": it has no price or power, and the check only reads times,
--- so the unknown-cost warning (meant for GPU presets and user GPUs) is not printed.
function M.simulate_on_cpu(hl, t)
  local warn = require "hbdlab.warn"
  local was = warn.enabled
  warn.enabled = false
  local ok, r = pcall(hl.simulate, t)
  warn.enabled = was
  if not ok then error(r, 0) end
  return r
end

M.default_model = { name = "minitf-moe", hidden = 256, layers = 4, heads = 8, kv_heads = 2, head_dim = 32, ffn = 512,
                    vocab = 512, experts = 8, topk = 2 }

--- hl.minitf.run{model, tp, ep, pp, batch, prompt, new, seed, kv_cache} -> {tokens, logits, stats}
function M.run(t) return core.minitf_run(t) end

local function maxdiff(a, b)
  local m = 0
  for i = 1, #a do
    local d = math.abs(a[i] - b[i])
    if d > m then m = d end
  end
  return m
end

local function same_tokens(a, b)
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return #a == #b
end

local function sum(v) local s = 0 for _, x in ipairs(v) do s = s + x end return s end

-- An accelerator for the analytical side: FP32 math, numbers irrelevant to counts.
local function cpu_cluster(hl, ranks)
  local g = hl.gpu { name = "cpu", fp32_tflops = 1, bf16_tflops = 1, hbm_gb = 64, hbm_tbs = 0.1, scaleup_gbs = 10,
                     scaleout_gbps = 80 }
  return hl.cluster { gpu = g, gpus = ranks, hbd = ranks }
end

--- hl.minitf.check{ model = m (small), tp = 2, ep = 2, pp = 2, batch = 2, prompt = 8, new = 4, seed = 1 }
--- Returns a report table: ok (every check passed) and checks = { {name, counted, predicted, ok}, ... }.
function M.check(t)
  local hl = require "hbdlab"
  t = t or {}
  local m = t.model or hl.model(M.default_model)
  if type(m) == "table" and getmetatable(m) == nil then m = hl.model(m) end
  local B, P, N = t.batch or 2, t.prompt or 8, t.new or 4
  local base = { model = m, batch = B, prompt = P, new = N, seed = t.seed or 1 }
  local function run(extra)
    local x = {}
    for k, v in pairs(base) do x[k] = v end
    for k, v in pairs(extra or {}) do x[k] = v end
    return core.minitf_run(x)
  end
  local report = { model = m.name, batch = B, prompt = P, new = N, checks = {}, ok = true }
  local function add(name, counted, predicted, ok, tol)
    if ok == nil then ok = counted == predicted end
    report.checks[#report.checks + 1] = { name = name, counted = counted, predicted = predicted, ok = ok, tol = tol }
    report.ok = report.ok and ok
  end

  local ref = run()
  local rec = run { kv_cache = false }
  add("KV-cache decode = recomputation: max |logit diff|", maxdiff(ref.logits, rec.logits), 1e-4,
    maxdiff(ref.logits, rec.logits) < 1e-4, "< 1e-4")
  add("KV-cache decode = recomputation: greedy tokens", same_tokens(ref.tokens, rec.tokens) and "same" or "differ",
    "same", same_tokens(ref.tokens, rec.tokens))

  local layouts = {}
  local tp, ep, pp = t.tp or 2, t.ep or 2, t.pp or 2
  if tp > 1 then layouts[#layouts + 1] = { tp = tp } end
  if ep > 1 and m.experts > 0 then layouts[#layouts + 1] = { ep = ep } end
  if pp > 1 then layouts[#layouts + 1] = { pp = pp } end
  if tp > 1 and pp > 1 then layouts[#layouts + 1] = { tp = tp, pp = pp } end
  if ep > 1 and pp > 1 and m.experts > 0 then layouts[#layouts + 1] = { ep = ep, pp = pp } end
  local runs = {}
  for _, lay in ipairs(layouts) do
    local name = string.format("tp%d ep%d pp%d", lay.tp or 1, lay.ep or 1, lay.pp or 1)
    local r = run(lay)
    runs[name] = { r = r, lay = lay }
    local d = maxdiff(ref.logits, r.logits)
    add(name .. " = unsharded: max |logit diff|", d, 1e-4, d < 1e-4, "< 1e-4")
    add(name .. " = unsharded: greedy tokens", same_tokens(ref.tokens, r.tokens) and "same" or "differ", "same",
      same_tokens(ref.tokens, r.tokens))
  end

  -- The analytical model for the same configuration and mapping. The counters
  -- sum over the ranks, so the model is asked for the mean rank (imbalance = 1),
  -- not the expected busiest rank of its routing model.
  local function sim(lay)
    local ranks = (lay.tp or 1) * (lay.ep or 1) * (lay.pp or 1)
    return M.simulate_on_cpu(hl, { model = m, cluster = cpu_cluster(hl, ranks), precision = "fp32", act_precision = "fp32",
                         kv_precision = "fp32", wire_precision = "fp32", batch = B, input = P, output = N, imbalance = 1,
                         parallel = { tp = lay.tp or 1, ep = lay.ep or 1, pp = lay.pp or 1 } })
  end
  local s1 = sim {}
  add("FLOPs, prefill (1 rank)", ref.stats.prefill_flops[1], s1.prefill.flops)
  add("FLOPs, decode (1 rank, all steps)", ref.stats.decode_flops[1], s1.decode.flops)
  add("weight bytes (1 rank)", ref.stats.weight_bytes[1], s1.memory.weights_bytes)
  -- the KV of P + N - 1 cached tokens, and one linear-attention state per sequence
  local state = m:state_bytes("fp32")
  local kv_pred = B * (m:kv_bytes_per_token("fp32") * (P + N - 1) + state)
  add("KV bytes (1 rank, P+N-1 tokens cached, + state)", ref.stats.kv_bytes[1], kv_pred)

  local h, V = m.hidden, m.vocab
  local function ring(op, bytes, n)
    if n < 2 then return 0 end
    local c = hl.collective { op = op, bytes = bytes, ranks = n, cluster = cpu_cluster(hl, n), algo = "ring" }
    return c.scaleup_bytes + c.scaleout_bytes
  end
  for name, x in pairs(runs) do
    local lay, st = x.lay, x.r.stats
    local n_tp, n_ep, n_pp = lay.tp or 1, lay.ep or 1, lay.pp or 1
    local s = sim(lay)
    if n_pp == 1 then
      if n_ep == 1 then
        add(name .. ": FLOPs per rank, prefill", st.prefill_flops[1], s.prefill.flops)
        add(name .. ": FLOPs per rank, decode", st.decode_flops[1], s.decode.flops)
      else -- routed experts are data dependent per rank; totals are exact
        add(name .. ": FLOPs, prefill, all ranks", sum(st.prefill_flops), s.prefill.flops * st.ranks)
        add(name .. ": FLOPs, decode, all ranks", sum(st.decode_flops), s.decode.flops * st.ranks)
      end
      add(name .. ": weight bytes per rank", st.weight_bytes[1], s.memory.weights_bytes)
      local st_gpu = (B // n_ep) * state / n_tp -- the state's heads split over TP
      add(name .. ": KV bytes per rank", st.kv_bytes[1], (s.memory.kv_bytes - st_gpu) * (P + N - 1) / (P + N) + st_gpu)
    else -- stages: the pp = 1 mapping's per-GPU figures times its ranks, summed over the stages
      local s1l = sim { tp = n_tp, ep = n_ep }
      add(name .. ": FLOPs, all ranks", sum(st.prefill_flops) + sum(st.decode_flops),
        (s1l.prefill.flops + s1l.decode.flops) * n_tp * n_ep)
      add(name .. ": weight bytes, all ranks", sum(st.weight_bytes), s1l.memory.weights_bytes * n_tp * n_ep)
    end
    -- collectives: per-rank bytes against the collective model
    local Bl = B // n_ep
    local T_pre, T_dec = Bl * P, Bl
    if n_tp > 1 then
      local ar = 2 * m.layers // n_pp * (ring("allreduce", T_pre * h * 4, n_tp) + (N - 1) * ring("allreduce", T_dec * h * 4, n_tp))
      add(name .. ": TP AllReduce bytes per rank", st.allreduce_bytes[1], ar)
      local ag = N * ring("allgather", Bl * V * 4, n_tp)
      add(name .. ": logits AllGather bytes per rank", st.allgather_bytes[#st.allgather_bytes], ag)
    end
    if n_pp > 1 then
      add(name .. ": PP Send/Recv bytes per rank (stage 1)", st.sendrecv_bytes[1], (T_pre + (N - 1) * T_dec) * h * 4)
    end
    if n_ep > 1 then
      local moe_layers = m.layers - (m.experts > 0 and m.dense_layers or m.layers)
      local vol = 2 * moe_layers * (B * P + (N - 1) * B) * m.topk * h * 4
      add(name .. ": All-to-All volume, all ranks (dispatch + combine)", st.alltoall_volume, vol)
      local remote = sum(st.alltoall_bytes)
      add(name .. ": All-to-All bytes to other ranks (uniform routing would give " ..
        string.format("%.0f", vol * (n_ep - 1) / n_ep) .. ")", remote, vol * (n_ep - 1) / n_ep,
        remote <= vol, "data dependent")
    end
  end
  return setmetatable(report, { __tostring = M.format })
end

-- Nominal clock in Hz from /proc/cpuinfo (nil when unknown).
local function cpu_hz()
  local f = io.open("/proc/cpuinfo", "r")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local mhz = text:match("cpu MHz%s*:%s*([%d%.]+)")
  return mhz and tonumber(mhz) * 1e6 or nil
end

--- hl.minitf.cpu_roofline{ model, batch, prompt, new }: measures this CPU with the
--- mini-transformer's own GEMM kernel and a streaming triad, builds an accelerator
--- from the two numbers, predicts the prefill and decode times with the analytical
--- model, runs the mini-transformer and returns predicted vs measured.
function M.cpu_roofline(t)
  local hl = require "hbdlab"
  t = t or {}
  local m = t.model or hl.model(M.default_model)
  local B, P, N = t.batch or 4, t.prompt or 128, t.new or 32
  local flops, bw = core.minitf_measure_cpu(t.gemm_n or 512, t.triad_bytes or 256e6)
  local cpu = hl.gpu { name = "this-cpu", fp32_flops = flops, bf16_flops = flops, hbm_bytes = 16e9, hbm_bw = bw,
                       scaleup_bw = 1e9, scaleout_bw = 1e9, eff_gemm = 1, eff_attn = 1, eff_mem = 1,
                       kernel_latency = 0, gemm_tile_rows = 1 }
  local r = M.simulate_on_cpu(hl, { model = m, cluster = hl.cluster { gpu = cpu, gpus = 1 }, precision = "fp32",
                          act_precision = "fp32", kv_precision = "fp32", batch = B, input = P, output = N })
  local run = core.minitf_run { model = m, batch = B, prompt = P, new = N, seed = 1 }
  local hz = cpu_hz()
  return {
    gemm_flops = flops, mem_bw = bw, cpu_hz = hz,
    sse_peak_flops = hz and hz * 16 or nil, -- 4 FP32 lanes x (2 mul + 2 add) per cycle, SSE2 as compiled
    peak_fraction = hz and flops / (hz * 16) or nil,
    prefill_predicted_s = r.prefill.time_s, prefill_measured_s = run.stats.prefill_s,
    decode_predicted_s = r.decode.time_s, decode_measured_s = run.stats.decode_s,
    prefill_bound = r.prefill.compute_s >= r.prefill.memory_s and "compute" or "memory",
    decode_bound = r.decode.compute_s >= r.decode.memory_s and "compute" or "memory",
    batch = B, prompt = P, new = N, model = m.name,
  }
end

function M.format_roofline(c)
  local lines = {
    string.format("CPU measured with the mini-transformer's kernels: GEMM %.2f GFLOP/s (%s), triad %.2f GB/s",
      c.gemm_flops / 1e9, c.peak_fraction and string.format("%.0f%% of the SSE2 FP32 peak at %.2f GHz",
        c.peak_fraction * 100, c.cpu_hz / 1e9) or "peak unknown", c.mem_bw / 1e9),
    string.format("%-30s %12s %12s %8s  %s", string.format("%s, batch %d", c.model, c.batch), "predicted", "measured", "error", "bound"),
    string.format("%-30s %10.2f ms %10.2f ms %+7.1f%%  %s", string.format("prefill (%d tokens/seq)", c.prompt),
      c.prefill_predicted_s * 1e3, c.prefill_measured_s * 1e3, (c.prefill_predicted_s / c.prefill_measured_s - 1) * 100, c.prefill_bound),
    string.format("%-30s %10.2f ms %10.2f ms %+7.1f%%  %s", string.format("decode (%d steps)", c.new - 1),
      c.decode_predicted_s * 1e3, c.decode_measured_s * 1e3, (c.decode_predicted_s / c.decode_measured_s - 1) * 100, c.decode_bound),
  }
  return table.concat(lines, "\n")
end

--- A readable rendering of a check report.
function M.format(report)
  local lines = { string.format("mini-transformer check: %s, batch %d, prompt %d, %d new tokens: %s",
    report.model, report.batch, report.prompt, report.new, report.ok and "ALL PASSED" or "FAILED") }
  for _, c in ipairs(report.checks) do
    local function show(v)
      if type(v) == "number" then return (v == math.floor(v) and math.abs(v) < 1e15) and string.format("%d", v) or string.format("%.4g", v) end
      return tostring(v)
    end
    lines[#lines + 1] = string.format("  [%s] %-66s counted %-14s predicted %s%s", c.ok and "ok" or "FAIL", c.name,
      show(c.counted), show(c.predicted), c.tol and (" (" .. c.tol .. ")") or "")
  end
  return table.concat(lines, "\n")
end

return M

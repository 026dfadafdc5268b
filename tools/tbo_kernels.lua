-- Two-batch overlap in prefill, kernel by kernel (issue 27, P6; docs/VALIDATION.md fid12): SGLang's order at
-- the blog's commit, on two streams, with the SM rules of the kernels SGLang launched, against the four-pair
-- formula hl_sim_run uses (docs/MODEL.md 6.5). Sources (fzyzcjy/sglang branch deepseek_ep_0508 at 6fa2c029c,
-- 2025-05-04, the day before the LMSYS blog):
--   order, per micro-batch and MoE layer (models/deepseek_v2.py get_forward_tbo_operations): [shared experts
--   of the previous layer, combine_b (launch the combine, wait for it), attention side, gate, dispatch_a]
--   yield [dispatch_b (launch the dispatch, wait for it), experts, combine_a] yield; B runs each stage right
--   after A (delta 0). So the compute stream runs A.s wX2a A.a B.s wX2b B.a wX1a A.e wX1b B.e per layer and
--   DeepEP's stream X2a X2b X1a X1b, each transfer after the event its compute stage captured.
--   SMs: DeepGEMM confined to 132 - 24 SMs for the whole pass (_forward_tbo_layers,
--   configure_deep_gemm_num_sms), so its GEMMs take g / (1 - f) always; DeepEP on 24 SMs (DEEPEP_NUM_SMS) on
--   a high-priority stream (deep_ep csrc/deep_ep.cpp, getStreamFromPool(true)), so other kernels lose f of
--   the SMs while a transfer runs; FA3 (the fa3 backend's flash_attn_varlen_func, sm_margin 0) launches one
--   persistent CTA per SM (flash-attention hopper/flash_fwd_launch_template.h UsePersistentScheduler,
--   tile_scheduler.hpp grid = num_sm): started with no transfer in flight it holds all SMs, and a transfer
--   that becomes ready meanwhile starts only when it ends ("blocked" below); started beside a transfer it
--   runs on the other SMs until the transfer ends (dynamic tile scheduler).
-- Kernel times are the model's own (the breakdown's rows of P6's job, all SMs): per micro-batch and MoE
-- layer a row's time / (116 + 2 x 3) for rows the 3 dense layers share (they run the whole batch), / 116 for
-- MoE-only rows. "model order" puts the shared experts after the combine wait (the pairs' c1).
-- Usage: hbdlab tools/tbo_kernels.lua [--set input=4096] [--set imbalance=1.3172]
local hl = require "hbdlab"
local P = hl.params {
  input = { 0, "prompt length (0: 1024, 2048 and 4096, P6's rows)" },
  imbalance = { 0, "busiest EP rank / mean (0: uniform routing; validate.lua's P6 states 1.1665 / 1.2339 / 1.3172)" },
}
local F = 24 / 132 -- DeepEP's share of the SMs

local function job_rows(inp)
  local r = hl.simulate { model = hl.model "deepseek-v3", cluster = hl.cluster { gpu = "H100-SXM", gpus = 32, hbd = 8 },
                          precision = "fp8", kv_precision = "bf16", framework = "sglang", batch = 16384 // inp * 32,
                          input = inp, output = 1, parallel = { tp = 1, ep = 32 }, dispatch = "hierarchical",
                          wire_precision = "fp8", two_batch_overlap = true, redundant_experts = 32,
                          imbalance = P.imbalance }
  local t = {}
  for _, row in ipairs(r.prefill.breakdown) do t[row.name] = row.time_s end
  return t
end

-- one micro-batch, one MoE layer: {kind, s}; kind dg (DeepGEMM), fa3, other
local function kernels(t)
  local function sh(n) return (t[n] or 0) / 122 end -- rows the dense layers share
  local function moe(n) return (t[n] or 0) / 116 end
  return {
    attn = { { "other", sh "norms" }, { "dg", sh "q_proj" }, { "dg", sh "kv_proj" }, { "other", sh "rope" },
             { "other", sh "kv_append" }, { "other", sh "k_concat" }, { "fa3", sh "attention" }, { "dg", sh "o_proj" },
             { "other", sh "norm" }, { "other", moe "router" } },
    shared = { { "dg", moe "shared_experts" } },
    experts = { { "dg", moe "experts" }, { "other", moe "moe_permute" } },
    x1 = moe "ep_dispatch_inter" + moe "ep_dispatch_intra",
    x2 = moe "ep_combine_inter" + moe "ep_combine_intra",
  }
end

-- the two streams; returns the time of the 58 overlapped layers and the transfers FA3 held back
local function streams(k, layers, block, model_order)
  local comp, comm = {}, {}
  local function run(ops) for _, o in ipairs(ops) do comp[#comp + 1] = { kind = o[1], d = o[2] } end end
  local function mark(kind, name) comp[#comp + 1] = { kind = kind, name = name } end
  for l = 1, layers do
    for _, m in ipairs { "a", "b" } do
      if l > 1 then
        if model_order then mark("wait", "X2" .. m .. l - 1); run(k.shared)
        else run(k.shared); mark("wait", "X2" .. m .. l - 1) end
      end
      run(k.attn); mark("event", "E1" .. m .. l)
    end
    for _, m in ipairs { "a", "b" } do mark("wait", "X1" .. m .. l); run(k.experts); mark("event", "E2" .. m .. l) end
  end
  for _, m in ipairs { "a", "b" } do run(k.shared); mark("wait", "X2" .. m .. layers) end
  for l = 1, layers do
    for _, x in ipairs { { "X1", "E1", k.x1 }, { "X2", "E2", k.x2 } } do
      for _, m in ipairs { "a", "b" } do comm[#comm + 1] = { name = x[1] .. m .. l, dep = x[2] .. m .. l, d = x[3] } end
    end
  end
  local now, ci, xi, held = 0, 1, 1, 0
  local done, cur, xcur = {}, nil, nil
  while true do
    local progressed = false
    if not cur and ci <= #comp then -- next compute op
      local op = comp[ci]
      if op.kind == "event" then done[op.name] = now; ci = ci + 1; progressed = true
      elseif op.kind == "wait" then
        if done[op.name] then ci = ci + 1; progressed = true end
      else
        cur = { kind = op.kind, rem = op.d, all_sms = op.kind == "fa3" and not xcur }; ci = ci + 1; progressed = true
      end
    end
    if not progressed and not xcur and xi <= #comm and done[comm[xi].dep] then -- next transfer
      if block and cur and cur.all_sms then held = held + 1 -- FA3 holds every SM: wait for its end
      else xcur = { name = comm[xi].name, rem = comm[xi].d }; xi = xi + 1; progressed = true end
    end
    if not progressed then
      if not cur and not xcur then break end
      local rate = 1
      if cur and (cur.kind == "dg" or (xcur and not cur.all_sms)) then rate = 1 - F end
      local dt = math.min(cur and cur.rem / rate or math.huge, xcur and xcur.rem or math.huge)
      now = now + dt
      if cur then cur.rem = cur.rem - dt * rate; if cur.rem <= 1e-15 then cur = nil end end
      if xcur then
        xcur.rem = xcur.rem - dt
        if xcur.rem <= 1e-15 then done[xcur.name] = now; xcur = nil end
      end
    end
  end
  return now, held
end

-- hl_sim_run's four pairs (core/src/sim.c tbo_hidden_prefill) over the same kernels
local function four_pairs(k, layers)
  local function split(ops)
    local g, o = 0, 0
    for _, op in ipairs(ops) do if op[1] == "dg" then g = g + op[2] else o = o + op[2] end end
    return g, o
  end
  local ga, oa = split(k.attn)
  local gs, os = split(k.shared)
  local ge, oe = split(k.experts)
  local g1, o1, g2, o2 = (ga + gs) * layers, (oa + os) * layers, ge * layers, oe * layers
  local x1, x2 = k.x1 * layers, k.x2 * layers
  local function pair(g, o, x) return math.max(x, g / (1 - F) + o + F * math.min(x, o)) end
  return pair(g1, o1, x2) + pair(g1, o1, x1) + pair(g2, o2, x1) + pair(g2, o2, x2)
end

local inputs = P.input > 0 and { P.input } or { 1024, 2048, 4096 }
local out = {}
for _, inp in ipairs(inputs) do
  local k = kernels(job_rows(inp))
  local pairs4 = four_pairs(k, 58)
  local sglang, held = streams(k, 58, true, false)
  local free = streams(k, 58, false, false)
  local model = streams(k, 58, true, true)
  print(string.format("input %d, 58 overlapped layers: four pairs %.4f s; SGLang's order %.4f s (%+.2f%%), %d transfer(s) "
                      .. "held back by FA3 (%.4f s without that rule); model order %.4f s (%+.2f%%)", inp, pairs4, sglang,
                      (sglang - pairs4) / pairs4 * 100, held, free, model, (model - pairs4) / pairs4 * 100))
  out[inp] = { pairs = pairs4, sglang = sglang, held = held, model_order = model }
end
return out

local T = require "testlib"
local hl = require "hbdlab"

local moe = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 }

local function run(t)
  local base = { model = moe, precision = "fp8", batch = 16, input = 4096, output = 64,
                 cluster = hl.cluster { gpu = "B200", gpus = 64, hbd = 8 }, parallel = { tp = 8, ep = 16 } }
  for k, v in pairs(t or {}) do base[k] = v end
  return hl.simulate(base)
end

T.test("result fields are the contract", function()
  local r = run()
  for _, k in ipairs { "ttft_s", "tpot_s", "total_s", "decode_tps", "tps_per_gpu", "tps_per_gpu_incl_prompt", "bound" } do
    T.ok(r[k] ~= nil, k)
  end
  for _, ph in ipairs { "prefill", "decode" } do
    for _, k in ipairs { "time_s", "compute_s", "memory_s", "comm_s", "comm_share", "breakdown" } do
      T.ok(r[ph][k] ~= nil, ph .. "." .. k)
    end
  end
  T.ok(r.memory.fits ~= nil and r.memory.weights_bytes > 0, "memory")
  T.eq(r.parallel.dp, 8, "dp resolved")
  T.eq(r.parallel.etp, 4, "etp resolved")
  -- total = ttft + (output-1) * tpot; per-GPU throughput definition
  T.near(r.total_s, r.ttft_s + 63 * r.tpot_s, 1e-12, "total")
  T.near(r.tps_per_gpu, 16 * 64 / r.total_s / 64, 1e-12, "tps_per_gpu")
  T.ok(tostring(r):find("TTFT"), "summary prints")
end)

T.test("breakdown names collectives with their tier", function()
  local r = run()
  local seen = {}
  for _, it in ipairs(r.prefill.breakdown) do seen[it.name] = it end
  T.ok(seen.ep_dispatch and seen.ep_dispatch.tier == "scale-out", "dispatch crosses HBDs at hbd 8")
  T.ok(seen.tp_allreduce and seen.tp_allreduce.tier == "scale-up", "TP stays in the HBD")
  T.ok(seen.experts and seen.attention and seen.qkv_proj, "operators")
end)

T.test("overlap hides communication", function()
  local a, b = run(), run { overlap = 0.5 }
  T.near(b.prefill.comm_s, a.prefill.comm_s * 0.5, 1e-9, "half exposed")
end)

T.test("sequence parallelism: ReduceScatter + AllGather carry the AllReduce's bytes, norms shrink", function()
  local a, b = run(), run { sequence_parallel = true }
  local function item(r, name) for _, it in ipairs(r.prefill.breakdown) do if it.name == name then return it end end end
  T.ok(item(b, "tp_reducescatter") and item(b, "tp_allgather") and not item(b, "tp_allreduce"), "collectives replaced")
  -- by hand: dp = 64/8 = 8 groups, 2 sequences x 4096 tokens = 8192 tokens per group; S = 8192 x 8192 x 2 B;
  -- one reduction per layer (the MoE layers use EP), 80 layers; each of RS and AG sends (8-1)/8 x S
  local S = 8192 * 8192 * 2
  T.near(item(b, "tp_reducescatter").bytes, 80 * 7 / 8 * S, 1e-12, "ReduceScatter bytes")
  T.near(item(b, "tp_allgather").bytes, 80 * 7 / 8 * S, 1e-12, "AllGather bytes")
  T.near(item(b, "norms").flops * 8, item(a, "norms").flops, 1e-12, "norms on T/tp tokens (tp = 8)")
end)

T.test("placement decides which groups stay inside an HBD", function()
  -- 16 GPUs in HBDs of 8, TP4 x PP2 x DP2: ranks ordered innermost first
  local function tiers(placement)
    local r = hl.simulate { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 16, hbd = 8 },
                            batch = 4, input = 512, output = 8, parallel = { tp = 4, pp = 2 }, placement = placement }
    local t = {}
    for _, it in ipairs(r.prefill.breakdown) do if it.kind == "comm" then t[it.name] = it.tier end end
    return t
  end
  local d = tiers(nil) -- tp,dp,pp: stages 8 ranks apart, in different HBDs
  T.eq(d.pp_sendrecv, "scale-out", "default: pipeline hand-off crosses HBDs")
  T.eq(d.tp_allreduce, "scale-up", "default: TP inside an HBD")
  local p = tiers("pp,tp,dp") -- pipeline neighbours adjacent; TP strided by 2, still inside
  T.eq(p.pp_sendrecv, "scale-up", "pp innermost: hand-off inside an HBD")
  T.eq(p.tp_allreduce, "scale-up", "TP group of 4 with stride 2 fits in 8")
  local t = tiers("tp,pp,dp") -- stage neighbours 4 ranks apart: same HBD
  T.eq(t.pp_sendrecv, "scale-up", "tp,pp,dp: hand-off inside an HBD")
  T.raises(function() tiers("pp,dp,tp") end, "'placement': 'pp,dp,tp' is not one of")
end)

T.test("bad input", function()
  T.raises(function() run { parallel = { tp = 6, ep = 16 } } end, "tp = 6 does not divide 64 heads")
  T.raises(function() run { precision = "fp5" } end, "'fp5' is not one of")
  T.raises(function() run { batch = 0 } end, "'batch': 0 is out of range")
  T.raises(function() run { bogus = 1 } end, "unknown field 'bogus'")
  T.raises(function() run { parallel = { tp = 8, ep = 16, zz = 1 } } end, "parallel: unknown field 'zz'")
  T.raises(function() run { dispatch = "smart" } end, "'smart' is not one of flat, hierarchical")
end)


T.test("KV precision follows act_precision in a sweep row as in hl.simulate (one rule, in the core)", function()
  -- Llama-3.1-8B: 32 layers x 8 KV heads x 128 dims x (K, V) = 65,536 elements per token;
  -- TP8 on 8 GPUs keeps one KV head per GPU: 8,192 elements per token per GPU.
  -- batch 8 (dp 1) x (1024 + 128) tokens x 8,192 = 75,497,472 elements per GPU:
  -- 150,994,944 B at bf16 (2 B) and 301,989,888 B at fp32 (4 B).
  local base = { model = "llama-3.1-8b", cluster = "hgx-h100", batch = 8, input = 1024, output = 128,
                 parallel = { tp = 8 } }
  local rows = hl.sweep { base = base, axes = { act_precision = { "fp32", "bf16" } } }
  local want = { fp32 = 301989888, bf16 = 150994944 }
  T.eq(#rows, 2, "rows")
  for _, row in ipairs(rows) do
    local cfg = {}
    for k, v in pairs(base) do cfg[k] = v end
    cfg.act_precision = row.act_precision
    T.eq(row["memory.kv_bytes"], want[row.act_precision], "sweep row kv_bytes at " .. row.act_precision)
    T.eq(hl.simulate(cfg).memory.kv_bytes, want[row.act_precision], "hl.simulate kv_bytes at " .. row.act_precision)
  end
  -- an explicit kv_precision is kept whatever the activations
  base.kv_precision = "bf16"
  rows = hl.sweep { base = base, axes = { act_precision = { "fp32" } } }
  T.eq(rows[1]["memory.kv_bytes"], 150994944, "explicit kv_precision")
end)

T.done()

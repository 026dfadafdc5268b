-- Per-kernel costs (issue 27): the kernels an engine launches per layer beside hbdlab's operators
-- (its inventory, docs/MODEL.md 6.1) appear as breakdown rows with their bytes and kernel_latency,
-- and without CUDA graphs every kernel costs its host launch instead (cuda_graphs = "off").
local T = require "testlib"
local hl = require "hbdlab"

local cl = hl.cluster { gpu = "H100-SXM", gpus = 1, hbd = 1 }
local g = cl.gpu
local function rows(r, phase)
  local t = {}
  for _, b in ipairs(r[phase].breakdown) do t[b.name] = b end
  return t
end
local function run(fw, graphs)
  return hl.simulate { model = "llama-3.1-8b", cluster = cl, batch = 1, input = 100, output = 4, framework = fw,
                       cuda_graphs = graphs }
end

T.test("vLLM's four extra kernels per layer, by hand", function()
  -- Llama-3.1-8B, TP 1, one decode token: 32 layers, 32 heads and 8 KV heads of 128, FFN 14336, BF16 (2 B).
  -- rope: reads and writes q and k: 1 x (32 + 8) x 128 x 2 B = 10,240 B each way;
  -- kv_append: reads k, v 1 x 2 x 8 x 128 x 2 = 4,096 B, writes as many to the BF16 cache;
  -- activation: reads 2 x 14336 x 2 = 57,344 B, writes 28,672 B; norm: its bytes are in "norms".
  -- Each call: bytes / (hbm_bw x eff_mem) + kernel_latency.
  local bw = g.hbm_bw * g.eff_mem
  local want = { rope = 20480 / bw, kv_append = 8192 / bw, activation = 86016 / bw, norm = 0 }
  local d = rows(run("vllm"), "decode")
  for name, t in pairs(want) do
    T.ok(d[name] ~= nil, "decode row " .. name)
    T.eq(d[name].calls, 32 * 3, name .. " once per layer per decode step (3 steps)")
    T.near(d[name].time_s / d[name].calls, t + g.kernel_latency, 1e-12, name)
  end
end)

T.test("TensorRT-LLM fuses RoPE and the KV append into its attention; ideal has no inventory", function()
  local d = rows(run("trtllm"), "decode")
  T.ok(d.rope == nil and d.kv_append == nil, "no rope / kv_append rows")
  T.ok(d.activation ~= nil and d.norm ~= nil, "activation and norm rows")
  local i = rows(run("ideal"), "decode")
  T.ok(i.rope == nil and i.activation == nil and i.norm == nil, "ideal adds nothing")
end)

T.test("without CUDA graphs each kernel costs kernel_launch instead of kernel_latency", function()
  local on, off = rows(run("vllm", "framework"), "decode"), rows(run("vllm", "off"), "decode")
  local extra = g.kernel_launch - g.kernel_latency -- 5 us - the preset's 3.008 us
  T.ok(extra > 0, "the H100 preset launches slower than it replays")
  for _, name in ipairs { "rope", "norm", "o_proj", "attention" } do
    T.near(off[name].time_s / off[name].calls, on[name].time_s / on[name].calls + extra, 1e-12, name)
  end
  local explicit = rows(run("vllm", "on"), "decode")
  T.near(explicit.o_proj.time_s, on.o_proj.time_s, 1e-15, "on = the profile's (vLLM replays graphs)")
end)

T.test("a bad cuda_graphs value is named", function()
  T.raises(function() run("vllm", "sometimes") end, "cuda_graphs")
end)

T.test("unfused FP8 dequantisation: three kernels per FP8 GEMM, by hand", function()
  -- Llama-3.1-405B FP8 on 8 MI300X, TP 8, rocm profile (HIP graphs), one decode token: 126 layers;
  -- output features per GPU: qkv (128 + 2 x 8) / 8 x 128 = 2,304, o 16,384, gate/up 2 x 53,248 / 8 =
  -- 13,312, down 16,384, sum 48,384. Each GEMM adds three kernels of 8 B per output element
  -- (24 B in all) at hbm_bw x eff_mem = 5.3e12 x 0.63 B/s, each plus kernel_latency 2.91 us:
  -- per layer 12 x 2.91 us + 24 x 48,384 B / 3.339e12 B/s = 34.92 + 0.3478 us = 35.268 us;
  -- x 126 = 4.4437 ms more per decode step.
  local job = { model = "llama-3.1-405b", cluster = "mi300x-8", precision = "fp8", kv_precision = "fp8", batch = 1,
                input = 128, output = 8, parallel = { tp = 8 }, framework = "rocm" }
  local fused = hl.simulate(job)
  job.fp8_dequant = "unfused"
  local unfused = hl.simulate(job)
  T.near(unfused.tpot_s - fused.tpot_s, 126 * (12 * 2.91e-6 + 24 * 48384 / (5.3e12 * 0.63)), 1e-9, "decode step")
  local d = rows(unfused, "decode")
  T.eq(d.dequant.calls, 12 * 126 * 7, "three kernels per FP8 GEMM, four GEMMs per layer, 7 decode steps")
  T.eq(d.dequant.bytes, 24 * 48384 * 126 * 7, "24 B per output element")
  T.eq(rows(fused, "decode").dequant, nil, "fused: no dequantisation kernels")
  job.precision, job.kv_precision = "bf16", "bf16" -- a 16-bit GEMM has no scales to apply
  local b16 = hl.simulate(job)
  job.fp8_dequant = "fused"
  T.eq(b16.tpot_s, hl.simulate(job).tpot_s, "BF16 weights: unchanged")
  T.raises(function() job.fp8_dequant = "half"; hl.simulate(job) end, "fp8_dequant")
end)

T.test("vllm_v0: vllm's kernels with the V0 engine's single-step CPU time, by hand", function()
  -- vllm_v0 is vllm (same kernels, graphs, all-reduce, GEMM scales) with 3.8 ms per forward pass in
  -- place of vllm's 0.4 ms (docs/MODEL.md 6.1: the v0.6.0 blog's 3.8 ms, not divided by 10 steps).
  -- Llama-3.1-8B, batch 1, input 100, output 4: one prefill pass and 3 decode passes, so the totals
  -- differ by 4 x (3.8 - 0.4) ms = 13.6 ms and every other row is the same.
  local v, v0 = run("vllm"), run("vllm_v0")
  T.near(v0.total_s - v.total_s, 4 * 3.4e-3, 1e-12, "total: 4 passes x 3.4 ms")
  T.near(v0.prefill.overhead_s, 3.8e-3, 1e-15, "prefill: one pass")
  T.near(v0.decode.overhead_s, 3 * 3.8e-3, 1e-15, "decode: three passes")
  local d, d0 = rows(v, "decode"), rows(v0, "decode")
  for _, name in ipairs { "rope", "kv_append", "activation", "o_proj", "attention" } do
    T.eq(d0[name].time_s, d[name].time_s, name .. " unchanged")
  end
  -- a job's step_overhead still replaces the profile's
  local o = hl.simulate { model = "llama-3.1-8b", cluster = cl, batch = 1, input = 100, output = 4,
                          framework = "vllm_v0", step_overhead = 0.4e-3 }
  T.near(o.total_s, v.total_s, 1e-12, "step_overhead = 0.4 ms gives vllm back")
  T.raises(function() run("vllm_v1") end, "vllm_v0")
end)

T.test("trtllm_v06: trtllm with NCCL's all-reduce and no CUDA graphs, by hand", function()
  -- trtllm_v06 is TensorRT-LLM v0.6.1 as its performance page built and ran it (docs/MODEL.md 6.1):
  -- trtllm's step overhead, GEMM scales and kernels per layer, but the NCCL plugin's all-reduce (no
  -- --use_custom_all_reduce) and host-launched kernels (no --enable_cuda_graph). At TP 1 there is no
  -- all-reduce, so it equals trtllm with cuda_graphs = "off" exactly.
  local a, b = run("trtllm", "off"), run("trtllm_v06")
  T.eq(b.total_s, a.total_s, "TP 1: trtllm without graphs")
  T.ok(run("trtllm").total_s < b.total_s, "graphs off costs the host launches")
  -- TP 2 on 2 H100, one decode token of Llama-3.1-8B: each tp_allreduce carries 1 x 4096 x 2 B = 8,192 B,
  -- which trtllm's custom one-shot all-reduce takes; trtllm_v06 takes NCCL's time for the same bytes
  -- (hl.collective with algo "nccl", the NCCL tuning model of docs/MODEL.md 5.1).
  local c2 = hl.cluster { gpu = "H100-SXM", gpus = 2, hbd = 2 }
  local function tp2(fw)
    return rows(hl.simulate { model = "llama-3.1-8b", cluster = c2, batch = 1, input = 100, output = 4, framework = fw,
                              parallel = { tp = 2 } }, "decode").tp_allreduce
  end
  local want = hl.collective { cluster = c2, op = "allreduce", bytes = 8192, ranks = 2, algo = "nccl" }.time_s
  local v06, now = tp2("trtllm_v06"), tp2("trtllm")
  T.near(v06.time_s / v06.calls, want, 1e-12, "one all-reduce: NCCL's time")
  T.ok(now.time_s / now.calls < want, "trtllm's custom all-reduce is faster at 8 KB")
end)

T.test("TensorRT-LLM's KV cache takes mem_util of the memory left free, vLLM's of the device, by hand", function()
  -- Llama-3.1-8B BF16 on one H100 (hbm_bytes from the preset), workspace fixed at 2 GB,
  -- KV 2 x 8 KV heads x 128 x 2 B x 32 layers = 131,072 B a token, 16-token blocks of 2,097,152 B.
  -- TensorRT-LLM (KVCacheManager::calculateMaxNumBlocks: freeMemFraction x free bytes):
  --   blocks = floor(0.9 x (hbm - weights - 2e9) / 2,097,152); vLLM: floor((0.9 x hbm - weights - 2e9) / 2,097,152).
  -- The two differ by 0.1 x (weights + 2 GB) / 2,097,152 blocks: 16.06 GB of BF16 weights, so about
  -- 0.1 x 18.06e9 / 2,097,152 = 861.
  local job = { model = "llama-3.1-8b", cluster = cl, input = 100, output = 10, requests = 2, concurrency = 1,
                workspace_bytes = 2e9 }
  local w = hl.simulate { model = "llama-3.1-8b", cluster = cl, batch = 1, input = 100, output = 10 }.memory.weights_bytes
  local hbm, block = g.hbm_bytes, 16 * 131072
  local want = { trtllm = math.floor(0.9 * (hbm - w - 2e9) / block), trtllm_v06 = math.floor(0.9 * (hbm - w - 2e9) / block),
                 vllm = math.floor((0.9 * hbm - w - 2e9) / block), sglang = math.floor((0.9 * hbm - w - 2e9) / block) }
  for fw, blocks in pairs(want) do
    job.framework = fw
    T.eq(hl.serve(job).kv_blocks_total, blocks, fw .. " KV blocks")
  end
  T.ok(want.trtllm - want.vllm >= 855 and want.trtllm - want.vllm <= 866, "0.1 x (weights + workspace) more blocks under TensorRT-LLM's rule")
  -- hl.simulate's memory.fits follows the same rule: a batch whose KV is 0.95 of what the weights and
  -- workspace leave fits at mem_util 0.95 under trtllm (0.95 of free), not under vllm (0.95 of HBM)
  local kv_tok = 110 * 131072 -- bytes of one sequence of 110 tokens
  local free = hbm - w - 2e9
  local batch = math.floor(0.95 * free / kv_tok)
  local sim = { model = "llama-3.1-8b", cluster = cl, batch = batch, input = 100, output = 10, mem_util = 0.95,
                workspace_bytes = 2e9, framework = "trtllm" }
  T.eq(hl.simulate(sim).memory.fits, true, "trtllm: KV within 0.95 of the free memory")
  sim.framework = "vllm"
  T.raises(function() hl.simulate(sim) end, "(95% of ")
  sim.framework, sim.batch = "trtllm", batch + 2
  T.raises(function() hl.simulate(sim) end, "weights and workspace + 95% of the")
end)

T.done()
T.test("MLA (DeepSeek-V3) under SGLang: RoPE with the q copy-back, the latent KV append, K assembled for prefill", function()
  -- DeepSeek-V3, TP 1, BF16, one prompt of 100 tokens then one decode token; 61 layers, 128 heads,
  -- qk_nope 128, qk_rope 64, kv_lora 512 (SGLang deepseek_v2.py forward_normal_prepare; vLLM
  -- layers/mla.py and v1/attention/backends/mla/common.py _forward_prefill):
  -- rope: q_pe of 128 heads and the shared k_pe rotated, q_pe copied back into q:
  --   read = write = T x (2 x 128 + 1) x 64 x 2 B = T x 32,896 B
  -- kv_append: the latent (512 + 64) read and written to the BF16 cache: T x 1,152 B each way
  -- k_concat (prefill only): reads k_nope 128 x 128 and k_pe 64, writes K 128 x 192:
  --   read T x 16,448 x 2 = T x 32,896 B, write T x 24,576 x 2 = T x 49,152 B
  local r = hl.simulate { model = "deepseek-v3", cluster = cl, precision = "bf16", kv_precision = "bf16", batch = 1,
                          input = 100, output = 2, framework = "sglang", ignore_memory = true }
  local bw = g.hbm_bw * g.eff_mem
  local p, d = rows(r, "prefill"), rows(r, "decode")
  local want = { prefill = { rope = 100 * 65792, kv_append = 100 * 2304, k_concat = 100 * (32896 + 49152) },
                 decode = { rope = 65792, kv_append = 2304 } }
  for phase, t in pairs(want) do
    local x = phase == "prefill" and p or d
    for name, bytes in pairs(t) do
      T.ok(x[name] ~= nil, phase .. " row " .. name)
      T.eq(x[name].calls, 61, phase .. " " .. name .. " once per layer")
      T.near(x[name].bytes / x[name].calls, bytes, 1e-12, phase .. " " .. name .. " bytes")
      T.near(x[name].time_s / x[name].calls, bytes / bw + g.kernel_latency, 1e-12, phase .. " " .. name .. " time")
    end
  end
  T.ok(d.k_concat == nil, "decode runs absorbed on the latent: no K to assemble")
  local t = rows(hl.simulate { model = "deepseek-v3", cluster = cl, precision = "bf16", kv_precision = "bf16",
                               batch = 1, input = 100, output = 2, framework = "trtllm", ignore_memory = true },
                 "prefill")
  T.ok(t.rope == nil and t.kv_append == nil and t.k_concat == nil, "trtllm's attention op carries them")
end)

T.done()

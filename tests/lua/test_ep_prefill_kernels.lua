-- DeepSeek-V3 wide-EP prefill (docs/VALIDATION.md P6/P8): the job's FP8 GEMM rows against the
-- kernel library's own unit tests. SGLang runs these GEMMs with DeepGEMM; DeepGEMM's README
-- (deepseek-ai/DeepGEMM at 989c9e3, 2025-04-09, "Performance", H800 SXM5: the same 132 SMs and
-- FP8 peak as H100 SXM) gives TFLOP/s per shape. The breakdown rows hold the kernels at all 132
-- SMs (two-batch overlap's SM share is applied to the stage sums, docs/MODEL.md 6.5), so they are
-- comparable with the unit tests; a miss here would be a kernel error, not an overlap one.
local T = require "testlib"
local hl = require "hbdlab"

-- P8's job: 4 nodes x 8 H100, EP32, 16,384 tokens per GPU of 4,096-token prompts, two micro-batches
-- of 8,192 tokens per GPU, uniform routing
local r = hl.simulate { model = "deepseek-v3", cluster = hl.cluster { gpu = "H100-SXM", gpus = 32, hbd = 8 },
                        precision = "fp8", kv_precision = "bf16", batch = 4 * 32, input = 4096, output = 1,
                        parallel = { tp = 1, ep = 32 }, framework = "sglang", dispatch = "hierarchical",
                        wire_precision = "fp8", two_batch_overlap = true }
local rows = {}
for _, b in ipairs(r.prefill.breakdown) do rows[b.name] = b.time_s end

T.test("routed experts: DeepGEMM's contiguous grouped GEMMs at 8,192 rows per expert", function()
  -- README, grouped contiguous, 4 groups x 8,192 rows (8 x 4,096 gives the same rates):
  -- gate/up N = 4,096, K = 7,168: 1,346 TFLOP/s; down N = 7,168, K = 2,048: 1,214 TFLOP/s.
  -- Per micro-batch and MoE layer one GPU's 8 experts take 8,192 x 32 x 8 / 256 = 8,192 rows each,
  -- 65,536 rows in all; the busiest of 32 ranks: 2,097,152 picks, mean 65,536, sd
  -- sqrt(2,097,152 x (1/32) x (31/32)) = 251.97, E[max of 32 normals] = 2.0697 sd -> x 1.00796.
  -- gate/up 2 x 65,536 x 4,096 x 7,168 = 3.8483e12 FLOP / 1,346e12 = 2.8591 ms
  -- down    2 x 65,536 x 7,168 x 2,048 = 1.9241e12 FLOP / 1,214e12 = 1.5849 ms
  -- 4.4440 ms x 1.00796 x 2 micro-batches x 58 MoE layers = 0.51961 s
  T.near(rows.experts, 0.51961, 0.10, "experts row vs DeepGEMM README")
end)

T.test("dense projections and shared expert: DeepGEMM's normal GEMMs at the DeepSeek-V3 shapes", function()
  -- README, normal GEMMs, M = 4,096 (its largest M; a micro-batch here has 8,192 rows):
  -- q_a + kv_a fused (N = 2,112, K = 7,168) 1,127; q_b (24,576, 1,536) 1,212; kv_b (32,768, 512) 775;
  -- o (7,168, 16,384) 1,520; shared gate/up (4,096, 7,168) 1,410; shared down (7,168, 2,048) 1,168 TFLOP/s.
  -- Per layer, 16,384 tokens per GPU (both micro-batches):
  --   q_a + kv_a 2 x 16,384 x 2,112 x 7,168 = 4.9606e11 / 1,127e12 = 0.44016 ms
  --   q_b        2 x 16,384 x 24,576 x 1,536 = 1.2369e12 / 1,212e12 = 1.02054 ms
  --   kv_b       2 x 16,384 x 32,768 x 512   = 5.4976e11 / 775e12   = 0.70937 ms
  --   o          2 x 16,384 x 7,168 x 16,384 = 3.8483e12 / 1,520e12 = 2.53177 ms
  --   attention projections 4.70184 ms x 61 layers = 0.286815 s
  --   shared     9.6207e11 / 1,410e12 + 4.8103e11 / 1,168e12 = 0.68232 + 0.41184 = 1.09416 ms x 58 = 0.063461 s
  -- together 0.350277 s
  local got = rows.q_proj + rows.kv_proj + rows.o_proj + rows.shared_experts
  T.near(got, 0.350277, 0.10, "projection rows vs DeepGEMM README")
  T.near(rows.o_proj, 0.0025318 * 61, 0.15, "o_proj alone (the largest GEMM)")
end)
T.done()

-- One kernel, one time (issue 27): hl.roofline builds a GEMM, an attention or an MoE operator with
-- the simulator's constructors and times it with the same function, under the same framework
-- profile, so a breakdown row of hl.simulate divided by its calls equals hl.roofline of that shape.
local T = require "testlib"
local hl = require "hbdlab"

local cl = hl.cluster { gpu = "H100-SXM", gpus = 1, hbd = 1 }
local function row(r, phase, name)
  for _, b in ipairs(r[phase].breakdown) do if b.name == name then return b.time_s / b.calls end end
  error("no breakdown row " .. name)
end

for _, c in ipairs { { "bf16", "ideal" }, { "fp8", "trtllm" }, { "bf16", "vllm" } } do
  local prec, fw = c[1], c[2]
  T.test("GEMM and attention rows equal hl.roofline (" .. prec .. ", " .. fw .. ")", function()
    -- Llama-3.1-8B: hidden 4096, 32 heads / 8 KV heads of 128; batch 3 pads to a 64-row tile
    local r = hl.simulate { model = "llama-3.1-8b", cluster = cl, batch = 3, input = 100, output = 4,
                            precision = prec, framework = fw }
    local o = hl.roofline { gpu = cl.gpu, m = 3, n = 4096, k = 4096, precision = prec, framework = fw }
    T.near(row(r, "decode", "o_proj"), o.time_s, 1e-12, "decode o_proj")
    local up = hl.roofline { gpu = cl.gpu, m = 300, n = 2 * 14336, k = 4096, precision = prec, framework = fw }
    T.near(row(r, "prefill", "ffn_up_gate"), up.time_s, 1e-12, "prefill ffn_up_gate (300 rows)")
    local a = hl.roofline { gpu = cl.gpu, kind = "attention", batch = 3, q = 100, context = 0, heads = 32,
                            kv_heads = 8, head_dim = 128, framework = fw }
    T.near(row(r, "prefill", "attention"), a.time_s, 1e-12, "prefill attention")
  end)
end

T.test("the framework's FP8 scale slows a compute-bound FP8 GEMM", function()
  local a = hl.roofline { gpu = "H100-SXM", m = 8192, n = 8192, k = 8192, precision = "fp8" }
  local b = hl.roofline { gpu = "H100-SXM", m = 8192, n = 8192, k = 8192, precision = "fp8", framework = "trtllm" }
  T.eq(a.bound, "compute")
  T.ok(b.time_s > a.time_s * 1.1, "trtllm's gemm_scale_fp8 < 1 makes it slower")
end)

T.test("bad shapes are named", function()
  T.raises(function() hl.roofline { gpu = "H100-SXM", m = 4, n = 8 } end, "needs m, n and k")
  T.raises(function() hl.roofline { gpu = "H100-SXM", kind = "moe", tokens = 4, hidden = 8, inter = 8, topk = 9,
                                    experts = 8 } end, "topk <= experts")
  T.raises(function() hl.roofline { gpu = "H100-SXM", kind = "attention", batch = 1, heads = 0 } end, "heads")
  T.raises(function() hl.roofline { gpu = "H100-SXM", framework = "tgi", m = 1, n = 1, k = 1 } end, "tgi")
end)

T.test("trtllm_v06's decode attention: MMHA's CTA per query head, 4 per SM, by hand", function()
  -- A toy H100 with a sum-form decode kernel: attn_unit_s 10 ns, no blend. Decode of 768 sequences,
  -- 32 heads: the units' time on top of the same KV stream is, per (docs/MODEL.md 3):
  --   trtllm (per KV head, 1 CTA/SM):        768 x kv_heads x 10 ns
  --   trtllm_v06 (per query head, 4 CTAs/SM): 768 x 32 x 10 ns / 4 = 61.44 us
  -- MHA (32 KV heads): 245.76 us -> 61.44 us (-184.32 us); GQA (4 KV heads): 30.72 us -> 61.44 us (+30.72 us).
  -- GEMM scales and attn_scale are the same in both profiles, so the difference is the units alone.
  local g = hl.gpu("H100-SXM"):with { attn_unit_s = 10e-9, attn_blend = 0 }
  local function t(fw, kvh)
    return hl.roofline { gpu = g, kind = "attention", batch = 768, q = 1, context = 191, heads = 32, kv_heads = kvh,
                         head_dim = 128, kv_bytes = 1, precision = "fp8", framework = fw }.time_s
  end
  T.near(t("trtllm_v06", 32) - t("trtllm", 32), -184.32e-6, 1e-9, "MHA: a quarter of the units")
  T.near(t("trtllm_v06", 4) - t("trtllm", 4), 30.72e-6, 1e-9, "GQA 8:1: twice the units")
  -- a GPU's own field wins over the profile's
  local own = g:with { attn_ctas_per_sm = 1 }
  local a = hl.roofline { gpu = own, kind = "attention", batch = 768, q = 1, context = 191, heads = 32, kv_heads = 32,
                          head_dim = 128, kv_bytes = 1, precision = "fp8", framework = "trtllm_v06" }.time_s
  T.near(a - t("trtllm", 32), 0, 1e-9, "ctas 1, per query head = per KV head for MHA")
end)

T.done()

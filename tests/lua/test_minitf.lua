local T = require "testlib"
local hl = require "hbdlab"

T.test("every check passes on the default MoE model (TP2, EP2, PP2 and combinations)", function()
  local r = hl.minitf.check { tp = 2, ep = 2, pp = 2 }
  for _, c in ipairs(r.checks) do T.ok(c.ok, c.name .. ": counted " .. tostring(c.counted) .. " predicted " .. tostring(c.predicted)) end
  T.ok(#r.checks >= 35, "number of checks")
  T.ok(r.ok, "report ok")
  T.ok(tostring(r):find("ALL PASSED", 1, true), "printed report")
end)

T.test("a dense model with shared-expert-free FFN, TP4 and PP4", function()
  local m = hl.model { name = "dense", hidden = 128, layers = 4, heads = 8, kv_heads = 4, head_dim = 16, ffn = 256, vocab = 256 }
  local r = hl.minitf.check { model = m, tp = 4, ep = 1, pp = 4, batch = 2, prompt = 5, new = 3 }
  for _, c in ipairs(r.checks) do T.ok(c.ok, c.name) end
  -- 2 (KV cache = recompute: logits, tokens) + 3 layouts (tp4, pp4, tp4 x pp4) x 2 (= unsharded:
  -- logits, tokens) + 4 single-rank counts (prefill FLOPs, decode FLOPs, weights, KV) + tp4: 6
  -- (FLOPs prefill, decode, weights, KV, AllReduce, logits AllGather) + tp4 x pp4: 5 (FLOPs, weights,
  -- AllReduce, AllGather, Send/Recv) + pp4: 3 (FLOPs, weights, Send/Recv) = 26
  T.eq(#r.checks, 26, "number of checks")
  T.ok(r.ok, "report ok")
end)

T.test("KV heads replicated when TP exceeds them", function()
  local m = hl.model { name = "mqa", hidden = 64, layers = 2, heads = 4, kv_heads = 1, head_dim = 16, ffn = 128, vocab = 128 }
  local r = hl.minitf.check { model = m, tp = 2, ep = 1, pp = 1, batch = 1, prompt = 4, new = 3 }
  for _, c in ipairs(r.checks) do T.ok(c.ok, c.name) end
  -- 2 (KV cache = recompute) + 1 layout (tp2) x 2 + 4 single-rank counts + tp2: 6 = 14
  T.eq(#r.checks, 14, "number of checks")
  T.ok(r.ok, "report ok")
end)

T.test("MoE with shared experts and a leading dense layer", function()
  local m = hl.model { name = "ds-like", hidden = 64, layers = 3, heads = 4, kv_heads = 2, head_dim = 16, ffn = 128,
                       vocab = 128, experts = 4, topk = 2, shared_experts = 1, expert_ffn = 32, dense_layers = 1 }
  local r = hl.minitf.check { model = m, tp = 2, ep = 2, pp = 1, batch = 2, prompt = 4, new = 3 }
  for _, c in ipairs(r.checks) do T.ok(c.ok, c.name) end
  -- 2 (KV cache = recompute) + 2 layouts (tp2, ep2) x 2 + 4 single-rank counts + tp2: 6 + ep2: 6
  -- (FLOPs prefill, decode, weights, KV, All-to-All volume, All-to-All bytes to others) = 22
  T.eq(#r.checks, 22, "number of checks")
  T.ok(r.ok, "report ok")
end)

-- Issue 29's mechanisms: each run cached = recomputed, sharded (TP2, PP2, TP2 x PP2) =
-- unsharded, and its counted FLOPs, weights, KV (and state) bytes equal hl.simulate's
-- operators exactly. 26 checks each, as the dense TP/PP case above (tp2 instead of tp4).
local function all_pass(m, t)
  t = t or { tp = 2, ep = 1, pp = 2, batch = 2, prompt = 6, new = 4 }
  t.model = m
  local r = hl.minitf.check(t)
  for _, c in ipairs(r.checks) do T.ok(c.ok, m.name .. ": " .. c.name .. ": counted " .. tostring(c.counted) ..
    " predicted " .. tostring(c.predicted)) end
  T.ok(r.ok, m.name .. " report ok")
  return r
end

T.test("attention sinks (gpt-oss): exact counts, cache = recompute, sharded = unsharded", function()
  local r = all_pass(hl.model { name = "sinks", hidden = 64, layers = 2, heads = 4, kv_heads = 2, head_dim = 16,
                                ffn = 128, vocab = 128, attn_sinks = true })
  T.eq(#r.checks, 26, "number of checks")
end)

T.test("sparse attention (DSA: indexer, then top-k keys) with keys past k", function()
  -- top-3 of up to 9 cached keys: most rows attend to fewer keys than they could
  local r = all_pass(hl.model { name = "dsa", hidden = 64, layers = 2, heads = 4, kv_heads = 2, head_dim = 16,
                                ffn = 128, vocab = 128, index_topk = 3, index_heads = 2, index_dim = 8 })
  T.eq(#r.checks, 26, "number of checks")
end)

T.test("gated DeltaNet linear attention in a 3:1 hybrid, its state per sequence", function()
  local r = all_pass(hl.model { name = "gdn", hidden = 64, layers = 4, heads = 4, kv_heads = 2, head_dim = 16,
                                ffn = 128, vocab = 128, linear_fraction = 0.75, linear_k_heads = 2, linear_v_heads = 4,
                                linear_k_dim = 8, linear_v_dim = 8, linear_conv = 4 })
  T.eq(#r.checks, 26, "number of checks")
end)

T.test("hybrid linear attention + MoE + sinks, TP2, EP2, PP2", function()
  local m = hl.model { name = "gdn-moe", hidden = 64, layers = 4, heads = 4, kv_heads = 2, head_dim = 16, ffn = 128,
                       vocab = 128, experts = 4, topk = 2, shared_experts = 1, expert_ffn = 32, linear_fraction = 0.75,
                       linear_k_heads = 2, linear_v_heads = 4, linear_k_dim = 8, linear_v_dim = 8, linear_conv = 4,
                       attn_sinks = true }
  all_pass(m, { tp = 2, ep = 2, pp = 2, batch = 2, prompt = 6, new = 4 })
end)

T.test("unsupported configurations are errors", function()
  T.raises(function() hl.minitf.run { model = hl.model "deepseek-v3" } end, "MLA")
  local m = hl.model(hl.minitf.default_model)
  T.raises(function() hl.minitf.run { model = m, tp = 2, ep = 2 } end, "tp and ep together")
  T.raises(function() hl.minitf.run { model = m, tp = 3 } end, "tp = 3 must divide")
  T.raises(function() hl.minitf.run { model = hl.model "llama-3.1-8b" } end, "at most 2e8")
end)

T.done()

-- spec_draft_model: a draft model of its own drafts the gamma tokens of each verify step
-- (docs/MODEL.md 6.2): its decode passes in hl.simulate and the hl.serve step timer, its
-- weights (/ tp) and KV in memory and the KV capacity, and the refusals.
local T = require "testlib"
local hl = require "hbdlab"

local base = { model = "llama-3.1-70b", cluster = "hgx-h100", parallel = { tp = 4, gpus = 4 }, batch = 8,
               input = 1024, output = 257, spec_tokens = 3, spec_accept = 0.8 }
local function with(t, from) return T.merged(from or base, t) end
local function without(t, key)
  local o = with({}, t)
  o[key] = nil
  if key == "spec_tokens" then o.spec_accept = nil end
  return o
end
local drafted = with { spec_draft_model = "llama-3.1-8b" }

T.test("a target-shaped draft model of k layers times as spec_draft_layers = k", function()
  -- the drafter of spec_draft_layers = k is k layers of the target's shape and its LM head per
  -- draft token; a draft model that is the target with k layers runs the same operators on the
  -- same GPUs (tp = 4), so every phase time agrees (only the order of the sums differs)
  local t = hl.model("llama-3.1-8b")
  for _, k in ipairs { 1, 2, 5 } do
    local job = with { model = t, parallel = { tp = 2, gpus = 2 } }
    local layers = hl.simulate(with({ spec_draft_layers = k }, job))
    local model = hl.simulate(with({ spec_draft_model = t:with { layers = k, name = "small" } }, job))
    T.near(model.decode.time_s, layers.decode.time_s, 1e-9, k .. " layers: decode time")
    T.near(model.tpot_s, layers.tpot_s, 1e-9, k .. " layers: TPOT")
    T.near(model.decode.hbm_bytes, layers.decode.hbm_bytes, 1e-9, k .. " layers: decode HBM bytes")
    T.near(model.decode.flops, layers.decode.flops, 1e-9, k .. " layers: decode FLOP")
  end
end)

T.test("the draft's cost grows with its size; acceptance and prefill are the target's", function()
  local mtp = hl.simulate(with { spec_draft_layers = 1 })
  local d8 = hl.simulate(drafted)
  local plain = hl.simulate(without(base, "spec_tokens"))
  -- 8B drafting: 3 passes of 32 layers of 4096 wide per verify step, more than one 70B-shaped layer
  T.ok(d8.tpot_s > mtp.tpot_s, "an 8B draft costs more than one target-shaped layer")
  T.ok(d8.tpot_s < plain.tpot_s, "and still beats plain decode at 0.8 acceptance")
  T.eq(d8.tokens_per_step, mtp.tokens_per_step, "E comes from spec_accept alone")
end)

T.test("the draft model prefills the prompt too: TTFT = the target's + the draft's own prefill", function()
  -- the framework is "ideal" (no per-pass overhead), so the draft's own hl.simulate of the same
  -- batch, prompt and TP with output = 1 is exactly its prefill: layers on 8 x 1024 tokens,
  -- attention of the prompt over itself, embedding and an LM head on 8 rows
  local mtp = hl.simulate(with { spec_draft_layers = 1 })
  local d8 = hl.simulate(drafted)
  local own = hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 4, gpus = 4 }, batch = 8,
                            input = 1024, output = 1 }
  T.near(d8.ttft_s, mtp.ttft_s + own.ttft_s, 1e-12, "TTFT")
  T.near(d8.prefill.flops, mtp.prefill.flops + own.prefill.flops, 1e-12, "prefill FLOP")
end)

T.test("memory: the draft's weights / tp and its KV, by hand", function()
  local r0 = hl.simulate(without(base, "spec_tokens"))
  local r = hl.simulate(drafted)
  -- Llama-3.1-8B: per layer q, o 4096^2 = 16,777,216 each, k, v 4096 x 1024 = 4,194,304 each,
  -- MLP 3 x 4096 x 14336 = 176,160,768, norms 2 x 4096: 218,112,000; x 32 = 6,979,584,000;
  -- embedding and LM head 128256 x 4096 = 525,336,576 each; final norm 4096: 8,030,261,248.
  -- Norms (32 x 8192 + 4096 = 266,240) replicated, the rest over tp = 4:
  -- (8,030,261,248 - 266,240) / 4 + 266,240 = 2,007,764,992 params x 2 B = 4,015,529,984 B.
  local w = 4015529984
  -- KV: 32 layers x (K, V) x 2 of 8 KV heads per GPU x 128 x 2 B = 32,768 B a token, for 8
  -- sequences of 1024 + 257 tokens: 8 x 1281 x 32768 = 335,806,464 B
  local kv = 335806464
  T.eq(r.memory.weights_bytes - r0.memory.weights_bytes, w, "weights grow by the draft's shard")
  T.eq(r.memory.kv_bytes - r0.memory.kv_bytes, kv, "KV grows by the draft's KV")
  T.eq(r.memory.draft_bytes, w + kv, "memory.draft_bytes shows both")
  T.eq(r0.memory.draft_bytes, 0, "none without a draft model")
  T.eq(hl.simulate(with { spec_draft_layers = 1 }).memory.draft_bytes, 0, "none for target-shaped drafters")
end)

T.test("bad drafters are refused naming the field", function()
  T.raises(function() hl.simulate(with { spec_draft_model = "no-such-model" }) end,
    "field 'spec_draft_model': unknown model preset 'no-such-model'")
  T.raises(function() hl.simulate(with { spec_draft_model = 7 }) end,
    "field 'spec_draft_model': expected a model object or preset name, got number")
  -- Qwen3's vocabulary is 151,936 tokens, Llama-3.1's 128,256
  T.raises(function() hl.simulate(with { spec_draft_model = "qwen3-30b-a3b" }) end,
    "field 'spec_draft_model': 'qwen3-30b-a3b' has a vocabulary of 151936 tokens, the target 'llama-3.1-70b' 128256")
  T.raises(function() hl.simulate(with { spec_draft_model = "llama-3.1-8b", spec_draft_layers = 1 }) end,
    "field 'spec_draft_layers': 1 with spec_draft_model; give one drafter")
  T.raises(function() hl.simulate(with { spec_draft_model = "llama-3.1-8b", parallel = { tp = 2, pp = 2, gpus = 4 } }) end,
    "field 'spec_draft_model': a draft model is modelled for pp = 1 (got pp = 2)")
  -- a draft whose heads tp = 4 cannot split: 18 heads (6 KV heads of 3 each)
  local odd = hl.model("llama-3.1-8b"):with { heads = 18, kv_heads = 6, name = "odd" }
  local ok, err = pcall(hl.simulate, with { spec_draft_model = odd, parallel = { tp = 4, gpus = 4 } })
  T.ok(not ok and tostring(err):find("spec_draft_model", 1, true), "the mapping error names the field: " ..
    tostring(err))
  -- a draft larger than the target is allowed (it is slower, not wrong): 70B drafting for 8B
  local big = hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 4, gpus = 4 }, batch = 1,
    input = 128, output = 65, spec_tokens = 1, spec_accept = 0.5, spec_draft_model = "llama-3.1-70b" }
  T.ok(big.tpot_s > 0, "a larger draft runs")
end)

T.test("sweeps and the lazy breakdown carry the draft model (memos keyed on it)", function()
  -- threads = 1: the second sweep runs after the first on this thread, with its memos there; the
  -- two differ only in the draft model, so a memo that missed it would give the first's numbers
  local axes = { input = { 512, 1024 } }
  local a = hl.sweep { base = with { spec_draft_model = "llama-3.1-8b" }, axes = axes, threads = 1 }
  local t = hl.model("llama-3.1-8b"):with { layers = 16, name = "half" }
  local b = hl.sweep { base = with { spec_draft_model = t }, axes = axes, threads = 1 }
  for i, n in ipairs(axes.input) do
    local direct = hl.simulate(with { spec_draft_model = t, input = n })
    T.near(b[i].tpot_s, direct.tpot_s, 1e-12, "the second sweep equals hl.simulate of its job")
    T.near(b[i]["memory.draft_bytes"], direct.memory.draft_bytes, 1e-12, "and its draft bytes")
    T.ok(b[i].tpot_s < a[i].tpot_s, "16 draft layers cost less than 32")
  end
  -- the breakdown is built on first access by re-running the job the view keeps: with the draft
  -- its decode time sums to the phase time as for any job
  local r = hl.simulate(drafted)
  local sum = 0
  for _, it in ipairs(r.decode.breakdown) do sum = sum + it.time_s end
  T.near(sum, r.decode.time_s, 1e-9, "the breakdown sums to the decode time")
end)

T.test("hl.serve at concurrency 1 gives hl.simulate's TPOT; its KV capacity holds the draft's KV", function()
  local cfg = without(with { spec_draft_model = "llama-3.1-8b", concurrency = 1, requests = 2000, output = 128,
                             seed = 3 }, "batch")
  local s = hl.serve(cfg)
  local r = hl.simulate(with { spec_draft_model = "llama-3.1-8b", batch = 1, output = 128 })
  T.near(s.tpot_s.mean, r.tpot_s, 0.02, "mean TPOT within 2%")
  -- one request at a time: its whole prompt in one step, the target's then the draft's prefill
  T.near(s.ttft_s.mean, r.ttft_s, 1e-9, "TTFT: the draft prefills in serving as in hl.simulate")
  -- the KV blocks: (HBM x 0.9 - weights - workspace) / (target + draft bytes a token) per block
  local plain = hl.serve(with({ spec_draft_layers = 1 }, without(cfg, "spec_draft_model")))
  T.ok(s.kv_blocks_total < plain.kv_blocks_total, "fewer KV blocks with the draft's weights and KV")
  T.ok(s.tpot_s.mean > plain.tpot_s.mean, "an 8B draft costs more than one target-shaped layer in serving too")
end)

T.done()

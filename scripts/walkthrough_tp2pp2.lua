-- The explainer of seed 001 as numbers: 4 GPUs = TP2 x PP2 serving a 32-layer
-- model. Stage 1 (layers 1-16) on GPU0/1, stage 2 (layers 17-32) on GPU2/3;
-- two servers of 2 GPUs, so TP stays on NVLink and PP crosses the network.
-- Prints each step of the communication flow with bytes and time, then the
-- network each traffic class needs to stay under a share of step time.
local hl = require "hbdlab"
local P = hl.params and hl.params {
  model = { "llama-3.1-8b", "a 32-layer model preset" },
  gpu = { "H100-SXM", "GPU preset" },
  input = { 2048, "prompt tokens" },
  output = { 256, "generated tokens" },
  batch = { 8, "sequences" },
  share = { 0.10, "allowed communication share of step time for the requirements table" },
} or { model = "llama-3.1-8b", gpu = "H100-SXM", input = 2048, output = 256, batch = 8, share = 0.10 }

local m = hl.model(P.model)
local clu = hl.cluster { gpu = P.gpu, gpus = 4, hbd = 2 }
local prec = "bf16"
local job = { model = m, cluster = clu, precision = prec, batch = P.batch, input = P.input, output = P.output,
              parallel = { tp = 2, pp = 2 } }
local r = hl.simulate(job)
local ab, h, L = 2, m.hidden, m.layers
local function coll(op, bytes, ranks, rph)
  return hl.collective { op = op, bytes = bytes, ranks = ranks, cluster = clu, ranks_per_hbd = rph }
end
local function fmt_b(b) return hl.pretty and require("hbdlab.objects").si(b, "B") or tostring(b) end
local function fmt_t(t) return string.format("%.3f ms", t * 1e3) end

print(string.format("Model %s (%d layers), %s, 4 GPUs = TP2 x PP2 on 2 servers of 2 (HBD 2)", m.name, L, P.gpu))
print(string.format("Batch %d, prompt %d tokens, %d generated; stage 1 = layers 1-%d on GPU0/1, stage 2 = layers %d-%d on GPU2/3\n",
  P.batch, P.input, P.output, L // 2, L // 2 + 1, L))

local T = P.batch * P.input
local steps = {
  { "1. prompt token ids broadcast to the stage-1 TP group", coll("broadcast", T * 4, 2) },
  { "2. prefill, stage 1: " .. L // 2 .. " layers on GPU0/1 (compute)", nil, r.prefill.compute_s / 2 + r.prefill.memory_s / 2 },
  { "3. TP AllReduce after each row-parallel matmul (2 per layer)", coll("allreduce", T * h * ab, 2) , nil, L },
  { "4. PP Send/Recv of activations GPU0/1 -> GPU2/3", coll("sendrecv", T * h * ab, 2, 1) },
  { "5. prefill, stage 2: layers on GPU2/3, then the LM head", nil, r.prefill.compute_s / 2 + r.prefill.memory_s / 2 },
  { "6. logits AllGather (vocab-parallel LM head)", coll("allgather", P.batch * m.vocab * ab, 2) },
  { "7. sampling; token id broadcast back to stage 1", coll("broadcast", P.batch * 4, 4) },
  { "8. decode step (1 token/seq): 2 AllReduce per layer + 2 Send/Recv", coll("allreduce", P.batch * h * ab, 2), nil, 2 * L },
}
print(string.format("%-66s %12s %12s %7s", "step", "bytes/GPU", "time", "count"))
for _, s in ipairs(steps) do
  local name, c, t, count = s[1], s[2], s[3], s[4] or 1
  if c then
    print(string.format("%-66s %12s %12s %7d", name, fmt_b(c.bytes), fmt_t(c.time_s), count))
  else
    print(string.format("%-66s %12s %12s %7d", name, "-", fmt_t(t), count))
  end
end
print(string.format("\nTTFT %s, TPOT %s (the simulator's totals for the same job: %s)\n", fmt_t(r.ttft_s), fmt_t(r.tpot_s),
  string.format("prefill comm %.1f%%, decode comm %.1f%%", r.prefill.comm_share * 100, r.decode.comm_share * 100)))

-- Requirements: the network each traffic class needs to keep communication under
-- a share x of the step (the core's requirement model, hl.net_requirement).
local x = P.share
local function need(name, n, S, k, C, alpha)
  local q = hl.net_requirement { count = n, bytes = S, factor = k, compute_s = C, latency_s = alpha, share = x }
  return { name, n, S, C, q.bandwidth, q.max_latency_s }
end
local prefill_compute = (r.prefill.compute_s + r.prefill.memory_s) / 2 -- one stage
local decode_compute = (r.decode.compute_s + r.decode.memory_s) / math.max(P.output - 1, 1)
local a_up, a_out = clu.scaleup_latency + clu.coll_launch, clu.scaleout_latency + clu.coll_launch
local moe = hl.model "mixtral-8x7b"
local ep_tokens = P.batch * P.input
local ep = hl.simulate { model = moe, cluster = hl.cluster { gpu = P.gpu, gpus = 4, hbd = 2 }, precision = prec,
                         batch = P.batch, input = P.input, output = 2, parallel = { tp = 1, ep = 4 } }
local rows = {
  need("TP prefill (AllReduce, per stage)", L, T * h * ab, 1, prefill_compute, a_up),
  need("TP decode (AllReduce, per step)", 2 * L, P.batch * h * ab, 1, decode_compute, a_up),
  need("PP (Send/Recv, per prefill)", 1, T * h * ab, 1, prefill_compute, a_out),
  need("EP (All-to-All, mixtral-8x7b EP4 prefill)", 2 * moe.layers,
    ep_tokens / 4 * moe.topk * moe.hidden * ab, 0.75, ep.prefill.compute_s + ep.prefill.memory_s, a_out),
}
print(string.format("Network needed to keep communication under %.0f%% of step time (computed):", x * 100))
print(string.format("%-44s %6s %12s %12s %14s %14s", "traffic", "count", "bytes each", "compute", "bandwidth", "max latency"))
for _, row in ipairs(rows) do
  print(string.format("%-44s %6d %12s %12s %12.1f GB/s %11.1f us", row[1], row[2], fmt_b(row[3]), fmt_t(row[4]),
    row[5] / 1e9, row[6] * 1e6))
end
return r

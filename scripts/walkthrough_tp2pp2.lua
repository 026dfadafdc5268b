-- The explainer of seed 001 as numbers: 4 GPUs = TP2 x PP2 serving a 32-layer
-- model. Stage 1 (layers 1-16) on GPU0/1, stage 2 (layers 17-32) on GPU2/3;
-- two servers of 2 GPUs, so TP stays on NVLink and PP crosses the network.
-- Prints each step of the communication flow with bytes and time, then the
-- network each traffic class needs to stay under a share of step time.
-- Every size, count and time is the simulator's own: the rows of
-- r.prefill.breakdown / r.decode.breakdown (operators, and each collective
-- with its op, ranks, bytes per call, time per call and calls; core hl_item).
-- No byte formula lives here.
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
local r = hl.simulate { model = m, cluster = clu, precision = prec, batch = P.batch, input = P.input,
                        output = P.output, parallel = { tp = 2, pp = 2 } }
local L = m.layers
local steps = r.output - 1 -- decode steps: the simulator's decode rows are summed over them
local function fmt_b(b) return hl.pretty and require("hbdlab.objects").si(b, "B") or tostring(b) end
local function fmt_t(t) return string.format("%.3f ms", t * 1e3) end

-- The breakdown row `name` of a phase (a collective row: one shape of that collective).
local function row(res, phase, name)
  for _, it in ipairs(res[phase].breakdown) do
    if it.name == name then return it end
  end
  error(string.format("walkthrough: the simulator counted no '%s' in %s", name, phase))
end
-- Time of one stage's pass over its layers: the operator rows inside the layers (one pass, whole batch).
local walk = require "hbdlab.walkthrough" -- the same helpers hl.walkthrough's page uses
local layer_ops_s = walk.layer_ops_s

print(string.format("Model %s (%d layers), %s, 4 GPUs = TP2 x PP2 on 2 servers of 2 (HBD 2)", m.name, L, P.gpu))
print(string.format("Batch %d, prompt %d tokens, %d generated; stage 1 = layers 1-%d on GPU0/1, stage 2 = layers %d-%d on GPU2/3",
  P.batch, P.input, P.output, L // 2, L // 2 + 1, L))
print("Sizes, counts and times: the simulator's breakdown rows (hl.simulate; per GPU, one call each).\n")

local stage1 = layer_ops_s(r, "prefill") + row(r, "prefill", "embedding").time_s
local stage2 = layer_ops_s(r, "prefill") + row(r, "prefill", "lm_head").time_s
local flow = {
  { "1. prefill, stage 1: embedding + " .. L // 2 .. " layers on GPU0/1 (operators)", nil, stage1 },
  { "2. TP AllReduce after each row-parallel matmul (2 per layer)", row(r, "prefill", "tp_allreduce") },
  { "3. PP Send/Recv of activations GPU0/1 -> GPU2/3", row(r, "prefill", "pp_sendrecv") },
  { "4. prefill, stage 2: " .. L // 2 .. " layers on GPU2/3, then the LM head", nil, stage2 },
  { "5. logits AllGather (vocab-parallel LM head)", row(r, "prefill", "logits_allgather") },
  { "6. sampled token ids broadcast to all 4 GPUs", row(r, "prefill", "token_broadcast") },
  { "7. decode step (1 token/seq): TP AllReduce", row(r, "decode", "tp_allreduce"), nil, steps },
  { "   decode step: PP Send/Recv GPU0/1 -> GPU2/3", row(r, "decode", "pp_sendrecv"), nil, steps },
  { "   decode step: logits AllGather", row(r, "decode", "logits_allgather"), nil, steps },
  { "   decode step: sampled token ids broadcast", row(r, "decode", "token_broadcast"), nil, steps },
}
print(string.format("%-66s %-9s %5s %4s %10s %10s %6s", "step", "op", "ranks", "HBDs", "bytes/call", "time/call", "count"))
local shown = {}
for _, s in ipairs(flow) do
  local name, c, t, per = s[1], s[2], s[3], s[4] or 1
  if c then
    shown[c] = true
    print(string.format("%-66s %-9s %5d %4d %10s %10s %6.6g", name, c.op, c.ranks, c.hbds, fmt_b(c.call_bytes),
      fmt_t(c.call_time_s), c.calls / per))
  else
    print(string.format("%-66s %-9s %5s %4s %10s %10s %6d", name, "-", "-", "-", "-", fmt_t(t), 1))
  end
end
for _, phase in ipairs { "prefill", "decode" } do -- a collective the flow above does not name
  for _, it in ipairs(r[phase].breakdown) do
    if it.kind == "comm" and not shown[it] then
      print(string.format("   %-63s %-9s %5d %4d %10s %10s %6.6g", phase .. " " .. it.name, it.op, it.ranks, it.hbds,
        fmt_b(it.call_bytes), fmt_t(it.call_time_s), it.calls))
    end
  end
end
print("HBDs > 1: the collective crosses the network. Prefill counts are per pass, decode counts per step.")
print("Not modelled, so not listed: the prompt's token ids reaching stage 1 (the simulator takes the prompt as")
print("already on the GPUs).")

-- Collectives before overlap on the critical path: calls x time per call x path_factor (pipeline fill).
local function comm_raw(phase)
  local t = 0
  for _, it in ipairs(r[phase].breakdown) do
    if it.kind == "comm" then t = t + it.calls * it.call_time_s * it.path_factor end
  end
  return t
end
print(string.format("\nTTFT %s, TPOT %s; collectives before overlap: prefill %s, decode %s per step", fmt_t(r.ttft_s),
  fmt_t(r.tpot_s), fmt_t(comm_raw("prefill")), fmt_t(comm_raw("decode") / steps)))
print(string.format("(exposed after overlap: prefill comm %.1f%%, decode comm %.1f%% of the phase)\n",
  r.prefill.comm_share * 100, r.decode.comm_share * 100))

-- Requirements: the network each traffic class needs to keep communication under
-- a share x of the step (the core's requirement model, hl.net_requirement), fed
-- with the simulator's rows: per call its bytes S, the bytes it sends on the
-- class's tier (factor = sent / S), its latency part; the calls per step.
local x = P.share
local ep = hl.simulate { model = hl.model "mixtral-8x7b", cluster = hl.cluster { gpu = P.gpu, gpus = 4, hbd = 2 },
                         precision = prec, batch = P.batch, input = P.input, output = 2, parallel = { tp = 1, ep = 4 } }
-- A traffic class: rows of one tier, `per` steps, compute C of one step (hbdlab.walkthrough.need:
-- several rows become one class of count = sum of calls with the mean bytes and latency per call).
local function need(name, res, phase, names, tier, per, C) return walk.need(name, res, phase, names, tier, per, C, x) end
local decode_step = (r.decode.compute_s + r.decode.memory_s) / steps
local ep_pass = layer_ops_s(ep, "prefill") -- pp = 1: the whole pass
local rows = {
  need("TP prefill (AllReduce, per stage)", r, "prefill", { "tp_allreduce" }, "scale-up", 1, layer_ops_s(r, "prefill")),
  need("TP decode (AllReduce, per step)", r, "decode", { "tp_allreduce" }, "scale-up", steps, decode_step),
  need("PP (Send/Recv, per prefill)", r, "prefill", { "pp_sendrecv" }, "scale-out", 1, layer_ops_s(r, "prefill")),
  need("EP (All-to-All, mixtral-8x7b EP4 prefill)", ep, "prefill", { "ep_dispatch", "ep_combine" }, "scale-out", 1,
    ep_pass),
  need("EP (All-to-All, mixtral-8x7b EP4 prefill)", ep, "prefill", { "ep_dispatch", "ep_combine" }, "scale-up", 1,
    ep_pass),
}
print(string.format("Network needed to keep communication under %.0f%% of step time (computed):", x * 100))
print(string.format("%-42s %-9s %6s %10s %10s %11s %14s %12s", "traffic", "tier", "count", "bytes each", "sent each",
  "compute", "bandwidth", "max latency"))
for _, q in ipairs(rows) do
  print(string.format("%-42s %-9s %6.6g %10s %10s %11s %9.1f GB/s %9.1f us", q[1], q[2], q[3], fmt_b(q[4]), fmt_b(q[5]),
    fmt_t(q[6]), q[7] / 1e9, q[8] * 1e6))
end
return r

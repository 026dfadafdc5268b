-- The operators of one decode step placed on the roofline of their GPU.
local P = hl.params {
  gpu = { "H100-SXM", "GPU preset" },
  model = { "llama-3.1-70b", "model preset" },
  tp = { 8, "tensor parallelism" },
  batch = { 64, "sequences" },
  context = { 4096, "tokens in the KV cache" },
  precision = { "fp8", "weights/GEMM precision" },
  out = { "plots/out/roofline_decode.png", "figure" },
}
local r = hl.simulate { model = P.model, cluster = hl.cluster { gpu = P.gpu, gpus = P.tp }, precision = P.precision,
  batch = P.batch, input = P.context, output = 2, parallel = { tp = P.tp } }
local ops = {}
for _, e in ipairs(r.decode.events) do
  if e.kind == "op" then ops[#ops + 1] = { name = e.name, flops = e.flops, bytes = e.bytes, time_s = e.dur_s } end
end
hl.rows.print(ops, { "name", "flops", "bytes", "time_s" })
hl.plot.roofline { gpu = hl.gpu(P.gpu), precision = P.precision, ops = ops,
  title = string.format("One decode step of %s on %s (TP%d, batch %d, context %d)", P.model, P.gpu, P.tp, P.batch, P.context),
  out = P.out }
print("wrote " .. P.out)

-- KV-cache capacity: the largest batch that fits vs context length, per GPU type.
local P = hl.params {
  model = { "llama-3.1-70b", "model preset" },
  precision = { "fp8", "weights precision" },
  kv_precision = { "fp8", "KV cache precision" },
  tp = { 2, "tensor parallelism (GPUs per instance)" },
  out = { "plots/out/capacity.png", "figure" },
}
local rows = {}
for _, gpu in ipairs { "H100-SXM", "H200", "B200", "MI300X", "B300" } do
  for _, ctx in ipairs { 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072 } do
    local ok, r = pcall(hl.simulate, { model = P.model, cluster = hl.cluster { gpu = gpu, gpus = P.tp },
      precision = P.precision, kv_precision = P.kv_precision, batch = "max", input = ctx - 1, output = 1,
      parallel = { tp = P.tp } })
    rows[#rows + 1] = { gpu = gpu, context = ctx, max_batch = ok and r.batch or 0 }
  end
end
local pivot, gpus = hl.rows.pivot(rows, "context", "gpu", "max_batch")
table.insert(gpus, 1, "context")
hl.rows.print(pivot, gpus)
hl.plot.line { data = rows, x = "context", y = "max_batch", by = "gpu", logx = 2, logy = true,
  title = string.format("Largest batch that fits: %s, %s weights, %s KV, TP%d", P.model, P.precision, P.kv_precision, P.tp),
  xlabel = "context length (tokens)", ylabel = "sequences", out = P.out }
print("wrote " .. P.out)

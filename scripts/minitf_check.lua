-- Runs every check of the native mini-transformer against the analytical model
-- and prints the report; --set roofline=true also measures this CPU and compares
-- predicted with measured prefill and decode times (a benchmark, not a test).
local P = hl.params {
  tp = { 2, "tensor-parallel ranks" }, ep = { 2, "expert-parallel groups" }, pp = { 2, "pipeline stages" },
  batch = { 2, "sequences" }, prompt = { 8, "prompt tokens" }, new = { 4, "generated tokens" },
  dense = { false, "check a dense model instead of the MoE one" },
  roofline = { false, "also run the CPU roofline benchmark" },
}
local spec = {}
for k, v in pairs(hl.minitf.default_model) do spec[k] = v end
if P.dense then spec.experts, spec.topk, spec.name = 0, 0, "minitf-dense" end
local report = hl.minitf.check { model = hl.model(spec), tp = P.tp, ep = P.ep, pp = P.pp, batch = P.batch,
                                 prompt = P.prompt, new = P.new }
print(report)
if P.roofline then
  print()
  print(hl.minitf.format_roofline(hl.minitf.cpu_roofline { model = hl.model(spec) }))
end
if not report.ok then os.exit(1) end

local T = require "testlib"
local hl = require "hbdlab"

T.test("presets list and load", function()
  T.ok(#hl.gpus() >= 11 and #hl.models() >= 11 and #hl.clusters() >= 5, "preset counts")
  for _, n in ipairs(hl.models()) do
    local p = hl.model(n):params()
    T.ok(p.total > 0 and p.active <= p.total, n)
  end
  T.eq(hl.cluster("gb200-nvl72").hbd, 72, "nvl72 hbd")
end)

T.test("custom GPU from a Lua table works end to end", function()
  local g = hl.gpu { name = "my-accel", bf16_tflops = 1000, fp8_tflops = 2000, hbm_gb = 96, hbm_tbs = 4,
                     scaleup_gbs = 400, scaleout_gbps = 400 }
  T.near(g.bf16_flops, 1e15, 1e-12, "alias tflops")
  T.near(g.scaleout_bw, 50e9, 1e-12, "400 Gb/s = 50 GB/s")
  T.near(g.eff_gemm, 0.6, 1e-12, "default efficiency")
  -- 8192^3 GEMM at fp8: 2*8192^3 / (2e15 * 0.7) s
  local r = hl.roofline { gpu = g, m = 8192, n = 8192, k = 8192, precision = "fp8" }
  T.near(r.compute_s, 2 * 8192 ^ 3 / (2e15 * 0.6), 1e-12, "roofline on custom gpu")
  T.eq(r.bound, "compute", "bound")
  local c = hl.cluster { gpu = g, gpus = 16, hbd = 8 }
  T.eq(c.gpu.name, "my-accel", "cluster keeps the custom gpu")
  T.ok(tostring(c):find("2 HBD%(s%) of 8"), "summary")
end)

T.test("cluster without hbd is one HBD", function()
  local c = hl.cluster { gpu = "H100-SXM", gpus = 4 }
  T.eq(c.hbd, 4, "hbd defaults to gpus")
  T.eq(hl.collective { op = "allreduce", bytes = 1e6, ranks = 4, cluster = c }.hbds, 1, "one HBD")
end)

T.test("objects from JSON files", function()
  local path = os.tmpname() .. ".json"
  local f = assert(io.open(path, "w"))
  f:write('{"base": "H100-SXM", "name": "h100-96g", "hbm_bytes": 96e9}')
  f:close()
  local g = hl.gpu(path)
  T.eq(g.name, "h100-96g", "name from the file")
  T.eq(g.hbm_bytes, 96e9, "field from the file")
  T.eq(g.fp8_flops, hl.gpu("H100-SXM").fp8_flops, "base preset")
  f = assert(io.open(path, "w"))
  f:write('{"base": "H100-SXM", "hbm_bytez": 96e9}')
  f:close()
  T.raises(function() hl.gpu(path) end, path, "unknown field 'hbm_bytez'")
  os.remove(path)
  T.raises(function() hl.model "/nonexistent/m.json" end, "model file /nonexistent/m.json")
end)

T.test("objects are immutable; with{} derives", function()
  local m = hl.model "qwen1.5-110b"
  T.raises(function() m.layers = 3 end, "immutable", "with{layers")
  local moe = m:with { experts = 16, topk = 2 }
  T.eq(moe.experts, 16, "derived")
  T.eq(m.experts, 0, "original unchanged")
  -- each expert the size of the original FFN (expert_ffn = 0 -> ffn)
  T.near(moe:params().per_expert, 3 * 8192 * 49152, 1e-12, "expert = FFN size")
end)

T.test("kv bytes per token", function()
  T.eq(hl.model("llama-3.1-70b"):kv_bytes_per_token "bf16", 327680, "llama 70b")
  T.eq(hl.model("deepseek-v3"):kv_bytes_per_token "bf16", 70272, "deepseek mla")
end)

T.test("bad input names the field and value", function()
  T.raises(function() hl.gpu "B20" end, "unknown gpu preset 'B20'", "did you mean 'b200'")
  T.raises(function() hl.model { hidden = 64, layers = 2, heads = 6, kv_heads = 4, vocab = 10, ffn = 8 } end,
    "kv_heads = 4 does not divide heads = 6")
  T.raises(function() hl.cluster { gpu = "B200", gpus = 128, hbd = 48 } end, "48 does not divide gpus = 128")
  T.raises(function() hl.gpu { base = "B200", hbm_bw = -1 } end, "hbm_bw", "-1 is out of range")
  T.raises(function() hl.gpu { base = "B200", hbm_bww = 1 } end, "did you mean 'hbm_bw'")
  T.raises(function() hl.roofline { gpu = "H100-SXM", m = 8, n = 8, k = 8, precision = "fp4" } end,
    "no fp4 tensor support")
end)

T.test("Hugging Face import", function()
  local m = hl.model.from_hf(os.getenv("HBDLAB_SOURCE_DIR") .. "/tests/data/hf/deepseek-v3.json")
  T.eq(m.attn, "mla", "mla")
  T.near(m:params().total, hl.model("deepseek-v3"):params().total, 1e-12, "same as preset")
  T.raises(function() hl.model.from_hf(os.getenv("HBDLAB_SOURCE_DIR") .. "/tests/data/hf/unsupported-bert.json") end,
    "unsupported-bert.json", "'bert' is not supported")
  T.raises(function() hl.model.from_hf(os.getenv("HBDLAB_SOURCE_DIR") .. "/tests/data/hf/wrong-type.json") end,
    "wrong-type.json: field 'hidden_size'")
end)

T.done()

-- The Lua and JSON loaders of GPUs, clusters and models follow one completion
-- rule per object (core/src/presets.c: hl_gpu_complete, hl_model_complete,
-- hl_cluster_complete) and accept the same friendly aliases (core/src/hw.c):
-- an object from a JSON file equals the one from the same Lua table, field by
-- field over every field of its kind (core.fields), the cluster's GPU included.
local T = require "testlib"
local hl = require "hbdlab"
local core = require "hbdlab.core"

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local n = 0
-- writes a JSON text to a fresh file, returns its path
local function file(text)
  n = n + 1
  local path = string.format("%s/obj%d.json", dir, n)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

-- every field of `kind` equal in a and b (names the first that differs)
local function same(kind, a, b)
  for _, f in ipairs(core.fields(kind)) do
    T.eq(a[f.name], b[f.name], kind .. " field " .. f.name)
  end
end

T.test("a cluster from a JSON file equals the same Lua table (hbd and name defaulted, aliases)", function()
  -- the fields of the issue: JSON refused them ("'hbd' are required"), Lua defaulted hbd = gpus
  local lua = hl.cluster { gpu = "B200", gpus = 64 }
  local json = hl.cluster(file '{"gpu": "B200", "gpus": 64}')
  T.eq(json.hbd, 64, "hbd = gpus when not given (the whole cluster one HBD)")
  T.eq(json.name, "B200 x64 hbd64", "the generated name")
  same("cluster", lua, json)
  same("gpu", lua.gpu, json.gpu)
  -- friendly aliases: scaleout_gbps = 400 Gbit/s = 50e9 B/s, peer_cost_us = 0.2 us = 2e-7 s
  lua = hl.cluster { gpu = "H100-SXM", gpus = 16, hbd = 8, scaleout_gbps = 400, peer_cost_us = 0.2 }
  json = hl.cluster(file '{"gpu": "H100-SXM", "gpus": 16, "hbd": 8, "scaleout_gbps": 400, "peer_cost_us": 0.2}')
  T.eq(json.scaleout_bw, 50e9, "scaleout_gbps 400 is 50e9 B/s")
  T.near(json.peer_cost, 2e-7, 1e-12, "peer_cost_us 0.2 is 2e-7 s")
  same("cluster", lua, json)
  T.raises(function() hl.cluster(file '{"gpu": "B200", "hbd": 8}') end, "'gpus' is required")
  T.raises(function() hl.cluster { gpu = "B200", hbd = 8 } end, "'gpus' is required")
end)

T.test("a GPU from a JSON file equals the same Lua table (aliases, the name 'custom')", function()
  -- hbm_gb 80 = 80e9 B, hbm_tbs 3 = 3e12 B/s, fp8_tflops 1000 = 1e15 FLOP/s
  local lua = hl.gpu { base = "H100-SXM", hbm_gb = 80, hbm_tbs = 3, fp8_tflops = 1000 }
  local json = hl.gpu(file '{"base": "H100-SXM", "hbm_gb": 80, "hbm_tbs": 3, "fp8_tflops": 1000}')
  T.eq(json.hbm_bytes, 80e9, "hbm_gb")
  T.eq(json.hbm_bw, 3e12, "hbm_tbs")
  T.eq(json.fp8_flops, 1e15, "fp8_tflops")
  same("gpu", lua, json)
  local fields = '{"bf16_flops": 1e15, "hbm_bytes": 1e11, "hbm_bw": 4e12, "scaleup_bw": 4.5e11, "scaleout_bw": 5e10}'
  lua = hl.gpu { bf16_flops = 1e15, hbm_bytes = 1e11, hbm_bw = 4e12, scaleup_bw = 4.5e11, scaleout_bw = 5e10 }
  json = hl.gpu(file(fields))
  T.eq(json.name, "custom", "no name: 'custom' (JSON refused it before)")
  same("gpu", lua, json)
  T.raises(function() hl.gpu(file '{"base": "H100-SXM", "hbm_gb": 80, "hbm_bytes": 8e10}') end,
           "both 'hbm_gb' and 'hbm_bytes' given")
  T.raises(function() hl.gpu { base = "H100-SXM", hbm_gb = 80, hbm_bytes = 8e10 } end,
           "both 'hbm_gb' and 'hbm_bytes' given")
  T.raises(function() hl.gpu(file '{"base": "H100-SXM", "hbm_gb": "80"}') end, "'hbm_gb': expected a number")
  T.eq(hl.gpu("H100-SXM"):with { hbm_gb = 94 }.hbm_bytes, 94e9, ":with takes the alias too")
end)

T.test("a model from a JSON file equals the same Lua table (head_dim, kv_heads, name completed)", function()
  local t = { hidden = 4096, layers = 32, heads = 32, ffn = 14336, vocab = 128256 }
  local lua = hl.model(t)
  local json = hl.model(file '{"hidden": 4096, "layers": 32, "heads": 32, "ffn": 14336, "vocab": 128256}')
  T.eq(json.head_dim, 128, "head_dim = hidden / heads = 4096 / 32")
  T.eq(json.kv_heads, 32, "kv_heads = heads")
  T.eq(json.name, "custom", "no name: 'custom'")
  same("model", lua, json)
  lua = hl.model { base = "llama-3.1-8b", layers = 16, name = "half" }
  json = hl.model(file '{"base": "llama-3.1-8b", "layers": 16, "name": "half"}')
  same("model", lua, json)
end)

os.execute("rm -rf " .. dir)
T.done()

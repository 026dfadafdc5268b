-- Table-driven bad input: every case must fail with a message naming the
-- field, the value and what is allowed (substrings checked); simulate cases
-- also go through `hbdlab eval` as JSON (exit status 1, JSON error on stderr).
local T = require "testlib"
local hl = require "hbdlab"
local core = hl.core

local base = { model = "llama-3.1-8b", cluster = { gpu = "H100-SXM", gpus = 8, hbd = 8 }, batch = 8, input = 512,
               output = 16, parallel = { tp = 8 } }
local moe = { model = "mixtral-8x7b", cluster = { gpu = "H100-SXM", gpus = 8, hbd = 8 }, batch = 8, input = 512,
              output = 16, parallel = { tp = 8, ep = 8 } }

local function with(b, changes)
  local t = {}
  for k, v in pairs(b) do t[k] = v end
  for k, v in pairs(changes) do
    if k:find("%.") then
      local a, f = k:match("^([^.]+)%.(.+)$")
      local sub = {}
      for kk, vv in pairs(t[a] or {}) do sub[kk] = vv end
      sub[f] = v
      t[a] = sub
    else
      t[k] = v
    end
  end
  return t
end

local NaN, INF = 0 / 0, math.huge
-- { description, simulate fields, expected substrings..., json = raw JSON override or false }
local sim_cases = {
  { "batch NaN", with(base, { batch = NaN }), "'batch'", "nan", "allowed: 1..", json = '{"model":"llama-3.1-8b","cluster":"hgx-h100","batch":1e999}', json_expect = "'batch': inf" },
  { "batch +inf", with(base, { batch = INF }), "'batch'", "inf", "allowed", json = false },
  { "batch -inf", with(base, { batch = -INF }), "'batch'", "-inf", json = '{"model":"llama-3.1-8b","cluster":"hgx-h100","batch":-1e999}' },
  { "batch zero", with(base, { batch = 0 }), "'batch': 0 is out of range", "allowed: 1.." },
  { "batch negative", with(base, { batch = -4 }), "'batch': -4 is out of range" },
  { "batch fractional", with(base, { batch = 8.5 }), "must be whole numbers", "8.5" },
  { "batch absurd", with(base, { batch = 1e12 }), "'batch': 1e+12 is out of range" },
  { "batch wrong type", with(base, { batch = "eight" }), "field 'batch': 'eight' is not a number" },
  { "batch not divisible by dp", with(base, { batch = 3, parallel = { tp = 2 } }), "3 sequences do not split over dp = 4" },
  { "batch max wrong word", with(base, { batch = "most" }), "'batch': 'most' is not a number or \"max\"" },
  { "input zero", with(base, { input = 0 }), "'input': 0 is out of range" },
  { "input negative", with(base, { input = -10 }), "'input': -10 is out of range" },
  { "input NaN", with(base, { input = NaN }), "'input': ", "nan is out of range", json = false },
  { "input absurd", with(base, { input = 1e10 }), "'input': 1e+10 is out of range" },
  { "output zero", with(base, { output = 0 }), "'output': 0 is out of range" },
  { "output inf", with(base, { output = INF }), "'output': inf", json = false },
  { "overlap above 1", with(base, { overlap = 1.5 }), "'overlap_prefill': 1.5 is out of range", "allowed: 0..1" },
  { "overlap negative", with(base, { overlap = -0.1 }), "'overlap_prefill': -0.1" },
  { "overlap wrong type", with(base, { overlap = "half" }), "field 'overlap': expected a number" },
  { "overlap decode above 1", with(base, { overlap = { prefill = 0, decode = 2 } }), "'overlap_decode': 2" },
  { "imbalance below 1", with(moe, { imbalance = 0.5 }), "'imbalance': 0.5 is out of range", "allowed: 0 or 1.." },
  { "microbatches subnormal", with(base, { microbatches = 1e-300, parallel = { tp = 4, pp = 2 } }), "'microbatches': 1e-300 is out of range", "allowed: 0 or 1.." },
  { "microbatches fractional", with(base, { microbatches = 2.5, parallel = { tp = 4, pp = 2 } }), "'microbatches': 2.5 is not allowed" },
  { "layer overhead negative", with(base, { layer_overhead = -1e-6 }), "'layer_overhead'" },
  { "mem_util zero", with(base, { mem_util = 0 }), "'mem_util': 0 is out of range" },
  { "mem_util above 1", with(base, { mem_util = 1.2 }), "'mem_util': 1.2" },
  { "precision unknown", with(base, { precision = "fp12" }), "'precision'", "'fp12' is not one of fp32, bf16" },
  { "precision wrong type", with(base, { precision = 8 }), "field 'precision': expected a string" },
  { "kv precision unknown", with(base, { kv_precision = "int4" }), "'kv_precision'", "'int4'" },
  { "act precision unknown", with(base, { act_precision = "tf32" }), "'act_precision'" },
  { "wire precision unknown", with(base, { wire_precision = "e5m2" }), "'wire_precision'" },
  { "fp4 on H100", with(base, { precision = "fp4" }), "gpu 'H100-SXM' has no fp4 tensor support" },
  { "fp8 on A100", with(base, { precision = "fp8", cluster = { gpu = "A100-SXM", gpus = 8, hbd = 8 } }), "'A100-SXM' has no fp8" },
  { "tp does not divide heads", with(base, { parallel = { tp = 6 } }), "tp = 6 does not divide 32 heads" },
  { "tp zero", with(base, { parallel = { tp = 0 } }), "'tp': 0 is out of range", "allowed: 1.." },
  { "tp fractional", with(base, { parallel = { tp = 2.5 } }), "'tp': 2.5 is not an integer" },
  { "tp negative", with(base, { parallel = { tp = -2 } }), "'tp': -2 is out of range" },
  { "tp*pp does not divide gpus", with(base, { parallel = { tp = 8, pp = 2 } }), "tp*pp = 16 does not divide gpus = 8" },
  { "pp exceeds layers", with(base, { cluster = { gpu = "H100-SXM", gpus = 64, hbd = 8 }, batch = 1, parallel = { tp = 1, pp = 64 } }), "pp = 64 exceeds 32 layers" },
  { "dp inconsistent", with(base, { parallel = { tp = 2, dp = 3 } }), "tp*pp*dp = 2*1*3 must equal gpus = 8" },
  { "ep on a dense model", with(base, { parallel = { tp = 8, ep = 2 } }), "is dense: ep = 2 needs experts" },
  { "ep does not divide experts", with(moe, { parallel = { tp = 8, ep = 3 } }), "ep = 3 does not divide 8 experts" },
  { "ep*etp*pp inconsistent", with(moe, { parallel = { tp = 8, ep = 4, etp = 4 } }), "ep*etp*pp = 4*4*1 must equal gpus = 8" },
  { "instance larger than cluster", with(base, { parallel = { tp = 8, gpus = 16 } }), "'gpus': 16 exceeds the cluster's 8 GPUs" },
  { "unknown parallel field", with(base, { parallel = { tp = 8, sp = 2 } }), "parallel: unknown field 'sp'", "allowed: tp, pp, ep" },
  { "parallel wrong word", with(base, { parallel = "best" }), "'parallel': 'best' is not a table or \"auto\"" },
  { "unknown simulate field", with(base, { bacth = 8 }), "unknown field 'bacth'", "allowed: model, cluster" },
  { "dispatch unknown", with(moe, { dispatch = "smart" }), "'dispatch': 'smart' is not one of flat, hierarchical" },
  { "objective unknown", with(base, { parallel = "auto", objective = "speed" }), "'objective': 'speed' is not one of tps_per_gpu, ttft, tpot, throughput" },
  { "model missing", with(base, { model = false }), "field 'model': expected a model object or preset name" },
  { "model preset unknown", with(base, { model = "llama-3.1-7b" }), "unknown model preset 'llama-3.1-7b'", "did you mean" },
  { "model preset path traversal", with(base, { model = "../../etc/passwd" }), "not a valid name" },
  { "cluster preset unknown", with(base, { cluster = "nvl73" }), "unknown cluster preset 'nvl73'", "did you mean 'gb200-nvl72'" },
  { "gpu preset unknown in cluster", with(base, { cluster = { gpu = "H1OO", gpus = 8 } }), "unknown gpu preset 'H1OO'" },
  { "cluster hbd larger than gpus", with(base, { cluster = { gpu = "H100-SXM", gpus = 8, hbd = 16 } }), "'hbd': 16 is larger than the cluster (gpus = 8; allowed: a divisor of gpus; for part of a larger domain" },
  { "cluster hbd does not divide", with(base, { cluster = { gpu = "H100-SXM", gpus = 12, hbd = 8 } }), "'hbd': 8 does not divide gpus = 12" },
  { "cluster gpus missing", with(base, { cluster = { gpu = "H100-SXM" } }), "cluster field 'gpus' is required" },
  { "cluster gpus zero", with(base, { cluster = { gpu = "H100-SXM", gpus = 0 } }), "'gpus': 0 is out of range" },
  { "cluster bandwidth negative", with(base, { cluster = { gpu = "H100-SXM", gpus = 8, scaleout_bw = -5 } }), "'scaleout_bw': -5 is out of range" },
  { "cluster efficiency above 1", with(base, { cluster = { gpu = "H100-SXM", gpus = 8, eff_scaleup = 1.5 } }), "'eff_scaleup': 1.5" },
  { "cluster fabric unknown", with(base, { cluster = { gpu = "H100-SXM", gpus = 8, fabric = "torus" } }), "'fabric': 'torus' is not one of switch, mesh" },
  { "cluster unknown field", with(base, { cluster = { gpu = "H100-SXM", gpus = 8, nvlink = 5 } }), "unknown field 'nvlink'" },
  { "in-switch on a mesh", with(base, { cluster = { gpu = "H100-SXM", gpus = 8, fabric = "mesh" } }), "in_switch_reduce needs a switched fabric" },
  { "does not fit memory", with(base, { model = "llama-3.1-405b", cluster = { gpu = "H100-SXM", gpus = 2 }, parallel = { tp = 2 } }), "does not fit HBM by", "GB: needs", "has 76.97 GB (90% of 85.52)" },
  { "does not fit memory: batch max", with(base, { model = "llama-3.1-405b", batch = "max", cluster = { gpu = "H100-SXM", gpus = 2 }, parallel = { tp = 2 } }), "batch = max", "more than 90% of HBM" },
}

-- Issue 14 (found by attacking the product from outside): each failed or crashed before the fix.
for _, c in ipairs {
  { "unknown simulate field: did you mean", with(base, { bacth = 8 }), "unknown field 'bacth' (did you mean 'batch'?" },
  { "unknown overlap field", with(base, { overlap = { prefill = 0, decod = 1 } }), "overlap: unknown field 'decod' (did you mean 'decode'?" },
  { "ignore_memory = 0 (0 is true in Lua)", with(base, { ignore_memory = 0 }), "field 'ignore_memory': expected true or false, got number 0" },
  { "exact_steps as a string", with(base, { exact_steps = "false" }), "field 'exact_steps': expected true or false, got string false" },
  { "sequence_parallel as a number", with(base, { sequence_parallel = 1 }), "field 'sequence_parallel': expected true or false" },
  { "max_ttft_s NaN", with(base, { parallel = "auto", max_ttft_s = NaN }), "field 'max_ttft_s': nan is out of range", json = false },
  { "max_tpot_s negative", with(base, { parallel = "auto", max_tpot_s = -1 }), "field 'max_tpot_s': -1 is out of range" },
  { "tp 1e300 (float-to-integer overflow)", with(base, { parallel = { tp = 1e300 } }), "field 'tp': 1e+300 is out of range", "allowed: 1..1e+06" },
  { "tp NaN", with(base, { parallel = { tp = NaN } }), "field 'tp': nan is out of range", "allowed: 1..1e+06", json = false },
  -- attack pass: a boolean for a number field was read as 0 or 1 (input = true ran 1-token prompts)
  { "input = true", with(base, { input = true }), "field 'input': expected a number, got true" },
  { "tp = false", with(base, { parallel = { tp = false } }), "field 'parallel.tp': expected a number, got false" },
} do sim_cases[#sim_cases + 1] = c end

local function write(path, text) local f = assert(io.open(path, "w")); f:write(text); f:close() end
local function read(path) local f = io.open(path); if not f then return "" end local t = f:read("a"); f:close(); return t end
local tmp = os.tmpname()
local distinct, eval_runs = 0, 0

for _, c in ipairs(sim_cases) do
  local name, cfg = c[1], c[2]
  local expect = {}
  for i = 3, #c do expect[#expect + 1] = c[i] end
  T.test("simulate: " .. name, function()
    local t = {}
    for k, v in pairs(cfg) do t[k] = v end
    if t.model == false then t.model = nil end
    T.raises(function()
      if type(t.cluster) == "table" and getmetatable(t.cluster) == nil then t.cluster = hl.cluster(t.cluster) end
      hl.simulate(t)
    end, table.unpack(expect))
  end)
  distinct = distinct + 1
  if c.json ~= false then
    T.test("eval: " .. name, function()
      local text = c.json or core.json_encode(cfg)
      if cfg.model == false then text = text:gsub('"model":false,?', "") end
      write(tmp .. ".json", text)
      local code = core.spawn { os.getenv("HBDLAB"), "eval", tmp .. ".json", stdout = tmp .. ".out", stderr = tmp .. ".err" }
      T.eq(code, 1, "exit status")
      local err = read(tmp .. ".err")
      T.ok(err:match('^{"error":'), "JSON error on stderr: " .. err)
      for _, e in ipairs(c.json_expect and { c.json_expect } or expect) do
        local plain = err:gsub('\\"', '"')
        T.ok(plain:find(e, 1, true), string.format("eval error %q lacks %q", err, e))
      end
      T.eq(read(tmp .. ".out"), "", "nothing on stdout")
    end)
    eval_runs = eval_runs + 1
  end
end

-- JSON files given to eval
local json_cases = {
  { "malformed JSON", '{"model": "llama-3.1-8b",, "batch": 4}', "cfg.json:1:", "malformed JSON" },
  { "truncated JSON", '{"model": "llama-3.1-8b", "batch": ', "unexpected end of input" },
  { "deep nesting", string.rep("[", 5000) .. string.rep("]", 5000), "cfg.json:1:1001: JSON nested deeper than 1000 levels" },
  { "duplicate keys", '{"model": "llama-3.1-8b", "batch": 4, "batch": 8}', "duplicate key 'batch'" },
  { "non-UTF-8 bytes", '{"model": "llama\255-3.1-8b"}', "byte 16: invalid UTF-8" },
  { "top level array", '[1, 2, 3]', "expected a JSON object of simulate fields" },
  { "top level number", '42', "expected a JSON object" },
  { "empty file", '', "malformed JSON" },
  { "huge number", '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "input": 1e999}', "'input': inf is out of range" },
  { "NUL byte", '{"model": "llama\0-3.1-8b"}', "NUL byte" },
}
-- Issue 14: NUL characters inside keys and strings, repeated keys in large and nested objects
do
  local many = {}
  for i = 1, 40 do many[#many + 1] = string.format('"k%d": %d', i, i) end
  many[#many + 1] = '"k17": 0'
  for _, c in ipairs {
    { "NUL escape in a key", '{"batch\\u0000x": 8, "model": "llama-3.1-8b"}', "\\u0000 (a NUL character) is not allowed" },
    { "NUL escape in a value", '{"model": "llama-3.1-8b\\u0000ignored"}', "\\u0000 (a NUL character) is not allowed" },
    { "duplicate key among 41", "{" .. table.concat(many, ", ") .. "}", "duplicate key 'k17'" },
    { "duplicate key in a nested object", '{"model": "llama-3.1-8b", "parallel": {"tp": 8, "tp": 1}}', "duplicate key 'tp'" },
    -- attack pass: said only "malformed JSON"
    { "lone UTF-16 surrogate escape", '{"model": "\\ud800"}', "cfg.json:1:12: malformed JSON: bad escape in a string", "surrogates in pairs" },
    { "boolean as 0", '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "exact_steps": 0}', "'exact_steps': expected true or false" },
  } do json_cases[#json_cases + 1] = c end
end
for _, c in ipairs(json_cases) do
  T.test("eval file: " .. c[1], function()
    write(tmp .. "cfg.json", c[2])
    local code = core.spawn { os.getenv("HBDLAB"), "eval", tmp .. "cfg.json", stdout = tmp .. ".out", stderr = tmp .. ".err" }
    T.eq(code, 1, "exit status")
    local err = read(tmp .. ".err"):gsub('\\"', '"')
    for i = 3, #c do T.ok(err:find(c[i], 1, true), string.format("%q lacks %q", err, c[i])) end
  end)
  distinct = distinct + 1
end
T.test("eval: a missing file and a BOM", function()
  local code = core.spawn { os.getenv("HBDLAB"), "eval", "/nonexistent/cfg.json", stdout = tmp .. ".out", stderr = tmp .. ".err" }
  T.eq(code, 1, "missing file")
  T.ok(read(tmp .. ".err"):find("cannot read /nonexistent/cfg.json", 1, true), "names the file")
  write(tmp .. "bom.json", "\239\187\191" .. '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "batch": 8, "parallel": {"tp": 8}}')
  code = core.spawn { os.getenv("HBDLAB"), "eval", tmp .. "bom.json", stdout = tmp .. ".out", stderr = tmp .. ".err" }
  T.eq(code, 0, "a byte-order mark is accepted")
end)
distinct = distinct + 2

-- Object constructors and the other entry points
local api_cases = {
  { "gpu unknown preset", function() hl.gpu "B20" end, "unknown gpu preset 'B20'", "did you mean 'b200'" },
  { "gpu wrong argument type", function() hl.gpu(42) end, "table expected" },
  { "gpu NaN field", function() hl.gpu { base = "B200", hbm_bw = NaN } end, "'hbm_bw': nan is out of range" },
  { "gpu inf field", function() hl.gpu { base = "B200", bf16_flops = INF } end, "'bf16_flops': inf" },
  { "gpu negative bandwidth", function() hl.gpu { base = "B200", hbm_bw = -1 } end, "'hbm_bw': -1 is out of range" },
  { "gpu zero HBM", function() hl.gpu { base = "B200", hbm_bytes = 0 } end, "'hbm_bytes': 0 is out of range" },
  { "gpu absurd HBM", function() hl.gpu { base = "B200", hbm_bytes = 1e30 } end, "'hbm_bytes': 1e+30" },
  { "gpu efficiency zero", function() hl.gpu { base = "B200", eff_gemm = 0 } end, "'eff_gemm': 0 is out of range", "allowed: 0.01..1" },
  { "gpu efficiency above 1", function() hl.gpu { base = "B200", eff_mem = 1.3 } end, "'eff_mem': 1.3" },
  { "gpu without bf16 or fp16", function() hl.gpu { base = "B200", bf16_flops = 0, fp16_flops = 0 } end, "needs bf16_flops or fp16_flops" },
  { "gpu unknown field", function() hl.gpu { base = "B200", hbm_bww = 1 } end, "unknown field 'hbm_bww' (did you mean 'hbm_bw'?)" },
  { "gpu field wrong type", function() hl.gpu { base = "B200", hbm_bw = {} } end, "'hbm_bw': expected a number or string, got a table" },
  { "gpu flops as a word", function() hl.gpu { base = "B200", hbm_bw = "fast" } end, "expected a number, got the string 'fast'" },
  { "gpu alias wrong type", function() hl.gpu { base = "B200", hbm_tbs = "8" } end, "'hbm_tbs': expected a number" },
  { "gpu alias and field both", function() hl.gpu { base = "B200", hbm_tbs = 8, hbm_bw = 8e12 } end, "both 'hbm_tbs' and 'hbm_bw'" },
  { "gpu base unknown", function() hl.gpu { base = "TPU-v9" } end, "unknown gpu preset 'TPU-v9'" },
  { "gpu base wrong type", function() hl.gpu { base = 5 } end, "field 'base'" },
  { "gpu immutable", function() local g = hl.gpu "B200"; g.hbm_bw = 1 end, "gpu objects are immutable" },
  { "with bad value", function() hl.gpu("B200"):with { tdp_w = -5 } end, "'tdp_w': -5" },
  -- idle power above load power was accepted (cost.c then clamped it to the load power)
  { "idle above load power", function() hl.gpu("H100"):with { power_w = 1000, idle_w = 2000 } end,
    "field 'idle_w': 2000 W is above the power at load, 1000 W (power_w; allowed: 0..1000)" },
  { "cluster gpu wrong type", function() hl.cluster { gpu = 5, gpus = 8 } end, "cluster field 'gpu': expected a gpu object or preset name" },
  { "cluster hbd fractional", function() hl.cluster { gpu = "B200", gpus = 8, hbd = 2.5 } end, "'hbd': 2.5 is not an integer" },
  { "cluster latency NaN", function() hl.cluster { gpu = "B200", gpus = 8, scaleup_latency = NaN } end, "'scaleup_latency': nan" },
  { "model heads zero", function() hl.model { hidden = 64, layers = 2, heads = 0, vocab = 10, ffn = 8 } end, "'heads': 0 is out of range" },
  { "model kv heads do not divide", function() hl.model { hidden = 64, layers = 2, heads = 6, kv_heads = 4, vocab = 10, ffn = 8 } end, "kv_heads = 4 does not divide heads = 6" },
  { "model topk above experts", function() hl.model("mixtral-8x7b"):with { topk = 9 } end, "topk = 9 must be in 1..experts (8)" },
  { "model topk without experts", function() hl.model("llama-3.1-8b"):with { topk = 2 } end, "need experts > 0" },
  { "model dense layers beyond layers", function() hl.model("deepseek-v3"):with { dense_layers = 99 } end, "dense_layers = 99 exceeds layers = 61" },
  { "model attn unknown", function() hl.model("llama-3.1-8b"):with { attn = "mqa" } end, "'mqa' is not one of gqa, mla" },
  { "model mla without rank", function() hl.model("llama-3.1-8b"):with { attn = "mla" } end, "attn = mla needs kv_lora_rank" },
  { "model layers fractional", function() hl.model("llama-3.1-8b"):with { layers = 31.5 } end, "'layers': 31.5 is not an integer" },
  { "model absurd vocab", function() hl.model("llama-3.1-8b"):with { vocab = 1e12 } end, "'vocab': 1e+12 is out of range" },
  { "model sliding fraction without window", function() hl.model("llama-3.1-8b"):with { sliding_fraction = 0.5 } end, "needs sliding_window > 0" },
  { "model from_hf missing file", function() hl.model.from_hf "/nonexistent/model" end, "/nonexistent/model/config.json: cannot open" },
  { "model kv precision unknown", function() hl.model("llama-3.1-8b"):kv_bytes_per_token "fp5" end, "'fp5' is not one of" },
  { "collective op unknown", function() hl.collective { op = "allreduse", bytes = 1, ranks = 8, cluster = "hgx-h100" } end, "'allreduse' is not one of" },
  { "collective ranks beyond cluster", function() hl.collective { op = "allreduce", bytes = 1, ranks = 16, cluster = "hgx-h100" } end, "'ranks': 16 is not in 1..8" },
  { "collective negative bytes", function() hl.collective { op = "allreduce", bytes = -1, ranks = 8, cluster = "hgx-h100" } end, "'bytes': -1 is not in 0..1e18" },
  { "collective NaN bytes", function() hl.collective { op = "allreduce", bytes = NaN, ranks = 8, cluster = "hgx-h100" } end, "'bytes': nan is not in 0..1e18" },
  { "collective sendrecv ranks", function() hl.collective { op = "sendrecv", bytes = 1, ranks = 4, cluster = "hgx-h100" } end, "ranks must be 2 (got 4)" },
  { "collective algo inapplicable", function() hl.collective { op = "allgather", bytes = 1, ranks = 8, cluster = "hgx-h100", algo = "in_switch" } end, "in_switch does not apply" },
  { "collective imbalance below 1", function() hl.collective { op = "alltoall", bytes = 1, ranks = 8, cluster = "hgx-h100", imbalance = 0.5 } end, "'imbalance': 0.5 is not >= 1" },
  { "collective placement wrong", function() hl.collective { op = "alltoall", bytes = 1, ranks = 8, cluster = "hgx-h100", placement = "spread" } end, "'placement'" },
  { "roofline unsupported precision", function() hl.roofline { gpu = "A100-SXM", m = 8, n = 8, k = 8, precision = "fp8" } end, "no fp8 tensor support" },
  { "roofline negative flops", function() hl.roofline { gpu = "B200", flops = -1, bytes = 1 } end, "flops and bytes must be finite and >= 0" },
  { "roofline inf bytes", function() hl.roofline { gpu = "B200", flops = 1, bytes = INF } end, "must be finite" },
  { "kv capacity does not fit", function() hl.kv_capacity { hbm_bytes = 80e9, weights_bytes = 90e9, kv_token_bytes = 1, context = 1 } end, "exceed 90% of HBM", "by 18.00 GB" },
  { "kv capacity mem_util_of", function() hl.kv_capacity { hbm_bytes = 80e9, kv_token_bytes = 1, context = 1, mem_util_of = "device" } end, "field 'mem_util_of': device is not allowed (\"hbm\" or \"free\")" },
  { "kv capacity mem_util_of type", function() hl.kv_capacity { hbm_bytes = 80e9, kv_token_bytes = 1, context = 1, mem_util_of = 1 } end, "field 'mem_util_of': number is not allowed" },
  { "kv capacity of free does not fit", function() hl.kv_capacity { hbm_bytes = 80e9, weights_bytes = 90e9, kv_token_bytes = 1, context = 1, mem_util_of = "free" } end, "exceed HBM (80.00 GB) by 10.00 GB" },
  { "kv capacity bad util", function() hl.kv_capacity { hbm_bytes = 80e9, mem_util = 2, kv_token_bytes = 1, context = 1 } end, "field 'mem_util': 2 is not allowed (a fraction in (0, 1])" },
  { "sweep axis empty", function() hl.sweep { base = base, axes = { hbd = {} } } end, "axis 'hbd' needs a non-empty array" },
  { "sweep axis unknown field", function() hl.sweep { base = with(base, { cluster = "hgx-h100" }), axes = { hbdd = { 8 } } } end, "unknown field 'hbdd'" },
  { "sweep fn not a function", function() hl.sweep({ x = { 1 } }, 5) end, "fn must be a function" },
  { "sweep_to_csv unknown column", function() hl.sweep_to_csv { base = with(base, { cluster = "hgx-h100" }), axes = { batch = { 8 } }, out = tmp .. ".csv", columns = { "ttft" } } end, "'ttft' is not a result field" },
  { "plot bad extension", function() hl.plot.line { data = { { x = 1, y = 1 } }, x = "x", y = "y", out = tmp .. ".gif" } end, "must end in .png, .svg or .pdf" },
  { "plot missing field", function() hl.plot.heatmap { data = {}, x = "a", y = "b", out = tmp .. ".png" } end, "field 'z' is required" },
  { "rows write bad extension", function() hl.rows.write({}, tmp .. ".xlsx") end, "must end in .csv, .json or .jsonl" },
  { "rows read missing file", function() hl.rows.read_csv "/nonexistent/rows.csv" end, "cannot read /nonexistent/rows.csv" },
  { "params unknown", function() hl.params({ gpus = { 8, "n" } }, { "--set", "gpu=3" }) end, "--set gpu: unknown parameter" },
  { "params wrong type", function() hl.params({ gpus = { 8, "n" } }, { "--set", "gpus=lots" }) end, "--set gpus=lots: expected a number" },
  { "params malformed", function() hl.params({ gpus = { 8, "n" } }, { "--set", "gpus" }) end, "--set expects name=value" },
  { "minitf MLA", function() hl.minitf.run { model = hl.model "deepseek-v3" } end, "uses MLA" },
  { "json encode a function", function() core.json_encode { f = print } end, "cannot encode a function value" },
}
-- Issue 14: unknown fields everywhere say which field was meant; inputs that reached undefined behaviour
for _, c in ipairs {
  { "collective unknown field", function() hl.collective { op = "allreduce", byts = 1, bytes = 1, ranks = 8, cluster = "hgx-h100" } end, "hl.collective: unknown field 'byts' (did you mean 'bytes'?" },
  { "roofline unknown field", function() hl.roofline { gpu = "B200", flop = 1, bytes = 1 } end, "hl.roofline: unknown field 'flop' (did you mean 'flops'?" },
  { "kv_capacity unknown field", function() hl.kv_capacity { hbm_bytes = 80e9, kv_token_bytes = 1, context = 1, contxt = 2 } end, "hl.kv_capacity: unknown field 'contxt' (did you mean 'context'?" },
  { "kv_capacity block_tokens inf", function() hl.kv_capacity { hbm_bytes = 80e9, kv_token_bytes = 1, context = 1, block_tokens = INF } end, "field 'block_tokens': inf is not allowed (a finite number >= 0)" },
  { "kv_capacity kv_token_bytes inf", function() hl.kv_capacity { hbm_bytes = 80e9, kv_token_bytes = INF, context = 1 } end, "field 'kv_token_bytes': inf is not allowed" },
  { "params misspelt option", function() hl.params({ gpus = { 8, "n" } }, { "--sett", "gpus=3" }) end, "unknown option '--sett' - did you mean '--set'?" },
  { "params did you mean by edit distance", function() hl.params({ batch = { 8, "n" }, hbd = { 8, "n" } }, { "--set", "bacth=3" }) end, "did you mean 'batch'?" },
  { "collective ranks 1e300", function() hl.collective { op = "allreduce", bytes = 1, ranks = 1e300, cluster = "hgx-h100" } end, "field 'ranks'", "is not an integer" },
  { "collective ranks_per_hbd NaN", function() hl.collective { op = "allreduce", bytes = 1, ranks = 8, ranks_per_hbd = NaN, cluster = "hgx-h100" } end, "field 'ranks_per_hbd'" },
  { "minitf tp 1e300", function() hl.minitf.run { model = hl.model(hl.minitf.default_model), tp = 1e300 } end, "field 'tp'", "not an integer in 1..1024" },
  { "minitf seed negative", function() hl.minitf.run { model = hl.model(hl.minitf.default_model), seed = -1 } end, "field 'seed'" },
  { "minitf batch NaN", function() hl.minitf.run { model = hl.model(hl.minitf.default_model), batch = NaN } end, "field 'batch'" },
  { "sweep threads 1e300", function() hl.sweep { base = with(base, { cluster = "hgx-h100" }), axes = { batch = { 8 } }, threads = 1e300 } end, "field 'threads'", "0..4096" },
  { "sweep_to_csv threads -1", function() hl.sweep_to_csv { base = with(base, { cluster = "hgx-h100" }), axes = { batch = { 8 } }, out = tmp .. ".csv", threads = -1 } end, "field 'threads'" },
  { "in-memory sweep over the memory budget", function()
      local a = {}
      for i = 1, 1000 do a[i] = i end
      local b = {} -- 100 M points: about 61 GB of rows at 612 bytes each (10 M fit in 8 GB since rows are views)
      for i = 1, 100 do b[i] = i end
      hl.sweep { base = with(base, { cluster = "hgx-h100" }), axes = { input = a, output = a, batch = b } }
    end, "sweep: 100000000 points would take about", "more than the in-memory budget of 8 GB", "stream them to a file with hl.sweep_to_csv" },
  -- a __tostring that raises while json_encode builds its tree: a clean error (the ASan build sees no leak)
  { "json_encode: __tostring raises", function()
      debug.setmetatable(print, { __tostring = function() error("boom in __tostring", 0) end })
      local ok, e = pcall(core.json_encode, { a = { 1, { 2, print } }, b = "x" })
      debug.setmetatable(print, nil)
      assert(not ok)
      error(e, 0)
    end, "boom in __tostring" },
  -- attack pass: booleans for number fields of objects; strings JSON text cannot carry (before:
  -- "a\0b" was cut to "a", two keys became one repeated key, bytes that are no UTF-8 were
  -- written as they are and refused when read back)
  { "model layers = true", function() hl.model { base = "llama-3.1-8b", layers = true } end, "model field 'layers': expected a number, got true" },
  { "json_encode: NUL in a string", function() core.json_encode { "a\0b" } end, "json_encode: a string holds a NUL byte at byte 1" },
  { "json_encode: NUL in a key", function() core.json_encode { ["a\0b"] = 1, a = 2 } end, "json_encode: a key holds a NUL byte at byte 1" },
  { "json_encode: not UTF-8", function() core.json_encode { name = "ok\255" } end, "json_encode: a string is not UTF-8 (byte 2)" },
  -- hl.rows.read_csv took the rest of the file into one cell after an unclosed quote, and dropped cells past the header's
  { "rows.read_csv: unclosed quote", function() write(tmp .. ".csv", 'a,b\n1,"2\n3,4\n') hl.rows.read_csv(tmp .. ".csv") end, ".csv: line 2: a quoted cell is not closed" },
  -- a nested table (a simulate result's cost, parallel, ...) was written as "table: 0x55..."
  { "rows.to_csv of a nested table", function() hl.rows.to_csv({ { a = 1 }, { a = { 1 } } }) end, "to_csv: row 2, column 'a' holds a table" },
  { "rows.read_csv: a row wider than the header", function() write(tmp .. ".csv", "a,b\n1,2\n3,4,5\n") hl.rows.read_csv(tmp .. ".csv") end, ".csv: line 3 has 3 cells, the header 2" },
} do api_cases[#api_cases + 1] = c end

for _, c in ipairs(api_cases) do
  local expect = {}
  for i = 3, #c do expect[#expect + 1] = c[i] end
  T.test("api: " .. c[1], function() T.raises(c[2], table.unpack(expect)) end)
  distinct = distinct + 1
end

T.test("at least 100 distinct bad inputs, every one refused as expected", function()
  -- `distinct` counts the cases listed; T.passed counts the tests that passed so far (each
  -- case is one test, plus one per hbdlab eval run; the missing-file-and-BOM test holds two
  -- cases): a case that stopped raising its error makes them disagree.
  T.ok(distinct >= 100, "distinct bad inputs: " .. distinct)
  T.eq(T.failed, 0, "bad inputs not refused as expected")
  T.eq(T.passed, distinct - 1 + eval_runs, "tests passed (cases - 1 + eval runs)")
  print(string.format("bad inputs: %d distinct (%d simulate cases also through hbdlab eval)", distinct, eval_runs))
end)
for _, ext in ipairs { ".json", ".out", ".err", "cfg.json", "bom.json", ".csv" } do os.remove(tmp .. ext) end
os.remove(tmp)
T.done()

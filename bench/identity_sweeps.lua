-- Byte-identity sweeps for speed work (issue 28): writes one CSV per sweep into $OUT
-- (default /tmp/hbdlab-identity). Run it with the binary before and after a change and
-- compare the folders (bench/identity.sh does both and cmp's every file). The sweeps cover
-- dense, MoE and MLA models, flat and hierarchical dispatch, BF16/FP8/FP4, the framework
-- profiles, several HBD sizes, pipeline stages, sequence parallelism, two-batch overlap,
-- speculative decoding, sliding and chunked attention, failing points (memory limits),
-- and the bench's own streamed sweep (50,000 points).
local core = require "hbdlab.core"
local out = os.getenv("OUT") or "/tmp/hbdlab-identity"
core.mkdir_p(out)
local all = {}
for _, f in ipairs(core.result_fields()) do
  if not f.alias_of then all[#all + 1] = f.name end
end

local function inputs(n, from, step)
  local t = {}
  for i = 1, n do t[i] = from + (i - 1) * step end
  return t
end

local qwen16 = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 }
local sweeps = {
  { "bench", { model = qwen16, cluster = hl.cluster { gpu = "B200", gpus = 128, hbd = 64 }, precision = "fp8",
      batch = 16, output = 1024, parallel = { tp = 8, ep = 16 } },
    { { "hbd", { 8, 16, 32, 64, 128 } }, { "input", inputs(10000, 1025, 1) } }, nil },
  { "bench_all", { model = qwen16, cluster = hl.cluster { gpu = "B200", gpus = 128, hbd = 64 }, precision = "fp8",
      batch = 16, output = 1024, parallel = { tp = 8, ep = 16 } },
    { { "hbd", { 8, 32, 128 } }, { "input", inputs(300, 100, 997) } }, all },
  { "dense_h100_fp8_nccl_sp", { model = "llama-3.1-70b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 16, hbd = 8 },
      precision = "fp8", batch = 32, output = 256, parallel = { tp = 8 }, coll_algo = "nccl", sequence_parallel = true },
    { { "batch", { 1, 8, 64 } }, { "input", inputs(200, 128, 311) } }, all },
  { "dense_h100_bf16_trtllm", { model = "llama-3.1-70b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 8, hbd = 8 },
      precision = "bf16", batch = 8, output = 128, parallel = { tp = 8 }, framework = "trtllm" },
    { { "output", { 2, 64, 1024 } }, { "input", inputs(200, 64, 513) } }, all },
  { "mla_h200_sglang", { model = "deepseek-v3", cluster = hl.cluster { gpu = "H200", gpus = 16, hbd = 8 },
      precision = "fp8", batch = 64, output = 512, parallel = { tp = 8, ep = 16 }, framework = "sglang" },
    { { "dispatch", { "flat", "hierarchical" } }, { "input", inputs(200, 256, 401) } }, all },
  { "dsv3_fp4_b200_hier_tbo", { model = "deepseek-v3", cluster = hl.cluster { gpu = "B200", gpus = 64, hbd = 8 },
      precision = "fp4", batch = 256, output = 1024, parallel = { tp = 1, ep = 64, dp = 64 }, dispatch = "hierarchical",
      two_batch_overlap = true, framework = "sglang" },
    { { "hbd", { 8, 64 } }, { "input", inputs(150, 512, 733) } }, all },
  { "scout_h100_pp4", { model = "llama-4-scout", cluster = hl.cluster { gpu = "H100-SXM", gpus = 16, hbd = 8 },
      precision = "bf16", batch = 16, output = 256, parallel = { tp = 4, pp = 4, ep = 4 } },
    { { "input", inputs(300, 100, 977) } }, all },
  { "l405_fp4_trtllm", { model = "llama-3.1-405b", cluster = hl.cluster { gpu = "B200", gpus = 8, hbd = 8 },
      precision = "fp4", batch = 32, output = 512, parallel = { tp = 8 }, framework = "trtllm" },
    { { "input", inputs(300, 64, 1001) } }, all },
  { "qwen3_235b_gb200", { model = "qwen3-235b-a22b", cluster = hl.cluster { gpu = "GB200", gpus = 72, hbd = 72 },
      precision = "fp4", batch = 72, output = 1024, parallel = { tp = 8, ep = 8 } },
    { { "hbd", { 8, 36, 72 } }, { "input", inputs(150, 1000, 1999) } }, all },
  { "mi300x_dense_rocm", { model = "llama-3.1-70b", cluster = hl.cluster { gpu = "MI300X", gpus = 8, hbd = 8 },
      precision = "fp8", batch = 16, output = 256, parallel = { tp = 8 }, framework = "rocm" },
    { { "input", inputs(300, 128, 419) } }, all },
  { "mi300x_moe_vllm", { model = "mixtral-8x7b", cluster = hl.cluster { gpu = "MI300X", gpus = 8, hbd = 8 },
      precision = "bf16", batch = 16, output = 256, parallel = { tp = 8 }, framework = "vllm" },
    { { "input", inputs(300, 128, 419) } }, all },
  { "grid_pp4", { model = "llama-3.1-70b", cluster = hl.cluster { gpu = "B200", gpus = 32, hbd = 8 },
      precision = "fp8", batch = 64, output = 128, parallel = { tp = 8, pp = 4 } },
    { { "hbd", { 8, 16, 32 } }, { "output", { 16, 512 } }, { "input", inputs(60, 256, 2011) } }, all },
  { "gptoss_fp4_vllm_fail", { model = "gpt-oss-120b", cluster = hl.cluster { gpu = "B200", gpus = 2, hbd = 2 },
      precision = "fp4", batch = 256, output = 2048, parallel = { tp = 2 }, framework = "vllm", mem_util = 0.6 },
    { { "input", inputs(200, 1024, 4099) } }, all },
  { "qwen3next_b200", { model = "qwen3-next-80b-a3b", cluster = hl.cluster { gpu = "B200", gpus = 8, hbd = 8 },
      precision = "fp8", batch = 32, output = 512, parallel = { tp = 4, ep = 8 } },
    { { "input", inputs(300, 128, 811) } }, all },
  { "maverick_h100", { model = "llama-4-maverick", cluster = hl.cluster { gpu = "H100-SXM", gpus = 128, hbd = 8 },
      precision = "fp8", batch = 128, output = 512, parallel = { tp = 8, ep = 16 }, routing_skew = 1.1 },
    { { "hbd", { 8, 32 } }, { "input", inputs(150, 512, 1777) } }, all },
  { "mtp_spec_dsv3", { model = "deepseek-v3", cluster = hl.cluster { gpu = "H200", gpus = 16, hbd = 8 },
      precision = "fp8", batch = 32, output = 256, parallel = { tp = 8, ep = 16 }, spec_tokens = 2, spec_accept = 0.7 },
    { { "input", inputs(200, 256, 601) } }, all },
  { "qwen30b_moe_precisions", { model = "qwen3-30b-a3b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 8, hbd = 8 },
      batch = 64, output = 256, parallel = { tp = 2, ep = 4 }, mem_util = 0.5 },
    { { "precision", { "bf16", "fp8" } }, { "input", inputs(200, 512, 997) } }, all },
  { "dense_8b_ideal_memlimit", { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "A100-SXM", gpus = 1, hbd = 1 },
      precision = "bf16", batch = 8, output = 1024, parallel = { tp = 1 }, mem_util = 0.4 },
    { { "input", inputs(300, 64, 523) } }, all },
  { "gemma_sliding_default_cols", { model = "gemma-3-27b", cluster = hl.cluster { gpu = "H200", gpus = 4, hbd = 4 },
      precision = "bf16", batch = 8, output = 300, parallel = { tp = 4 } },
    { { "tp", { 1, 2, 4 } }, { "input", inputs(200, 1000, 313) } }, nil },
}

for _, s in ipairs(sweeps) do
  local name, base, axes, cols = s[1], s[2], s[3], s[4]
  local ok, err = pcall(hl.sweep_to_csv, { base = base, axes = axes, out = out .. "/" .. name .. ".csv", columns = cols,
    progress = false })
  if not ok then error(name .. ": " .. tostring(err)) end
end

-- hl.simulate (summary run, then the breakdown and events re-run in full) on a few jobs: every
-- field as %.17g
local f = assert(io.open(out .. "/simulate.txt", "w"))
local function dump(prefix, v)
  if type(v) == "number" then
    f:write(prefix, " ", string.format("%.17g", v), "\n")
  elseif type(v) == "string" or type(v) == "boolean" then
    f:write(prefix, " ", tostring(v), "\n")
  end
end
for i, s in ipairs(sweeps) do
  local base = {}
  for k, v in pairs(s[2]) do base[k] = v end
  base.input = 3000 + 17 * i
  local ok, r = pcall(hl.simulate, base)
  if ok then
    for _, name in ipairs(all) do
      local v = r
      for part in name:gmatch("[^.]+") do v = v and v[part] end
      dump(s[1] .. " " .. name, v)
    end
    for _, ph in ipairs { "prefill", "decode" } do
      for k, it in ipairs(r[ph].breakdown or {}) do
        dump(s[1] .. " " .. ph .. " item " .. k .. " " .. tostring(it.name) .. " time_s", it.time_s)
        dump(s[1] .. " " .. ph .. " item " .. k .. " calls", it.calls)
        dump(s[1] .. " " .. ph .. " item " .. k .. " flops", it.flops)
        dump(s[1] .. " " .. ph .. " item " .. k .. " bytes", it.bytes)
      end
    end
  else
    f:write(s[1], " error ", tostring(r), "\n")
  end
end
f:close()

-- Writes a set of varied hl.sweep_to_csv files into a folder, so two builds can be compared byte
-- for byte (speed work on the CSV stream must not move a byte):
--   build/hbdlab bench/csv_identity.lua --set dir=/tmp/a   (then the other build into /tmp/b)
--   cmp each file of /tmp/a with /tmp/b   (bench/csv_identity.sh does both and the cmp)
-- The sweeps: the bench's streamed sweep (50,000 points, the default columns), then every result
-- field (all 67, integers, booleans and names among them) over dense and MoE jobs on NVIDIA and AMD
-- presets, FP16/FP8/FP4, TP/PP/EP/DP, frameworks, speculative decoding, failing points, model,
-- cluster and string axes, batch "max", friendly-unit columns (scaled), and magnitudes from 1e-7 to
-- 1e15 through wide input/batch/output ranges.
local P = hl.params {
  dir = { "", "folder to write the CSV files into (created)" },
  points = { 50000, "points of the bench's sweep (the first file)" },
  threads = { 0, "worker threads (0 = one per CPU)" },
}
assert(P.dir ~= "", "give --set dir=FOLDER")
os.execute("mkdir -p '" .. P.dir .. "'")
local core = require "hbdlab.core"
local all = {}
for _, f in ipairs(core.result_fields()) do
  if not f.alias_of then all[#all + 1] = f.name end
end
local friendly = {}
for _, f in ipairs(core.result_fields()) do
  if f.alias_of then friendly[#friendly + 1] = f.name end
end

local n_files = 0
local function write(name, spec)
  n_files = n_files + 1
  spec.out = string.format("%s/%02d_%s.csv", P.dir, n_files, name)
  spec.threads = P.threads
  spec.progress = false
  local n = hl.sweep_to_csv(spec)
  io.write(string.format("%-28s %8d rows\n", name, n))
end

local function range(a, b, step)
  local t = {}
  for v = a, b, step or 1 do t[#t + 1] = v end
  return t
end
local function geometric(a, b, factor)
  local t, v = {}, a
  while v <= b do
    t[#t + 1] = math.floor(v + 0.5)
    v = v * factor
  end
  return t
end

-- 1. the bench's streamed sweep (lua/hbdlab/bench.lua phase 5), default columns
local qwen_moe = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 }
local inputs = {}
for i = 1, P.points // 5 do inputs[i] = 1024 + i end
write("bench", { base = { model = qwen_moe, cluster = hl.cluster { gpu = "B200", gpus = 128, hbd = 64 },
  precision = "fp8", batch = 16, output = 1024, parallel = { tp = 8, ep = 16 } },
  axes = { { "hbd", { 8, 16, 32, 64, 128 } }, { "input", inputs } } })

-- 2. every result field
write("dense_h100_fp8", { base = { model = "llama-3.1-70b", cluster = "hgx-h100", precision = "fp8", output = 256 },
  axes = { { "tp", { 1, 2, 3, 4, 8 } }, { "batch", { "max", 1, 7, 64, 512 } }, { "input", geometric(16, 200000, 1.37) } },
  columns = all })
write("dense_h100_bf16_nccl_sp", { base = { model = "llama-3.1-70b", cluster = "hgx-h100", precision = "bf16",
  coll_algo = "nccl", sequence_parallel = true, parallel = { tp = 8 } },
  axes = { { "batch", geometric(1, 4096, 2) }, { "output", { 1, 2, 100, 4096 } }, { "input", geometric(1, 131072, 1.4) } },
  columns = all })
write("mla_h200", { base = { model = "deepseek-v3", cluster = "hgx-h200", precision = "fp8", parallel = { tp = 8 },
  ignore_memory = true }, axes = { { "batch", { 1, 16, 256 } }, { "input", geometric(100, 100000, 1.05) } }, columns = all })
write("dsv3_fp4_gb200_sglang", { base = { model = "deepseek-v3", cluster = "gb200-nvl72", precision = "fp4",
  framework = "sglang", dispatch = "hierarchical", output = 512 },
  axes = { { "ep", { 8, 16, 32, 72 } }, { "batch", { 32, 256 } }, { "input", range(1000, 30000, 145) } }, columns = all })
write("scout_pp4", { base = { model = "llama-4-scout", cluster = "hgx-h100", parallel = { tp = 2, pp = 4 } },
  axes = { { "batch", { 1, 8, 64 } }, { "input", range(128, 8192, 25) } }, columns = all })
write("405b_fp4_trtllm", { base = { model = "llama-3.1-405b", cluster = "hgx-b200", precision = "fp4",
  framework = "trtllm", parallel = { tp = 8 } }, axes = { { "batch", { 1, 4, 32, 128 } }, { "input", range(512, 65536, 204) } },
  columns = all })
write("qwen3_235b_gb200_hbd", { base = { model = "qwen3-235b-a22b", cluster = hl.cluster { gpu = "GB200", gpus = 72, hbd = 72 },
  precision = "fp4", parallel = { tp = 4, ep = 18 } },
  axes = { { "hbd", { 8, 36, 72 } }, { "batch", { 16, 128 } }, { "input", range(1024, 32768, 97) } }, columns = all })
write("mi300x_dense_rocm", { base = { model = "llama-3.1-70b", cluster = "mi300x-8", precision = "fp8", framework = "rocm",
  parallel = { tp = 8 } }, axes = { { "batch", { 1, 2, 32, 256 } }, { "input", range(100, 20000, 70) } }, columns = all })
write("mi300x_moe", { base = { model = "mixtral-8x7b", cluster = "mi300x-8", precision = "bf16", parallel = { tp = 2, ep = 4 } },
  axes = { { "batch", { 1, 64 } }, { "input", range(64, 16384, 61) } }, columns = all })
write("grid_pp4", { base = { model = qwen_moe, cluster = hl.cluster { gpu = "B200", gpus = 128, hbd = 64 }, precision = "fp16",
  batch = 16, parallel = { tp = 8, pp = 4, ep = 4 } },
  axes = { { "hbd", { 8, 32, 128 } }, { "output", { 1, 64, 1024 } }, { "input", range(256, 32768, 153) } }, columns = all })
write("gptoss_vllm_failing", { base = { model = "gpt-oss-120b", cluster = "hgx-b200", precision = "fp4", framework = "vllm" },
  axes = { { "tp", { 1, 2, 3, 4, 5, 8 } }, { "batch", { 1, 33, 1000 } }, { "input", range(10, 50000, 234) } }, columns = all })
write("qwen3_next", { base = { model = "qwen3-next-80b-a3b", cluster = "hgx-h200", precision = "bf16", parallel = { tp = 4 } },
  axes = { { "batch", { 1, 8, 128 } }, { "input", range(2000, 200000, 900) } }, columns = all })
write("maverick_128_h100", { base = { model = "llama-4-maverick", cluster = hl.cluster { gpu = "H100-SXM", gpus = 128, hbd = 8 },
  precision = "fp8", parallel = { tp = 8, ep = 16 } },
  axes = { { "batch", { 64, 512 } }, { "input", range(512, 16384, 79) } }, columns = all })
write("mtp_spec", { base = { model = "deepseek-v3", cluster = "gb200-nvl72", precision = "fp8", spec_tokens = 2,
  spec_accept = 0.8, parallel = { tp = 1, ep = 72, dp = 72 } },
  axes = { { "spec_tokens", { 0, 1, 3 } }, { "batch", { 72, 720 } }, { "input", range(1000, 9000, 40) } }, columns = all })
write("model_axis", { base = { model = "llama-3.1-8b", cluster = "hgx-h100", precision = "fp8", parallel = { tp = 8 }, ignore_memory = true },
  axes = { { "model", { "llama-3.1-8b", "qwen2.5-72b", "mixtral-8x7b", "gemma-3-27b" } }, { "batch", { 1, 100 } },
           { "input", geometric(8, 100000, 1.3) } }, columns = all })
write("cluster_string_axes", { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 } },
  axes = { { "cluster", { "hgx-h100", "hgx-b200", "mi355x-8" } }, { "precision", { "bf16", "fp8", "fp4" } },
           { "framework", { "ideal", "vllm", "trtllm" } }, { "input", geometric(1, 99999, 1.5) } }, columns = all })
write("friendly_units", { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 1 } },
  axes = { { "batch", geometric(1, 1e6, 1.8) }, { "input", geometric(1, 1e6, 1.8) } }, columns = friendly })
write("magnitudes", { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, ignore_memory = true },
  axes = { { "batch", geometric(1, 1e8, 3) }, { "output", { 1, 1e6 } }, { "input", geometric(1, 1e9, 2) } }, columns = all })
write("default_small", { base = { model = "llama-3.3-70b", cluster = "hgx-h200", parallel = { tp = 4 } },
  axes = { { "batch", { "max", 4 } }, { "input", { 1024, 8192 } } } })
print(string.format("%d files in %s", n_files, P.dir))

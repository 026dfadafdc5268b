-- Issue 29's architectures through the Lua API: hl.model.from_hf on every
-- hand-written config, hl.simulate and hl.serve on every preset, and a
-- Qwen3-Next request's linear-attention state that does not grow with its context.
local T = require "testlib"
local hl = require "hbdlab"

local src = os.getenv("HBDLAB_SOURCE_DIR") .. "/tests/data/hf/"
local models = { "gpt-oss-20b", "gpt-oss-120b", "kimi-k2", "deepseek-v3.2-exp", "qwen3-next-80b-a3b", "llama-4-scout",
                 "llama-4-maverick", "glm-4.5", "glm-4.5-air", "gemma-3-27b", "qwen2.5-vl-7b" }

T.test("from_hf counts as the preset", function()
  for _, n in ipairs(models) do
    local a, b = hl.model.from_hf(src .. n .. ".json"):params(), hl.model(n):params()
    T.near(a.total, b.total, 1e-12, n .. " total")
    T.near(a.active, b.active, 1e-12, n .. " active")
  end
end)

T.test("simulate and serve run every model", function()
  local cluster = hl.cluster { gpu = "B200", gpus = 16, hbd = 16 }
  for _, n in ipairs(models) do
    local moe = hl.model(n).experts > 0
    local par = moe and { tp = 4, ep = 16, dp = 4 } or { tp = 4, dp = 4 }
    local r = hl.simulate { model = n, cluster = cluster, parallel = par, precision = "fp8", input = 4000, output = 200,
                            batch = 8 }
    T.ok(r.ttft_s > 0 and r.tpot_s > 0, n .. " simulate")
    local s = hl.serve { model = n, cluster = cluster, parallel = par, precision = "fp8", rate = 4, requests = 20,
                         input = 2000, output = 50 }
    T.ok(s.tpot_s.mean > 0 and s.requests == 20, n .. " serve")
  end
end)

-- One request alone with 20,000 blocks of 16 tokens: it peaks at its prompt's
-- blocks, ceil(input / 16), plus its state's. Qwen3-Next on one GPU: the 12
-- full layers cache 12 * 2 * 2 * 256 * 2 B = 24,576 B/token, a 16-token block
-- 393,216 B; the state is 36 * 548,864 * 2 B = 39,518,208 B, 100.5 blocks,
-- reserved as 101. Input 1,000: 63 + 101 = 164 blocks; 100,000: 6,250 + 101.
T.test("a Qwen3-Next request's state does not grow with its context", function()
  local function peak(input)
    local r = hl.serve { model = "qwen3-next-80b-a3b", cluster = hl.cluster { gpu = "H200", gpus = 1, hbd = 1 },
                         precision = "fp8", act_precision = "bf16", concurrency = 1, requests = 1, input = input,
                         output = 2, kv_blocks = 20000, block_tokens = 16 }
    return r.kv_util_max * r.kv_blocks_total
  end
  T.near(peak(1000), 164, 1e-9, "1,000 tokens")
  T.near(peak(100000), 6351, 1e-9, "100,000 tokens")
  -- memory per GPU (hl.simulate): 24,576 B per token of context more, nothing else
  local function kv(input)
    return hl.simulate({ model = "qwen3-next-80b-a3b", cluster = hl.cluster { gpu = "H200", gpus = 1, hbd = 1 },
                         precision = "fp8", act_precision = "bf16", batch = 1, input = input, output = 1,
                         ignore_memory = true }).memory.kv_bytes
  end
  T.near(kv(101000) - kv(1000), 100000 * 24576, 1e-12, "growth: full layers only")
end)

-- batch = "max" counts the state once per sequence. Qwen3-Next on one H200 (150,754,820,096 B,
-- 90 % usable), FP8 weights (79,674,286,848 parameters = B), workspace 8,192 * 2,048 * 2 B * 16 +
-- 0.5 GB = 1,036,870,912 B: 54,968,180,326.4 B for sequences of 10,000 + 1 tokens, each
-- 24,576 * 10,001 + 39,518,208 = 285,302,784 B: 192 of them (223 if the state were left out).
T.test("batch = max leaves room for each sequence's linear-attention state", function()
  local r = hl.simulate { model = "qwen3-next-80b-a3b", cluster = hl.cluster { gpu = "H200", gpus = 1, hbd = 1 },
                          precision = "fp8", act_precision = "bf16", batch = "max", input = 10000, output = 1 }
  T.eq(r.batch, 192, "largest batch")
  T.near(r.memory.kv_bytes / r.batch, 285302784, 1e-12, "KV + state per sequence")
end)

T.test("hl.frontier runs every model", function()
  for _, n in ipairs(models) do
    local r = hl.frontier { model = n, systems = { gpu = "B200", gpus = 16, hbd = 8 }, input = 2000, output = 200,
                            modes = { "agg" }, simulate = 0, max_pp = 1, concurrency = { 1, 16 } }
    T.ok(#r.points > 0, n .. " frontier points")
  end
end)

T.done()

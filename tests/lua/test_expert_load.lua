-- Expert load from routing in hl.simulate: skew makes the busiest EP rank
-- slower, EPLB replicas pay back by an amount that depends on the skew, a
-- stated imbalance overrides the model, bad histograms are named.
local hl = require "hbdlab"
local T = require "testlib"

local function run(t)
  local job = { model = "deepseek-v3", cluster = hl.cluster { gpu = "H200", gpus = 32, hbd = 8 }, precision = "fp8",
                batch = 32 * 8, input = 1024, output = 64, parallel = { tp = 1, ep = 32, dp = 32 },
                ignore_memory = true }
  for k, v in pairs(t) do job[k] = v end
  return hl.simulate(job)
end

T.test("skew slows the busiest rank; EPLB replicas pay under skew and not under uniform routing", function()
  local uni, skew = run {}, run { routing_skew = 1 }
  T.ok(skew.ttft_s > 1.05 * uni.ttft_s, "Zipf 1 prefill slower than uniform")
  local eplb = run { routing_skew = 1, redundant_experts = 32 }
  T.ok(eplb.ttft_s < skew.ttft_s, "32 replicas lower the skewed prefill")
  local gain_skew = skew.ttft_s - eplb.ttft_s
  local uni_r = run { redundant_experts = 32 }
  T.ok(uni_r.ttft_s - uni.ttft_s > -0.2 * gain_skew, "replicas buy (almost) nothing under uniform routing")
  T.ok(eplb.memory.weights_bytes > skew.memory.weights_bytes, "replica weights counted")
end)

T.test("a stated imbalance overrides the routing model", function()
  local a, b = run { imbalance = 1.3 }, run { imbalance = 1.3, routing_skew = 2 }
  T.near(a.ttft_s, b.ttft_s, 1e-12, "same stated imbalance, any skew")
end)

T.test("expert_freq: a list or a file, checked", function()
  local f = {}
  for i = 1, 256 do f[i] = 1 / 256 end
  T.near(run { expert_freq = f }.ttft_s, run {}.ttft_s, 1e-12, "a uniform histogram is uniform routing")
  local path = os.tmpname()
  local fh = assert(io.open(path, "w"))
  fh:write("# shares per expert\n")
  for i = 1, 256 do fh:write(string.format("%.17g%s", 1 / 256, i % 8 == 0 and "\n" or ", ")) end
  fh:close()
  T.near(run { expert_freq = path }.ttft_s, run {}.ttft_s, 1e-12, "from a file")
  f[1] = 0.1 -- now 0.1 + 255/256: sums to 1.096
  local ok, err = pcall(run, { expert_freq = f })
  T.ok(not ok and err:find("expert_freq", 1, true) and err:find("sum to", 1, true), tostring(err))
  ok, err = pcall(run, { expert_freq = { 0.5, 0.5 } })
  T.ok(not ok and err:find("2 shares for a model of 256", 1, true), tostring(err))
  fh = assert(io.open(path, "w"))
  fh:write("0.5 abc\n")
  fh:close()
  ok, err = pcall(run, { expert_freq = path })
  T.ok(not ok and err:find("expert_freq", 1, true) and err:find("not a number", 1, true), tostring(err))
  os.remove(path)
  f[1] = 1 / 256
  ok, err = pcall(run, { routing_skew = 1, expert_freq = f })
  T.ok(not ok and err:find("both", 1, true), tostring(err))
  ok, err = pcall(hl.simulate, { model = "llama-3.1-8b", cluster = "hgx-h100", routing_skew = 1 })
  T.ok(not ok and err:find("routing_skew", 1, true), tostring(err))
end)

T.done()

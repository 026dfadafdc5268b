-- The SLO limits of parallel = "auto" / batch = "max" are honoured: the plan
-- keeps TTFT and TPOT within them (a smaller batch if need be) and says so;
-- when nothing meets them, the error names the best mapping found.
local T = require "testlib"
local hl = require "hbdlab"

local base = { model = "llama-3.1-70b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 8 }, input = 8192,
               output = 512, batch = "max" }
local function with(t)
  local o = {}
  for k, v in pairs(base) do o[k] = v end
  for k, v in pairs(t) do o[k] = v end
  return o
end

T.test("auto + max within a TTFT limit", function()
  local free = hl.simulate(with { parallel = "auto" })
  T.ok(free.ttft_s > 2, "without the limit the plan's TTFT exceeds 2 s (the limit bites)")
  local r = hl.simulate(with { parallel = "auto", max_ttft_s = 2 })
  T.ok(r.meets_limits, "meets_limits")
  T.ok(r.ttft_s <= 2, "TTFT within the limit")
  T.ok(r.batch < free.batch, "a smaller batch than the memory limit")
  -- the batch is the largest within: one more sequence per group misses it
  local dp = r.parallel.dp
  local over = hl.simulate(with { parallel = { tp = r.parallel.tp, pp = r.parallel.pp }, batch = r.batch + dp })
  T.ok(over.ttft_s > 2, "the next batch misses the limit")
end)

T.test("fixed mapping, batch = max within a TPOT limit", function()
  local r = hl.simulate(with { parallel = { tp = 8 }, max_tpot_s = 0.012 })
  T.ok(r.tpot_s <= 0.012, "TPOT within the limit")
end)

T.test("nothing meets the limits: an error naming the best", function()
  T.raises(function() hl.simulate(with { parallel = "auto", max_ttft_s = 1e-4 }) end,
           "meets the limits (max_ttft_s 0.0001")
  T.raises(function() hl.simulate(with { parallel = "auto", max_ttft_s = 1e-4 }) end, "the best found, tp ")
  T.raises(function() hl.simulate(with { parallel = { tp = 8 }, max_ttft_s = 1e-4 }) end, "misses the limits")
end)

T.done()

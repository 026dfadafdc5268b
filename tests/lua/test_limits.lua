-- The SLO limits of parallel = "auto" / batch = "max" are honoured: the plan
-- keeps TTFT and TPOT within them (a smaller batch if need be) and says so;
-- when nothing meets them, the error names the best mapping found.
local T = require "testlib"
local hl = require "hbdlab"

local base = { model = "llama-3.1-70b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 8 }, input = 8192,
               output = 512, batch = "max" }
local function with(t) return T.merged(base, t) end

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

-- the warnings are read from hbdlab.warn's record of what it printed
local warn = require "hbdlab.warn"
local function warned(fragment)
  for msg in pairs(warn.seen) do if msg:find(fragment, 1, true) then return msg end end
end

T.test("a fixed batch under limits is not searched: meets_limits = false and a warning", function()
  warn.seen = {}
  local r = hl.simulate(with { parallel = { tp = 8 }, batch = 64, max_tpot_s = 1e-3 })
  T.eq(r.batch, 64, "the batch stays as given")
  T.ok(r.tpot_s > 1e-3, "its TPOT misses the 1 ms limit")
  T.eq(r.meets_limits, false, "meets_limits = false (was nil: the limit was ignored silently)")
  T.ok(warned("batch 64 misses the limits"), "a warning says so")
  local ok = hl.simulate(with { parallel = { tp = 8 }, batch = 8, max_tpot_s = 10 })
  T.eq(ok.meets_limits, true, "a batch within the limits meets them")
  local none = hl.simulate(with { parallel = { tp = 8 }, batch = 8 })
  T.eq(none.meets_limits, nil, "no limits: no meets_limits")
end)

T.test("hl.simulate and hl.sweep resolve batch = max under a TPOT limit alike", function()
  -- the same job once gave batch 18 from hl.simulate and 95 (limit ignored) from hl.sweep
  local job = with { parallel = { tp = 8 }, max_tpot_s = 0.012 }
  local r = hl.simulate(job)
  local rows = hl.sweep { base = job, axes = { input = { job.input } }, progress = false }
  T.eq(rows[1].batch, r.batch, "same batch")
  T.eq(rows[1].tpot_s, r.tpot_s, "same TPOT")
  T.ok(rows[1].tpot_s <= 0.012, "the row keeps the limit")
  local miss = hl.sweep { base = with { parallel = { tp = 8 }, max_ttft_s = 1e-4 }, axes = { input = { 8192 } },
                          progress = false }
  T.ok(miss[1].error and miss[1].error:find("misses the limits", 1, true), "an unmeetable limit is an error row")
  warn.seen = {}
  hl.sweep { base = with { parallel = { tp = 8 }, batch = 8, max_tpot_s = 1e-3 }, axes = { input = { 1024 } },
             progress = false }
  T.ok(warned("rows are not checked against them"), "a sweep with limits and no search warns")
end)

T.test("a tp sweep axis is a mapping: no 'parallel is not given' warning; dp's rule named", function()
  warn.seen = {}
  local rows = hl.sweep { base = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "B200", gpus = 64 }, batch = 8,
                                   input = 1024, output = 64 }, axes = { tp = { 1, 8 } }, progress = false }
  T.ok(not warned("'parallel' is not given"), "no whole-copy warning for a tp axis")
  T.ok(rows[1].error:find("dp = gpus / (tp * pp) = 64 / (1 * 1)", 1, true), "the error row says how dp was chosen")
  T.ok(rows[1].error:find("parallel.gpus", 1, true), "and names parallel.gpus")
  T.eq(rows[2].batch, 8, "tp 8: dp 8 takes the batch")
end)

T.done()

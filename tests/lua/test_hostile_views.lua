-- Result views, sweep row views and two-batch overlap attacked from outside (attack pass 4,
-- docs/RELIABILITY.md): each case here failed inside hbdlab's own code, gave a misleading message
-- or a made-up number before its fix.
local T = require "testlib"
local hl = require "hbdlab"
local warn = require "hbdlab.warn"

local cl = hl.cluster { gpu = "H100-SXM", gpus = 1, hbd = 1 }
local base = { model = "llama-3.1-8b", cluster = cl, parallel = { tp = 1 }, batch = 4, input = 256, output = 2 }

-- the warnings a call gives (the warn module's sink; each message once per process otherwise)
local function warnings(fn)
  local got = {}
  warn.seen, warn.sink = {}, function(m) got[#got + 1] = m end
  fn()
  warn.sink = nil
  return table.concat(got, "\n")
end

T.test("hl.rows.format names a column whose key is not a string", function()
  -- a row written to with row[1] = x or row[print] = 1 (a sweep row takes any key) gave
  -- "hbdlab/rows.lua:143: attempt to get length of a number value (local 'c')"
  local row = hl.sweep { base = base, axes = { batch = { 4 } } }[1]
  row[1] = "first"
  local s = hl.rows.format({ row }, { 1, "batch" })
  T.ok(s:find("^1 +batch\n"), "the header names column 1: " .. s)
  T.ok(s:find("first", 1, true), "its cell: " .. s)
  local t = hl.rows.format { { a = 1, [true] = "x" } }
  T.ok(t:find("true", 1, true) and t:find("a", 1, true), "a boolean key as its text: " .. t)
  local f = hl.rows.format { { a = 1, [{}] = "x" } }
  T.ok(f:find("table: ", 1, true), "a table key as its text: " .. f)
end)

T.test("a sweep row a finaliser kept after its sweep was collected says so", function()
  -- the rows' store is finalised with the rows that reach it; a finaliser that stores a row
  -- (resurrection) keeps a row whose store is gone: "a sweep row's metamethod called on something else"
  (function() -- the rows and their holder go out of scope with this call
    local rows = hl.sweep { base = base, axes = { batch = { 1, 2 } } }
    setmetatable({ rows[1] }, { __gc = function(o) _G.KEPT_ROW = o[1] end })
  end)()
  collectgarbage()
  collectgarbage()
  T.ok(_G.KEPT_ROW ~= nil, "the finaliser ran")
  T.raises(function() return _G.KEPT_ROW.tpot_s end, "a sweep row used after its sweep was collected")
  T.raises(function() for _ in pairs(_G.KEPT_ROW) do end end, "used after its sweep was collected")
  _G.KEPT_ROW = nil
end)

T.test("a one-GPU result prints '1 GPU'", function()
  local s = tostring(hl.simulate(base))
  T.ok(s:find("^bf16 on 1 GPU %(tp 1"), s:sub(1, 60))
end)

local ds = hl.model "deepseek-v3"
local function moe(extra)
  local t = { model = ds, cluster = hl.cluster { gpu = "H100-SXM", gpus = 16, hbd = 8 }, precision = "fp8",
              kv_precision = "bf16", batch = 16 * 64, input = 1000, output = 3, parallel = { tp = 1, ep = 16 },
              dispatch = "flat", ignore_memory = true, two_batch_overlap = true }
  for k, v in pairs(extra or {}) do t[k] = v end
  return t
end
local function plain(t)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  o.two_batch_overlap = nil
  return o
end

T.test("two_batch_overlap: one decode sequence per rank runs whole", function()
  -- SGLang splits a decode batch at num_seqs // 2 (two_batch_overlap.py compute_split_seq_index): one
  -- sequence leaves one micro-batch empty, nothing overlaps. batch 16 on dp = 16 is one per rank; it ran
  -- as two micro-batches of half a sequence (TPOT 35.8 ms against 23.6 ms without the field)
  local j = moe { batch = 16 }
  local r, p
  local w = warnings(function() r, p = hl.simulate(j), hl.simulate(plain(j)) end)
  T.eq(r.tpot_s, p.tpot_s, "decode as without the field")
  T.ok(r.ttft_s < p.ttft_s, "prefill still overlaps (it splits the prompt's tokens)")
  T.ok(w:find("two_batch_overlap: a decode step of 1 sequence per rank has nothing to split", 1, true), w)
  -- two per rank split: decode differs from the plain run
  local r2 = hl.simulate(moe { batch = 32 })
  T.ok(r2.tpot_s ~= hl.simulate(plain(moe { batch = 32 })).tpot_s, "two per rank: two micro-batches")
end)

T.test("two_batch_overlap where it has no effect warns", function()
  -- ep = 1 (a dense model, or MoE without EP), pp > 1 and speculative decode ran as without the field, silently
  local w = warnings(function()
    hl.simulate { model = "llama-3.1-8b", cluster = cl, parallel = { tp = 1 }, batch = 4, input = 256, output = 2,
                  two_batch_overlap = true }
  end)
  T.ok(w:find("two_batch_overlap has no effect with ep = 1", 1, true), w)
  w = warnings(function() hl.simulate(moe { parallel = { tp = 1, ep = 8, pp = 2 }, batch = 8 * 64 }) end)
  T.ok(w:find("two_batch_overlap has no effect with pp = 2", 1, true), w)
  local r
  w = warnings(function() r = hl.simulate(moe { spec_tokens = 2, spec_accept = 0.7 }) end)
  T.ok(w:find("speculative decode steps (spec_tokens) run without it", 1, true), w)
  T.eq(r.tpot_s, hl.simulate(plain(moe { spec_tokens = 2, spec_accept = 0.7 })).tpot_s, "spec decode: no overlap")
  w = warnings(function() hl.simulate(moe()) end)
  T.eq(w, "", "no warning where it overlaps")
end)

T.done()

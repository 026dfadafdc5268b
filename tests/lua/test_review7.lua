-- Review of session 7's reliability fixes (revfid): each case here failed before its fix.
local T = require "testlib"
local hl = require "hbdlab"

local serve = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, rate = 5, requests = 20,
                input = 100, output = 10 }

T.test("an SLO in ms that is not a number is named as the ms field, not as an unknown key", function()
  -- was "serve field 'slo': unknown key 'tpot_ms' (did you mean 'tpot_s'?; allowed: ttft_s, tpot_s)"
  local function slo(s) return function() hl.serve(T.merged(serve, { slo = s })) end end
  local e = T.raises(slo { tpot_ms = "5" }, "serve field 'slo.tpot_ms': expected a number of ms, got the string '5'")
  T.ok(not e:find("unknown key", 1, true), e)
  T.raises(slo { ttft_ms = true }, "serve field 'slo.ttft_ms': expected a number of ms, got true")
  T.raises(slo { ttft_ms = {} }, "serve field 'slo.ttft_ms': expected a number of ms, got a table")
  -- the capacity search reads the same group
  local cap = T.merged(serve, { slo = { tpot_ms = "50" }, max_requests = 1000, min_duration = 1 })
  cap.rate = nil
  T.raises(function() hl.serve_capacity(cap) end, "field 'slo.tpot_ms': expected a number of ms, got the string '50'")
  -- a number still runs, and a true unknown key is still one
  T.ok(hl.serve(T.merged(serve, { slo = { tpot_ms = 50 } })).ttft_s.mean > 0, "tpot_ms = 50 runs")
  T.raises(slo { itl_ms = 5 }, "serve field 'slo': unknown key 'itl_ms'")
end)

T.done()

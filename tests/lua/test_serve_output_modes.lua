-- Asking hl.serve for per-request records (keep_requests) or the step log (keep_steps) must not
-- change its summary: those options only keep more of the same run. keep_requests keeps one
-- record per request instead of the compact ones: the same bits (%a), every field. keep_steps
-- turns the decode run-ahead off (core/src/serve.c, `fast`), so it is the step-by-step run the
-- run-ahead has to agree with: to rounding (a run-ahead step's mean context is ctx0 + j, the
-- step's own the mean of the lengths: last bits, at most 1e-14 relative over 600 random
-- one-group runs), so numbers within 1e-12 relative, text and booleans equal. The KV series is
-- compared sample by sample; per_request and step_log themselves are not compared.
local T = require "testlib"
local hl = require "hbdlab"

-- Every number, string and boolean of r below the top (nested tables to depth 3) as key -> text,
-- per_request and step_log left out.
local function flat(r, pre, out, depth)
  out, pre, depth = out or {}, pre or "", depth or 0
  for k, v in pairs(r) do
    if k ~= "per_request" and k ~= "step_log" then
      local key = pre .. tostring(k)
      if type(v) == "number" then
        out[key] = string.format("%a", v)
      elseif type(v) == "string" or type(v) == "boolean" then
        out[key] = tostring(v)
      elseif type(v) == "table" and depth < 3 then
        flat(v, key .. ".", out, depth + 1)
      end
    end
  end
  return out
end

-- rel nil: every field the same bits; else numbers within rel (relative) of each other.
local function same(a, b, label, rel)
  local fa, fb, n = flat(a), flat(b), 0
  for k, v in pairs(fa) do
    local x, y = tonumber(v), tonumber(fb[k])
    if rel and x and y and x ~= y then
      T.ok(math.abs(x - y) <= rel * math.max(math.abs(x), math.abs(y)), label .. ": " .. k .. " " .. v .. " vs " .. fb[k])
    else
      T.eq(fb[k], v, label .. ": " .. k)
    end
    n = n + 1
  end
  for k in pairs(fb) do T.ok(fa[k] ~= nil, label .. ": " .. k .. " only with the option") end
  T.ok(n > 100, label .. ": fields compared (" .. n .. ")")
end

local c1 = hl.cluster { gpu = "H100-SXM", gpus = 1, hbd = 1 }
local c8 = hl.cluster { gpu = "H100-SXM", gpus = 8, hbd = 8 }
local jobs = {
  { "one GPU, Poisson", { model = "llama-3.1-8b", cluster = c1, parallel = { tp = 1 }, rate = 14, requests = 200,
                          input = 512, output = 128, seed = 3 } },
  { "closed loop", { model = "llama-3.1-8b", cluster = c1, parallel = { tp = 1 }, concurrency = 8, requests = 60,
                     input = 700, output = 90 } },
  -- four DP ranks, each a group of its own: a rank that ran ahead alone would sample its own KV
  -- blocks over the pool's (and past the other ranks' clocks), so kv_util_max and kv_series moved
  { "tp 2 x dp 4", { model = "llama-3.1-8b", cluster = c8, parallel = { tp = 2, dp = 4 }, rate = 30, requests = 300,
                     input = 800, output = 100, seed = 6 } },
  { "tp 1 x dp 8, closed loop", { model = "llama-3.1-8b", cluster = c8, parallel = { tp = 1, dp = 8 },
                                  concurrency = 16, requests = 120, input = 600, output = 80 } },
}

T.test("keep_requests and keep_steps leave the summary as it is", function()
  for _, c in ipairs(jobs) do
    local label, job = c[1], c[2]
    local plain = hl.serve(job)
    same(plain, hl.serve(T.merged(job, { keep_requests = true })), label .. ", keep_requests")
    same(plain, hl.serve(T.merged(job, { keep_steps = true })), label .. ", keep_steps", 1e-12)
  end
end)

T.test("the KV series of DP ranks runs forward in time", function()
  local r = hl.serve(jobs[3][2])
  local t = r.kv_series.t_s
  T.ok(#t > 10, "samples taken")
  for i = 2, #t do T.ok(t[i] >= t[i - 1], "sample " .. i .. " at " .. t[i] .. " s, after " .. t[i - 1] .. " s") end
end)

T.done()
